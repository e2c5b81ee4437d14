/*
 * scripts.c -- the frontier's Lua scripts, as C strings.
 *
 * DESIGN: every state change of the frontier is one function of a Redis 7
 * Functions library, so it is atomic on the Redis side.  The library is
 * PRELUDE (helpers, compiled once at FUNCTION LOAD, not per call) + one
 * registered function per body.  Each call starts with begin(), which reads
 * the server clock (TIME: the only clock that matters) and the key names.
 * The library and function names carry a hash of the source
 * ("crawler_frontier_<hash>", "cf<hash>_claim"), so two crawler builds on one
 * Redis never run each other's code.  ARGV[1] is always the key prefix
 * "crawler:{NAME}:"; every key a script touches is built from it, so all of
 * them share the {NAME} hash tag (one Redis Cluster slot); KEYS[1] is the
 * ready key (routing) and, in finish/ack/seed, KEYS[2..] the Bloom block
 * keys.  finish is the general per-page acknowledgement; ack is its common
 * case (one worker, counters summed by the client) and hands a group back
 * to finish, unchanged, when a lease is missing.
 *
 * Invariants kept by every script (see frontier.c for the key table):
 *   - a host is in `ready` iff its queue is non-empty and its in-flight count
 *     is below per_host; its score is >= hnext[host] (the earliest time of
 *     its next claim);
 *   - stats.queued = sum of queue lengths, stats.inflight = sum of the lease
 *     hashes' sizes = sum of hinflight;
 *   - an entry is "DEPTH TRIES URL".
 * Why Functions rather than EVALSHA: with EVALSHA every call re-ran the
 * helper definitions (measured: 14 of the 28 us of an acknowledge on this
 * machine); a library defines them once.  Loaded by frontier_open and again
 * whenever FCALL says the function is missing (server restarted, FUNCTION
 * FLUSH).
 */
