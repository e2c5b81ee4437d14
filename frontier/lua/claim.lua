-- claim.lua -- claims up to max URLs for a worker: renews its lease, reclaims
-- expired workers' URLs, promotes due retries, then takes URLs from the ready
-- hosts (per-host room and delay) into the worker's lease hash, each stored
-- with the origin of the queue it came from.
-- ARGV and reply: the layout above build_claim() in frontier/frontier.c.

local function claim(_, ARGV)
  local worker = ARGV[2]
  local max, per_host = tonumber(ARGV[3]), tonumber(ARGV[4])
  local delay, maxd, lease = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
  redis.call('ZADD', K.WORKERS, now + lease, worker)
  reclaim(per_host)
  promote(per_host)
  local out, org, no = {}, {}, 0 -- the entries claimed and their origins
  -- per: URLs a ready host is expected to give (then what the last round's gave):
  -- every host fetched costs three reply elements, used or not
  local rounds, per = 0, math.min(per_host, 8)
  if delay > 0 then per = 1 end
  while no < max and rounds < 32 do
    rounds = rounds + 1
    local lim, took, gave = math.ceil((max - no) / per), no, 0
    local hosts = redis.call('ZRANGEBYSCORE', K.READY, '-inf', nows, 'LIMIT', '0', str(lim))
    if #hosts == 0 then break end
    local infs = redis.call('HMGET', K.HINFLIGHT, unpack(hosts))
    local owns = redis.call('HMGET', K.HDELAY, unpack(hosts))
    local hinf, hnx, zrem, zadd = {}, {}, {}, {}
    for x, h in ipairs(hosts) do
      local room = max - no
      if room <= 0 then break end
      local inf, own = num(infs[x]), num(owns[x])
      if own > maxd then own = maxd end
      local d = delay
      if own > d then d = own end
      local take = per_host - inf
      if d > 0 and take > 1 then take = 1 end
      if take > room then take = room end
      local got = {}
      if take > 0 then got = redis.call('LPOP', qkey(h), str(take)) or {} end
      for j = 1, #got do out[no + j] = got[j]; org[no + j] = h end
      no = no + #got
      if #got > 0 then
        gave = gave + 1
        hinf[#hinf + 1] = h; hinf[#hinf + 1] = str(inf + #got)
        if d > 0 then hnx[#hnx + 1] = h; hnx[#hnx + 1] = string.format('%d', now + d) end
      end
      if #got == 0 or #got < take or inf + #got >= per_host or
         redis.call('LLEN', qkey(h)) == 0 then
        zrem[#zrem + 1] = h
      elseif d > 0 then
        zadd[#zadd + 1] = string.format('%d', now + d); zadd[#zadd + 1] = h
      end
    end
    if #hinf > 0 then redis.call('HSET', K.HINFLIGHT, unpack(hinf)) end
    if #hnx > 0 then redis.call('HSET', K.HNEXT, unpack(hnx)) end
    if #zrem > 0 then redis.call('ZREM', K.READY, unpack(zrem)) end
    if #zadd > 0 then redis.call('ZADD', K.READY, unpack(zadd)) end
    if gave > 0 then per = math.max(1, math.floor((no - took) / gave)) end
  end
  local n = no
  if n > 0 then
    local b = redis.call('INCR', K.SEQ)
    local base, bs, hs = b * 10000, tostring(b), {}
    for i = 1, n do hs[2*i-1] = bs..SUF[i]; hs[2*i] = stored(org[i], out[i]) end
    local lk = K.LEASE .. worker
    if n >= 16 and redis.call('OBJECT', 'ENCODING', lk) ~= 'hashtable' then -- see BIG
      hs[2 * n + 1] = '~'; hs[2 * n + 2] = BIG
      redis.call('HSET', lk, unpack(hs))
      redis.call('HDEL', lk, '~')
    else
      redis.call('HSET', lk, unpack(hs))
    end
    count('claimed', n); count('queued', -n); count('inflight', n)
    return {0, now, 0, base, unpack(out)}
  end
  local ready = redis.call('ZCARD', K.READY)
  local delayed = redis.call('ZCARD', K.DELAYED)
  local inflight = num(redis.call('HGET', K.STATS, 'inflight'))
  local queued = num(redis.call('HGET', K.STATS, 'queued'))
  if ready == 0 and delayed == 0 and inflight <= 0 and queued <= 0 then
    return {2, now, 0, 0}
  end
  local wait = 1000
  if ready == 0 then wait = 100 end
  if ready == 0 and delayed == 0 and queued <= 0 then wait = 20 end -- only in flight: soon
  for _, k in ipairs({K.READY, K.DELAYED}) do
    local r = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')
    if r[2] and tonumber(r[2]) - now < wait then wait = tonumber(r[2]) - now end
  end
  if wait < 1 then wait = 1 end
  return {1, now, math.floor(wait), 0}
end

register('claim', claim)
