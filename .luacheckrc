-- .luacheckrc -- `luacheck frontier/lua` (CI: .ci/run).
--
-- The files of frontier/lua are one Redis Functions library (Lua 5.1): the
-- build (frontier/embed_lua.cmake) puts them one after the other in the
-- order of frontier/lua/library.txt, after a generated chunk that defines
-- KEY (the key suffixes of frontier/keys.def) and FN (the functions' name
-- prefix).  So a file may use the top-level locals of the files above it:
-- here they become read-only globals of the files below, and a top-level
-- local that no file below uses is still reported as unused.
std = "lua51"
max_line_length = 100

local dir = "frontier/lua/"
local redis_globals = {"redis", "KEY", "KEY_TYPE", "FN"}

local order, text = {}, {}
for line in io.lines(dir .. "library.txt") do
  if line:match("^[%w_]") then order[#order + 1] = line end
end
for i, f in ipairs(order) do
  local h = assert(io.open(dir .. f))
  text[i] = h:read("*a")
  h:close()
end

-- Names a file declares at its top level ("local function f", "local a, b").
local function top_locals(t)
  local names = {}
  for line in (t .. "\n"):gmatch("([^\n]*)\n") do
    local fn = line:match("^local function ([%w_]+)")
    local vars = not fn and line:match("^local ([%w_, ]+)")
    if fn then names[#names + 1] = fn end
    for v in (vars or ""):gmatch("[%w_]+") do names[#names + 1] = v end
  end
  return names
end

local visible = {}
for i, f in ipairs(order) do
  local globals, ignore = {}, {}
  for _, g in ipairs(redis_globals) do globals[#globals + 1] = g end
  for _, g in ipairs(visible) do globals[#globals + 1] = g end
  for _, name in ipairs(top_locals(text[i])) do
    for j = i + 1, #order do
      if text[j]:find("%f[%w_]" .. name .. "%f[^%w_]") then
        ignore[#ignore + 1] = "2[134]1/^" .. name .. "$" -- unused / never accessed / mutated only
        break
      end
    end
    visible[#visible + 1] = name
  end
  files[dir .. f] = {read_globals = globals, ignore = ignore}
end
