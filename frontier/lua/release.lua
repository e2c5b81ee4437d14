-- release.lua -- hands leased URLs back to the front of their queues.
-- ARGV and reply: the layout above build_release() in frontier/frontier.c.

local function release(_, ARGV)
  local per_host, FIRST = tonumber(ARGV[2]), 3 -- ARGV[FIRST]: the first item's worker
  local lost, n = 0, 0
  local hosts, seen = {}, {}
  for i = #ARGV - 1, FIRST, -2 do -- from the last item: each goes in front of the ones after
    local lk, token = K.LEASE .. ARGV[i], ARGV[i + 1]
    local e = redis.call('HGET', lk, token)
    if e then
      redis.call('HDEL', lk, token)
      local _, _, u = parse(e)
      local h = origin(u)
      redis.call('LPUSH', qkey(h), e)
      unlease(h)
      note_host(hosts, seen, h)
      n = n + 1
    else
      lost = lost + 1
    end
  end
  count('inflight', -n); count('queued', n); count('released', n)
  for _, h in ipairs(hosts) do wake(h, per_host, true) end
  return {lost, n}
end

register('release', release)
