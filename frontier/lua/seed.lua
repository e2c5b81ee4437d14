-- seed.lua -- queues seed URLs at depth 0 through the Bloom filter.
-- KEYS: ready, Bloom blocks.  ARGV: P force max_pages max_pages_per_host
-- per_host k, link section -> codes

local function seed(KEYS, ARGV)
  local st = offer_begin()
  local codes = offer_links(st, KEYS, ARGV, 7, tonumber(ARGV[6]), ARGV[2] == '1',
                            tonumber(ARGV[3]), tonumber(ARGV[4]))
  offer_flush(st, tonumber(ARGV[5]))
  count('seeds', st.new)
  return codes
end

register('seed', seed)
