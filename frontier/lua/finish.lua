-- finish.lua -- finishes a group of pages, atomically: takes each page's
-- lease, counts the outcomes, offers the links, wakes the hosts.
-- ARGV and reply: the layout above build_finish() in frontier/finish.c.
--
-- One path for every group.  The client sums the group's counters as if
-- every lease held; a page whose lease is not found (expired and reclaimed,
-- or the same token twice) has its outcome taken back out of the sums.  So
-- the common case (one worker, every lease held) reads nothing per page but
-- its lease: one HMGET and one HDEL for the group.

-- The sums, in the order of ARGV[8..17].
local SUMS = {'fetched', 'bytes', 'status_2xx', 'status_3xx', 'status_4xx', 'status_5xx',
              'status_other', 'errors', 'seen_links', 'skipped_links'}
local SUM_FETCHED, SUM_BYTES, SUM_2XX, SUM_OTHER, SUM_ERRORS = 1, 2, 3, 7, 8
-- A page's arguments: PAGE + 0 its lease number, + 1 its worker, + 2 its
-- outcome, + 3 its link section's span, then the section.
local PG_TOKEN, PG_WORKER, PG_OUTCOME, PG_SPAN, PG_ARGS = 0, 1, 2, 3, 4

-- Takes the pages' leases, each token once: held[pg] is the value of page
-- pg's lease, nil if it was not found.  One HMGET and one HDEL per worker.
local function take_leases(ARGV, np, at, w0)
  local groups, order, held = {}, {}, {}
  for pg = 1, np do
    local w = ARGV[at[pg] + PG_WORKER]
    if w == '' then w = w0 end
    local g = groups[w]
    if not g then g = {}; groups[w] = g; order[#order + 1] = w end
    g[#g + 1] = pg
  end
  for _, w in ipairs(order) do
    local g, toks, once, del = groups[w], {}, {}, {}
    for x, pg in ipairs(g) do toks[x] = ARGV[at[pg] + PG_TOKEN] end
    local lk = K.LEASE .. w
    local vals = redis.call('HMGET', lk, unpack(toks))
    for x, pg in ipairs(g) do
      local t = toks[x]
      if vals[x] and not once[t] then once[t] = true; held[pg] = vals[x]; del[#del + 1] = t end
    end
    if #del > 0 then redis.call('HDEL', lk, unpack(del)) end
  end
  return held
end

-- Takes a page whose lease was not found back out of the sums: corr[x] is
-- what to subtract from SUMS[x], corr.kinds[kind] from an error kind.
local function take_back(corr, outcome)
  if not corr then
    corr = {kinds = {}}
    for x = 1, #SUMS do corr[x] = 0 end
  end
  local status, bytes, err = string.match(outcome, '^(%d+) (%d+) (.*)$')
  status = tonumber(status)
  corr[SUM_FETCHED] = corr[SUM_FETCHED] + 1
  corr[SUM_BYTES] = corr[SUM_BYTES] + tonumber(bytes)
  local class = nil
  if status >= 200 and status < 600 then
    class = SUM_2XX + math.floor(status / 100) - 2
  elseif status ~= 0 then
    class = SUM_OTHER
  end
  if class then corr[class] = corr[class] + 1 end
  if err ~= '' then
    corr[SUM_ERRORS] = corr[SUM_ERRORS] + 1
    corr.kinds[err] = (corr.kinds[err] or 0) + 1
  end
  return corr
end

-- Lowers the hosts' in-flight counts by dec[h]; returns the hosts that may
-- have become claimable: below per_host now and not before (a host below it
-- before kept its place in ready), or with nothing left in flight (a host
-- parked by a worker with a smaller per_host is woken once it drains).
local function unlease_hosts(hosts, dec, per_host)
  local wk = {}
  if #hosts == 0 then return wk end
  local hv, set, del = redis.call('HMGET', K.HINFLIGHT, unpack(hosts)), {}, {}
  for x, h in ipairs(hosts) do
    local old = num(hv[x])
    local v = old - dec[h]
    if v <= 0 then del[#del + 1] = h else set[#set + 1] = h; set[#set + 1] = str(v) end
    if v < per_host and (old >= per_host or v <= 0) then wk[#wk + 1] = h end
  end
  if #set > 0 then redis.call('HSET', K.HINFLIGHT, unpack(set)) end
  if #del > 0 then redis.call('HDEL', K.HINFLIGHT, unpack(del)) end
  return wk
end

local function finish(KEYS, ARGV)
  local np, maxp, maxh = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  local per_host, k, w0 = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
  local SUM, NKINDS = 8, 8 + #SUMS -- ARGV[SUM..]: the sums; ARGV[NKINDS]: their count
  need_module(KEYS, k)
  local nkinds = tonumber(ARGV[NKINDS])
  local NKEEP = NKINDS + 1 + 2 * nkinds
  local nkeep, keep = tonumber(ARGV[NKEEP]), {}
  for x = NKEEP + 1, NKEEP + nkeep do keep[tonumber(ARGV[x])] = true end
  local at, i = {}, NKEEP + nkeep + 1 -- at[pg]: the first argument of page pg
  for pg = 1, np do
    at[pg] = i
    local span = ARGV[i + PG_SPAN] -- tonumber costs Redis ~1.3k instructions: skip it for 0
    i = i + PG_ARGS
    if span ~= '0' then i = i + tonumber(span) end
  end
  local held = take_leases(ARGV, np, at, w0)
  local hosts, dec, ok, okseen, lost, corr = {}, {}, {}, {}, 0, nil
  for pg = 1, np do
    local v = held[pg]
    if v then
      local h = origin_of(v)
      if not dec[h] then dec[h] = 0; hosts[#hosts + 1] = h end
      dec[h] = dec[h] + 1
      if not keep[pg] then note_host(ok, okseen, h) end
    else
      lost = lost + 1
      corr = take_back(corr, ARGV[at[pg] + PG_OUTCOME])
    end
  end
  local wk = unlease_hosts(hosts, dec, per_host)
  if #ok > 0 then redis.call('HDEL', K.HFAIL, unpack(ok)) end
  local st, codes = offer_begin(), {}
  for pg = 1, np do
    local a = at[pg]
    if ARGV[a + PG_SPAN] ~= '0' then
      codes[#codes + 1] = offer_links(st, KEYS, ARGV, a + PG_ARGS, k, false, maxp, maxh)
    end
  end
  for x, f in ipairs(SUMS) do
    local n = ARGV[SUM + x - 1]
    if corr and corr[x] ~= 0 then n = string.format('%d', tonumber(n) - corr[x]) end
    if n ~= '0' then redis.call('HINCRBY', K.STATS, f, n) end
  end
  count('inflight', lost - np); count('new_links', st.new)
  count('seen_links', st.seen); count('skipped_links', st.skipped)
  for x = NKINDS + 1, NKINDS + 2 * nkinds, 2 do
    local kind, n = ARGV[x], ARGV[x + 1]
    if corr and corr.kinds[kind] then n = string.format('%d', tonumber(n) - corr.kinds[kind]) end
    if n ~= '0' then redis.call('HINCRBY', K.ERRORS, kind, n) end
  end
  wake_many(wk, per_host)
  offer_flush(st, per_host)
  return {lost, table.concat(codes)}
end

register('finish', finish)
