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

local function wake_new(hs, per_host) -- hosts with a queue: into ready if room (NX)
  for a = 1, #hs, 2000 do
    local b = math.min(a + 1999, #hs)
    local inf = redis.call('HMGET', K.HINFLIGHT, unpack(hs, a, b))
    local nx = redis.call('HMGET', K.HNEXT, unpack(hs, a, b))
    local za = {}
    for j = a, b do
      local x = j - a + 1
      if num(inf[x]) < per_host then
        local t = nx[x]
        if num(t) < now then t = nows end
        za[#za + 1] = t; za[#za + 1] = hs[j]
      end
    end
    if #za > 0 then redis.call('ZADD', K.READY, 'NX', unpack(za)) end
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
