-- base.lua -- what every function of the library starts from: the call's key
-- names and server clock, number formatting, counters, waking hosts.
--
-- Every registered function runs begin(ARGV) first: ARGV[1] is always the
-- key prefix P (frontier/keys.h), and every key a function touches is P
-- followed by a suffix of KEY (generated from frontier/keys.def), so all of
-- them share the {NAME} hash tag.  K holds those names with the prefix
-- (K.READY = P .. 'ready'; for a family, K.QUEUE .. origin).  KEYS[1] is
-- the guard key (never written: no call runs while a resharding splits the
-- shard's keys, frontier/calls.c), KEYS[2] the ready key (routing only)
-- and, in the functions that offer links, KEYS[3..] the Bloom block keys.
--
-- Invariants kept by every function:
--   - a host is in ready or in fresh (wake.lua: wake_new) iff its queue is
--     non-empty and its in-flight count is below its cap (host_cap:
--     per_host, or 1 when its delay is > 0); fresh may also hold hosts that
--     no longer qualify, which claims check and drop;
--     its score is >= hnext[host] (the earliest time of its next claim);
--     a call that does not know the host's delay (seed, offer, heartbeat)
--     may wake a host at its cap, and the next claim takes it out;
--   - stats.queued = sum of queue lengths (queue.lua), stats.inflight = sum of the lease
--     hashes' sizes = sum of hinflight;
--   - a queue entry is NUMS REST (parse below, frontier/entry.c): depth,
--     tries, redirect hops and the URL's path after its queue's origin; a
--     lease is the field "ORIGIN\tSEQ" of its worker's lease hash, holding
--     the entry; a delayed retry is "ORIGIN\tENTRY" (stored below).
-- Times are the Redis server's clock (TIME) in ms.

local byte, find, sub -- string's (an upvalue costs less than a global's field)
local P, now, nows -- the call's key prefix; server time in ms, as a number and a string
local K = {} -- KEY's suffixes with the prefix P
local SUF, NS, BIG
local legacy -- P hadmit exists (legacy_admitted): looked up once a call, nil at its start

local function begin(a)
  if a[1] ~= P then
    P = a[1]
    for id, suffix in pairs(KEY) do K[id] = P .. suffix end
  end
  if not SUF then -- (at FUNCTION LOAD only redis is visible: the rest is set up here)
    byte, find, sub = string.byte, string.find, string.sub
    SUF = {} -- lease numbers of a claim: its number .. SUF[i] (no float formatting)
    for i = 1, 9999 do SUF[i] = string.format('%04d', i) end
    -- A value longer than hash-max-listpack-value (64 unless an operator raised
    -- it) makes a hash a hash table at once: a lease hash of hundreds of fields
    -- left a listpack (Debian keeps up to 512) is searched linearly by every
    -- insert and every ack
    BIG = string.rep('~', 65)
    NS = {} -- small counts as strings: Redis 7.0 formats a Lua number with %.17g
    for i = 0, 9999 do NS[i] = tostring(i) end
  end
  legacy = nil
  local T = redis.call('TIME')
  now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
  nows = string.format('%d', now)
end

-- Registers fn as FN .. name; it runs after begin(ARGV).
local function register(name, fn, flags)
  redis.register_function{
    function_name = FN .. name,
    callback = function(keys, argv)
      begin(argv)
      return fn(keys, argv)
    end,
    flags = flags,
  }
end

local function num(v) return tonumber(v) or 0 end
local function str(n) return NS[n] or string.format('%d', n) end
-- A queue entry is NUMS REST (frontier/entry.c): REST the URL's path after
-- its queue's origin ("/a?b") or the whole URL; NUMS "" (all 0), "D", "D:T"
-- or "D:T:H".  An older crawl's "DEPTH TRIES [HOPS ]URL" is still read.
local function parse(e) -- depth, tries, REST, hops
  local d, t, u = string.match(e, '^(%d+) (%d+) (.+)$')
  if d then
    local hops, rest = string.match(u, '^(%d+) (.+)$')
    if hops then return tonumber(d), tonumber(t), rest, tonumber(hops) end
    return tonumber(d), tonumber(t), u, 0
  end
  local dd, r = string.match(e, '^(%d*)(.*)$')
  local tries, hops = 0, 0
  local tt, r2 = string.match(r, '^:(%d+)(.*)$')
  if tt then
    tries, r = tonumber(tt), r2
    local hh, r3 = string.match(r, '^:(%d+)(.*)$')
    if hh then hops, r = tonumber(hh), r3 end
  end
  return num(dd), tries, r, hops
