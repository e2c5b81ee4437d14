-- requeue.lua -- URLs that go back to the front of their queues: the leases
-- of expired workers (reclaim), the retries that are due (promote) and the
-- URLs a worker hands back (release.lua), all through push_back.

-- Pushes stored entries (a lease's value, a delayed retry: stored() in
-- base.lua) back to the front of the queue of their origin, each in front of
-- the ones before it (the last one ends up first), and wakes their hosts;
-- leased: they come from leases, so their hosts' in-flight counts drop.
local function push_back(vals, per_host, leased)
  local hosts, seen = {}, {}
  for _, v in ipairs(vals) do
    local h, e = unstore(v)
    redis.call('LPUSH', qkey(h), e)
    if leased then unlease(h) end
    note_host(hosts, seen, h)
  end
  for _, h in ipairs(hosts) do wake(h, per_host, true) end
end

-- Hands the leases of expired workers back to the front of their queues.
local function reclaim(per_host)
  local ws = redis.call('ZRANGEBYSCORE', K.WORKERS, '-inf', '(' .. now, 'LIMIT', 0, 16)
  local n = 0
  for _, w in ipairs(ws) do
    local lk = K.LEASE .. w
    local kv, vals = redis.call('HGETALL', lk), {}
    for i = 2, #kv, 2 do vals[#vals + 1] = kv[i] end
    push_back(vals, per_host, true)
    n = n + #vals
    redis.call('DEL', lk, K.WORKER .. w)
    redis.call('ZREM', K.WORKERS, w)
  end
  count('inflight', -n); count('queued', n); count('reclaimed', n)
  return n
end

-- Due retries go to the front of their queues.
local function promote(per_host)
  local due = redis.call('ZRANGEBYSCORE', K.DELAYED, '-inf', now, 'LIMIT', 0, 256)
  if #due == 0 then return end
  push_back(due, per_host, false)
  redis.call('ZREM', K.DELAYED, unpack(due))
  count('queued', #due)
end
