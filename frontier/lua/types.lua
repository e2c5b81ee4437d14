-- types.lua -- every function checks the types of the keys it will touch
-- before its first write, since Redis does not roll back a function that
-- fails half-way: a key of another type fails the call with
--   WRONGTYPE <prefix>seq is a list, expected a string
-- and nothing written.  A check is one O(1) length command (LLEN, HLEN,
-- ZCARD, SCARD, STRLEN) under redis.pcall: a number (no table made) for a
-- key of that type or an absent one, an error for any other type; TYPE
-- runs only to name the type in the message (measured: bench/frontier.md).
-- The crawl-wide keys a function touches are listed once in its file; the
-- ones it learns from its arguments or from Redis (q:ORIGIN, lease:WORKER,
-- the Bloom blocks) are checked as it learns them, before any write.

local LEN = {string = 'STRLEN', list = 'LLEN', hash = 'HLEN', zset = 'ZCARD', set = 'SCARD'}
local QOK = {} -- the origins whose queue this call checked: QOK[origin] = true

local function is_type(key, t) return type(redis.pcall(LEN[t], key)) ~= 'table' end

local function wrong_type(key, t)
  local got = redis.call('TYPE', key)['ok']
  error({err = 'WRONGTYPE ' .. key .. ' is a ' .. got .. ', expected a ' .. t})
end

local function need(key, t)
  if not is_type(key, t) then wrong_type(key, t) end
end

-- true while the crawl is in Redis: its shard's Bloom filter (the filter's
-- meta hash, bloom/), which every crawl has from its creation and `crawler
-- reset` deletes first.
local function crawl_there() return redis.call('EXISTS', K.SEEN .. ':meta') == 1 end

-- A call on a crawl that is gone (reset, FLUSHALL, a Redis restarted
-- without its data) writes nothing, which would re-create keys of a crawl
-- being deleted, and fails with
--   CRAWLGONE <prefix>: the crawl's data is gone from Redis
local function need_crawl()
  if not crawl_there() then
    error({err = 'CRAWLGONE ' .. P .. ": the crawl's data is gone from Redis"})
  end
end

-- Starts a call's checks: the keys K[id] of ids, each of its keys.def type.
local function need_keys(ids)
  QOK = {}
  for i = 1, #ids do
    local id = ids[i]
    need(K[id], KEY_TYPE[id])
  end
end

-- true if h's queue is a list or absent (checked once a call).
local function queue_ok(h)
  if QOK[h] then return true end
  if not is_type(qkey(h), 'list') then return false end
  QOK[h] = true
  return true
end

local function need_queue(h)
  if not queue_ok(h) then wrong_type(qkey(h), 'list') end
end

-- KEYS[3..]: the Bloom filter's blocks of an offering call (strings), and
-- for a filter that grows the two meta hashes after them.
local function need_blocks(KEYS)
  local s, last = LAYERS.st, #KEYS
  if s then
    last = s.m - 1
    need(KEYS[s.m], 'hash'); need(KEYS[s.m + 1], 'hash')
  end
  for i = 3, last do need(KEYS[i], 'string') end
end

-- The queues of the origins of the link section at ARGV[i] (its layout:
-- above fr_offer_section in frontier/offer.c, read as offer_links reads
-- it; k < 0: the module's layout).  Returns the index after the section.
local function need_section(ARGV, i, k)
  local w, tail = 2 + k + LAYERS.xw, 0
  if k < 0 then w, tail = 2 + LAYERS.xw, 1 end
  local nruns = tonumber(ARGV[i]); i = i + 1
  for _ = 1, nruns do
    local n = tonumber(ARGV[i + 1])
    i = i + 2
    for o = i + 1, i + n * w - 1, w do need_queue(ARGV[o]) end -- a link: entry, origin, ...
    i = i + n * w + tail
  end
  return i
end

-- The workers whose lease expired (at most 16, never self), for reclaim:
-- their lease hashes and the queues their leases go back to checked.
local function expired_workers(self)
  local all = redis.call('ZRANGEBYSCORE', K.WORKERS, '-inf', '(' .. now, 'LIMIT', 0, 17)
  local ws = {}
  for _, w in ipairs(all) do
    if w ~= self and #ws < 16 then
      local lk = K.LEASE .. w
      need(lk, 'hash')
      for _, field in ipairs(redis.call('HKEYS', lk)) do need_queue((unstore(field))) end
      ws[#ws + 1] = w
    end
  end
  return ws
end

-- The retries that are due (at most 256), for promote: their queues checked.
local function due_retries()
  local due = redis.call('ZRANGEBYSCORE', K.DELAYED, '-inf', now, 'LIMIT', 0, 256)
  for _, v in ipairs(due) do need_queue((unstore(v))) end
  return due
end
