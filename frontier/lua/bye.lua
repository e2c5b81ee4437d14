-- bye.lua -- unregisters a worker that holds no lease.
-- ARGV and reply: the layout above build_bye() in frontier/handle.c.

local BYE_KEYS = {'WORKERS'}

local function bye(_, ARGV)
  local w = ARGV[2]
  need_keys(BYE_KEYS) -- (types.lua; worker:<w> is only deleted, whatever its type)
  need(K.LEASE .. w, 'hash')
  if redis.call('HLEN', K.LEASE .. w) == 0 then
    redis.call('ZREM', K.WORKERS, w)
    redis.call('DEL', K.WORKER .. w)
  end
  return 0
end

register('bye', bye)
