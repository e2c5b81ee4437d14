-- seed.lua -- queues seed URLs at depth 0 through the Bloom filter, and
-- records their hosts as seed hosts in the same atomic step (a worker that
-- claims a seed finds its host among the seed hosts).
-- ARGV and reply: the layout above build_seed() in frontier/seed.c.

local SEED_KEYS = {'READY', 'FRESH', 'HINFLIGHT', 'HNEXT', 'HADMIT', 'HOSTS', 'STATS', 'SEEDHOSTS',
                   'QDEPTH', 'CONTROL', 'DOMAINS'}

local function seed(KEYS, ARGV)
  -- ARGV[2] 'l': links of a page of another shard (frontier/finish.c), counted as
  -- links; 'l:TTL:ID': the same, a call that may run twice (the worker sends it
  -- again after a lost reply): its codes are kept TTL ms under offered:ID, and a
  -- second run answers them without offering again
  local ttl, id = string.match(ARGV[2], '^l:(%d+):(.+)$')
  local force, links = ARGV[2] == '1', ARGV[2] == 'l' or id ~= nil
  local maxp, credit = page_limit_arg(ARGV[3])
  local maxh = tonumber(ARGV[4])
  local per_host, k = tonumber(ARGV[5]), LAYERS.spec(ARGV[6])
  local NHOSTS = 7 -- ARGV[NHOSTS]: the seed hosts that follow, the domain section, the links
  local nh = tonumber(ARGV[NHOSTS])
  local DOMS = NHOSTS + 1 + nh
  local _, SECTION = domain_section(ARGV, DOMS)
  -- (types.lua) every key checked before the first Bloom bit is set: a seed
  -- recorded as seen and then not queued would never be crawled
  need_crawl() -- (types.lua) a crawl gone: nothing written
  need_keys(SEED_KEYS)
  local done = id and K.OFFERED .. id
  if done then
    need(done, 'string')
    local before = redis.call('GET', done)
    if before then return before end
  end
  need_blocks(KEYS)
  need_section(ARGV, SECTION, k)
  need_inlinks(ARGV, DOMS)
  read_control() -- (base.lua) the crawl's overrides beat the caller's ARGV
  read_blocks() -- (base.lua) a link or seed of a blocked host is refused ('b')
  maxp, maxh = limit('max_pages', maxp), limit('max_pages_per_host', maxh)
  per_host = limit('per_host', per_host)
  -- the allotment's credit is written first: a Redis that lost the crawler
  -- module must fail the call before it (types.lua's rule), as offer_links' first
  -- CRAWLER.BFADD would
  if credit then need_module(KEYS, k) end
  local quota
  maxp, quota = allotment(maxp, credit)
  local st = offer_begin()
  read_domains(st, ARGV, DOMS)
  local codes = offer_links(st, KEYS, ARGV, SECTION, k, force, maxp, maxh, quota)
  offer_flush(st, per_host)
  if nh > 0 then redis.call('SADD', K.SEEDHOSTS, unpack(ARGV, NHOSTS + 1, NHOSTS + nh)) end
  count('blocked_links', st.blocked)
  if links then
    count('new_links', st.new); count('seen_links', st.seen); count('skipped_links', st.skipped)
  else
    count('seeds', st.new)
  end
  -- links past the allotment: the shard's enqueued counter follows, for the grant (quota.lua)
  if st.quota > 0 then codes = codes .. ':' .. string.format('%d', st.admitted) end
  codes = codes .. LAYERS.done()
  if done then redis.call('SET', done, codes, 'PX', ttl) end
  return codes
end

register('seed', seed)
