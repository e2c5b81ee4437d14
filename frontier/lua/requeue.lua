-- requeue.lua -- URLs that go back to the front of their queues: the leases
-- of expired workers (reclaim) and the retries that are due (promote).  Run
-- by claim and heartbeat before anything else.

-- Hands the leases of expired workers back to the front of their queues.
local function reclaim(per_host)
  local ws = redis.call('ZRANGEBYSCORE', K.WORKERS, '-inf', '(' .. now, 'LIMIT', 0, 16)
  local n = 0
  for _, w in ipairs(ws) do
    local lk = K.LEASE .. w
    local kv = redis.call('HGETALL', lk)
    local hosts, seen = {}, {}
    for i = 2, #kv, 2 do
      local _, _, u = parse(kv[i])
      local h = origin(u)
      redis.call('LPUSH', qkey(h), kv[i])
      unlease(h)
      note_host(hosts, seen, h)
      n = n + 1
    end
    redis.call('DEL', lk, K.WORKER .. w)
    redis.call('ZREM', K.WORKERS, w)
    for _, h in ipairs(hosts) do wake(h, per_host, true) end
  end
  count('inflight', -n); count('queued', n); count('reclaimed', n)
  return n
end

-- Due retries go to the front of their queues.
local function promote(per_host)
  local due = redis.call('ZRANGEBYSCORE', K.DELAYED, '-inf', now, 'LIMIT', 0, 256)
  if #due == 0 then return end
  local hosts, seen = {}, {}
  for _, e in ipairs(due) do
    local _, _, u = parse(e)
    local h = origin(u)
    redis.call('LPUSH', qkey(h), e)
    note_host(hosts, seen, h)
  end
  redis.call('ZREM', K.DELAYED, unpack(due))
  count('queued', #due)
  for _, h in ipairs(hosts) do wake(h, per_host, true) end
end
