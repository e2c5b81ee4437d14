-- control.lua -- what `crawler pause|resume|drain|limits` change: the
-- crawl's control hash (P control), which every claim, finish, seed, retry,
-- release and heartbeat reads (base.lua: read_control).  One call changes
-- any of its fields at once, or none (a reading).
-- ARGV and reply: the layout above build_control() in frontier/control.c.

local CONTROL_KEYS = {'CONTROL', 'WORKERS', 'HINFLIGHT', 'READY', 'HNEXT', 'HOSTS', 'QDEPTH'}
local KNOWN = {} -- the fields a call may change (base.lua's CTL_FIELDS)
local CAPS = {per_host = true, delay = true, max_delay = true} -- the fields of a host's cap

-- A host with URLs in flight may be out of ready at its cap (base.lua's
-- invariant); a per_host raised crawl-wide frees room at once: each such
-- host below the new cap goes back (wake: keeping hnext), unless a
-- crawl-wide delay > 0 keeps every cap at 1.  (Lowered, the next claim
-- takes a host at its cap out.)
local function wake_capped(hs)
  local per_host = CTL.per_host
  if not per_host or (CTL.delay and CTL.delay > 0) then return end
  for _, h in ipairs(hs) do wake(h, per_host) end
end

local function control(_, ARGV)
  need_keys(CONTROL_KEYS) -- (types.lua) before the first write
  if not KNOWN.drain then for _, f in ipairs(CTL_FIELDS) do KNOWN[f] = true end end
  local set, del, caps = {}, {}, false
  for i = 2, #ARGV, 2 do -- every pair checked before anything is written
    local f, v = ARGV[i], ARGV[i + 1]
    if not KNOWN[f] or not v or not (v == '' or v == 'now' or string.match(v, '^%d+$')) then
      error({err = 'ERR control: bad field ' .. tostring(f) .. ' = ' .. tostring(v)})
    end
    caps = caps or CAPS[f]
    if v == '' then
      del[#del + 1] = f
    else
      set[#set + 1] = f
      set[#set + 1] = v == 'now' and nows or v
    end
  end
  local hs = caps and redis.call('HKEYS', K.HINFLIGHT) or {}
  for _, h in ipairs(hs) do need_queue(h) end
  if #del > 0 then redis.call('HDEL', K.CONTROL, unpack(del)) end
  if #set > 0 then redis.call('HSET', K.CONTROL, unpack(set)) end
  if #hs > 0 then read_control(); wake_capped(hs) end
  return {now, redis.call('HGETALL', K.CONTROL), redis.call('ZCOUNT', K.WORKERS, nows, '+inf')}
end

register('control', control)
