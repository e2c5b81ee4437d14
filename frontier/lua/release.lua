-- release.lua -- hands leased URLs back to the front of their queues.
-- ARGV and reply: the layout above build_release() in frontier/frontier.c.

local function release(_, ARGV)
  local per_host, FIRST = tonumber(ARGV[2]), 3 -- ARGV[FIRST]: the first item's worker
  local lost, vals = 0, {}
  for i = #ARGV - 1, FIRST, -2 do -- from the last item: each goes in front of the ones after
    local lk, token = K.LEASE .. ARGV[i], ARGV[i + 1]
    local v = redis.call('HGET', lk, token)
    if v then
      redis.call('HDEL', lk, token)
      vals[#vals + 1] = v
    else
      lost = lost + 1
    end
  end
  push_back(vals, per_host, true)
  local n = #vals
  count('inflight', -n); count('queued', n); count('released', n)
  return {lost, n}
end

register('release', release)
