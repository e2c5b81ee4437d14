-- offer.lua -- offering links (or seeds) to the Bloom filter and the queues:
-- a Bloom test-and-add of each link of a link section, then one RPUSH per
-- host of the new entries, within the page limits.  The link section's
-- layout is written down in frontier/offer.c, above fr_offer_section().

local function offer_begin()
  return {hosts = {}, byhost = {}, front = {}, hadm = {}, new = 0, seen = 0, skipped = 0, quota = 0,
          blocked = 0, admitted = num(redis.call('HGET', K.STATS, 'enqueued')),
          maxdp = 0, maxdh = 0, perinl = 0, domof = {}, dom = {}, doms = {}, dskipped = 0}
end

-- The domain section at ARGV[i] (its layout: above fr_offer_domains in
-- frontier/offer.c): the index of its in-link pairs (count first) and the
-- index after it.
local function domain_section(ARGV, i)
  local j = i + 2 + 2 * tonumber(ARGV[i + 1])
  return j, j + 1 + 2 * tonumber(ARGV[j])
end

-- Checks (types.lua) the in-link sets the domain section at ARGV[i] names.
local function need_inlinks(ARGV, i)
  local j, e = domain_section(ARGV, i)
  for x = j + 1, e - 1, 2 do need(K.INLINKS .. ARGV[x], 'string') end
end

-- The domain section at ARGV[i] into st: the budgets per registered domain
-- and the domain of each origin; and the in-links it names recorded (P
-- inl:<domain>: a HyperLogLog of the domains that link to it).  Returns
-- the index after it.
local function read_domains(st, ARGV, i)
  local dp, dh, pi = string.match(ARGV[i], '^(%d+):(%d+):(%d+)$')
  st.maxdp, st.maxdh, st.perinl = num(dp), num(dh), num(pi)
  local n = tonumber(ARGV[i + 1])
  for x = i + 2, i + 1 + 2 * n, 2 do st.domof[ARGV[x]] = ARGV[x + 1] end
  local j, e = domain_section(ARGV, i)
  for x = j + 1, e - 1, 2 do redis.call('PFADD', K.INLINKS .. ARGV[x], ARGV[x + 1]) end
  return e
end

