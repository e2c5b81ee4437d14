-- quota.lua -- a crawl-wide max_pages over the shards of a crawl
-- (docs/sharding.md): shard 0 grants each shard an allotment, and a shard admits
-- links while its `enqueued` counter is below what it was granted
-- (offer.lua: allotment).  P quota (shard 0): field s, the allotment shard s
-- was granted in all; 'total', their sum.  A grant runs here, the credit in
-- the shard's next offer (the worker relays it, and the shard keeps the
-- highest it was told): a worker lost in between leaves the grant in
-- P quota, and the next one asked for that shard relays it with its own.
-- ARGV and reply: the layout above build_grant() in frontier/quota.c.

local QUOTA_KEYS = {'QUOTA', 'CONTROL'}
local QUOTA_CHUNK = 256 -- most a grant adds beyond what was asked, so a shard asks less often

local function grant(_, ARGV)
  need_crawl() -- (types.lua) a crawl gone: nothing written
  need_keys(QUOTA_KEYS) -- (types.lua) before the first write
  read_control() -- (base.lua) the crawl's override beats the worker's max_pages
  local maxp, nshards = limit('max_pages', tonumber(ARGV[2])), tonumber(ARGV[3])
  for i = 4, #ARGV, 3 do -- every triple checked before anything is written
    if not (string.match(ARGV[i], '^%d+$') and string.match(ARGV[i + 1] or '', '^%d+$') and
            string.match(ARGV[i + 2] or '', '^%d+$')) then
      error({err = 'ERR grant: bad triple at ' .. i})
    end
  end
  local total, out = num(redis.call('HGET', K.QUOTA, 'total')), {}
  for i = 4, #ARGV, 3 do
    local s, want, base = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    local g = num(redis.call('HGET', K.QUOTA, s))
    -- links the shard admitted beyond its grants (while no page limit held)
    -- count as if granted: the limit is on what the crawl admitted in all
    if g < base then total = total + base - g; g = base end
    local rem = maxp - total
    if want > 0 and maxp == 0 then -- no limit in force: granted all the same, to be counted
      g = g + want + QUOTA_CHUNK; total = total + want + QUOTA_CHUNK
    elseif want > 0 and rem > 0 then
      local k = want + math.min(QUOTA_CHUNK, math.floor(rem / (4 * nshards)))
      if k > rem then k = rem end
      g = g + k; total = total + k
    end
    redis.call('HSET', K.QUOTA, s, string.format('%d', g))
    out[#out + 1] = g
  end
  redis.call('HSET', K.QUOTA, 'total', string.format('%d', total))
  return out
end

register('grant', grant)
