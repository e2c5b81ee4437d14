-- wake.lua -- hosts back into ready when they may be claimed again, and
-- the in-flight count a lease's end lowers (base.lua's invariants).

-- The host may be claimable again: back into ready (keeping its score).
-- per_host: the host's cap (host_cap) when the caller knows its delay.
local function wake(h, per_host, nonempty)
  if redis.call('ZSCORE', K.READY, h) then return end
  if num(redis.call('HGET', K.HINFLIGHT, h)) < per_host and
     (nonempty or q_len(h) > 0) then
    local nx = num(redis.call('HGET', K.HNEXT, h))
    if nx < now then nx = now end
    redis.call('ZADD', K.READY, 'NX', nx, h)
  end
end

-- Hosts hs with a queue: into ready if room (NX).  fresh: their queues were
-- empty before (offer_flush), so none is in ready or in P fresh, and one
-- with nothing in flight and no next time ahead goes to the tail of P
-- fresh instead: the hosts claimable now, in a list (a member of ready
-- costs about 150 bytes, one of fresh 40: bench/frontier_mem.md).  A claim
-- takes fresh hosts after the ready ones (claim.lua: round_hosts) and
-- checks each again, so fresh is a hint: a host there may meanwhile be in
-- ready too, have a next time ahead, or nothing queued.
local function wake_new(hs, per_host, fresh)
  for a = 1, #hs, 2000 do
    local b = math.min(a + 1999, #hs)
    local inf = redis.call('HMGET', K.HINFLIGHT, unpack(hs, a, b))
    local nx = redis.call('HMGET', K.HNEXT, unpack(hs, a, b))
    local za, fr = {}, {}
    for j = a, b do
      local x = j - a + 1
      if fresh and not inf[x] and num(nx[x]) <= now then
        fr[#fr + 1] = hs[j]
      elseif num(inf[x]) < per_host then
        local t = nx[x]
        if num(t) < now then t = nows end
        za[#za + 1] = t; za[#za + 1] = hs[j]
      end
    end
    if #za > 0 then redis.call('ZADD', K.READY, 'NX', unpack(za)) end
    if #fr > 0 then redis.call('RPUSH', K.FRESH, unpack(fr)) end
  end
end

local function wake_many(hs, per_host) -- hosts that may have become claimable
  local ne = {}
  for _, h in ipairs(hs) do if q_len(h) > 0 then ne[#ne + 1] = h end end
  wake_new(ne, per_host)
end

local function unlease(h)
  if redis.call('HINCRBY', K.HINFLIGHT, h, -1) <= 0 then redis.call('HDEL', K.HINFLIGHT, h) end
end

local function note_host(list, seen, h)
  if not seen[h] then seen[h] = true; list[#list + 1] = h end
end
