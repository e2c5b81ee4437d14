-- heartbeat.lua -- renews a worker's lease and heartbeat record, and reclaims
-- the URLs of expired workers.
-- ARGV: P worker lease_ms per_host host pid pages pages_per_s in_flight
-- -> reclaimed

local function heartbeat(_, ARGV)
  local w, lease = ARGV[2], tonumber(ARGV[3])
  redis.call('ZADD', K.WORKERS, now + lease, w)
  local wk = K.WORKER .. w
  redis.call('HSETNX', wk, 'started', now)
  redis.call('HSET', wk, 'host', ARGV[5], 'pid', ARGV[6], 'pages', ARGV[7],
    'pages_per_s', ARGV[8], 'in_flight', ARGV[9], 'last', now, 'lease_until', now + lease)
  return reclaim(tonumber(ARGV[4]))
end

register('heartbeat', heartbeat)