#include "frontier_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRELUDE                                                                                    \
    "local P, now, nows, K_READY, K_STATS, K_DELAYED, K_HINF, K_HNEXT, K_HDELAY\n"                 \
    "local K_HADMIT, K_HFAIL, K_WORKERS, SUF, NS, BIG\n"                                           \
    "local function begin(a)\n"                                                                    \
    "  if a[1] ~= P then\n"                                                                        \
    "    P = a[1]\n"                                                                               \
    "    K_READY, K_STATS, K_DELAYED = P..'ready', P..'stats', P..'delayed'\n"                     \
    "    K_HINF, K_HNEXT, K_HDELAY = P..'hinflight', P..'hnext', P..'hdelay'\n"                    \
    "    K_HADMIT, K_HFAIL, K_WORKERS = P..'hadmit', P..'hfail', P..'workers'\n"                   \
    "  end\n"                                                                                      \
    "  if not SUF then -- lease numbers of a claim: its number .. SUF[i] (no float formatting)\n"  \
    "    SUF = {}\n"                                                                               \
    "    for i = 1, 9999 do SUF[i] = string.format('%04d', i) end\n"                               \
    "    -- A value longer than hash-max-listpack-value (64 unless an operator raised\n"           \
    "    -- it) makes a hash a hash table at once: a lease hash of hundreds of fields\n"           \
    "    -- left a listpack (Debian keeps up to 512) is searched linearly by every\n"              \
    "    -- insert and every ack\n"                                                                \
    "    BIG = string.rep('~', 65)\n"                                                              \
    "    NS = {} -- small counts as strings: Redis 7.0 formats a Lua number with %.17g\n"          \
    "    for i = 0, 9999 do NS[i] = tostring(i) end\n"                                             \
    "  end\n"                                                                                      \
    "  local T = redis.call('TIME')\n"                                                             \
    "  now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)\n"                          \
    "  nows = string.format('%d', now)\n"                                                          \
    "end\n"                                                                                        \
    "local function num(v) return tonumber(v) or 0 end\n"                                          \
    "local function str(n) return NS[n] or string.format('%d', n) end\n"                           \
    "local function origin(url) return string.match(url, '^[^/]*//[^/]*') or url end\n"            \
    "local function parse(e)\n"                                                                    \
    "  local d, t, u = string.match(e, '^(%d+) (%d+) (.+)$')\n"                                    \
    "  if not d then return 0, 0, e end\n"                                                         \
    "  return tonumber(d), tonumber(t), u\n"                                                       \
    "end\n"                                                                                        \
    "local function host_of(e)\n"                                                                  \
    "  local h = string.match(e, '^%d+ %d+ ([^/]*//[^/]*)')\n"                                     \
    "  if h then return h end\n"                                                                   \
    "  local _, _, u = parse(e)\n"                                                                 \
    "  return origin(u)\n"                                                                         \
    "end\n"                                                                                        \
    "local function qkey(h) return P..'q:'..h end\n"                                               \
    "local function count(field, n)\n"                                                             \
    "  if n ~= 0 then redis.call('HINCRBY', K_STATS, field, str(n)) end\n"                         \
    "end\n" /* the host may be claimable again: back into ready (keeping its score) */             \
    "local function wake(h, per_host, nonempty)\n"                                                 \
    "  if redis.call('ZSCORE', K_READY, h) then return end\n"                                      \
    "  if num(redis.call('HGET', K_HINF, h)) < per_host and\n"                                     \
    "     (nonempty or redis.call('LLEN', qkey(h)) > 0) then\n"                                    \
    "    local nx = num(redis.call('HGET', K_HNEXT, h))\n"                                         \
    "    if nx < now then nx = now end\n"                                                          \
    "    redis.call('ZADD', K_READY, 'NX', nx, h)\n"                                               \
    "  end\n"                                                                                      \
    "end\n"                                                                                        \
    "local function wake_new(hs, per_host) -- hosts with a queue: into ready if room (NX)\n"       \
    "  for a = 1, #hs, 2000 do\n"                                                                  \
    "    local b = math.min(a + 1999, #hs)\n"                                                      \
    "    local inf = redis.call('HMGET', K_HINF, unpack(hs, a, b))\n"                              \
    "    local nx = redis.call('HMGET', K_HNEXT, unpack(hs, a, b))\n"                              \
    "    local za = {}\n"                                                                          \
    "    for j = a, b do\n"                                                                        \
    "      local x = j - a + 1\n"                                                                  \
    "      if num(inf[x]) < per_host then\n"                                                       \
    "        local t = nx[x]\n"                                                                    \
    "        if num(t) < now then t = nows end\n"                                                  \
    "        za[#za + 1] = t; za[#za + 1] = hs[j]\n"                                               \
    "      end\n"                                                                                  \
    "    end\n"                                                                                    \
    "    if #za > 0 then redis.call('ZADD', K_READY, 'NX', unpack(za)) end\n"                      \
    "  end\n"                                                                                      \
    "end\n"                                                                                        \
    "local function wake_many(hs, per_host) -- hosts that may have become claimable\n"             \
    "  local ne = {}\n"                                                                            \
    "  for _, h in ipairs(hs) do if redis.call('LLEN', qkey(h)) > 0 then ne[#ne + 1] = h end "     \
    "end\n"                                                                                        \
    "  wake_new(ne, per_host)\n"                                                                   \
    "end\n"                                                                                        \
    "local function unlease(h)\n"                                                                  \
    "  if redis.call('HINCRBY', K_HINF, h, -1) <= 0 then redis.call('HDEL', K_HINF, h) end\n"      \
    "end\n"                                                                                        \
    "local function note_host(list, seen, h)\n"                                                    \
    "  if not seen[h] then seen[h] = true; list[#list + 1] = h end\n"                              \
    "end\n"                                                                                        \
    "local function outcome(status, err, bytes)\n"                                                 \
    "  if status >= 200 and status < 300 then count('status_2xx', 1)\n"                            \
    "  elseif status >= 300 and status < 400 then count('status_3xx', 1)\n"                        \
    "  elseif status >= 400 and status < 500 then count('status_4xx', 1)\n"                        \
    "  elseif status >= 500 and status < 600 then count('status_5xx', 1)\n"                        \
    "  elseif status ~= 0 then count('status_other', 1) end\n"                                     \
    "  if err ~= '' then\n"                                                                        \
    "    count('errors', 1)\n"                                                                     \
    "    redis.call('HINCRBY', P..'errors', err, 1)\n"                                             \
    "  end\n"                                                                                      \
    "  count('bytes', bytes)\n"                                                                    \
    "end\n" /* hand the leases of expired workers back to the front of their queues */             \
    "local function reclaim(per_host)\n"                                                           \
    "  local ws = redis.call('ZRANGEBYSCORE', K_WORKERS, '-inf', '('..now, 'LIMIT', 0, 16)\n"      \
    "  local n = 0\n"                                                                              \
    "  for _, w in ipairs(ws) do\n"                                                                \
    "    local lk = P..'lease:'..w\n"                                                              \
    "    local kv = redis.call('HGETALL', lk)\n"                                                   \
    "    local hosts, seen = {}, {}\n"                                                             \
    "    for i = 2, #kv, 2 do\n"                                                                   \
    "      local _, _, u = parse(kv[i])\n"                                                         \
    "      local h = origin(u)\n"                                                                  \
    "      redis.call('LPUSH', qkey(h), kv[i])\n"                                                  \
    "      unlease(h)\n"                                                                           \
    "      note_host(hosts, seen, h)\n"                                                            \
    "      n = n + 1\n"                                                                            \
    "    end\n"                                                                                    \
    "    redis.call('DEL', lk, P..'worker:'..w)\n"                                                 \
    "    redis.call('ZREM', K_WORKERS, w)\n"                                                       \
    "    for _, h in ipairs(hosts) do wake(h, per_host, true) end\n"                               \
    "  end\n"                                                                                      \
    "  count('inflight', -n); count('queued', n); count('reclaimed', n)\n"                         \
    "  return n\n"                                                                                 \
    "end\n" /* due retries go to the front of their queues */                                      \
    "local function promote(per_host)\n"                                                           \
    "  local due = redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', now, 'LIMIT', 0, 256)\n"         \
    "  if #due == 0 then return end\n"                                                             \
    "  local hosts, seen = {}, {}\n"                                                               \
    "  for _, e in ipairs(due) do\n"                                                               \
    "    local _, _, u = parse(e)\n"                                                               \
    "    local h = origin(u)\n"                                                                    \
    "    redis.call('LPUSH', qkey(h), e)\n"                                                        \
    "    note_host(hosts, seen, h)\n"                                                              \
    "  end\n"                                                                                      \
    "  redis.call('ZREM', K_DELAYED, unpack(due))\n"                                               \
    "  count('queued', #due)\n"                                                                    \
    "  for _, h in ipairs(hosts) do wake(h, per_host, true) end\n"                                 \
    "end\n" /* take_leases: acks; offer_*: Bloom test-and-add of a link section (see               \
                pages.c) and enqueue of the new entries within the page limits */                  \
    "local function take_leases(ARGV, np, i)\n"                                                    \
    "  local at, bylk, lks, ent = {}, {}, {}, {}\n"                                                \
    "  for p = 1, np do\n"                                                                         \
    "    at[p] = i\n"                                                                              \
    "    local lk = P..'lease:'..ARGV[i]\n"                                                        \
    "    local g = bylk[lk]\n"                                                                     \
    "    if not g then g = {}; bylk[lk] = g; lks[#lks + 1] = lk end\n"                             \
    "    g[#g + 1] = p\n"                                                                          \
    "    i = i + 9 + tonumber(ARGV[i + 8])\n"                                                      \
    "  end\n"                                                                                      \
    "  for _, lk in ipairs(lks) do\n"                                                              \
    "    local g, toks, once, del = bylk[lk], {}, {}, {}\n"                                        \
    "    for x, p in ipairs(g) do toks[x] = ARGV[at[p] + 1] end\n"                                 \
    "    local vals = redis.call('HMGET', lk, unpack(toks))\n"                                     \
    "    for x, p in ipairs(g) do\n"                                                               \
    "      if vals[x] and not once[toks[x]] then\n"                                                \
    "        once[toks[x]] = true; ent[p] = vals[x]; del[#del + 1] = toks[x]\n"                    \
    "      end\n"                                                                                  \
    "    end\n"                                                                                    \
    "    if #del > 0 then redis.call('HDEL', lk, unpack(del)) end\n"                               \
    "  end\n"                                                                                      \
    "  return ent\n"                                                                               \
    "end\n"                                                                                        \
    "local function offer_begin()\n"                                                               \
    "  return {hosts = {}, byhost = {}, hadm = {}, new = 0, seen = 0, skipped = 0,\n"              \
    "          admitted = num(redis.call('HGET', K_STATS, 'enqueued'))}\n"                         \
    "end\n"                                                                                        \
    "local function enqueue(st, e, h) -- h: the entry's origin, sent with it\n"                    \
    "  st.new = st.new + 1\n"                                                                      \
    "  local q = st.byhost[h]\n"                                                                   \
    "  if not q then q = {}; st.byhost[h] = q; st.hosts[#st.hosts + 1] = h end\n"                  \
    "  q[#q + 1] = e\n"                                                                            \
    "end\n"                                                                                        \
    "local BF -- BITFIELD arguments: SET u1 <offset> 1, only the offsets are rewritten\n"          \
    "local function bf_init()\n"                                                                   \
    "  BF = {}\n"                                                                                  \
    "  for j = 1, 1024 do BF[4*j-3] = 'SET'; BF[4*j-2] = 'u1'; BF[4*j-1] = '0'; BF[4*j] = '1' "    \
    "end\n"                                                                                        \
    "end\n"                                                                                        \
    "local function offer_fast(st, KEYS, ARGV, i, k, force)\n"                                     \
    "  if not BF then bf_init() end\n"                                                             \
    "  local codes, nc, w, per = {}, 0, 2 + k, math.floor(1024 / k)\n"                             \
    "  local ng = tonumber(ARGV[i]); i = i + 1\n"                                                  \
    "  for _ = 1, ng do\n"                                                                         \
    "    local key, n = KEYS[tonumber(ARGV[i])], tonumber(ARGV[i + 1])\n"                          \
    "    i = i + 2\n"                                                                              \
    "    local m = 0\n"                                                                            \
    "    while m < n do\n"                                                                         \
    "      local cnt = n - m\n"                                                                    \
    "      if cnt > per then cnt = per end\n"                                                      \
    "      local na = 1\n"                                                                         \
    "      for c = 0, cnt - 1 do\n"                                                                \
    "        local b = i + (m + c) * w\n"                                                          \
    "        for j = b + 2, b + 1 + k do BF[na + 2] = ARGV[j]; na = na + 4 end\n"                  \
    "      end\n"                                                                                  \
    "      local old = redis.call('BITFIELD', key, unpack(BF, 1, na - 1))\n"                       \
    "      for c = 0, cnt - 1 do\n"                                                                \
    "        local isnew = force\n"                                                                \
    "        if not isnew then\n"                                                                  \
    "          for j = c * k + 1, c * k + k do if old[j] == 0 then isnew = true; break end end\n"  \
    "        end\n"                                                                                \
    "        nc = nc + 1\n"                                                                        \
    "        local b = i + (m + c) * w\n"                                                          \
    "        if isnew then codes[nc] = 'n'; enqueue(st, ARGV[b], ARGV[b + 1])\n"                   \
    "        else codes[nc] = 's'; st.seen = st.seen + 1 end\n"                                    \
    "      end\n"                                                                                  \
    "      m = m + cnt\n"                                                                          \
    "    end\n"                                                                                    \
    "    i = i + n * w\n"                                                                          \
    "  end\n"                                                                                      \
    "  return table.concat(codes), i\n"                                                            \
    "end\n"                                                                                        \
    "local function need_module(KEYS, k) -- k < 0: the module's layout; a script\n"                \
    "  -- that would write before its first CRAWLER.BFADD calls it with nothing to\n"              \
    "  -- set first, so a Redis that lost the module fails it before any write\n"                  \
    "  if k < 0 and KEYS[2] then redis.call('CRAWLER.BFADD', KEYS[2], '1', '') end\n"              \
    "end\n"                                                                                        \
    "local function offer_mod(st, KEYS, ARGV, i, k, force, maxp, maxh)\n"                          \
    "  -- the crawler module's layout: per block run KEYS index, count,\n"                         \
    "  -- (entry, origin) * count, then the run's offsets (k uint32 a link)\n"                     \
    "  local codes, nc, ks, lim = {}, 0, str(k), maxp > 0 or maxh > 0\n"                           \
    "  local ng = tonumber(ARGV[i]); i = i + 1\n"                                                  \
    "  for _ = 1, ng do\n"                                                                         \
    "    local key, n = KEYS[tonumber(ARGV[i])], tonumber(ARGV[i + 1])\n"                          \
    "    i = i + 2\n"                                                                              \
    "    local offs, r = ARGV[i + 2 * n]\n"                                                        \
    "    if not lim then r = redis.call('CRAWLER.BFADD', key, ks, offs) end\n"                     \
    "    for c = 1, n do\n"                                                                        \
    "      local e, h, code = ARGV[i], ARGV[i + 1], 's' -- 'n' new, 's' seen, 'l' over a limit\n"  \
    "      if not lim then\n"                                                                      \
    "        if force or string.byte(r, c) == 49 then code = 'n' end\n"                            \
    "      else\n"                                                                                 \
    "        local ha = st.hadm[h]\n"                                                              \
    "        if ha == nil then ha = num(redis.call('HGET', K_HADMIT, h)); st.hadm[h] = ha end\n"   \
    "        if (maxp > 0 and st.admitted >= maxp) or (maxh > 0 and ha >= maxh) then\n"            \
    "          code = 'l'\n"                                                                       \
    "        else\n"                                                                               \
    "          local one = string.sub(offs, 4 * k * (c - 1) + 1, 4 * k * c)\n"                     \
    "          local fresh = redis.call('CRAWLER.BFADD', key, ks, one) == '1'\n"                   \
    "          if force or fresh then\n"                                                           \
    "            code = 'n'; st.admitted = st.admitted + 1; st.hadm[h] = ha + 1\n"                 \
    "          end\n"                                                                              \
    "        end\n"                                                                                \
    "      end\n"                                                                                  \
    "      nc = nc + 1; codes[nc] = code\n"                                                        \
    "      if code == 'n' then enqueue(st, e, h)\n"                                                \
    "      elseif code == 's' then st.seen = st.seen + 1\n"                                        \
    "      else st.skipped = st.skipped + 1 end\n"                                                 \
    "      i = i + 2\n"                                                                            \
    "    end\n"                                                                                    \
    "    i = i + 1\n"                                                                              \
    "  end\n"                                                                                      \
    "  return table.concat(codes), i\n"                                                            \
    "end\n"                                                                                        \
    "local function offer_links(st, KEYS, ARGV, i, k, force, maxp, maxh)\n"                        \
    "  if k < 0 then return offer_mod(st, KEYS, ARGV, i, -k, force, maxp, maxh) end\n"             \
    "  if maxp == 0 and maxh == 0 then return offer_fast(st, KEYS, ARGV, i, k, force) end\n"       \
    "  local codes, nc, bf = {}, 0, {}\n"                                                          \
    "  for j = 1, k do bf[4*j-3] = 'SET'; bf[4*j-2] = 'u1'; bf[4*j] = '1' end\n"                   \
    "  local ng = tonumber(ARGV[i]); i = i + 1\n"                                                  \
    "  for _ = 1, ng do\n"                                                                         \
    "    local key, n = KEYS[tonumber(ARGV[i])], tonumber(ARGV[i + 1])\n"                          \
    "    i = i + 2\n"                                                                              \
    "    for _ = 1, n do\n"                                                                        \
    "      local e = ARGV[i]\n"                                                                    \
    "      local h = ARGV[i + 1] -- its origin, sent by the client\n"                              \
    "      local ha = st.hadm[h]\n"                                                                \
    "      if ha == nil then ha = num(redis.call('HGET', K_HADMIT, h)); st.hadm[h] = ha end\n"     \
    "      nc = nc + 1\n"                                                                          \
    "      if (maxp > 0 and st.admitted >= maxp) or (maxh > 0 and ha >= maxh) then\n"              \
    "        codes[nc] = 'l'; st.skipped = st.skipped + 1\n"                                       \
    "      else\n"                                                                                 \
    "        for j = 1, k do bf[4*j-1] = ARGV[i + 1 + j] end\n"                                    \
    "        local old = redis.call('BITFIELD', key, unpack(bf))\n"                                \
    "        local isnew = force\n"                                                                \
    "        if not isnew then\n"                                                                  \
    "          for j = 1, k do if old[j] == 0 then isnew = true; break end end\n"                  \
    "        end\n"                                                                                \
    "        if isnew then\n"                                                                      \
    "          codes[nc] = 'n'; enqueue(st, e, h)\n"                                               \
    "          st.admitted = st.admitted + 1; st.hadm[h] = ha + 1\n"                               \
    "        else\n"                                                                               \
    "          codes[nc] = 's'; st.seen = st.seen + 1\n"                                           \
    "        end\n"                                                                                \
    "      end\n"                                                                                  \
    "      i = i + 2 + k\n"                                                                        \
    "    end\n"                                                                                    \
    "  end\n"                                                                                      \
    "  return table.concat(codes), i\n"                                                            \
    "end\n"                                                                                        \
    "local function offer_flush(st, per_host)\n"                                                   \
    "  local hs, woke = st.hosts, {}\n"                                                            \
    "  for _, h in ipairs(hs) do\n"                                                                \
    "    local q = st.byhost[h]\n"                                                                 \
    "    for j = 1, #q, 4000 do\n"                                                                 \
    "      local e = math.min(j + 3999, #q)\n"                                                     \
    "      local len = redis.call('RPUSH', qkey(h), unpack(q, j, e))\n"                            \
    "      if j == 1 and len == e then woke[#woke + 1] = h end\n"                                  \
    "    end\n"                                                                                    \
    "  end\n"                                                                                      \
    "  if #hs <= 2 then\n"                                                                         \
    "    for _, h in ipairs(hs) do redis.call('HINCRBY', K_HADMIT, h, str(#st.byhost[h])) end\n"   \
    "  else\n"                                                                                     \
    "    for a = 1, #hs, 2000 do\n"                                                                \
    "      local b = math.min(a + 1999, #hs)\n"                                                    \
    "      local adm, kv = redis.call('HMGET', K_HADMIT, unpack(hs, a, b)), {}\n"                  \
    "      for j = a, b do\n"                                                                      \
    "        kv[2 * (j - a) + 1] = hs[j]\n"                                                        \
    "        kv[2 * (j - a) + 2] = str(num(adm[j - a + 1]) + #st.byhost[hs[j]])\n"                 \
    "      end\n"                                                                                  \
    "      redis.call('HSET', K_HADMIT, unpack(kv))\n"                                             \
    "    end\n"                                                                                    \
    "  end\n"                                                                                      \
    "  wake_new(woke, per_host) -- a queue already non-empty keeps its place in ready\n"           \
    "  count('enqueued', st.new); count('queued', st.new)\n"                                       \
    "end\n"

