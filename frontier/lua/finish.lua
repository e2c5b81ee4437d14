-- finish.lua -- finishes a group of pages, atomically: takes each page's
-- lease, counts the outcomes, offers the links, wakes the hosts.
-- ARGV and reply: the layout above build_finish() in frontier/finish.c.
--
-- One path for every group, with its fast case decided here.  The client
-- sums the group's counters and its pages per host (from the pages' lease
-- fields "ORIGIN\tSEQ", so from the origins the claim stored) as if every
-- lease held.  When the script takes every lease (the common case: one
-- HMGET and one HDEL for the group, nothing read per page), it applies them
-- as they are; a page whose lease it does not find (expired and reclaimed,
-- the same lease twice, or this call run a second time after its reply was
-- lost: the worker sends it again) is taken back out of them, from its
-- outcome and its lease field, and its links are not offered (code 'x'
-- each): whoever holds its lease now fetches it again and offers them, or
-- the first run did.  So a call may run twice and counts, queues and
-- acknowledges once.

-- The sums, in the order of ARGV[SUM..].
local SUMS = {'fetched', 'bytes', 'status_2xx', 'status_3xx', 'status_4xx', 'status_5xx',
              'status_other', 'errors', 'seen_links', 'skipped_links', 'capped_pages'}
local SUM_FETCHED, SUM_BYTES, SUM_2XX, SUM_OTHER, SUM_ERRORS = 1, 2, 3, 7, 8
local SUM_SEEN, SUM_SKIPPED, SUM_CAPPED = 9, 10, 11
-- ARGV: the sums from SUM, the outcomes, then the hosts from HOSTS
local NFOREIGN, SUM = 10, 11
local OUTCOMES = SUM + #SUMS
local HOSTS = OUTCOMES + 1
-- A host's arguments: its origin, its pages, '1' if one resets its failure
-- count, the wait its slowest page asks for (base.lua: pace_note; '0': none),
-- the address a page was fetched from ('': none), recorded in P hostip as
-- "MS IP" (claim.lua hands it to the workers that claim the host).
local HOST_ARGS = 5
-- A page's arguments: its lease field, its link section's span, then the section.
local PG_SPAN, PG_ARGS = 1, 2
-- The keys a finish touches besides the queues, lease hashes and blocks.
local FINISH_KEYS = {'READY', 'FRESH', 'HINFLIGHT', 'HNEXT', 'HDELAY', 'HFAIL', 'HADMIT', 'HOSTS',
                     'QDEPTH', 'STATS', 'ERRORS', 'CONTROL', 'HPACE', 'HSLOW', 'DOMAINS',
                     'HOSTIP'}
-- The pages' tokens and first arguments, TOKS[1..np] and AT[1..np]: the same
-- tables from call to call (a new one costs Redis about 2k instructions).
local TOKS, AT = {}, {}

