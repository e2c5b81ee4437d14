-- claim.lua -- claims up to max URLs for a worker: renews its lease, reclaims
-- expired workers' URLs, promotes due retries, then takes URLs from the ready
-- hosts (per-host room and delay) into the worker's lease hash: a lease is
-- the field "ORIGIN\tSEQ" (stored(): the origin of the queue it came from)
-- with the entry as its value.
-- ARGV and reply: the layout above build_claim() in frontier/claim.c; the
-- crawl's control hash (base.lua: read_control) may override per_host,
-- delay and max_delay, and a paused crawl (3) or a worker that drains (4)
-- gets its lease renewed and nothing claimed.
--
-- A table costs Redis about 2k instructions to make and fill, so a claim
-- reuses the same ones from call to call (functions never run two at a
-- time), each read up to its count only: REP is the reply, its entries from
-- REP[E + 1] on, RUNS[r] the host that gave RN[r] of them in a row.

local NONE = {} -- never written
local E = 5 -- the reply's entries start after its E fixed elements
local REP, RUNS, RN, HS = {}, {}, {}, {}
local HINF, HNX, ZREM, ZBACK, SEEN = {}, {}, {}, {}, {}
local n, nruns -- entries claimed, runs

-- The keys a claim touches besides the queues and its lease hash.
local CLAIM_KEYS = {'WORKERS', 'READY', 'FRESH', 'HINFLIGHT', 'HNEXT', 'HDELAY', 'HOSTS', 'HADMIT',
                    'QDEPTH', 'HHELD', 'STATS', 'DELAYED', 'SEQ', 'CONTROL', 'HPACE', 'HOSTIP'}

