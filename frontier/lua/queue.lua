-- queue.lua -- a host's queue and its admitted count, in one place.
--
-- P hosts holds one field a host that ever admitted a URL: "A", where A is
-- the URLs it admitted (max_pages_per_host), or, while its queue is short,
-- "A C\nE1\n...\nEC": its C queued entries, oldest first, in the field
-- itself (entries never hold a newline: the client skips such links).  A
-- queue longer than PACK entries is the list P q:<origin>: the entries move
-- there at once and the field goes back to "A".  The list, when it exists,
-- is the queue, and packed entries never exist beside it; a list emptied by
-- claims is gone, so the host's next entries are packed again.  A host
-- therefore costs Redis one hash field, not a key of its own
-- (bench/frontier_mem.md).  A crawl of an older build kept A in P hadmit and
-- every queue in a list: both still read (a host without a field has its
-- count there).

local PACK = 16

-- P qheads counts the hosts by the depth of their next URL, their
-- queue's head (depth -> hosts), for the crawl order (QD.held_back, the
-- depth window of claim.lua): every function below that changes a queue's
-- head moves its host from one count to another (QD.move).  The least
-- depth counted is a host's next URL, so a window over it never stops the
-- crawl.  A crawl queued by an older build has hosts it never counted: a
-- count taken below 0 is left out (HDEL).  (QD holds the crawl order's
-- functions and state: one local of the library's main chunk, which Lua
-- caps at 200.)
local QD = {}
function QD.depth(e) return tonumber(string.match(e, '^%d+')) or 0 end
-- A host's head went from entry a to entry b (nil: none).
function QD.move(a, b)
  local da, db = a and QD.depth(a), b and QD.depth(b)
  if da == db then return end
  if da and redis.call('HINCRBY', K.QDEPTH, str(da), '-1') <= 0 then
    redis.call('HDEL', K.QDEPTH, str(da))
  end
  if db then redis.call('HINCRBY', K.QDEPTH, str(db), '1') end
end

-- h's field v (read here when v is nil; false: none) as: its admitted count
-- (nil when it has no field), its packed entries' count and their text.
local function host_read(h, v)
  if v == nil then v = redis.call('HGET', K.HOSTS, h) end
  if not v then return nil, 0, nil end
  local nl = find(v, '\n', 1, true)
  if not nl then return num(v), 0, nil end
  local a, c = string.match(sub(v, 1, nl - 1), '^(%d+) (%d+)$')
  return num(a), num(c), sub(v, nl + 1)
end

local function host_value(a, c, packed)
  if c > 0 then return str(a) .. ' ' .. str(c) .. '\n' .. packed end
  return str(a)
end

-- The first n of the c entries of packed, in out[1..n], and the text of the
-- rest (nil when none is left).
local function unpack_head(packed, c, n, out)
  local at = 1
  for i = 1, n do
    if i == c then out[i] = sub(packed, at); return out, nil end
    local nl = find(packed, '\n', at, true)
    out[i] = sub(packed, at, nl - 1)
    at = nl + 1
  end
  return out, sub(packed, at)
end

-- URLs h ever admitted.
local function admitted(h)
  local a = host_read(h)
  return a or legacy_admitted(h)
end

-- Entries queued for h.
local function q_len(h)
  local l = redis.call('LLEN', qkey(h))
  if l > 0 then return l end
  local _, c = host_read(h)
  return c
end

-- Takes up to n entries from the front of h's queue: a table of them, and
-- how many are left (-1 from a list: q_empty says).
local function q_pop(h, n)
  local lk = qkey(h)
  local listed = redis.call('LPOP', lk, str(n)) -- (false: no list)
  if listed then
    QD.move(listed[1], redis.call('LINDEX', lk, 0) or nil)
    return listed, -1
  end
  local a, c, packed = host_read(h)
  if c == 0 then return {}, 0 end
  if n > c then n = c end
  local got, rest = unpack_head(packed, c, n, {})
  redis.call('HSET', K.HOSTS, h, host_value(a, c - n, rest))
  QD.move(got[1], rest) -- (rest: its first entry's depth leads)
  return got, c - n
end

-- The depth of the entry at the front of h's queue (nil: none).
function QD.head(h)
  local e = redis.call('LINDEX', qkey(h), 0)
  if e then return QD.depth(e) end
  local _, c, packed = host_read(h)
  if c == 0 then return nil end
  return QD.depth(packed)
end

-- The least depth of a host's next URL in this shard (nil: none counted).
function QD.least()
  local kv, least = redis.call('HGETALL', K.QDEPTH), nil
  for i = 1, #kv, 2 do
    local d = tonumber(kv[i])
    if num(kv[i + 1]) > 0 and (not least or d < least) then least = d end
  end
  return least
end

-- The crawl order's depth window (claim.lua's ARGV[9], frontier.h:
-- depth_window): a host whose next URL is more than QD.win levels deeper
-- than the shallowest next URL of the shard's hosts (QD.level: QD.least,
-- read once a claim) gives nothing now (QD.held_back): it goes back into
-- ready QD.hold ms from now, and the shallower hosts are served first.
-- A host is held QD.max_hold ms at most in a row (P hheld: host -> when
-- its hold began), so a level whose hosts cannot give (a long Crawl-delay,
-- a backoff) delays the deeper ones, never stops them.  QD.win nil: no
-- window.
QD.hold, QD.max_hold = 500, 30000
function QD.window(w) -- a claim's ARGV[9]: "" or 4294967295 for none
  QD.win = tonumber(w or '')
  if QD.win and QD.win >= 4294967295 then QD.win = nil end
  QD.level = QD.win and QD.least() or nil