end
local function entry(d, t, u, hops) -- parse's inverse (trailing zeros left out)
  if hops and hops > 0 then return str(d) .. ':' .. str(t) .. ':' .. str(hops) .. u end
  if t > 0 then return str(d) .. ':' .. str(t) .. u end
  if d > 0 then return str(d) .. u end
  return u
end
-- The whole URL of an entry's REST u queued under origin h.
local function full_url(h, u)
  if byte(u, 1) == 47 then return h .. u end -- '/'
  return u
end

-- An entry out of its queue keeps the origin of the queue it came from:
-- its lease is the field stored(origin, seq) of the lease hash, a delayed
-- retry the member stored(origin, entry).  The origin is the client's
-- (parser_url_origin, sent with every link and seed), and the claim keeps
-- the one of the queue it popped from; no function derives an origin from a
-- URL.  A string without a tab (a lease or retry stored before the origin
-- was) reads as origin '': its URL is still crawled, from the queue "q:".
local function stored(h, s) return h .. '\t' .. s end
local function unstore(v) -- origin, the rest
  local t = find(v, '\t', 1, true)
  if not t then return '', v end
  return sub(v, 1, t - 1), sub(v, t + 1)
end
local function qkey(h) return K.QUEUE .. h end
-- The URLs host h admitted as an older build counted them, in P hadmit (0
-- if none): a host of today's keeps its count in P hosts (queue.lua).
local function legacy_admitted(h)
  if legacy == nil then legacy = redis.call('EXISTS', K.HADMIT) == 1 end
  if legacy then return num(redis.call('HGET', K.HADMIT, h)) end
  return 0
end
local function count(field, n)
  if n ~= 0 then redis.call('HINCRBY', K.STATS, field, str(n)) end
end

-- What an operator set for the whole crawl, in P control (a hash written by
-- control.lua: `crawler pause|resume|drain|limits`): every function that
-- claims, finishes, seeds, retries, releases or beats reads it once, after
-- its type checks (its keys list CONTROL), so a change holds from the next
-- call of any worker on.  A limit set there beats the worker's own (its
-- ARGV, from its flags): limit(name, v).  paused: claims take nothing;
-- drain (a Redis time, ms): the workers registered at or before it stop
-- (control_stop).
local CTL_FIELDS = {'per_host', 'delay', 'max_delay', 'max_pages', 'max_pages_per_host',
                    'paused', 'drain'}
local CTL = {} -- the call's reading: CTL[field] a number, or nil when not set
local function read_control()
  local v = redis.call('HMGET', K.CONTROL, unpack(CTL_FIELDS))
  for i = 1, #CTL_FIELDS do CTL[CTL_FIELDS[i]] = tonumber(v[i]) end
end
local function limit(name, v) -- the crawl-wide override of limit name, else the worker's v
  local o = CTL[name]
  if o then return o end
  return v
end
-- What the claim and the heartbeat tell worker w besides: 4 it drains (a
-- drain came at or after its registration, worker:<w>'s started; no record:
-- it drains too), 3 the crawl is paused, 0 neither.  The caller checked
-- worker:<w> (a hash).
local function control_stop(w)
  if CTL.drain then
    local st = tonumber(redis.call('HGET', K.WORKER .. w, 'started'))
    if not st or st <= CTL.drain then return 4 end
  end
  if CTL.paused and CTL.paused ~= 0 then return 3 end
  return 0
end

