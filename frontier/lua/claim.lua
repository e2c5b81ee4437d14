-- claim.lua -- claims up to max URLs for a worker: renews its lease, reclaims
-- expired workers' URLs, promotes due retries, then takes URLs from the ready
-- hosts (per-host room and delay) into the worker's lease hash: a lease is
-- the field "ORIGIN\tSEQ" (stored(): the origin of the queue it came from)
-- with the entry as its value.
-- ARGV and reply: the layout above build_claim() in frontier/frontier.c.

local NONE = {} -- never written
local E = 5 -- the reply's entries start after its E fixed elements

-- One round over the ready hosts: takes up to max - c.n entries from at
-- most lim hosts into c.rep (c.runs[r] gave c.rn[r] of them in a row),
-- updating the hosts' in-flight counts, next times and places in ready.
-- Returns how many hosts gave something, or nil when none was ready.
local function take_round(c, lim, max, per_host, delay, maxd)
  local hosts = redis.call('ZRANGEBYSCORE', K.READY, '-inf', nows, 'LIMIT', '0', str(lim))
  if #hosts == 0 then return nil end
  local infs = redis.call('HMGET', K.HINFLIGHT, unpack(hosts))
  local owns = redis.call('HMGET', K.HDELAY, unpack(hosts))
  local hinf, hnx, zrem, zadd, gave = {}, {}, {}, {}, 0
  local rep, runs, n = c.rep, c.runs, c.n
  for x, h in ipairs(hosts) do
    local room = max - n
    if room <= 0 then break end
    local inf, own = num(infs[x]), num(owns[x])
    if own > maxd then own = maxd end
    local d = delay
    if own > d then d = own end
    local take = per_host - inf
    if d > 0 and take > 1 then take = 1 end
    if take > room then take = room end
    local got = NONE -- (no table made for a host that gives nothing)
    if take > 0 then got = redis.call('LPOP', qkey(h), str(take)) or NONE end
    for j = 1, #got do rep[E + n + j] = got[j] end
    n = n + #got
    if #got > 0 then
      gave = gave + 1
      runs[#runs + 1] = h; c.rn[#runs] = #got
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
  c.n = n
  if #hinf > 0 then redis.call('HSET', K.HINFLIGHT, unpack(hinf)) end
  if #hnx > 0 then redis.call('HSET', K.HNEXT, unpack(hnx)) end
  if #zrem > 0 then redis.call('ZREM', K.READY, unpack(zrem)) end
  if #zadd > 0 then redis.call('ZADD', K.READY, unpack(zadd)) end
  return gave
end

-- Leases the c.n entries claimed to worker, numbered b * 10000 + i (b from
-- the claim counter), and completes the reply with its lease base and runs.
local function store_leases(c, worker)
  local n, rep = c.n, c.rep
  local b = redis.call('INCR', K.SEQ)
  local bs, hs, i = tostring(b), {}, 0
  for r, h in ipairs(c.runs) do
    local th = h .. '\t' -- the run's leases: stored(h, seq)
    for _ = 1, c.rn[r] do i = i + 1; hs[2 * i - 1] = th .. bs .. SUF[i]; hs[2 * i] = rep[E + i] end
    rep[E + n + 2 * r - 1] = h; rep[E + n + 2 * r] = c.rn[r]
  end
  rep[4], rep[5] = b * 10000, #c.runs
  local lk = K.LEASE .. worker
  if n >= 16 and redis.call('OBJECT', 'ENCODING', lk) ~= 'hashtable' then -- see BIG
    hs[2 * n + 1] = '~'; hs[2 * n + 2] = BIG
    redis.call('HSET', lk, unpack(hs))
    redis.call('HDEL', lk, '~')
  else
    redis.call('HSET', lk, unpack(hs))
  end
  count('claimed', n); count('queued', -n); count('inflight', n)
end

-- Nothing claimed: the reply says wait (and about how long) or done.
local function nothing_ready()
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

local function claim(_, ARGV)
  local worker = ARGV[2]
  local max, per_host = tonumber(ARGV[3]), tonumber(ARGV[4])
  local delay, maxd, lease = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
  redis.call('ZADD', K.WORKERS, now + lease, worker)
  reclaim(per_host)
  promote(per_host)
  local c = {rep = {0, now, 0, 0, 0}, runs = {}, rn = {}, n = 0}
  -- per: URLs a ready host is expected to give (then what the last round's gave):
  -- every host fetched costs three reply elements, used or not
  local rounds, per = 0, math.min(per_host, 8)
  if delay > 0 then per = 1 end
  while c.n < max and rounds < 32 do
    rounds = rounds + 1
    local took = c.n
    local gave = take_round(c, math.ceil((max - c.n) / per), max, per_host, delay, maxd)
    if not gave then break end
    if gave > 0 then per = math.max(1, math.floor((c.n - took) / gave)) end
  end
  if c.n == 0 then return nothing_ready() end
  store_leases(c, worker)
  return c.rep
end

register('claim', claim)
