-- heartbeat.lua -- renews a worker's lease and heartbeat record, reclaims
-- the URLs of expired workers, and says whether the crawl's Bloom filter is
-- still there and how many URLs were added to it.
-- ARGV and reply: the layout above build_heartbeat() in frontier/heartbeat.c.

local HEARTBEAT_KEYS = {'WORKERS', 'READY', 'HINFLIGHT', 'HNEXT', 'HDELAY', 'HOSTS', 'HADMIT',
                        'QDEPTH', 'STATS', 'CONTROL', 'HPACE'}

local function heartbeat(_, ARGV)
  local w, lease = ARGV[2], tonumber(ARGV[3])
  local host, pid, pages, rate, in_flight = ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]
  local wk = K.WORKER .. w
  -- a crawl gone (types.lua): nothing written, the worker told (0: its filter)
  if not crawl_there() then return {0, 0, 0, 0, 0} end
  need_keys(HEARTBEAT_KEYS) -- (types.lua) before the first write
  need(wk, 'hash')
  read_control() -- (base.lua) the crawl's overrides beat the worker's ARGV
  local per_host, delay = limit('per_host', tonumber(ARGV[4])), limit('delay', tonumber(ARGV[10]))
  local maxd = limit('max_delay', tonumber(ARGV[11]))
  local ws = expired_workers(w)
  redis.call('ZADD', K.WORKERS, now + lease, w)
  redis.call('HSETNX', wk, 'started', now)
  redis.call('HSET', wk, 'host', host, 'pid', pid, 'pages', pages, 'pages_per_s', rate,
    'in_flight', in_flight, 'last', now, 'lease_until', now + lease)
  local n = reclaim(per_host, ws, delay, maxd)
  -- what the worker checks at every heartbeat: the crawl's filter still
  -- there, how full it is (URLs added: seeds + new links), and whether it
  -- is to drain (4) or the crawl is paused (3) (control_stop, after the
  -- record's started is set)
  local c = redis.call('HMGET', K.STATS, 'seeds', 'new_links')
  return {n, 1, tonumber(c[1]) or 0, tonumber(c[2]) or 0, control_stop(w)}
end

register('heartbeat', heartbeat)
