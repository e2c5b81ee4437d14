-- retry.lua -- a fetch to retry: its lease goes to the delayed set (or the
-- dead-letter list after max_tries) and its host is backed off: its next
-- claim waits at least its delay (host_delay) after this request, more on
-- repeated failures or a Retry-After.
-- ARGV and reply: the layout above build_retry() in frontier/finish.c.

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

local RETRY_KEYS = {'READY', 'HINFLIGHT', 'HNEXT', 'HDELAY', 'HFAIL', 'HOSTS', 'STATS', 'ERRORS',
                    'QDEPTH', 'DEAD', 'DELAYED', 'CONTROL', 'HPACE', 'HSLOW'}

local function retry(_, ARGV)
  local lk, field, status, err = K.LEASE .. ARGV[2], ARGV[3], ARGV[4], ARGV[5]
  local delay, retry_after, max_tries = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
  local backoff, backoff_max, jitter = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
  local per_host, bytes = tonumber(ARGV[12]), tonumber(ARGV[13])
  local pdelay, maxd = tonumber(ARGV[14]), tonumber(ARGV[15]) -- the host's spacing (host_delay)
  local unfetched = ARGV[16] == '1' -- no request made: the host neither failed nor backs off
  local target = tonumber(ARGV[17]) or 0 -- the wait the request's duration asks for (pace_note)
  local h = unstore(field)
  need_crawl() -- (types.lua) a crawl gone: nothing written
  need_keys(RETRY_KEYS) -- (types.lua) before the first write
  need(lk, 'hash')
  need_queue(h)
  read_control() -- (base.lua) the crawl's overrides beat the worker's ARGV
  per_host, pdelay = limit('per_host', per_host), limit('delay', pdelay)
  maxd = limit('max_delay', maxd)
  local e = redis.call('HGET', lk, field)
  if not e then return {1, 0} end
  redis.call('HDEL', lk, field)
  local d, t, u, hops = parse(e)
  unlease(h)
  count('inflight', -1)
  outcome(tonumber(status), err, bytes)
  local dead = 0
  if t + 1 >= max_tries then
    -- a dead letter is for an operator: the whole URL, "DEPTH TRIES [HOPS ]URL"
    local hf = hops > 0 and str(hops) .. ' ' or ''
    local de = str(d) .. ' ' .. str(t) .. ' ' .. hf .. full_url(h, u)
    redis.call('RPUSH', K.DEAD, de .. '\t' .. status .. '\t' .. err)
    count('dead', 1); dead = 1
  else
    redis.call('ZADD', K.DELAYED, now + delay, stored(h, entry(d, t + 1, u, hops)))
    count('retried', 1)
  end
  -- the host: from its 2nd failure in a row, backoff * 2^(failures - 2), jittered
  -- (a URL its robots.txt kept from being fetched is not the host's failure: its
  -- robots.txt's own fetches are spaced by the stored "unavailable" verdict)
  local nf = unfetched and 0 or redis.call('HINCRBY', K.HFAIL, h, 1)
  local hb = 0
  if nf >= 2 then
    local x = nf - 2
    if x > 20 then x = 20 end
    hb = backoff * 2 ^ x
    if hb > backoff_max then hb = backoff_max end
    hb = math.floor(hb * (0.5 + 0.5 * jitter))
  end
  if retry_after > hb then hb = retry_after end
  -- and never sooner than its delay after this request (+ 1: as space_hosts)
  -- (its pace: a 429 or a 503 slows the host down, base.lua)
  local ds, bases, pv = host_delays({h}, pdelay, maxd)
  local hd = ds[1]
  if not unfetched and hd > 0 then
    hd = pace_note(h, pv[1], bases[1], maxd, target, status == '429' or status == '503')
  end
  if hd > 0 and hd + 1 > hb then hb = hd + 1 end
  if hb > 0 and now + hb > num(redis.call('HGET', K.HNEXT, h)) then
    redis.call('HSET', K.HNEXT, h, now + hb)
    redis.call('ZADD', K.READY, 'XX', 'GT', now + hb, h)
  end
  wake(h, host_cap(hd, per_host))
  return {0, dead}
end

register('retry', retry)