-- The hosts and domains an operator blocked (`crawler block`, block.lua),
-- in P blocks: fields "h:NAME" (that host, any scheme and port) and
-- "d:NAME" (NAME and every name under it), and "~gen", a token every change
-- rewrites.  A call reads the token (one HGET) and the whole hash only when
-- the token differs from the one read before (the VM keeps the table
-- between calls; the prefix is part of the key: several crawls share a
-- server).  read_blocks() answers whether anything is blocked; then
-- blocked(origin) says whether that origin is.
local BLK_AT -- P .. '\n' .. the token of the reading in BLKH/BLKD
local BLKH, BLKD, BLK_ANY = {}, {}, false
local BLK_GEN, BLK_LIST = nil, {} -- the token (nil: none) and {token, field, ...}
local function read_blocks()
  local g = redis.pcall('HGET', K.BLOCKS, '~gen')
  if type(g) == 'table' then -- (a key of another type: before any write, as types.lua's checks)
    error({err = 'WRONGTYPE ' .. K.BLOCKS .. ' is a ' .. redis.call('TYPE', K.BLOCKS)['ok'] ..
           ', expected a hash'})
  end
  BLK_GEN = g
  if not g then BLK_AT, BLK_ANY = nil, false; return false end
  if BLK_AT == P .. '\n' .. g then return BLK_ANY end
  BLKH, BLKD, BLK_ANY, BLK_LIST = {}, {}, false, {g}
  local kv = redis.call('HGETALL', K.BLOCKS)
  for i = 1, #kv, 2 do
    local t, name = sub(kv[i], 1, 2), sub(kv[i], 3)
    if t == 'h:' or t == 'd:' then BLK_LIST[#BLK_LIST + 1] = kv[i] end
    if t == 'h:' then BLKH[name] = true; BLK_ANY = true end
    if t == 'd:' then BLKD[name] = true; BLK_ANY = true end
  end
  BLK_AT = P .. '\n' .. g
  return BLK_ANY
end
-- The host of an origin "scheme://host[:port]" ("[v6]" keeps its brackets).
local function origin_host(h)
  local s = find(h, '://', 1, true)
  if not s then return nil end
  local e = byte(h, s + 3) == 91 and find(h, ']', s + 3, true) or find(h, ':', s + 3, true)
  if e and byte(h, e) == 93 then return sub(h, s + 3, e) end
  if e then return sub(h, s + 3, e - 1) end
  return sub(h, s + 3)
end
-- What a worker that knows the list of token known ('' none) is told
-- after read_blocks: nil if that is the list, else {token, field, ...}
-- ({''}: nothing is blocked now).
local function blocks_news(known)
  if (BLK_GEN or '') == known then return nil end
  if not BLK_GEN then return {''} end
  return BLK_LIST
end
local function blocked(h) -- (after read_blocks answered true in this call)
  local host = origin_host(h)
  if not host then return false end
  if #host > 1 and byte(host, #host) == 46 then host = sub(host, 1, -2) end -- "example.com."
  if BLKH[host] then return true end
  local at = 1
  while true do -- the host, then each name it is under
    if BLKD[sub(host, at)] then return true end
    local d = find(host, '.', at, true)
    if not d then return false end
    at = d + 1
  end
end

-- Politeness as a server sees it.  A host's delay d is the crawl's delay or
-- the host's own (hdelay: robots Crawl-delay, capped at maxd), the larger.
-- With d > 0 the host has at most one request in flight (its cap, whatever
-- per_host says), and its next claim comes no sooner than d after that
-- request ended (finished, retried, released or reclaimed): the time
-- between a claim and its request reaching the server varies (robots.txt
-- first, a claim batch, a slow build), the end of a fetch comes after the
-- server saw it.  With d = 0, per_host in flight and no spacing.
local function host_delay(delay, maxd, own)
  own = num(own)
  if own > maxd then own = maxd end
  if own > delay then return own end
  return delay
end
local function host_cap(d, per_host)
  if d > 0 then return 1 end
  return per_host
end

-- Politeness that follows the server.  When the crawl's delay is > 0 (and
-- max_delay too), a host whose server is slow, or says so, waits longer:
-- P hpace holds, for such a host only, "W S": W the wait its recent
-- responses asked for (the client sends the time a request took times the
-- crawl's --delay-factor; W their running mean, weight 1/4 to the newest),
-- S a slowdown, doubled by each 429 or 503 (at most PACE_SLOW_MAX) and
-- lowered by one by each other response.  Its delay is then max(d, W) * S,
-- at most max_delay and never below d (host_delay's).  A host whose pace
-- comes back to d (W <= d, S = 1) leaves P hpace: fast hosts cost nothing.
-- P hslow mirrors it as a sorted set, host -> its delay, for `crawler
-- stats` (the slowest hosts).
local PACE_SLOW_MAX = 64
local function pace_of(v) -- P hpace's value: W, S (0, 1 when none)
  if not v then return 0, 1 end
  local w, sl = string.match(v, '^(%d+) (%d+)$')
  return num(w), math.max(1, num(sl))
end
local function paced(d, maxd, w, sl)
  local p = d
  if w > p then p = w end
  p = p * sl
  if p > maxd then p = maxd end
  if p < d then p = d end
  return p
end

-- The delays of hosts hs: ds[x] (host_delay, and the pace when the delay
-- is > 0: one HMGET of hdelay, none when maxd is 0, and one of hpace).
-- Also the delays without the pace, bases[x], and hpace's values, pv[x].
local function host_delays(hs, delay, maxd)
  local ds, bases = {}, {}
  if #hs == 0 then return ds, bases, {} end
  local owns = maxd > 0 and redis.call('HMGET', K.HDELAY, unpack(hs)) or {}
  local pv = (delay > 0 and maxd > 0) and redis.call('HMGET', K.HPACE, unpack(hs)) or {}
  for x = 1, #hs do
    local b = host_delay(delay, maxd, owns[x])
    bases[x] = b
    if pv[x] then ds[x] = paced(b, maxd, pace_of(pv[x])) else ds[x] = b end
  end
  return ds, bases, pv
end

-- A request to h ended: target the wait its duration asks for (0: none
-- known), slow: it answered 429 or 503.  Updates h's pace (v: its hpace
-- value, false when none) and answers h's delay from now on (b: its delay
-- without the pace).  Writes only for a host that is or was slow.
local function pace_note(h, v, b, maxd, target, slow)
  if b <= 0 or maxd <= 0 then return b end
  local w, sl = pace_of(v)
  if target > 0 then
    if w == 0 then w = target else w = math.floor((3 * w + target) / 4) end
  end
  if slow then sl = math.min(PACE_SLOW_MAX, sl * 2) elseif sl > 1 then sl = sl - 1 end
  local d = paced(b, maxd, w, sl)
  if w > b or sl > 1 then
    redis.call('HSET', K.HPACE, h, str(w) .. ' ' .. str(sl))
    redis.call('ZADD', K.HSLOW, d, h)
  elseif v then
    redis.call('HDEL', K.HPACE, h)
    redis.call('ZREM', K.HSLOW, h)
  end
  return d
end

-- Hosts hs whose request just ended, with their delays ds: each of d > 0
-- gets hnext = max(hnext, now + d + 1), and its score in ready (if there)
-- too.  (+ 1: now is the clock cut to the ms, and a host is claimable once
-- now >= its score, so now + d alone could come up to 1 ms before d.)
local function space_hosts(hs, ds)
  local sp, at = {}, {}
  for x = 1, #hs do if ds[x] > 0 then sp[#sp + 1] = hs[x]; at[#sp] = now + ds[x] + 1 end end
  if #sp == 0 then return end
  local nx, set, za = redis.call('HMGET', K.HNEXT, unpack(sp)), {}, {}
  for x = 1, #sp do
    if at[x] > num(nx[x]) then
      local t = string.format('%d', at[x])
      set[#set + 1] = sp[x]; set[#set + 1] = t
      za[#za + 1] = t; za[#za + 1] = sp[x]
    end
  end
  if #set > 0 then
    redis.call('HSET', K.HNEXT, unpack(set))
    redis.call('ZADD', K.READY, 'XX', 'GT', unpack(za))
  end
end