/* ARGV: P worker max per_host delay_ms max_delay_ms lease_ms
 * -> {0 ready|1 wait|2 done, now_ms, wait_ms, lease_base, entry...} */
static const char claim_body[] =
    "local worker = ARGV[2]\n"
    "local max, per_host = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "local delay, maxd, lease = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])\n"
    "redis.call('ZADD', K_WORKERS, now + lease, worker)\n"
    "reclaim(per_host)\n"
    "promote(per_host)\n"
    "local out, no = {}, 0\n"
    "-- per: URLs a ready host is expected to give (then what the last round's gave):\n"
    "-- every host fetched costs three reply elements, used or not\n"
    "local rounds, per = 0, math.min(per_host, 8)\n"
    "if delay > 0 then per = 1 end\n"
    "while no < max and rounds < 32 do\n"
    "  rounds = rounds + 1\n"
    "  local lim, took, gave = math.ceil((max - no) / per), no, 0\n"
    "  local hosts = redis.call('ZRANGEBYSCORE', K_READY, '-inf', nows, 'LIMIT', '0', str(lim))\n"
    "  if #hosts == 0 then break end\n"
    "  local infs = redis.call('HMGET', K_HINF, unpack(hosts))\n"
    "  local owns = redis.call('HMGET', K_HDELAY, unpack(hosts))\n"
    "  local hinf, hnx, zrem, zadd = {}, {}, {}, {}\n"
    "  for x, h in ipairs(hosts) do\n"
    "    local room = max - no\n"
    "    if room <= 0 then break end\n"
    "    local inf, own = num(infs[x]), num(owns[x])\n"
    "    if own > maxd then own = maxd end\n"
    "    local d = delay\n"
    "    if own > d then d = own end\n"
    "    local take = per_host - inf\n"
    "    if d > 0 and take > 1 then take = 1 end\n"
    "    if take > room then take = room end\n"
    "    local got = {}\n"
    "    if take > 0 then got = redis.call('LPOP', qkey(h), str(take)) or {} end\n"
    "    for j = 1, #got do out[no + j] = got[j] end\n"
    "    no = no + #got\n"
    "    if #got > 0 then\n"
    "      gave = gave + 1\n"
    "      hinf[#hinf + 1] = h; hinf[#hinf + 1] = str(inf + #got)\n"
    "      if d > 0 then hnx[#hnx + 1] = h; hnx[#hnx + 1] = string.format('%d', now + d) end\n"
    "    end\n"
    "    if #got == 0 or #got < take or inf + #got >= per_host or\n"
    "       redis.call('LLEN', qkey(h)) == 0 then\n"
    "      zrem[#zrem + 1] = h\n"
    "    elseif d > 0 then\n"
    "      zadd[#zadd + 1] = string.format('%d', now + d); zadd[#zadd + 1] = h\n"
    "    end\n"
    "  end\n"
    "  if #hinf > 0 then redis.call('HSET', K_HINF, unpack(hinf)) end\n"
    "  if #hnx > 0 then redis.call('HSET', K_HNEXT, unpack(hnx)) end\n"
    "  if #zrem > 0 then redis.call('ZREM', K_READY, unpack(zrem)) end\n"
    "  if #zadd > 0 then redis.call('ZADD', K_READY, unpack(zadd)) end\n"
    "  if gave > 0 then per = math.max(1, math.floor((no - took) / gave)) end\n"
    "end\n"
    "local n = no\n"
    "if n > 0 then\n"
    "  local b = redis.call('INCR', P..'seq')\n"
    "  local base, bs, hs = b * 10000, tostring(b), {}\n"
    "  for i = 1, n do hs[2*i-1] = bs..SUF[i]; hs[2*i] = out[i] end\n"
    "  local lk = P..'lease:'..worker\n"
    "  if n >= 16 and redis.call('OBJECT', 'ENCODING', lk) ~= 'hashtable' then -- see BIG\n"
    "    hs[2 * n + 1] = '~'; hs[2 * n + 2] = BIG\n"
    "    redis.call('HSET', lk, unpack(hs))\n"
    "    redis.call('HDEL', lk, '~')\n"
    "  else\n"
    "    redis.call('HSET', lk, unpack(hs))\n"
    "  end\n"
    "  count('claimed', n); count('queued', -n); count('inflight', n)\n"
    "  return {0, now, 0, base, unpack(out)}\n"
    "end\n"
    "local ready = redis.call('ZCARD', K_READY)\n"
    "local delayed = redis.call('ZCARD', K_DELAYED)\n"
    "local inflight = num(redis.call('HGET', K_STATS, 'inflight'))\n"
    "local queued = num(redis.call('HGET', K_STATS, 'queued'))\n"
    "if ready == 0 and delayed == 0 and inflight <= 0 and queued <= 0 then\n"
    "  return {2, now, 0, 0}\n"
    "end\n"
    "local wait = 1000\n"
    "if ready == 0 then wait = 100 end\n"
    "if ready == 0 and delayed == 0 and queued <= 0 then wait = 20 end -- only in flight: soon\n"
    "for _, k in ipairs({K_READY, K_DELAYED}) do\n"
    "  local r = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')\n"
    "  if r[2] and tonumber(r[2]) - now < wait then wait = tonumber(r[2]) - now end\n"
    "end\n"
    "if wait < 1 then wait = 1 end\n"
    "return {1, now, math.floor(wait), 0}\n";

