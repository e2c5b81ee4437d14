-- layers.lua -- a visited set that grows (bloom/bloom.h, "layers") as an
-- offering call (finish, seed) sees it: the layers the worker knows, the
-- publication of the next layer, which layer a link is tested in and added
-- to, and the count of the newest layer's items.  frontier/layers.c is the
-- worker's side.

-- (frontier/offer.c: fr_offer_k, fr_offer_section.)  An offering call's k
-- argument is then "K/T/M/N": T the layers the worker knows, M the KEYS
-- index of layer 0's meta hash (layer T's meta, the next one, follows it,
-- after the blocks), and every link carries N > T more arguments, the KEYS
-- indexes of its blocks in layers 0..N-1: the known ones and the next ones,
-- not published yet (a link's offsets are the same in every layer).
-- LAYERS.xw: those arguments a link in this call (0: a fixed filter);
-- LAYERS.st: the call's state (LAYERS.begin).
local LAYERS = {xw = 0}
-- The k argument a: sets LAYERS for this call, returns K.
function LAYERS.spec(a)
  local k, t, m, n = string.match(a, '^(%-?%d+)/(%d+)/(%d+)/(%d+)$')
  if not k then
    LAYERS.xw, LAYERS.st = 0, nil
    return tonumber(a)
  end
  t, m, n = tonumber(t), tonumber(m), tonumber(n)
  LAYERS.xw, LAYERS.st = n, {t = t, m = m, n = n, fresh = 0, unrec = 0}
  return tonumber(k)
end

-- The layers at the first offer of a call (its checks done): layer 0's state
-- read, and the next layer published when the newest is full and the next
-- one exists -- the rule of bloom/bloom_layers.c's ADD_SCRIPT.  s.d: layers
-- published since the worker's count; s.lost: the newest is beyond the
-- layers its links name (then nothing can be added exactly).
function LAYERS.begin(KEYS)
  local s = LAYERS.st
  if not s or s.cur then return end
  s.meta, s.nxt = KEYS[s.m], KEYS[s.m + 1]
  local v = redis.call('HMGET', s.meta, 'layers', 'added', 'full_at')
  s.cur, s.added, s.full = tonumber(v[1]) or 1, tonumber(v[2]) or 0, tonumber(v[3]) or 0
  s.d, s.lost = s.cur - s.t, s.cur > s.n
  LAYERS.publish(s)
end

-- The next layer published if the newest is full (its items: those before
-- the call and the ones it added) and the next exists (its meta is written
-- last, bloom_create.c); only while the worker's count is the current one:
-- the call names the next layer's meta.  Also between two links of a call
-- (LAYERS.place), whose links name their blocks in the next layer.
function LAYERS.publish(s)
  if s.cur ~= s.t or s.added + s.fresh < s.full or s.nonext then return end
  local cap = redis.call('HGET', s.nxt, 'capacity')
  if not cap then s.nonext = true; return end
  redis.call('HSET', s.meta, 'layers', s.cur + 1, 'added', 0, 'full_at', cap,
             'n' .. (s.cur - 1), s.added + s.fresh)
  s.cur, s.added, s.fresh, s.full = s.cur + 1, 0, 0, tonumber(cap)
  s.d, s.lost = s.cur - s.t, s.cur > s.n
end

-- Whether the call's links go one by one through LAYERS.place: older
-- layers to test, a newest the worker did not know, or a newest within a
-- call's links of its capacity (so that it is published between two).
function LAYERS.one_by_one()
  local s = LAYERS.st
  return s.t > 1 or s.d ~= 0 or s.full - s.added < 4096
end

-- A link's layers (its arguments at ARGV[b]; x: where its layer blocks
-- start after b): 's' if an older layer holds it (read only, the newest
-- older one first), else the key of the newest layer to set its bits in,
-- or false when its worker's call does not name the newest (s.lost: the
-- link is queued without being recorded, a second fetch at worst; it takes
-- publications of more than frontier/offer.c's look-ahead of layers
-- between a worker's reading of the layers and its call).  is_seen:
-- offer.lua's read-only test of a link's bits in a block.
function LAYERS.place(KEYS, ARGV, b, x, k, offs, m, is_seen)
  local s = LAYERS.st
  LAYERS.publish(s)
  local newest = s.cur - 1
  for j = (s.lost and s.n or newest) - 1, 0, -1 do
    if is_seen(KEYS[tonumber(ARGV[b + x + j])], ARGV, b, k, offs, m) then return 's' end
  end
  if s.lost then s.unrec = s.unrec + 1 end
  return not s.lost and KEYS[tonumber(ARGV[b + x + newest])]
end

-- The end of a call: the links it added to the newest layer counted, and
-- '+' when the worker should look at the layers (frontier/layers.c): its
-- count is behind, or the newest is past BLOOM_PREPARE_FILL (0.9) of its
-- capacity and the next layer does not exist yet.
function LAYERS.done()
  local s = LAYERS.st
  if not s or not s.cur then return '' end
  if s.fresh > 0 and not s.lost then redis.call('HINCRBY', s.meta, 'added', s.fresh) end
  count('unrecorded_links', s.unrec) -- (base.lua; P stats was checked by the call)
  if s.d ~= 0 then return '+' end
  if s.added + s.fresh >= 0.9 * s.full and redis.call('EXISTS', s.nxt) == 0 then return '+' end
  return ''
end

-- n links were added to the newest layer (their bits newly set).
function LAYERS.added(n)
  LAYERS.st.fresh = LAYERS.st.fresh + n
end
