-- settings.lua -- the crawl's admission settings (P settings, shard 0):
-- what it admits (scope, limits, patterns), fixed by the first worker.
-- ARGV and reply: the layout above settings_call() in frontier/settings.c.

-- Writes the caller's field/value pairs if the crawl keeps none yet, in
-- the one step that reads them: two first workers racing agree on one.
local function settings(_, ARGV)
  need_crawl() -- (types.lua) a crawl gone: nothing written
  need(K.SETTINGS, 'hash')
  if redis.call('EXISTS', K.SETTINGS) == 0 and #ARGV >= 3 then
    redis.call('HSET', K.SETTINGS, unpack(ARGV, 2))
  end
  return redis.call('HGETALL', K.SETTINGS)
end

register('settings', settings)
