-- requeue.lua -- URLs that go back to the front of their queues: the leases
-- of expired workers (reclaim), the retries that are due (promote) and the
-- URLs a worker hands back (release.lua), all through push_back.

-- Pushes entries es[i] back to the front of the queues of their origins
-- hs[i] (read from where they were stored), each in front of the ones
-- before it (the last one ends up first), and wakes their hosts; leased:
-- they come from leases, so their hosts' in-flight counts drop and, a
-- leased URL having maybe reached its server, each host's next claim waits
-- its delay from now (space_hosts).  delay, maxd: the crawl's delay and its
-- cap on a host's own (host_delay); nil when the caller does not know them:
-- no spacing then, and the hosts woken up to per_host.
local function push_back(hs, es, per_host, leased, delay, maxd)
  local hosts, seen = {}, {}
  for x, h in ipairs(hs) do
    q_push_front(h, es[x])
    if leased then unlease(h) end
    note_host(hosts, seen, h)
  end
  local ds = delay and host_delays(hosts, delay, maxd)
  if ds and leased then space_hosts(hosts, ds) end
  for x, h in ipairs(hosts) do wake(h, ds and host_cap(ds[x], per_host) or per_host, true) end
end

-- Hands the leases of expired workers ws (expired_workers) back to the
-- front of their queues (delay, maxd: as push_back's).
local function reclaim(per_host, ws, delay, maxd)
  local n = 0
  for _, w in ipairs(ws) do
    local lk = K.LEASE .. w
    local kv, hs, es = redis.call('HGETALL', lk), {}, {}
    for i = 1, #kv, 2 do
      hs[#hs + 1] = unstore(kv[i]) -- the lease's field: stored(origin, seq)
      es[#es + 1] = kv[i + 1]
    end
    push_back(hs, es, per_host, true, delay, maxd)
    n = n + #es
    redis.call('DEL', lk, K.WORKER .. w)
    redis.call('ZREM', K.WORKERS, w)
  end
  count('inflight', -n); count('queued', n); count('reclaimed', n)
  return n
end

-- Due retries (due_retries) go to the front of their queues (delay, maxd:
-- as push_back's).
local function promote(per_host, due, delay, maxd)
  if #due == 0 then return end
  local hs, es = {}, {}
  for x, v in ipairs(due) do hs[x], es[x] = unstore(v) end -- stored(origin, entry)
  push_back(hs, es, per_host, false, delay, maxd)
  redis.call('ZREM', K.DELAYED, unpack(due))
  count('queued', #due)
end