/* Finishes a group of pages, atomically.  KEYS: ready, Bloom blocks.
 * ARGV: P npages max_pages max_pages_per_host per_host k, then per page:
 * worker token status err bytes link_depth cached_seen skipped span, and a
 * link section of span arguments (pages.c)  -> {lost1, codes1, lost2, ...} */
static const char finish_body[] =
    "local np, maxp, maxh = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "local per_host, k = tonumber(ARGV[5]), tonumber(ARGV[6])\n"
    "need_module(KEYS, k)\n"
    "local st = offer_begin()\n"
    "local out, dec, hosts, seen, okh = {}, {}, {}, {}, {}\n"
    "local acc = {fetched = 0, bytes = 0, status_2xx = 0, status_3xx = 0, status_4xx = 0,\n"
    "             status_5xx = 0, status_other = 0, errors = 0, seen_links = 0, skipped_links = "
    "0}\n"
    "local SC = {'status_other', 'status_2xx', 'status_3xx', 'status_4xx', 'status_5xx'}\n"
    "local kinds = {}\n"
    "local ent = take_leases(ARGV, np, 7)\n"
    "local i = 7\n"
    "for pg = 1, np do\n"
    "  local status, err = tonumber(ARGV[i + 2]), ARGV[i + 3]\n"
    "  local e = ent[pg]\n"
    "  if e then\n"
    "    local h = host_of(e)\n"
    "    dec[h] = (dec[h] or 0) + 1\n"
    "    note_host(hosts, seen, h)\n"
    "    if status ~= 0 then\n"
    "      local sc = 'status_other'\n"
    "      if status >= 200 and status < 600 then sc = SC[math.floor(status / 100)] end\n"
    "      acc[sc] = acc[sc] + 1\n"
    "    end\n"
    "    if err ~= '' then acc.errors = acc.errors + 1; kinds[err] = (kinds[err] or 0) + 1 end\n"
    "    if err == '' and status > 0 and status < 500 and status ~= 429 then okh[h] = true end\n"
    "    acc.fetched = acc.fetched + 1\n"
    "    acc.bytes = acc.bytes + tonumber(ARGV[i + 4])\n"
    "    out[#out + 1] = 0\n"
    "  else\n"
    "    out[#out + 1] = 1\n"
    "  end\n"
    "  acc.seen_links = acc.seen_links + tonumber(ARGV[i + 6])\n"
    "  acc.skipped_links = acc.skipped_links + tonumber(ARGV[i + 7])\n"
    "  local codes, j = '', i + 9\n"
    "  if ARGV[i + 8] ~= '0' then\n"
    "    codes, j = offer_links(st, KEYS, ARGV, j, k, false, maxp, maxh)\n"
    "  end\n"
    "  out[#out + 1] = codes\n"
    "  i = j\n"
    "end\n"
    "for _, h in ipairs(hosts) do\n"
    "  if redis.call('HINCRBY', K_HINF, h, -dec[h]) <= 0 then redis.call('HDEL', K_HINF, h) end\n"
    "  if okh[h] then redis.call('HDEL', K_HFAIL, h) end\n"
    "end\n"
    "acc.inflight = -acc.fetched\n"
    "acc.new_links = st.new\n"
    "acc.seen_links = acc.seen_links + st.seen\n"
    "acc.skipped_links = acc.skipped_links + st.skipped\n"
    "for f, n in pairs(acc) do count(f, n) end\n"
    "for kind, n in pairs(kinds) do redis.call('HINCRBY', P..'errors', kind, n) end\n"
    "wake_many(hosts, per_host)\n"
    "offer_flush(st, per_host)\n"
    "return out\n";

