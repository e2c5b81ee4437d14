-- dedup.lua -- exact duplicates: each page's payload digest tested and
-- recorded in one atomic step (--dedup).  ARGV and reply: the layout above
-- build_dedup() in frontier/dedup.c.
--
-- The first URL to record a digest owns it (digests: digest -> "URL\tms");
-- a page with that digest under another URL is its duplicate.  The same
-- URL again (the page fetched twice, or this call run a second time after
-- its reply was lost) is not: so a call may run twice and answers alike.

local function dedup(_, ARGV)
  need_crawl() -- (types.lua) a crawl gone: nothing written
  need(K.DIGESTS, 'hash')
  local out = {}
  for a = 2, #ARGV, 3 do
    local d, url, ms = ARGV[a], ARGV[a + 1], ARGV[a + 2]
    local v = redis.call('HGET', K.DIGESTS, d)
    if not v then
      redis.call('HSET', K.DIGESTS, d, url .. '\t' .. ms)
      out[#out + 1] = ''
    elseif string.sub(v, 1, #url + 1) == url .. '\t' then
      out[#out + 1] = ''
    else
      out[#out + 1] = v
    end
  end
  return out
end

register('dedup', dedup)
