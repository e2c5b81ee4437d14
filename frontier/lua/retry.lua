-- retry.lua -- a fetch to retry: its lease goes to the delayed set (or the
-- dead-letter list after max_tries) and its host is backed off.
-- ARGV: P worker token status err delay_ms retry_after_ms max_tries
-- backoff_ms backoff_max_ms jitter(0..1) per_host bytes -> {lost, dead}

local function outcome(status, err, bytes)
  if status >= 200 and status < 300 then count('status_2xx', 1)
  elseif status >= 300 and status < 400 then count('status_3xx', 1)
  elseif status >= 400 and status < 500 then count('status_4xx', 1)
  elseif status >= 500 and status < 600 then count('status_5xx', 1)
  elseif status ~= 0 then count('status_other', 1) end
  if err ~= '' then
    count('errors', 1)
    redis.call('HINCRBY', K.ERRORS, err, 1)
  end
  count('bytes', bytes)
end

local function retry(_, ARGV)
  local lk = K.LEASE .. ARGV[2]
  local e = redis.call('HGET', lk, ARGV[3])
  if not e then return {1, 0} end
  redis.call('HDEL', lk, ARGV[3])
  local d, t, u = parse(e)
  local h = origin(u)
  unlease(h)
  count('inflight', -1)
  outcome(tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[13]))
  local dead = 0
  if t + 1 >= tonumber(ARGV[8]) then
    redis.call('RPUSH', K.DEAD, e..'\t'..ARGV[4]..'\t'..ARGV[5])
    count('dead', 1); dead = 1
  else
    redis.call('ZADD', K.DELAYED, now + tonumber(ARGV[6]), d..' '..(t + 1)..' '..u)
    count('retried', 1)
  end
  local nf = redis.call('HINCRBY', K.HFAIL, h, 1)
  local hb = 0
  if nf >= 2 then
    local x = nf - 2
    if x > 20 then x = 20 end
    hb = tonumber(ARGV[9]) * 2 ^ x
    if hb > tonumber(ARGV[10]) then hb = tonumber(ARGV[10]) end
    hb = math.floor(hb * (0.5 + 0.5 * tonumber(ARGV[11])))
  end
  if tonumber(ARGV[7]) > hb then hb = tonumber(ARGV[7]) end
  if hb > 0 and now + hb > num(redis.call('HGET', K.HNEXT, h)) then
    redis.call('HSET', K.HNEXT, h, now + hb)
    redis.call('ZADD', K.READY, 'XX', 'GT', now + hb, h)
  end
  wake(h, tonumber(ARGV[12]))
  return {0, dead}
end

register('retry', retry)