/* The common case of finish, with the per-page bookkeeping done by the
 * client: every page of the group is leased to one worker, no token twice.
 * KEYS as finish.  ARGV: P npages max_pages max_pages_per_host per_host k
 * worker nhosts (origin pages ok)*nhosts, fetched bytes status_2xx..5xx
 * status_other errors seen_links skipped_links nkinds (kind n)*nkinds, then
 * per page: token span and a link section of span arguments.  If a lease is
 * missing it changes nothing and returns {'slow'} (the client then sends
 * the group to finish, which sorts lost pages out); else every page's
 * codes (as finish gives them), concatenated into one string. */
static const char ack_body[] =
    "local np, maxp, maxh = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "local per_host, k = tonumber(ARGV[5]), tonumber(ARGV[6])\n"
    "need_module(KEYS, k)\n"
    "local lk, nh = P..'lease:'..ARGV[7], tonumber(ARGV[8])\n"
    "local c = 9 + 3 * nh\n"
    "local nkinds = tonumber(ARGV[c + 10])\n"
    "local i = c + 11 + 2 * nkinds\n"
    "local toks, at = {}, {}\n"
    "for pg = 1, np do\n"
    "  toks[pg] = ARGV[i]; at[pg] = i + 2\n"
    "  local span = ARGV[i + 1] -- tonumber costs Redis ~1.3k instructions: skip it for 0\n"
    "  i = i + 2\n"
    "  if span ~= '0' then i = i + tonumber(span) end\n"
    "end\n"
    "local vals = redis.call('HMGET', lk, unpack(toks))\n"
    "for pg = 1, np do if not vals[pg] then return {'slow'} end end\n"
    "redis.call('HDEL', lk, unpack(toks))\n"
    "local hosts, ok, wk = {}, {}, {}\n"
    "for h = 9, c - 1, 3 do\n"
    "  hosts[#hosts + 1] = ARGV[h]\n"
    "  if ARGV[h + 2] == '1' then ok[#ok + 1] = ARGV[h] end\n"
    "end\n"
    "if nh > 0 then\n"
    "  local hv, set, del = redis.call('HMGET', K_HINF, unpack(hosts)), {}, {}\n"
    "  for x, host in ipairs(hosts) do\n"
    "    local old = num(hv[x])\n"
    "    local v = old - tonumber(ARGV[9 + 3 * (x - 1) + 1])\n"
    "    if v <= 0 then del[#del + 1] = host else set[#set + 1] = host; set[#set + 1] = str(v) "
    "end\n"
    "    -- below per_host before: its place in ready did not depend on this ack (a host\n"
    "    -- left out by a worker with a smaller per_host is woken once it drains)\n"
    "    if v < per_host and (old >= per_host or v <= 0) then wk[#wk + 1] = host end\n"
    "  end\n"
    "  if #set > 0 then redis.call('HSET', K_HINF, unpack(set)) end\n"
    "  if #del > 0 then redis.call('HDEL', K_HINF, unpack(del)) end\n"
    "end\n"
    "if #ok > 0 then redis.call('HDEL', K_HFAIL, unpack(ok)) end\n"
    "local st = offer_begin()\n"
    "local out = {}\n"
    "for pg = 1, np do\n"
    "  local codes = ''\n"
    "  if ARGV[at[pg] - 1] ~= '0' then\n"
    "    codes = offer_links(st, KEYS, ARGV, at[pg], k, false, maxp, maxh)\n"
    "  end\n"
    "  out[pg] = codes\n"
    "end\n"
    "local F = {'fetched', 'bytes', 'status_2xx', 'status_3xx', 'status_4xx', 'status_5xx',\n"
    "           'status_other', 'errors', 'seen_links', 'skipped_links'}\n"
    "for x, f in ipairs(F) do\n"
    "  if ARGV[c + x - 1] ~= '0' then redis.call('HINCRBY', K_STATS, f, ARGV[c + x - 1]) end\n"
    "end\n"
    "count('inflight', -np); count('new_links', st.new)\n"
    "count('seen_links', st.seen); count('skipped_links', st.skipped)\n"
    "for x = c + 11, c + 10 + 2 * nkinds, 2 do\n"
    "  redis.call('HINCRBY', P..'errors', ARGV[x], ARGV[x + 1])\n"
    "end\n"
    "wake_many(wk, per_host)\n"
    "offer_flush(st, per_host)\n"
    "return table.concat(out) -- the client knows how many codes each page has\n";

