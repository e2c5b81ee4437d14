-- offer.lua -- offering links (or seeds) to the Bloom filter and the queues:
-- a Bloom test-and-add of each link of a link section, then one RPUSH per
-- host of the new entries, within the page limits.  The link section's
-- layout is written down in frontier/pages.c, above section_len().

local function offer_begin()
  return {hosts = {}, byhost = {}, hadm = {}, new = 0, seen = 0, skipped = 0,
          admitted = num(redis.call('HGET', K.STATS, 'enqueued'))}
end
local function enqueue(st, e, h) -- h: the entry's origin, sent with it
  st.new = st.new + 1
  local q = st.byhost[h]
  if not q then q = {}; st.byhost[h] = q; st.hosts[#st.hosts + 1] = h end
  q[#q + 1] = e
end
local BF -- BITFIELD arguments: SET u1 <offset> 1, only the offsets are rewritten
local function bf_init()
  BF = {}
  for j = 1, 1024 do BF[4*j-3] = 'SET'; BF[4*j-2] = 'u1'; BF[4*j-1] = '0'; BF[4*j] = '1' end
end
local function offer_fast(st, KEYS, ARGV, i, k, force)
  if not BF then bf_init() end
  local codes, nc, w, per = {}, 0, 2 + k, math.floor(1024 / k)
  local ng = tonumber(ARGV[i]); i = i + 1
  for _ = 1, ng do
    local key, n = KEYS[tonumber(ARGV[i])], tonumber(ARGV[i + 1])
    i = i + 2
    local m = 0
    while m < n do
      local cnt = n - m
      if cnt > per then cnt = per end
      local na = 1
      for c = 0, cnt - 1 do
        local b = i + (m + c) * w
        for j = b + 2, b + 1 + k do BF[na + 2] = ARGV[j]; na = na + 4 end
      end
      local old = redis.call('BITFIELD', key, unpack(BF, 1, na - 1))
      for c = 0, cnt - 1 do
        local isnew = force
        if not isnew then
          for j = c * k + 1, c * k + k do if old[j] == 0 then isnew = true; break end end
        end
        nc = nc + 1
        local b = i + (m + c) * w
        if isnew then codes[nc] = 'n'; enqueue(st, ARGV[b], ARGV[b + 1])
        else codes[nc] = 's'; st.seen = st.seen + 1 end
      end
      m = m + cnt
    end
    i = i + n * w
  end
  return table.concat(codes), i
end
local function need_module(KEYS, k) -- k < 0: the module's layout; a script
  -- that would write before its first CRAWLER.BFADD calls it with nothing to
  -- set first, so a Redis that lost the module fails it before any write
  if k < 0 and KEYS[2] then redis.call('CRAWLER.BFADD', KEYS[2], '1', '') end
end
local function offer_mod(st, KEYS, ARGV, i, k, force, maxp, maxh)
  -- the crawler module's layout: per block run KEYS index, count,
  -- (entry, origin) * count, then the run's offsets (k uint32 a link)
  local codes, nc, ks, lim = {}, 0, str(k), maxp > 0 or maxh > 0
  local ng = tonumber(ARGV[i]); i = i + 1
  for _ = 1, ng do
    local key, n = KEYS[tonumber(ARGV[i])], tonumber(ARGV[i + 1])
    i = i + 2
    local offs, r = ARGV[i + 2 * n]
    if not lim then r = redis.call('CRAWLER.BFADD', key, ks, offs) end
    for c = 1, n do
      local e, h, code = ARGV[i], ARGV[i + 1], 's' -- 'n' new, 's' seen, 'l' over a limit
      if not lim then
        if force or string.byte(r, c) == 49 then code = 'n' end
      else
        local ha = st.hadm[h]
        if ha == nil then ha = num(redis.call('HGET', K.HADMIT, h)); st.hadm[h] = ha end
        if (maxp > 0 and st.admitted >= maxp) or (maxh > 0 and ha >= maxh) then
          code = 'l'
        else
          local one = string.sub(offs, 4 * k * (c - 1) + 1, 4 * k * c)
          local fresh = redis.call('CRAWLER.BFADD', key, ks, one) == '1'
          if force or fresh then
            code = 'n'; st.admitted = st.admitted + 1; st.hadm[h] = ha + 1
          end
        end
      end
      nc = nc + 1; codes[nc] = code
      if code == 'n' then enqueue(st, e, h)
      elseif code == 's' then st.seen = st.seen + 1
      else st.skipped = st.skipped + 1 end
      i = i + 2
    end
    i = i + 1
  end
  return table.concat(codes), i
end
local function offer_links(st, KEYS, ARGV, i, k, force, maxp, maxh)
  if k < 0 then return offer_mod(st, KEYS, ARGV, i, -k, force, maxp, maxh) end
  if maxp == 0 and maxh == 0 then return offer_fast(st, KEYS, ARGV, i, k, force) end
  local codes, nc, bf = {}, 0, {}
  for j = 1, k do bf[4*j-3] = 'SET'; bf[4*j-2] = 'u1'; bf[4*j] = '1' end
  local ng = tonumber(ARGV[i]); i = i + 1
  for _ = 1, ng do
    local key, n = KEYS[tonumber(ARGV[i])], tonumber(ARGV[i + 1])
    i = i + 2
    for _ = 1, n do
      local e = ARGV[i]
      local h = ARGV[i + 1] -- its origin, sent by the client
      local ha = st.hadm[h]
      if ha == nil then ha = num(redis.call('HGET', K.HADMIT, h)); st.hadm[h] = ha end
      nc = nc + 1
      if (maxp > 0 and st.admitted >= maxp) or (maxh > 0 and ha >= maxh) then
        codes[nc] = 'l'; st.skipped = st.skipped + 1
      else
        for j = 1, k do bf[4*j-1] = ARGV[i + 1 + j] end
        local old = redis.call('BITFIELD', key, unpack(bf))
        local isnew = force
        if not isnew then
          for j = 1, k do if old[j] == 0 then isnew = true; break end end
        end
        if isnew then
          codes[nc] = 'n'; enqueue(st, e, h)
          st.admitted = st.admitted + 1; st.hadm[h] = ha + 1
        else
          codes[nc] = 's'; st.seen = st.seen + 1
        end
      end
      i = i + 2 + k
    end
  end
  return table.concat(codes), i
end
local function offer_flush(st, per_host)
  local hs, woke = st.hosts, {}
  for _, h in ipairs(hs) do
    local q = st.byhost[h]
    for j = 1, #q, 4000 do
      local e = math.min(j + 3999, #q)
      local len = redis.call('RPUSH', qkey(h), unpack(q, j, e))
      if j == 1 and len == e then woke[#woke + 1] = h end
    end
  end
  if #hs <= 2 then
    for _, h in ipairs(hs) do redis.call('HINCRBY', K.HADMIT, h, str(#st.byhost[h])) end
  else
    for a = 1, #hs, 2000 do
      local b = math.min(a + 1999, #hs)
      local adm, kv = redis.call('HMGET', K.HADMIT, unpack(hs, a, b)), {}
      for j = a, b do
        kv[2 * (j - a) + 1] = hs[j]
        kv[2 * (j - a) + 2] = str(num(adm[j - a + 1]) + #st.byhost[hs[j]])
      end
      redis.call('HSET', K.HADMIT, unpack(kv))
    end
  end
  wake_new(woke, per_host) -- a queue already non-empty keeps its place in ready
  count('enqueued', st.new); count('queued', st.new)
end
