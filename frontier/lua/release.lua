-- release.lua -- hands leased URLs back to the front of their queues; a URL
-- handed back may have reached its server, so its host is spaced as after a
-- fetch (push_back).
-- ARGV and reply: the layout above build_release() in frontier/retry.c.

local RELEASE_KEYS = {'READY', 'HINFLIGHT', 'HNEXT', 'HDELAY', 'HOSTS', 'QDEPTH', 'HADMIT', 'STATS',
                      'CONTROL', 'HPACE'}

local function release(_, ARGV)
  local per_host, delay, maxd = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  local FIRST = 5 -- ARGV[FIRST]: the first item's worker
  local lost, hs, es = 0, {}, {}
  need_crawl() -- (types.lua) a crawl gone: nothing written
  need_keys(RELEASE_KEYS) -- (types.lua) before the first write
  for i = FIRST, #ARGV - 1, 2 do
    need(K.LEASE .. ARGV[i], 'hash')
    need_queue((unstore(ARGV[i + 1])))
  end
  read_control() -- (base.lua) the crawl's overrides beat the worker's ARGV
  per_host, delay = limit('per_host', per_host), limit('delay', delay)
  maxd = limit('max_delay', maxd)
  for i = #ARGV - 1, FIRST, -2 do -- from the last item: each goes in front of the ones after
    local lk, field = K.LEASE .. ARGV[i], ARGV[i + 1]
    local e = redis.call('HGET', lk, field)
    if e then
      redis.call('HDEL', lk, field)
      hs[#hs + 1] = unstore(field); es[#es + 1] = e
    else
      lost = lost + 1
    end
  end
  push_back(hs, es, per_host, true, delay, maxd) -- (each host spaced: it may have been fetched)
  local n = #es
  count('inflight', -n); count('queued', n); count('released', n)
  return {lost, n}
end

register('release', release)