/* KEYS: ready, Bloom blocks.  ARGV: P force max_pages max_pages_per_host
 * per_host k, link section -> codes */
static const char seed_body[] =
    "local st = offer_begin()\n"
    "local codes = offer_links(st, KEYS, ARGV, 7, tonumber(ARGV[6]), ARGV[2] == '1',\n"
    "                          tonumber(ARGV[3]), tonumber(ARGV[4]))\n"
    "offer_flush(st, tonumber(ARGV[5]))\n"
    "count('seeds', st.new)\n"
    "return codes\n";

/* ARGV: P worker token status err delay_ms retry_after_ms max_tries
 * backoff_ms backoff_max_ms jitter(0..1) per_host bytes -> {lost, dead} */
static const char retry_body[] =
    "local lk = P..'lease:'..ARGV[2]\n"
    "local e = redis.call('HGET', lk, ARGV[3])\n"
    "if not e then return {1, 0} end\n"
    "redis.call('HDEL', lk, ARGV[3])\n"
    "local d, t, u = parse(e)\n"
    "local h = origin(u)\n"
    "unlease(h)\n"
    "count('inflight', -1)\n"
    "outcome(tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[13]))\n"
    "local dead = 0\n"
    "if t + 1 >= tonumber(ARGV[8]) then\n"
    "  redis.call('RPUSH', P..'dead', e..'\\t'..ARGV[4]..'\\t'..ARGV[5])\n"
    "  count('dead', 1); dead = 1\n"
    "else\n"
    "  redis.call('ZADD', K_DELAYED, now + tonumber(ARGV[6]), d..' '..(t + 1)..' '..u)\n"
    "  count('retried', 1)\n"
    "end\n"
    "local nf = redis.call('HINCRBY', K_HFAIL, h, 1)\n"
    "local hb = 0\n"
    "if nf >= 2 then\n"
    "  local x = nf - 2\n"
    "  if x > 20 then x = 20 end\n"
    "  hb = tonumber(ARGV[9]) * 2 ^ x\n"
    "  if hb > tonumber(ARGV[10]) then hb = tonumber(ARGV[10]) end\n"
    "  hb = math.floor(hb * (0.5 + 0.5 * tonumber(ARGV[11])))\n"
    "end\n"
    "if tonumber(ARGV[7]) > hb then hb = tonumber(ARGV[7]) end\n"
    "if hb > 0 and now + hb > num(redis.call('HGET', K_HNEXT, h)) then\n"
    "  redis.call('HSET', K_HNEXT, h, now + hb)\n"
    "  redis.call('ZADD', K_READY, 'XX', 'GT', now + hb, h)\n"
    "end\n"
    "wake(h, tonumber(ARGV[12]))\n"
    "return {0, dead}\n";