-- Whether a link of origin h (ha: URLs h admitted) is over its registered
-- domain's budget: pages admitted (max_pages_per_domain), or hosts, h new
-- among them (max_hosts_per_domain).  P domains: domain -> "PAGES HOSTS",
-- read once a call.
local function over_domain(st, h, ha)
  local d = st.domof[h]
  if not d then return false end
  local ds = st.dom[d]
  if not ds then
    local v = redis.call('HGET', K.DOMAINS, d)
    local p, hs = string.match(v or '', '^(%d+) (%d+)$')
    ds = {p = num(p), h = num(hs), b = st.maxdp}
    if st.perinl > 0 then ds.b = ds.b + st.perinl * redis.call('PFCOUNT', K.INLINKS .. d) end
    st.dom[d] = ds; st.doms[#st.doms + 1] = d
  end
  if st.maxdp > 0 and ds.p >= ds.b then return true end
  return st.maxdh > 0 and ha == 0 and ds.h >= st.maxdh
end
-- A link of origin h (ha: URLs h admitted before it) was admitted.
local function domain_admit(st, h, ha)
  local ds = st.dom[st.domof[h] or '']
  if not ds then return end
  ds.p = ds.p + 1
  if ha == 0 then ds.h = ds.h + 1 end
end
-- An entry sent with a leading '!' (a seed of high priority,
-- FRONTIER_SEED_FIRST) goes ahead of its host's queue (st.front[h]): "!I!E",
-- E the entry and I its place among the call's links (they come grouped by
-- Bloom block), so that those of one host keep their order (offer_flush).
local function enqueue(st, e, h) -- h: the entry's origin, sent with it
  st.new = st.new + 1
  local q = st.byhost[h]
  if not q then q = {}; st.byhost[h] = q; st.hosts[#st.hosts + 1] = h end
  if byte(e, 1) == 33 then
    local f = st.front[h]
    if not f then f = {}; st.front[h] = f end
    local p = find(e, '!', 2, true)
    local i = p and tonumber(sub(e, 2, p - 1))
    if i then f[#f + 1] = {i, sub(e, p + 1)} else f[#f + 1] = {2 ^ 53, sub(e, 2)} end
  else
    q[#q + 1] = e
  end
end
-- The bit-setters: each sets the bits of cnt links of a block run, the
-- first one's arguments at ARGV[b] (w arguments a link), and answers one
-- character a link, '1' if it was new (one of its bits was 0), else '0'
-- (CRAWLER.BFADD's own answer).
local FRESH = {}
local CODES = {} -- offer_links' codes, CODES[1..nc] (one table for every call)
local BF -- BITFIELD arguments: SET u1 <offset> 1, only the offsets are rewritten

-- BITFIELD layout: a link's k offsets follow its entry and origin.
local function set_bitfield(key, ARGV, b, w, k, cnt)
  if not BF then
    BF = {}
    for j = 1, 1024 do BF[4*j-3] = 'SET'; BF[4*j-2] = 'u1'; BF[4*j-1] = '0'; BF[4*j] = '1' end
  end
  local na = 1
  for c = 0, cnt - 1 do
    local o = b + c * w + 2
    for j = o, o + k - 1 do BF[na + 2] = ARGV[j]; na = na + 4 end
  end
  local old = redis.call('BITFIELD', key, unpack(BF, 1, na - 1))
  for c = 1, cnt do
    local new = '0'
    for j = (c - 1) * k + 1, c * k do if old[j] == 0 then new = '1'; break end end
    FRESH[c] = new
  end
  return table.concat(FRESH, '', 1, cnt)
end

-- The crawler module's layout: the run's offsets, k uint32 a link, are one
-- argument after its links (offs); these links start at link m of the run;
-- ks is k as a string.
local function set_module(key, _, _, _, k, cnt, offs, m, n, ks)
  if cnt < n then offs = sub(offs, 4 * k * m + 1, 4 * k * (m + cnt)) end
  return redis.call('CRAWLER.BFADD', key, ks, offs)
end

-- k < 0: the module's layout.  A function that would write before its first
-- CRAWLER.BFADD calls this first, so a Redis that lost the module fails it
-- before any write.
local function need_module(KEYS, k)
  local last = LAYERS.st and LAYERS.st.m - 1 or #KEYS -- (the blocks)
  if k < 0 and last >= 3 then redis.call('CRAWLER.BFADD', KEYS[3], '1', '') end
end


-- Why a link of origin h may not be admitted: 'l' over a page limit
-- (max_pages: in all, max_pages_per_host: for h), 'd' over its domain's
-- budget (over_domain), 'q' past this shard's allotment of a crawl-wide
-- max_pages (quota: see allotment), nil: it may; h's admitted count is read
-- once per call.
local function over_limit(st, h, maxp, maxh, quota)
  local ha = st.hadm[h]
  if ha == nil then ha = admitted(h); st.hadm[h] = ha end
  if (maxp > 0 and st.admitted >= maxp) or (maxh > 0 and ha >= maxh) then return 'l' end
  if (st.maxdp > 0 or st.maxdh > 0) and over_domain(st, h, ha) then return 'd' end
  if quota and st.admitted >= quota then return 'q' end
  return nil
end

-- A call's page limit argument: "N" (max_pages), or on a crawl of several
-- shards "N:G" (quota.lua): N the worker's max_pages, G the allotment shard
-- 0 last granted this shard, as the worker knows it.  Returns N, G (nil: one shard).
local function page_limit_arg(a)
  local n, g = string.match(a, '^(%d+):(%d+)$')
  if n then return tonumber(n), tonumber(g) end
  return tonumber(a), nil
end

-- On a crawl that keeps its page limit in allotments (credit given), this
-- shard admits while its `enqueued` is below the allotment shard 0 granted
-- it (quota.lua), first raised to credit G (a grant the worker relays: taken
-- once, never lowered); every admission goes through an allotment, with or
-- without a limit in force (shard 0 grants without bound then), so shard 0's
-- total is what the crawl admitted.  Returns the limits to check: 0 for maxp
-- (the crawl-wide one is shard 0's to hold) and the allotment; on any other
-- crawl maxp and nil.  Writes: call after the call's checks.
local function allotment(maxp, credit)
  if credit == nil then return maxp, nil end
  local g = num(redis.call('HGET', K.STATS, 'granted'))
  if credit > g then g = credit; redis.call('HSET', K.STATS, 'granted', g) end
  return 0, g
end

-- true if every bit of a link is set already (it is seen), read only: a
-- link past the allotment that is seen needs none.  The link's arguments
-- start at ARGV[b] (entry, origin, then its k offsets: BITFIELD layout), or
-- its offsets are the k little-endian uint32 of link m in offs (the module's).
local function is_seen(key, ARGV, b, k, offs, m)
  -- two bits first: a link not in the filter is told by them three times in
  -- four (a full layer has half its bits set), in one call of two GETs
  local cmd, from = {}, 1
  for phase = 1, 2 do
    local upto, n = phase == 1 and math.min(2, k) or k, 0
    for j = from, upto do
      local o = ARGV[b + 1 + j]
      if offs then
        local p = 4 * (k * m + j - 1) + 1
        local b1, b2, b3, b4 = byte(offs, p, p + 3)
        o = b1 + 256 * (b2 + 256 * (b3 + 256 * b4))
      end
      cmd[3 * n + 1], cmd[3 * n + 2], cmd[3 * n + 3] = 'GET', 'u1', o
      n = n + 1
    end
    if n > 0 then
      local bits = redis.call('BITFIELD', key, unpack(cmd, 1, 3 * n))
      for j = 1, n do if bits[j] == 0 then return false end end
    end
    from = upto + 1
  end
  return true
end

-- Whether a run of cnt links from ARGV[b] (w arguments a link) holds one
-- of a blocked host (base.lua: blocked; the caller's read_blocks said some
-- host is).
local function run_blocked(ARGV, b, w, cnt)
  for c = 0, cnt - 1 do if blocked(ARGV[b + c * w + 1]) then return true end end
  return false
end

-- Offers the links of the link section at ARGV[i] (its layout: above
-- fr_offer_section in frontier/offer.c); k < 0 is the module's layout.
-- Queues (enqueue) the new ones, force: every one.  Returns one code a link,
-- 'n' new, 's' seen, 'l' over a page limit, 'q' past the shard's allotment
-- (quota: allotment), 'b' of a blocked host (the bits of these three left
-- unset, so the link can be offered again), and the index after the
-- section.  The caller ran read_blocks (base.lua) in its checks.  Without a page limit the bits
-- of a run are set in as few calls as the setter takes (BITFIELD: 1024
-- bits); with one, each link's limits are checked before its bits are set.
local function offer_links(st, KEYS, ARGV, i, k, force, maxp, maxh, quota)
  -- per: links a setter call (nil: the whole run; not math.huge, which a
  -- Lua 5.1 for loop turns into NaN)
  local set, w, tail, per, ks = set_bitfield, 2 + k, 0, math.floor(1024 / math.abs(k)), nil
  local lx = 2 + k -- where a link's layer blocks start (LAYERS)
  if k < 0 then k = -k; set, w, tail, per, ks, lx = set_module, 2, 1, nil, str(k), 2 end
  w = w + LAYERS.xw
  local limits = maxp > 0 or maxh > 0 or quota ~= nil or st.maxdp > 0 or st.maxdh > 0
  if limits then per = 1 end
  local ls = LAYERS.st
  if ls then LAYERS.begin(KEYS) end
  local layered = ls and LAYERS.one_by_one() -- (else one layer, as known: runs as before)
  if layered then per = 1 end
  local codes, nc = CODES, 0
  local nruns = tonumber(ARGV[i]); i = i + 1
  for _ = 1, nruns do
    local key, n = KEYS[tonumber(ARGV[i])], tonumber(ARGV[i + 1])
    i = i + 2
    local offs = ARGV[i + n * w] -- the module's layout: the run's offsets
    local step = per or n
    if BLK_ANY and run_blocked(ARGV, i, w, n) then step = 1 end -- (its links one by one)
    for m = 0, n - 1, step do
      local cnt, b = n - m, i + m * w
      if cnt > step then cnt = step end
      local over = BLK_ANY and step == 1 and blocked(ARGV[b + 1]) and 'b'
      if not over then over = limits and over_limit(st, ARGV[b + 1], maxp, maxh, quota) end
      local lkey = key -- the key its bits go to
      if layered and (not over or over == 'q') then
        lkey = LAYERS.place(KEYS, ARGV, b, lx, k, set == set_module and offs, m, is_seen)
        if lkey == 's' and not force then over = 's' end -- (forced: queued, nothing set)
      end
      if over == 'q' and lkey and lkey ~= 's'
         and is_seen(lkey, ARGV, b, k, set == set_module and offs, m) then
        over = 's' -- seen: no allotment needed (its bits are all set: nothing to add)
      end
      local fresh = not over and (lkey == 's' and '0' or lkey == false and '1'
                                  or set(lkey, ARGV, b, w, k, cnt, offs, m, n, ks))
      for c = 1, cnt do -- link c: its entry at ARGV[b], its origin at ARGV[b + 1]
        nc = nc + 1
        if over == 'q' then
          codes[nc] = 'q'; st.quota = st.quota + 1
        elseif over == 'b' then
          codes[nc] = 'b'; st.blocked = st.blocked + 1
        elseif over == 'd' then
          codes[nc] = 'l'; st.skipped = st.skipped + 1; st.dskipped = st.dskipped + 1
        elseif over == 's' then
          codes[nc] = 's'; st.seen = st.seen + 1
        elseif over then
          codes[nc] = 'l'; st.skipped = st.skipped + 1
        elseif force or byte(fresh, c) == 49 then
          local h = ARGV[b + 1]
          if ls and lkey and lkey ~= 's' and byte(fresh, c) == 49 then LAYERS.added(1) end
          codes[nc] = 'n'; enqueue(st, ARGV[b], h)
          if limits then
            domain_admit(st, h, st.hadm[h])
            st.admitted = st.admitted + 1; st.hadm[h] = st.hadm[h] + 1
          end
        else
          codes[nc] = 's'; st.seen = st.seen + 1
        end
        b = b + w
      end
    end
    i = i + n * w + tail
  end
  return table.concat(codes, '', 1, nc), i
end

-- The number of links of the link section at ARGV[i] (k < 0: the module's
-- layout), read without offering them.
local function section_links(ARGV, i, k)
  local w, tail = 2 + k + LAYERS.xw, 0
  if k < 0 then w, tail = 2 + LAYERS.xw, 1 end
  local nruns, n = tonumber(ARGV[i]), 0
  i = i + 1
  for _ = 1, nruns do
    local c = tonumber(ARGV[i + 1])
    n = n + c
    i = i + 2 + c * w + tail
  end
  return n
end

-- Appends the new entries to their hosts' queues (queue.lua: q_append)
-- and their counts to the hosts' admitted counts: one HMGET and one HSET of
-- P hosts a thousand hosts.
local function offer_flush(st, per_host)
  local hs, woke = st.hosts, {}
  for a = 1, #hs, 1000 do
    local b = math.min(a + 999, #hs)
    local vs, kv = redis.call('HMGET', K.HOSTS, unpack(hs, a, b)), {}
    for j = a, b do
      local h = hs[j]
      local fr = st.front[h] -- (rare: sorted by their place among the links, then bare)
      if fr then
        table.sort(fr, function(x, y) return x[1] < y[1] end)
        for i = 1, #fr do fr[i] = fr[i][2] end
      end
      local v, before = q_append(h, st.byhost[h], vs[j - a + 1], fr)
      if before == 0 then woke[#woke + 1] = h end
      kv[2 * (j - a) + 1], kv[2 * (j - a) + 2] = h, v
    end
    redis.call('HSET', K.HOSTS, unpack(kv))
  end
  wake_new(woke, per_host, true) -- a queue already non-empty keeps its place
  count('enqueued', st.new); count('queued', st.new)
  if #st.doms > 0 then
    local kv = {}
    for _, d in ipairs(st.doms) do
      local ds = st.dom[d]
      kv[#kv + 1] = d; kv[#kv + 1] = str(ds.p) .. ' ' .. str(ds.h)
    end
    redis.call('HSET', K.DOMAINS, unpack(kv))
  end
  count('domain_links', st.dskipped)
end
