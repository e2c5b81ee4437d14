-- check.lua -- the invariant checker, for tests: reads every key of a crawl
-- (SCAN, so only for small crawls) and answers the invariants they break.
-- Read-only.  ARGV and reply: the layout above side_check() in tests/side.h.
--
-- The invariants every other function keeps between two calls:
--   1. a host in ready has a non-empty queue;
--   2. a host whose queue is non-empty and whose in-flight count is below
--      per_host is in ready or in fresh (per_host: the one every worker of the crawl
--      uses; a host may be in ready with per_host in flight: a seed call
--      wakes hosts whatever the per_host, and the next claim takes it out);
--   3. a host's score in ready is >= hnext[host] (when set);
--   4. hinflight holds no count <= 0, and hinflight[h] is the number of
--      leases (in every worker's lease hash) whose field names origin h;
--   5. stats.queued is the sum of the queue lengths (a list, or the entries
--      packed in the host's field of P hosts: queue.lua; never both, and a
--      packed count says how many follow);
--   6. stats.inflight is the sum of the lease hashes' sizes;
--   7. every lease field is stored(origin, seq) with seq a number, every
--      delayed retry stored(origin, entry), every queued entry NUMS REST
--      as written (frontier/entry.c: entry(parse(e)) is e, REST a path
--      "/..." or a whole URL, no blanks), or an older crawl's
--      "DEPTH TRIES URL" / "DEPTH TRIES HOPS URL";
--   8. P qheads[d] is the number of hosts whose next queued entry has depth
--      d (queue.lua: QD.move), for a crawl whose entries were all queued by
--      this build (an entry in the older "DEPTH TRIES URL" form: not
--      checked).

local function entry_ok(e)
  if string.match(e, '^%d+ %d+ [^ \t\n]+$') or string.match(e, '^%d+ %d+ %d+ [^ \t\n]+$') then
    return true
  end
  local d, t, u, hops = parse(e)
  return entry(d, t, u, hops) == e and (string.match(u, '^/[^ \t\n]*$') ~= nil or
                                        string.match(u, '^%a[%w+.-]*://[^ \t\n]+$') ~= nil)
end

-- Every key matching P .. suffix .. '*'.
local function scan(suffix)
  local pat = string.gsub(P .. suffix, '[%*%?%[%]\\]', '\\%0') .. '*'
  local keys, cursor = {}, '0'
  repeat
    local r = redis.call('SCAN', cursor, 'MATCH', pat, 'COUNT', 1000)
    cursor = r[1]
    for _, key in ipairs(r[2]) do keys[#keys + 1] = key end
  until cursor == '0'
  return keys
end

-- A hash as a table field -> value.
local function hash(key)
  local kv, t = redis.call('HGETALL', key), {}
  for i = 1, #kv, 2 do t[kv[i]] = kv[i + 1] end
  return t
end

local function check_queues(bad)
  local queued, nonempty, pre = 0, {}, #K.QUEUE
  local byd, old = {}, false -- the hosts by their head's depth; an older build's entry (rule 8)
  local function seen_entry(e, head)
    if string.match(e, '^%d+ %d+ ') then old = true end
    if not head then return end
    local d = tostring(tonumber(string.match(e, '^%d+')) or 0)
    byd[d] = (byd[d] or 0) + 1
  end
  for _, key in ipairs(scan(KEY.QUEUE)) do
    local n = redis.call('LLEN', key)
    queued = queued + n
    if n > 0 then nonempty[string.sub(key, pre + 1)] = true end
    for i, e in ipairs(redis.call('LRANGE', key, 0, -1)) do
      seen_entry(e, i == 1)
      if not entry_ok(e) then
        bad[#bad + 1] = string.format('7: %s holds the entry "%s"', key, e)
      end
    end
  end
  for h, v in pairs(hash(K.HOSTS)) do
    local _, c, packed = host_read(h, v)
    local es = c > 0 and unpack_head(packed, c, c, {}) or {}
    if not string.match(v, '^%d+$') and not string.match(v, '^%d+ %d+\n') then
      bad[#bad + 1] = string.format('5: the hosts field of %s is "%s"', h, v)
    elseif c > 0 and (#es ~= c or select(2, string.gsub(packed, '\n', '')) ~= c - 1) then
      bad[#bad + 1] = string.format('5: %s packs %d entries, says %d', h, #es, c)
    end
    if c > 0 and nonempty[h] then
      bad[#bad + 1] = string.format('5: %s has a list and %d packed entries', h, c)
    end
    queued = queued + c
    if c > 0 then nonempty[h] = true end
    for i, e in ipairs(es) do
      seen_entry(e, i == 1)
      if not entry_ok(e) then
        bad[#bad + 1] = string.format('7: %s packs the entry "%s"', h, e)
      end
    end
  end
  if not old then
    local qd = hash(K.QDEPTH)
    for d, n in pairs(byd) do
      if num(qd[d]) ~= n then
        bad[#bad + 1] = string.format('8: qheads[%s] is %s, %d hosts', d, qd[d] or 'none', n)
      end
    end
    for d, v in pairs(qd) do
      if not byd[d] then bad[#bad + 1] = string.format('8: qheads[%s] is %s, no host', d, v) end
    end
  end
  return queued, nonempty
end

local function check_leases(bad)
  local inflight, by_host = 0, {}
  for _, key in ipairs(scan(KEY.LEASE)) do
    for field in pairs(hash(key)) do
      local h, seq = unstore(field)
      if not string.find(field, '\t', 1, true) or not string.match(seq, '^%d+$') then
        bad[#bad + 1] = string.format('7: %s has the lease field "%s"', key, field)
      end
      by_host[h] = (by_host[h] or 0) + 1
      inflight = inflight + 1
    end
  end
  for _, v in ipairs(redis.call('ZRANGE', K.DELAYED, 0, -1)) do
    local _, e = unstore(v)
    if not string.find(v, '\t', 1, true) or not entry_ok(e) then
      bad[#bad + 1] = string.format('7: the delayed retry "%s"', v)
    end
  end
  return inflight, by_host
end

local function check_hosts(bad, per_host, delay, maxd, nonempty, by_host)
  local hinf, hnext, hdelay, ready = hash(K.HINFLIGHT), hash(K.HNEXT), hash(K.HDELAY), {}
  local r, fresh = redis.call('ZRANGE', K.READY, 0, -1, 'WITHSCORES'), {}
  for i = 1, #r, 2 do ready[r[i]] = tonumber(r[i + 1]) end
  for _, h in ipairs(redis.call('LRANGE', K.FRESH, 0, -1)) do fresh[h] = true end
  for h, score in pairs(ready) do
    if not nonempty[h] then bad[#bad + 1] = '1: ' .. h .. ' is in ready with an empty queue' end
    if score < num(hnext[h]) then
      bad[#bad + 1] = string.format('3: %s has score %d < hnext %s', h, score, hnext[h])
    end
  end
  for h in pairs(nonempty) do
    local cap = host_cap(host_delay(delay, maxd, hdelay[h]), per_host)
    if per_host > 0 and num(hinf[h]) < cap and not ready[h] and not fresh[h] then
      bad[#bad + 1] = string.format('2: %s has URLs queued, %d < %d in flight, is not ready', h,
                                    num(hinf[h]), cap)
    end
  end
  for h, v in pairs(hinf) do
    if num(v) <= 0 then bad[#bad + 1] = string.format('4: hinflight %s is %s', h, v) end
    if num(v) ~= (by_host[h] or 0) then
      bad[#bad + 1] = string.format('4: hinflight %s is %s, %d leases', h, v, by_host[h] or 0)
    end
  end
  for h, n in pairs(by_host) do
    if not hinf[h] then bad[#bad + 1] = string.format('4: %d leases of %s, no hinflight', n, h) end
  end
end

local function check(_, ARGV)
  read_control() -- (base.lua) the limits the crawl's overrides make the workers use
  local per_host, bad = limit('per_host', tonumber(ARGV[2])), {}
  local delay = limit('delay', tonumber(ARGV[3] or '0'))
  local maxd = limit('max_delay', tonumber(ARGV[4] or '0'))
  local queued, nonempty = check_queues(bad)
  local inflight, by_host = check_leases(bad)
  check_hosts(bad, per_host, delay, maxd, nonempty, by_host)
  local sq = num(redis.call('HGET', K.STATS, 'queued'))
  local si = num(redis.call('HGET', K.STATS, 'inflight'))
  if sq ~= queued then
    bad[#bad + 1] = string.format('5: stats.queued %d, queues %d', sq, queued)
  end
  if si ~= inflight then
    bad[#bad + 1] = string.format('6: stats.inflight %d, leases %d', si, inflight)
  end
  return bad
end

register('check', check, {'no-writes'})