end
function QD.relevel() -- the level again, within a claim (a round may have emptied one)
  if QD.win then QD.level = QD.least() end
end
function QD.held_back(h)
  if not QD.win or not QD.level then return false end
  local hd = QD.head(h)
  if not hd or hd <= QD.level + QD.win then
    redis.call('HDEL', K.HHELD, h)
    return false
  end
  local since = tonumber(redis.call('HGET', K.HHELD, h))
  if since and now - since >= QD.max_hold then -- (served once, then held again if still deep)
    redis.call('HDEL', K.HHELD, h)
    return false
  end
  if not since then redis.call('HSET', K.HHELD, h, nows) end
  redis.call('ZADD', K.READY, now + QD.hold, h)
  count('held_deep', 1)
  return true
end

-- Whether h's queue is empty after q_pop answered left.
local function q_empty(h, left)
  if left < 0 then return redis.call('LLEN', qkey(h)) == 0 end
  return left == 0
end

-- Puts e at the front of h's queue.
local function q_push_front(h, e)
  local lk = qkey(h)
  local head = redis.call('LINDEX', lk, 0)
  if head then
    QD.move(head, e)
    redis.call('LPUSH', lk, e)
    return
  end
  local a, c, packed = host_read(h)
  QD.move(c > 0 and packed or nil, e)
  a = a or legacy_admitted(h)
  if c >= PACK then -- into a list: e, then the packed ones
    redis.call('RPUSH', lk, e, unpack(unpack_head(packed, c, c, {})))
    redis.call('HSET', K.HOSTS, h, str(a))
  elseif c > 0 then
    redis.call('HSET', K.HOSTS, h, host_value(a, c + 1, e .. '\n' .. packed))
  else
    redis.call('HSET', K.HOSTS, h, host_value(a, 1, e))
  end
end

-- Appends q[1..#q] to h's queue, after putting fq[1..] (may be nil) ahead
-- of it in their order, and counts them all admitted (v: h's field, read
-- before: false if none).  Returns h's new field, for the caller to write,
-- and the queue's length before.
local function q_append(h, q, v, fq)
  local lk, nq = qkey(h), #q
  local a, c, packed = host_read(h, v)
  a = a or legacy_admitted(h)
  if fq and #fq > 0 then -- (a seed of high priority: rare, so made simple)
    local nf, len = #fq, redis.call('LLEN', lk)
    if len > 0 then -- a list: fq pushed at its head, q at its tail
      QD.move(redis.call('LINDEX', lk, 0), fq[1])
      local rev = {}
      for j = nf, 1, -1 do rev[#rev + 1] = fq[j] end
      for j = 1, nf, 4000 do redis.call('LPUSH', lk, unpack(rev, j, math.min(j + 3999, nf))) end
      for j = 1, nq, 4000 do redis.call('RPUSH', lk, unpack(q, j, math.min(j + 3999, nq))) end
      return str(a + nf + nq), len
    end
    local all = {}
    for j = 1, nf do all[j] = fq[j] end
    if c > 0 then
      for _, e in ipairs(unpack_head(packed, c, c, {})) do all[#all + 1] = e end
    end
    for j = 1, nq do all[#all + 1] = q[j] end
    QD.move(c > 0 and packed or nil, fq[1])
    if #all <= PACK then return host_value(a + nf + nq, #all, table.concat(all, '\n')), c end
    for j = 1, #all, 4000 do redis.call('RPUSH', lk, unpack(all, j, math.min(j + 3999, #all))) end
    return str(a + nf + nq), c
  end
  if c == 0 then -- a list, if there is one, is the queue: push onto it (RPUSHX: 0 if none)
    local len = redis.call('RPUSHX', lk, unpack(q, 1, math.min(4000, nq)))
    if len > 0 then
      for j = 4001, nq, 4000 do redis.call('RPUSH', lk, unpack(q, j, math.min(j + 3999, nq))) end
      return str(a + nq), len - math.min(4000, nq)
    end
    if nq > 0 then QD.move(nil, q[1]) end -- (an empty queue: q[1] is its head now)
  end
  if c + nq <= PACK then
    local add = table.concat(q, '\n')
    if c > 0 then add = packed .. '\n' .. add end
    return host_value(a + nq, c + nq, add), c
  end
  if c > 0 then redis.call('RPUSH', lk, unpack(unpack_head(packed, c, c, {}))) end
  for j = 1, nq, 4000 do redis.call('RPUSH', lk, unpack(q, j, math.min(j + 3999, nq))) end
  return str(a + nq), c
end

-- Empties h's queue (its host is blocked: base.lua's blocked), keeping its
-- admitted count; counts the entries dropped as no longer queued but
-- blocked.  Returns how many it dropped.
local function q_drop(h)
  local lk = qkey(h)
  local n = redis.call('LLEN', lk)
  if n > 0 then -- (freed in the background: a list may be long)
    QD.move(redis.call('LINDEX', lk, 0), nil)
    redis.call('UNLINK', lk)
  end
  local a, c, packed = host_read(h)
  if c > 0 then
    QD.move(packed, nil)
    redis.call('HSET', K.HOSTS, h, str(a))
  end
  n = n + c
  count('queued', -n); count('blocked', n)
  return n
end
