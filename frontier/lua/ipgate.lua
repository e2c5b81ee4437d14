-- ipgate.lua -- politeness per IP address (--per-ip, --ip-delay): the
-- request slots of the addresses whose shard this is (frontier/ipgate.c:
-- an address's shard is a hash of it), taken before a transfer connects
-- and given back when it ends, in one call for a batch of both.
-- ARGV and reply: the layout above build_ipgate() in frontier/ipgate.c.
--
-- An address's slots are the sorted set P ip:ADDR: each holder's token
-- (its worker id and a number) scored by the time its hold lapses (a
-- worker that died holding one frees it so), and "~next" scored by the
-- earliest time of the next grant: ip_delay after the last grant and after
-- the last return (+ 1 ms: now is the clock cut to the ms, as in base.lua's
-- space_hosts).  So no address has more than per_ip requests in flight,
-- nor two starts closer than ip_delay, nor a start closer than ip_delay to
-- the end of the one before, whichever worker asks.  Entries past their
-- time are dropped at each ask, and the key expires with its last entry.
-- A call may run twice (the link resent it): a holder asking again with
-- its token keeps its slot, a second return changes nothing.

register('ipgate', function(_, ARGV)
  local per, gap, hold = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  need_crawl() -- (types.lua) a crawl gone: nothing written
  for a = 5, #ARGV, 3 do need(K.IPSLOT .. ARGV[a + 1], 'zset') end
  local out, ttl = {}, string.format('%d', hold + gap + 1000)
  for a = 5, #ARGV, 3 do
    local op, k, tok = ARGV[a], K.IPSLOT .. ARGV[a + 1], ARGV[a + 2]
    if op == 'r' then -- a return: the next grant no sooner than gap after it
      if redis.call('ZREM', k, tok) == 1 and gap > 0 then
        redis.call('ZADD', k, 'GT', now + gap + 1, '~next')
        redis.call('PEXPIRE', k, ttl)
      end
      out[#out + 1] = 0
    else -- an ask: 0 granted, W > 0 the next grant is W ms away, -1 every slot is held
      redis.call('ZREMRANGEBYSCORE', k, '-inf', nows)
      local wait = 0
      if not redis.call('ZSCORE', k, tok) then
        local nx = tonumber(redis.call('ZSCORE', k, '~next'))
        local held = redis.call('ZCARD', k) - (nx and 1 or 0)
        if nx then
          wait = nx - now
        elseif held >= per then -- (a return may come any time: the asker backs off)
          wait = -1
        end
      end
      if wait == 0 then
        redis.call('ZADD', k, now + hold, tok)
        if gap > 0 then redis.call('ZADD', k, 'GT', now + gap + 1, '~next') end
        redis.call('PEXPIRE', k, ttl)
      end
      out[#out + 1] = wait
    end
  end
  return out
end)
