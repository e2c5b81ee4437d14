-- robots_store.lua -- a worker fetched an origin's robots.txt: what it gave
-- is stored for every worker and the fetch lock dropped, in one call.
-- ARGV and reply: the layout above build_store() in frontier/hostinfo.c.

-- A fetched robots.txt: its value stored (unless ''), the host's own delay
-- set (unless 0), the host spaced by its delay from now (unless 0: the
-- fetch was a request to it, maybe made without a claim of its URLs --
-- a robots.txt another origin's redirected to -- so no claim may follow
-- sooner), its Sitemap: URLs recorded, then its fetch lock dropped.
local function robots_store(_, ARGV)
  local o, val, ttl, delay = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
  local space = tonumber(ARGV[6])
  local FIRST = 7 -- ARGV[FIRST..]: the Sitemap: URLs
  need_crawl() -- (types.lua) a crawl gone: nothing written
  need(K.ROBOTS .. o, 'string') -- (types.lua) before the first write
  need(K.ROBOTS_LOCK .. o, 'string')
  if delay > 0 then need(K.HDELAY, 'hash') end
  if space > 0 then need_keys({'HNEXT', 'READY'}) end
  if #ARGV >= FIRST then need(K.SITEMAPS, 'set') end
  if val ~= '' then redis.call('SET', K.ROBOTS .. o, val, 'EX', ttl) end
  if delay > 0 then redis.call('HSET', K.HDELAY, o, ARGV[5]) end
  if space > 0 then space_hosts({o}, {space}) end -- (base.lua)
  for a = FIRST, #ARGV, 4000 do
    redis.call('SADD', K.SITEMAPS, unpack(ARGV, a, math.min(a + 3999, #ARGV)))
  end
  redis.call('DEL', K.ROBOTS_LOCK .. o)
  return 0
end

register('robots_store', robots_store)