-- Up to lim hosts to claim from: the ready ones due now, then the first
-- ones of P fresh (wake.lua: wake_new), the last nf of them.  Reads only.
local function ready_and_fresh(lim)
  local hosts = redis.call('ZRANGEBYSCORE', K.READY, '-inf', nows, 'LIMIT', '0', str(lim))
  local nf = 0
  if #hosts < lim then
    local fr = redis.call('LRANGE', K.FRESH, 0, lim - #hosts - 1)
    nf = #fr
    for i = 1, nf do hosts[#hosts + 1] = fr[i] end
  end
  return hosts, nf
end

-- ready_and_fresh(lim) (hosts, nf: read before, or nil), up to the first
-- host whose queue is not a list (stop: true), which this round leaves out
-- (and the rounds after: the next claim's first round names it).
local function round_hosts(lim, hosts, nf)
  if not hosts then hosts, nf = ready_and_fresh(lim) end
  for x = 1, #hosts do
    if not queue_ok(hosts[x]) then
      local nready = #hosts - nf
      for y = #hosts, x, -1 do hosts[y] = nil end
      if x <= nready then nf = 0 else nf = x - 1 - nready end
      return hosts, true, nf
    end
  end
  return hosts, false, nf
end

local ni, nx, nr, nb -- HINF, HNX, ZREM, ZBACK used in a round


-- Takes what host h (in flight inf, delay d) may give, up to room entries;
-- fresh: it came from P fresh.  Returns 1 if it gave something, else 0.
local function take_host(h, inf, d, per_host, room, fresh)
  local cap = host_cap(d, per_host)
  local take = cap - inf
  if take > room then take = room end
  local got, left = NONE, 0 -- (no table made for a host that gives nothing)
  if take > 0 then got, left = q_pop(h, take) end
  local ng = #got
  for j = 1, ng do REP[E + n + j] = got[j] end
  n = n + ng
  if ng > 0 then
    nruns = nruns + 1
    RUNS[nruns], RN[nruns] = h, ng
    HINF[ni + 1], HINF[ni + 2], ni = h, str(inf + ng), ni + 2
    if d > 0 then HNX[nx + 1], HNX[nx + 2], nx = h, string.format('%d', now + d), nx + 2 end
  end
  -- (a host of d > 0 that gave its one URL always leaves: inf + ng >= 1)
  if ng == 0 or ng < take or inf + ng >= cap or q_empty(h, left) then
    ZREM[nr + 1], nr = h, nr + 1
  elseif fresh then -- it stays claimable: from fresh into ready
    ZBACK[nb + 1], ZBACK[nb + 2], nb = nows, h, nb + 2
  end
  if ng > 0 then return 1 end
  return 0
end

-- One round over the ready and fresh hosts: takes up to max - n entries from at most
-- lim hosts (pre, prenf: the round's hosts if read before), updating the hosts'
-- in-flight counts, next times and places in ready.  A host of delay d > 0
-- (host_delay) gives one URL and leaves ready until it is back (finish,
-- retry, release); one of d = 0 gives up to per_host in flight.  Returns
-- how many hosts gave something, or nil when none was ready; and whether
-- to stop there.
local function take_round(lim, max, per_host, delay, maxd, pre, prenf)
  local hosts, stop, nf = round_hosts(lim, pre, prenf)
  if #hosts == 0 then return nil end
  if next(SEEN) then SEEN = {} end -- a round that failed half-way left some
  QD.relevel() -- (queue.lua; the rounds before may have emptied a level)
  local infs = redis.call('HMGET', K.HINFLIGHT, unpack(hosts))
  local owns = redis.call('HMGET', K.HDELAY, unpack(hosts))
  local nexts = nf > 0 and redis.call('HMGET', K.HNEXT, unpack(hosts)) or NONE
  local gave, f0, nfd = 0, #hosts - nf, 0 -- hosts[f0 + 1..]: fresh's; nfd taken off it
  ni, nx, nr, nb = 0, 0, 0, 0
  for x, h in ipairs(hosts) do
    local room = max - n
    if room <= 0 then break end
    local fresh = x > f0
    if fresh then nfd = x - f0 end
    if BLK_ANY and blocked(h) then -- (base.lua: read by the claim) its queue goes, and h with it
      if not SEEN[h] then SEEN[h] = true; q_drop(h) end
      if not fresh then ZREM[nr + 1], nr = h, nr + 1 end
    elseif not fresh or not (SEEN[h] or num(nexts[x]) > now) then
      SEEN[h] = true
      local d, inf = host_delay(delay, maxd, owns[x]), num(infs[x])
      -- (a host at its cap leaves ready in take_host, held or not)
      if inf >= host_cap(d, per_host) or not QD.held_back(h) then
        gave = gave + take_host(h, inf, d, per_host, room, fresh)
      end
    elseif not SEEN[h] and q_len(h) > 0 then
      -- fresh is a hint (wake_new): a host with a next time ahead goes into
      -- ready at it; one seen in this round already is only taken off fresh
      redis.call('ZADD', K.READY, 'NX', nexts[x], h)
    end
  end
  for x = 1, #hosts do SEEN[hosts[x]] = nil end -- (empty between rounds: the VM keeps it)
  if ni > 0 then redis.call('HSET', K.HINFLIGHT, unpack(HINF, 1, ni)) end
  if nx > 0 then redis.call('HSET', K.HNEXT, unpack(HNX, 1, nx)) end
  if nr > 0 then redis.call('ZREM', K.READY, unpack(ZREM, 1, nr)) end
  if nb > 0 then redis.call('ZADD', K.READY, 'NX', unpack(ZBACK, 1, nb)) end
  if nfd > 0 then redis.call('LTRIM', K.FRESH, nfd, -1) end
  return gave, stop
end

-- Leases the n entries claimed to worker, numbered b * 10000 + i (b from
-- the claim counter), and completes the reply: its lease base, its runs
-- (with ipms > 0, each with the address its host was last fetched from
-- and when, from P hostip: "MS IP" (finish.lua), or '' and 0 when there is
-- none younger than ipms).
local function store_leases(worker, news, ipms)
  local b = redis.call('INCR', K.SEQ)
  local bs, i, w, ips = tostring(b), 0, 2, nil
  if ipms > 0 then
    w, ips = 4, redis.call('HMGET', K.HOSTIP, unpack(RUNS, 1, nruns))
  end
  for r = 1, nruns do
    local h = RUNS[r] -- the run's leases: stored(h, seq), made in one concatenation
    for _ = 1, RN[r] do
      i = i + 1; HS[2 * i - 1] = h .. '\t' .. bs .. SUF[i]; HS[2 * i] = REP[E + i]
    end
    local o = E + n + w * (r - 1)
    REP[o + 1], REP[o + 2] = RUNS[r], RN[r]
    if ips then
      local ms, ip = string.match(ips[r] or '', '^(%d+) (%S+)$')
      -- (what finish.lua writes: a time of 13 digits, an address of at most 45 bytes)
      if not ms or #ms > 15 or #ip > 45 or now - tonumber(ms) > ipms or tonumber(ms) > now then
        ms, ip = '0', ''
      end
      REP[o + 3], REP[o + 4] = ip, ms
    end
  end
  REP[1], REP[2], REP[3], REP[4], REP[5] = 0, now, 0, b * 10000, nruns
  REP[E + n + w * nruns + 1] = news -- (base.lua: blocks_news)
  REP[E + n + w * nruns + 2] = nil -- the reply ends here
  local lk, nh = K.LEASE .. worker, 2 * n
  if n >= 16 and redis.call('OBJECT', 'ENCODING', lk) ~= 'hashtable' then -- see BIG
    HS[nh + 1], HS[nh + 2] = '~', BIG
    redis.call('HSET', lk, unpack(HS, 1, nh + 2))
    redis.call('HDEL', lk, '~')
  else
    redis.call('HSET', lk, unpack(HS, 1, nh))
  end
  count('claimed', n); count('queued', -n); count('inflight', n)
end

-- Nothing claimed: the reply says wait (and about how long) or done.
local function nothing_ready(news)
  local ready, fresh = redis.call('ZCARD', K.READY), redis.call('LLEN', K.FRESH)
  local delayed = redis.call('ZCARD', K.DELAYED)
  local inflight = num(redis.call('HGET', K.STATS, 'inflight'))
  local queued = num(redis.call('HGET', K.STATS, 'queued'))
  if ready == 0 and delayed == 0 and inflight <= 0 and queued <= 0 then
    -- done: the shard's enqueued counter in lease_base's place (the end of a
    -- crawl of several shards: frontier/claim.c)
    return {2, now, 0, num(redis.call('HGET', K.STATS, 'enqueued')), news}
  end
  local wait = 1000
  if ready == 0 then wait = 100 end
  if ready == 0 and delayed == 0 and queued <= 0 then wait = 20 end -- only in flight: soon
  for _, k in ipairs({K.READY, K.DELAYED}) do
    local r = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')
    if r[2] and tonumber(r[2]) - now < wait then wait = tonumber(r[2]) - now end
  end
  if fresh > 0 or wait < 1 then wait = 1 end -- (fresh: hosts the rounds did not reach)
  return {1, now, math.floor(wait), 0, news}
end

local function claim(_, ARGV)
  local worker, max, lease = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[7])
  -- the checks (types.lua), before the first write: the first round's hosts
  -- are these, or these and hosts whose queues reclaim and promote checked
  need_crawl() -- (types.lua) a crawl gone: nothing written
  need_keys(CLAIM_KEYS)
  need(K.LEASE .. worker, 'hash')
  need(K.WORKER .. worker, 'hash')
  read_control() -- (base.lua) the crawl's overrides beat the worker's ARGV
  read_blocks() -- (base.lua) a blocked host's queue is dropped when its turn comes
  local per_host, delay = limit('per_host', tonumber(ARGV[4])), limit('delay', tonumber(ARGV[5]))
  QD.window(ARGV[9]) -- (queue.lua) the crawl order's window, if any
  local maxd = limit('max_delay', tonumber(ARGV[6]))
  -- per: URLs a ready host is expected to give (then what the last round's gave):
  -- every host fetched costs three reply elements, used or not
  local rounds, per = 0, math.min(per_host, 8)
  if delay > 0 then per = 1 end
  local ws, due = expired_workers(worker), due_retries()
  local held = control_stop(worker) -- paused or draining: the lease renewed, nothing claimed
  local first, firstnf = NONE, 0
  if held == 0 then first, firstnf = ready_and_fresh(math.ceil(max / per)) end
  for _, h in ipairs(first) do need_queue(h) end
  if #ws > 0 or #due > 0 then first = nil end -- they may wake hosts: read again
  redis.call('ZADD', K.WORKERS, now + lease, worker)
  reclaim(per_host, ws, delay, maxd)
  promote(per_host, due, delay, maxd)
  local news = blocks_news(ARGV[8] or '') -- (read_blocks ran in the checks)
  if held == 4 then return {4, now, 0, 0, news} end
  if held == 3 then return {3, now, 250, 0, news} end
  n, nruns = 0, 0
  while n < max and rounds < 32 do
    rounds = rounds + 1
    local took = n
    local gave, stop = take_round(math.ceil((max - n) / per), max, per_host, delay, maxd, first,
                                  firstnf)
    first = nil
    if not gave then break end
    if gave > 0 then per = math.max(1, math.floor((n - took) / gave)) end
    if stop then break end
  end
  if n == 0 then return nothing_ready(news) end
  store_leases(worker, news, tonumber(ARGV[10] or '0'))
  return REP
end

register('claim', claim)
