-- bye.lua -- unregisters a worker that holds no lease.
-- ARGV and reply: the layout above build_bye() in frontier/frontier.c.

local function bye(_, ARGV)
  local w = ARGV[2]
  if redis.call('HLEN', K.LEASE .. w) == 0 then
    redis.call('ZREM', K.WORKERS, w)
    redis.call('DEL', K.WORKER .. w)
  end
  return 0
end

register('bye', bye)
