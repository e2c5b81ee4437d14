-- robots_look.lua -- what every worker shares about one origin's robots.txt:
-- the stored value (robots:<origin>) or its fetch lock (robots-lock:<origin>),
-- for a whole claim batch of new origins in one call.
-- ARGV and reply: the layout above build_look() in frontier/hostinfo.c.

-- For each origin: its stored value if any, else the fetch lock taken for
-- this caller (SET NX PX) if it is free (1), or 0 if another worker holds
-- it.  Atomic: the rules cannot be stored between the look and the lock
-- (the fetcher stores them and unlocks in one call, robots_store), so whoever
-- wins the lock knows they are missing.
local function robots_look(_, ARGV)
  local ttl, FIRST = ARGV[2], 3
  need_crawl() -- (types.lua) a crawl gone: nothing written
  for i = FIRST, #ARGV do -- (types.lua) before the first write
    need(K.ROBOTS .. ARGV[i], 'string')
    need(K.ROBOTS_LOCK .. ARGV[i], 'string')
  end
  local out = {}
  for i = FIRST, #ARGV do
    local o = ARGV[i]
    local v = redis.call('GET', K.ROBOTS .. o)
    if v and v ~= '' then
      out[#out + 1] = v
    elseif redis.call('SET', K.ROBOTS_LOCK .. o, '1', 'NX', 'PX', ttl) then
      out[#out + 1] = 1
    else
      out[#out + 1] = 0
    end
  end
  return out
end

register('robots_look', robots_look)
