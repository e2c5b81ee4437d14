-- control.lua -- what `crawler pause|resume|drain|limits` change: the
-- crawl's control hash (P control), which every claim, finish, seed, retry,
-- release and heartbeat reads (base.lua: read_control).  One call changes
-- any of its fields at once, or none (a reading).
-- ARGV and reply: the layout above build_control() in frontier/control.c.

local CONTROL_KEYS = {'CONTROL', 'WORKERS'}
local KNOWN = {} -- the fields a call may change (base.lua's CTL_FIELDS)

local function control(_, ARGV)
  need_keys(CONTROL_KEYS) -- (types.lua) before the first write
  if not KNOWN.drain then for _, f in ipairs(CTL_FIELDS) do KNOWN[f] = true end end
  local set, del = {}, {}
  for i = 2, #ARGV, 2 do -- every pair checked before anything is written
    local f, v = ARGV[i], ARGV[i + 1]
    if not KNOWN[f] or not v or not (v == '' or v == 'now' or string.match(v, '^%d+$')) then
      error({err = 'ERR control: bad field ' .. tostring(f) .. ' = ' .. tostring(v)})
    end
    if v == '' then
      del[#del + 1] = f
    else
      set[#set + 1] = f
      set[#set + 1] = v == 'now' and nows or v
    end
  end
  if #del > 0 then redis.call('HDEL', K.CONTROL, unpack(del)) end
  if #set > 0 then redis.call('HSET', K.CONTROL, unpack(set)) end
  return {now, redis.call('HGETALL', K.CONTROL), redis.call('ZCOUNT', K.WORKERS, nows, '+inf')}
end

register('control', control)
