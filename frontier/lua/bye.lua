-- bye.lua -- unregisters a worker that holds no lease.  ARGV: P worker

local function bye(_, ARGV)
  if redis.call('HLEN', K.LEASE .. ARGV[2]) == 0 then
    redis.call('ZREM', K.WORKERS, ARGV[2])
    redis.call('DEL', K.WORKER .. ARGV[2])
  end
  return 0
end

register('bye', bye)