/* ARGV: P per_host (worker token)... -> {lost, released}; the first item
 * ends up at the front of its queue */
static const char release_body[] =
    "local per_host = tonumber(ARGV[2])\n"
    "local lost, n = 0, 0\n"
    "local hosts, seen = {}, {}\n"
    "for i = #ARGV - 1, 3, -2 do\n"
    "  local lk = P..'lease:'..ARGV[i]\n"
    "  local e = redis.call('HGET', lk, ARGV[i + 1])\n"
    "  if e then\n"
    "    redis.call('HDEL', lk, ARGV[i + 1])\n"
    "    local _, _, u = parse(e)\n"
    "    local h = origin(u)\n"
    "    redis.call('LPUSH', qkey(h), e)\n"
    "    unlease(h)\n"
    "    note_host(hosts, seen, h)\n"
    "    n = n + 1\n"
    "  else\n"
    "    lost = lost + 1\n"
    "  end\n"
    "end\n"
    "count('inflight', -n); count('queued', n); count('released', n)\n"
    "for _, h in ipairs(hosts) do wake(h, per_host, true) end\n"
    "return {lost, n}\n";

/* ARGV: P worker lease_ms per_host host pid pages pages_per_s in_flight
 * -> reclaimed */
static const char heartbeat_body[] =
    "local w, lease = ARGV[2], tonumber(ARGV[3])\n"
    "redis.call('ZADD', K_WORKERS, now + lease, w)\n"
    "local wk = P..'worker:'..w\n"
    "redis.call('HSETNX', wk, 'started', now)\n"
    "redis.call('HSET', wk, 'host', ARGV[5], 'pid', ARGV[6], 'pages', ARGV[7],\n"
    "  'pages_per_s', ARGV[8], 'in_flight', ARGV[9], 'last', now, 'lease_until', now + lease)\n"
    "return reclaim(tonumber(ARGV[4]))\n";