-- The leases of pages of another worker than w0: their tokens are whole
-- leases "ORIGIN\tSEQ@WORKER".  Groups them by worker, takes each once.
local function take_foreign(toks, np, w0)
  local groups, order, held, lost = {}, {}, {}, 0
  for pg = 1, np do
    local tok = toks[pg]
    local at, w, field = find(tok, '@', 1, true), w0, tok
    if at then field, w = sub(tok, 1, at - 1), sub(tok, at + 1) end
    toks[pg] = field
    local g = groups[w]
    if not g then g = {fields = {}, pages = {}}; groups[w] = g; order[#order + 1] = w end
    g.fields[#g.fields + 1] = field; g.pages[#g.pages + 1] = pg
  end
  for _, w in ipairs(order) do
    local g, once, del = groups[w], {}, {}
    local lk = K.LEASE .. w
    local vals = redis.call('HMGET', lk, unpack(g.fields))
    for x, pg in ipairs(g.pages) do
      local field = g.fields[x]
      if vals[x] and not once[field] then
        once[field] = true; held[pg] = true; del[#del + 1] = field
      else
        held[pg] = false; lost = lost + 1
      end
    end
    if #del > 0 then redis.call('HDEL', lk, unpack(del)) end
  end
  return held, lost
end

-- Checks (types.lua) every key the finish will touch, before its first
-- write: the crawl's, the lease hashes of the pages' workers, the Bloom
-- blocks, the queues of the hosts it may wake and of every link offered.
local function finish_check(KEYS, ARGV, toks, at, np, w0, nforeign, nh, k)
  need_keys(FINISH_KEYS)
  need(K.LEASE .. w0, 'hash')
  for pg = 1, nforeign > 0 and np or 0 do
    local a = find(toks[pg], '@', 1, true)
    if a then need(K.LEASE .. sub(toks[pg], a + 1), 'hash') end
  end
  need_blocks(KEYS)
  for x = HOSTS + 1, HOSTS + HOST_ARGS * nh, HOST_ARGS do need_queue(ARGV[x]) end
  for pg = 1, np do
    if ARGV[at[pg] + PG_SPAN] ~= '0' then need_section(ARGV, at[pg] + PG_ARGS, k) end
  end
end

-- Takes the pages' leases, each once: held[pg] is true if page pg's lease
-- was found; and how many were not.  toks end up as lease fields.
local function take_leases(toks, np, w0, nforeign)
  if nforeign > 0 then return take_foreign(toks, np, w0) end
  local lk = K.LEASE .. w0
  local held = redis.call('HMGET', lk, unpack(toks, 1, np))
  if redis.call('HDEL', lk, unpack(toks, 1, np)) == np then return held, 0 end
  local once, lost = {}, 0 -- a lease missing, or one given twice
  for pg = 1, np do
    local t = toks[pg]
    if held[pg] and not once[t] then once[t] = true else held[pg] = false; lost = lost + 1 end
  end
  return held, lost
end

-- Takes the pages whose lease was not found back out of the client's
-- numbers: dec[origin] (their lease field names it) drops, corr[x] is what
-- to subtract from SUMS[x], corr.kinds[kind] from an error kind; and the
-- hosts a held page of which resets the failure count.  The outcomes are
-- page after page "R STATUS BYTES SEEN SKIPPED CAPPED ELEN ERROR\n" (R: '1'
-- if it resets; SEEN, SKIPPED, CAPPED: what the page added to those sums).
local function take_back(outcomes, held, fields, dec)
  local corr, ok, seen, pos = {kinds = {}}, {}, {}, 1
  for x = 1, #SUMS do corr[x] = 0 end
  for pg = 1, #held do
    local r, status, bytes, seen_, skipped, capped, elen, at =
      string.match(outcomes, '^(%d) (%d+) (%d+) (%d+) (%d+) (%d+) (%d+) ()', pos)
    local err = sub(outcomes, at, at + elen - 1)
    local h = unstore(fields[pg])
    pos = at + elen + 1
    if held[pg] then
      if r == '1' then note_host(ok, seen, h) end
    else
      status = tonumber(status)
      if dec[h] then dec[h] = dec[h] - 1 end
      corr[SUM_FETCHED] = corr[SUM_FETCHED] + 1
      corr[SUM_BYTES] = corr[SUM_BYTES] + tonumber(bytes)
      corr[SUM_SEEN] = corr[SUM_SEEN] + tonumber(seen_)
      corr[SUM_SKIPPED] = corr[SUM_SKIPPED] + tonumber(skipped)
      corr[SUM_CAPPED] = corr[SUM_CAPPED] + tonumber(capped)
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
    end
  end
  return corr, ok
end

-- Lowers the hosts' in-flight counts by dec[h], and spaces those of delay
-- d > 0 (host_delay): their next claim no sooner than d from now (the
-- server saw their request before it ended: space_hosts).  Returns the hosts
-- that may have become claimable: below their cap (host_cap) now and not
-- before (a host below it before kept its place in ready), or with nothing
-- left in flight (a host parked by a worker with a smaller per_host is
-- woken once it drains).
local function unlease_hosts(hosts, dec, tg, per_host, delay, maxd)
  local wk, hs = {}, {}
  for _, h in ipairs(hosts) do if dec[h] > 0 then hs[#hs + 1] = h end end
  if #hs == 0 then return wk end
  local hv, set, del = redis.call('HMGET', K.HINFLIGHT, unpack(hs)), {}, {}
  local ds, bases, pv = host_delays(hs, delay, maxd)
  for x, h in ipairs(hs) do
    if bases[x] > 0 then ds[x] = pace_note(h, pv[x], bases[x], maxd, tg[h], false) end
  end
  for x, h in ipairs(hs) do
    local old, cap = num(hv[x]), host_cap(ds[x], per_host)
    local v = old - dec[h]
    if v <= 0 then del[#del + 1] = h else set[#set + 1] = h; set[#set + 1] = str(v) end
    if v < cap and (old >= cap or v <= 0) then wk[#wk + 1] = h end
  end
  if #set > 0 then redis.call('HSET', K.HINFLIGHT, unpack(set)) end
  if #del > 0 then redis.call('HDEL', K.HINFLIGHT, unpack(del)) end
  space_hosts(hs, ds)
  return wk
end

local function finish(KEYS, ARGV)
  local np, maxh = tonumber(ARGV[2]), tonumber(ARGV[4])
  local maxp, credit = page_limit_arg(ARGV[3])
  local per_host, delay, maxd = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
  local k, w0 = LAYERS.spec(ARGV[8]), ARGV[9]
  local nforeign, nh = tonumber(ARGV[NFOREIGN]), tonumber(ARGV[HOSTS])
  local NKINDS = HOSTS + 1 + HOST_ARGS * nh
  local nkinds = tonumber(ARGV[NKINDS])
  local DOMS = NKINDS + 1 + 2 * nkinds -- the domain section (offer.lua: read_domains)
  local _, first = domain_section(ARGV, DOMS)
  local toks, at, i = TOKS, AT, first -- at[pg]: page pg's first argument
  for pg = 1, np do
    toks[pg] = ARGV[i]; at[pg] = i
    local span = ARGV[i + PG_SPAN] -- tonumber costs Redis ~1.3k instructions: skip it for 0
    i = i + PG_ARGS
    if span ~= '0' then i = i + tonumber(span) end
  end
  need_crawl() -- (types.lua) a crawl gone: nothing written
  finish_check(KEYS, ARGV, toks, at, np, w0, nforeign, nh, k)
  need_inlinks(ARGV, DOMS)
  need_module(KEYS, k)
  read_control() -- (base.lua) the crawl's overrides beat the worker's ARGV
  read_blocks() -- (base.lua) a link of a blocked host is refused ('b')
  maxp, maxh = limit('max_pages', maxp), limit('max_pages_per_host', maxh)
  per_host, delay = limit('per_host', per_host), limit('delay', delay)
  maxd = limit('max_delay', maxd)
  local quota
  maxp, quota = allotment(maxp, credit)
  local held, lost = take_leases(toks, np, w0, nforeign)
  local hosts, dec, ok, tg, ips = {}, {}, {}, {}, nil -- (ips: only with per-IP politeness)
  for x = HOSTS + 1, HOSTS + HOST_ARGS * nh, HOST_ARGS do
    local h = ARGV[x]
    hosts[#hosts + 1] = h; dec[h] = tonumber(ARGV[x + 1]); tg[h] = tonumber(ARGV[x + 3])
    if ARGV[x + 2] == '1' then ok[#ok + 1] = h end
    if ARGV[x + 4] ~= '' then
      ips = ips or {}
      ips[#ips + 1] = h; ips[#ips + 1] = nows .. ' ' .. ARGV[x + 4]
    end
  end
  if ips then redis.call('HSET', K.HOSTIP, unpack(ips)) end
  local corr = false
  if lost > 0 then corr, ok = take_back(ARGV[OUTCOMES], held, toks, dec) end
  local wk = unlease_hosts(hosts, dec, tg, per_host, delay, maxd)
  if #ok > 0 then redis.call('HDEL', K.HFAIL, unpack(ok)) end
  local st, codes = offer_begin(), {}
  read_domains(st, ARGV, DOMS)
  for pg = 1, np do
    if ARGV[at[pg] + PG_SPAN] ~= '0' then -- (no links: '0')
      if held[pg] then
        codes[#codes + 1] = offer_links(st, KEYS, ARGV, at[pg] + PG_ARGS, k, false, maxp, maxh,
                                        quota)
      else
        codes[#codes + 1] = string.rep('x', section_links(ARGV, at[pg] + PG_ARGS, k))
      end
    end
  end
  for x, f in ipairs(SUMS) do
    local n = ARGV[SUM + x - 1]
    if corr and corr[x] ~= 0 then n = string.format('%d', tonumber(n) - corr[x]) end
    if n ~= '0' then redis.call('HINCRBY', K.STATS, f, n) end
  end
  count('inflight', lost - np); count('new_links', st.new)
  count('seen_links', st.seen); count('skipped_links', st.skipped)
  count('blocked_links', st.blocked)
  for x = NKINDS + 1, NKINDS + 2 * nkinds, 2 do
    local kind, n = ARGV[x], ARGV[x + 1]
    if corr and corr.kinds[kind] then n = string.format('%d', tonumber(n) - corr.kinds[kind]) end
    if n ~= '0' then redis.call('HINCRBY', K.ERRORS, kind, n) end
  end
  wake_many(wk, per_host)
  offer_flush(st, per_host)
  return {lost, table.concat(codes), LAYERS.done()}
end

register('finish', finish)
