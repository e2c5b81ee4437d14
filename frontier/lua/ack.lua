-- ack.lua -- the common case of finish, with the per-page bookkeeping done by
-- the client: every page of the group is leased to one worker, no token twice.
-- KEYS as finish.  ARGV: P npages max_pages max_pages_per_host per_host k
-- worker nhosts (origin pages ok)*nhosts, fetched bytes status_2xx..5xx
-- status_other errors seen_links skipped_links nkinds (kind n)*nkinds, then
-- per page: token span and a link section of span arguments.  If a lease is
-- missing it changes nothing and returns {'slow'} (the client then sends
-- the group to finish, which sorts lost pages out); else every page's
-- codes (as finish gives them), concatenated into one string.

local function ack(KEYS, ARGV)
  local np, maxp, maxh = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  local per_host, k = tonumber(ARGV[5]), tonumber(ARGV[6])
  need_module(KEYS, k)
  local lk, nh = K.LEASE .. ARGV[7], tonumber(ARGV[8])
  local c = 9 + 3 * nh
  local nkinds = tonumber(ARGV[c + 10])
  local i = c + 11 + 2 * nkinds
  local toks, at = {}, {}
  for pg = 1, np do
    toks[pg] = ARGV[i]; at[pg] = i + 2
    local span = ARGV[i + 1] -- tonumber costs Redis ~1.3k instructions: skip it for 0
    i = i + 2
    if span ~= '0' then i = i + tonumber(span) end
  end
  local vals = redis.call('HMGET', lk, unpack(toks))
  for pg = 1, np do if not vals[pg] then return {'slow'} end end
  redis.call('HDEL', lk, unpack(toks))
  local hosts, ok, wk = {}, {}, {}
  for h = 9, c - 1, 3 do
    hosts[#hosts + 1] = ARGV[h]
    if ARGV[h + 2] == '1' then ok[#ok + 1] = ARGV[h] end
  end
  if nh > 0 then
    local hv, set, del = redis.call('HMGET', K.HINFLIGHT, unpack(hosts)), {}, {}
    for x, host in ipairs(hosts) do
      local old = num(hv[x])
      local v = old - tonumber(ARGV[9 + 3 * (x - 1) + 1])
      if v <= 0 then del[#del + 1] = host else set[#set + 1] = host; set[#set + 1] = str(v) end
      -- below per_host before: its place in ready did not depend on this ack (a host
      -- left out by a worker with a smaller per_host is woken once it drains)
      if v < per_host and (old >= per_host or v <= 0) then wk[#wk + 1] = host end
    end
    if #set > 0 then redis.call('HSET', K.HINFLIGHT, unpack(set)) end
    if #del > 0 then redis.call('HDEL', K.HINFLIGHT, unpack(del)) end
  end
  if #ok > 0 then redis.call('HDEL', K.HFAIL, unpack(ok)) end
  local st = offer_begin()
  local out = {}
  for pg = 1, np do
    local codes = ''
    if ARGV[at[pg] - 1] ~= '0' then
      codes = offer_links(st, KEYS, ARGV, at[pg], k, false, maxp, maxh)
    end
    out[pg] = codes
  end
  local F = {'fetched', 'bytes', 'status_2xx', 'status_3xx', 'status_4xx', 'status_5xx',
             'status_other', 'errors', 'seen_links', 'skipped_links'}
  for x, f in ipairs(F) do
    if ARGV[c + x - 1] ~= '0' then redis.call('HINCRBY', K.STATS, f, ARGV[c + x - 1]) end
  end
  count('inflight', -np); count('new_links', st.new)
  count('seen_links', st.seen); count('skipped_links', st.skipped)
  for x = c + 11, c + 10 + 2 * nkinds, 2 do
    redis.call('HINCRBY', K.ERRORS, ARGV[x], ARGV[x + 1])
  end
  wake_many(wk, per_host)
  offer_flush(st, per_host)
  return table.concat(out) -- the client knows how many codes each page has
end

register('ack', ack)
