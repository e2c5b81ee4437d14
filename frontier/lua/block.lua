-- block.lua -- what `crawler block` and `unblock` change: the crawl's P
-- blocks (base.lua: read_blocks), and the drop of the queues of hosts a
-- block covers.
-- ARGV and replies: the layouts above build_block() and build_drop() in
-- frontier/block.c.

local BLOCK_KEYS = {'BLOCKS'}
local MAX_BLOCKS = 10000 -- fields of P blocks besides ~gen (FRONTIER_MAX_BLOCKS)

local function block(_, ARGV)
  -- (no need_crawl: as control.lua, `--force` may block for a crawl started later)
  need_keys(BLOCK_KEYS)
  local gen, set, del = ARGV[2], {}, {}
  if not gen or not string.match(gen, '^[%w%-]+$') then
    error({err = 'ERR block: bad token ' .. tostring(gen)})
  end
  for i = 3, #ARGV, 2 do -- every pair checked before anything is written
    local f, v = ARGV[i], ARGV[i + 1]
    if not string.match(f, '^[hd]:[%w%.%-_:%[%]]+$') or not (v == 'now' or v == '') then
      error({err = 'ERR block: bad entry ' .. tostring(f) .. ' = ' .. tostring(v)})
    end
    if v == '' then
      del[#del + 1] = f
    elseif redis.call('HEXISTS', K.BLOCKS, f) == 0 then -- (blocked again: it keeps its time)
      set[#set + 1] = f; set[#set + 1] = nows
    end
  end
  if #set > 0 then
    local have = redis.call('HLEN', K.BLOCKS)
    if have > 0 then have = have - 1 end -- (~gen)
    if have + #set / 2 > MAX_BLOCKS then
      error({err = 'ERR block: more than ' .. MAX_BLOCKS .. ' blocks'})
    end
  end
  local changed = #set / 2
  if #del > 0 then changed = changed + redis.call('HDEL', K.BLOCKS, unpack(del)) end
  if #set > 0 then redis.call('HSET', K.BLOCKS, unpack(set)) end
  if changed > 0 then
    if redis.call('HLEN', K.BLOCKS) <= 1 and redis.call('HEXISTS', K.BLOCKS, '~gen') == 1 then
      redis.call('DEL', K.BLOCKS) -- nothing blocked: no key, no reading
    else
      redis.call('HSET', K.BLOCKS, '~gen', gen)
    end
  end
  local kv, out = redis.call('HGETALL', K.BLOCKS), {}
  for i = 1, #kv, 2 do
    if kv[i] ~= '~gen' then out[#out + 1] = kv[i]; out[#out + 1] = kv[i + 1] end
  end
  return {now, out, changed}
end

-- Drops the queues of the origins named that a block covers now.
local function drop(_, ARGV)
  need_crawl()
  need_keys({'BLOCKS', 'HOSTS', 'QDEPTH', 'READY', 'STATS'})
  for i = 2, #ARGV do need_queue(ARGV[i]) end
  if not read_blocks() then return 0 end
  local n, gone = 0, {}
  for i = 2, #ARGV do
    local h = ARGV[i]
    if blocked(h) then
      n = n + q_drop(h)
      gone[#gone + 1] = h
    end
  end
  if #gone > 0 then redis.call('ZREM', K.READY, unpack(gone)) end
  return n
end

register('block', block)
register('drop', drop)
