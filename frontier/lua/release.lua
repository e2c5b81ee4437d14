-- release.lua -- hands leased URLs back to the front of their queues.
-- ARGV: P per_host (worker token)... -> {lost, released}; the first item
-- ends up at the front of its queue

local function release(_, ARGV)
  local per_host = tonumber(ARGV[2])
  local lost, n = 0, 0
  local hosts, seen = {}, {}
  for i = #ARGV - 1, 3, -2 do
    local lk = K.LEASE .. ARGV[i]
    local e = redis.call('HGET', lk, ARGV[i + 1])
    if e then
      redis.call('HDEL', lk, ARGV[i + 1])
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