/* ARGV: P worker: unregisters a worker that holds no lease */
static const char bye_body[] = "if redis.call('HLEN', P..'lease:'..ARGV[2]) == 0 then\n"
                               "  redis.call('ZREM', K_WORKERS, ARGV[2])\n"
                               "  redis.call('DEL', P..'worker:'..ARGV[2])\n"
                               "end\n"
                               "return 0\n";

static const char *const bodies[FR_SCRIPT_COUNT] = {
    [FR_CLAIM] = claim_body, [FR_FINISH] = finish_body,   [FR_SEED] = seed_body,
    [FR_RETRY] = retry_body, [FR_RELEASE] = release_body, [FR_HEARTBEAT] = heartbeat_body,
    [FR_BYE] = bye_body,     [FR_ACK] = ack_body,
};

static const char *const names[FR_SCRIPT_COUNT] = {
    [FR_CLAIM] = "claim", [FR_FINISH] = "finish",   [FR_SEED] = "seed",
    [FR_RETRY] = "retry", [FR_RELEASE] = "release", [FR_HEARTBEAT] = "heartbeat",
    [FR_BYE] = "bye",     [FR_ACK] = "ack",
};

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

const char *fr_script_name(int id)
{
    return id >= 0 && id < FR_SCRIPT_COUNT ? names[id] : "?";
}

char *fr_library(char fn[FR_SCRIPT_COUNT][FR_FN_NAME])
{
    uint64_t h = fnv1a(14695981039346656037ULL, PRELUDE);
    for (int i = 0; i < FR_SCRIPT_COUNT; i++)
        h = fnv1a(fnv1a(h, names[i]), bodies[i]);
    char tag[20];
    snprintf(tag, sizeof tag, "%016llx", (unsigned long long)h);
    size_t cap = strlen(PRELUDE) + 128;
    for (int i = 0; i < FR_SCRIPT_COUNT; i++)
        cap += strlen(bodies[i]) + 128;
    char *src = malloc(cap);
    if (!src)
        return NULL;
    size_t o = (size_t)snprintf(src, cap, "#!lua name=crawler_frontier_%s\n%s", tag, PRELUDE);
    for (int i = 0; i < FR_SCRIPT_COUNT && o < cap; i++) {
        snprintf(fn[i], FR_FN_NAME, "cf%s_%s", tag, names[i]);
        o += (size_t)snprintf(src + o, cap - o,
                              "redis.register_function('%s', function(KEYS, ARGV)\n"
                              "begin(ARGV)\n%send)\n",
                              fn[i], bodies[i]);
    }
    return src;
}
