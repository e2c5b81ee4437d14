-- finish.lua -- finishes a group of pages, atomically: takes each page's
-- lease, counts its outcome, offers its links.
-- KEYS: ready, Bloom blocks.  ARGV: P npages max_pages max_pages_per_host
-- per_host k, then per page: worker token status err bytes link_depth
-- cached_seen skipped span, and a link section of span arguments (pages.c)
-- -> {lost1, codes1, lost2, ...}

-- Takes the leases of the pages (each token once): entry of page p, or nil
-- when its lease was lost.
local function take_leases(ARGV, np, i)
  local at, bylk, lks, ent = {}, {}, {}, {}
  for p = 1, np do
    at[p] = i
    local lk = K.LEASE .. ARGV[i]
    local g = bylk[lk]
    if not g then g = {}; bylk[lk] = g; lks[#lks + 1] = lk end
    g[#g + 1] = p
    i = i + 9 + tonumber(ARGV[i + 8])
  end
  for _, lk in ipairs(lks) do
    local g, toks, once, del = bylk[lk], {}, {}, {}
    for x, p in ipairs(g) do toks[x] = ARGV[at[p] + 1] end
    local vals = redis.call('HMGET', lk, unpack(toks))
    for x, p in ipairs(g) do
      if vals[x] and not once[toks[x]] then
        once[toks[x]] = true; ent[p] = vals[x]; del[#del + 1] = toks[x]
      end
    end
    if #del > 0 then redis.call('HDEL', lk, unpack(del)) end
  end
  return ent
end

local function finish(KEYS, ARGV)
  local np, maxp, maxh = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  local per_host, k = tonumber(ARGV[5]), tonumber(ARGV[6])
  need_module(KEYS, k)
  local st = offer_begin()
  local out, dec, hosts, seen, okh = {}, {}, {}, {}, {}
  local acc = {fetched = 0, bytes = 0, status_2xx = 0, status_3xx = 0, status_4xx = 0,
               status_5xx = 0, status_other = 0, errors = 0, seen_links = 0, skipped_links = 0}
  local SC = {'status_other', 'status_2xx', 'status_3xx', 'status_4xx', 'status_5xx'}
  local kinds = {}
  local ent = take_leases(ARGV, np, 7)
  local i = 7
  for pg = 1, np do
    local status, err = tonumber(ARGV[i + 2]), ARGV[i + 3]
    local e = ent[pg]
    if e then
      local h = host_of(e)
      dec[h] = (dec[h] or 0) + 1
      note_host(hosts, seen, h)
      if status ~= 0 then
        local sc = 'status_other'
        if status >= 200 and status < 600 then sc = SC[math.floor(status / 100)] end
        acc[sc] = acc[sc] + 1
      end
      if err ~= '' then acc.errors = acc.errors + 1; kinds[err] = (kinds[err] or 0) + 1 end
      if err == '' and status > 0 and status < 500 and status ~= 429 then okh[h] = true end
      acc.fetched = acc.fetched + 1
      acc.bytes = acc.bytes + tonumber(ARGV[i + 4])
      out[#out + 1] = 0
    else
      out[#out + 1] = 1
    end
    acc.seen_links = acc.seen_links + tonumber(ARGV[i + 6])
    acc.skipped_links = acc.skipped_links + tonumber(ARGV[i + 7])
    local codes, j = '', i + 9
    if ARGV[i + 8] ~= '0' then
      codes, j = offer_links(st, KEYS, ARGV, j, k, false, maxp, maxh)
    end
    out[#out + 1] = codes
    i = j
  end
  for _, h in ipairs(hosts) do
    if redis.call('HINCRBY', K.HINFLIGHT, h, -dec[h]) <= 0 then
      redis.call('HDEL', K.HINFLIGHT, h)
    end
    if okh[h] then redis.call('HDEL', K.HFAIL, h) end
  end
  acc.inflight = -acc.fetched
  acc.new_links = st.new
  acc.seen_links = acc.seen_links + st.seen
  acc.skipped_links = acc.skipped_links + st.skipped
  for f, n in pairs(acc) do count(f, n) end
  for kind, n in pairs(kinds) do redis.call('HINCRBY', K.ERRORS, kind, n) end
  wake_many(hosts, per_host)
  offer_flush(st, per_host)
  return out
end

register('finish', finish)
