-- priority: 20
-- ocmem review: the logic of promoting or refusing the agent's proposals inside SilverBullet.
--
-- Plain Lua 5.4, none of Space Lua's extensions: CI runs these functions in a standard Lua
-- (tests/test_sb_review.py) and checks them against ocmem's Python (same escaping, same
-- rules). The SilverBullet glue (commands, the review page, buttons) is the next block.
--
-- Strings: real Lua strings are UTF-8 bytes, Space Lua strings are JavaScript strings (UTF-16
-- units), and Space Lua's patterns see each unit through `& 0xff` (so "ģ" matches "#"). Hence
-- no Lua pattern ever runs on page text here: only plain `find`, `sub` and `byte`, comparing
-- ASCII codes (the same in both representations), and `decode`/`encode` below where code
-- points matter (cleaning, trimming, counting characters).

ocmem = ocmem or {}
local M = ocmem

-- generated: begin (scripts/generate.py, from ocmem's code: do not edit)
M.limits = M.limits or {
  memoryChars = 2000,
  skillsMax = 15,
  skillLines = 60,
  descriptionChars = 1024,
  descriptionSentences = 2,
}
M.pages = M.pages or {
  inbox = "Agents/Inbox/",
  memory = "Agents/Memory/MEMORY",
  archive = "Agents/Memory/ARCHIVE",
  skills = "Agents/Skills/",
}
M.MEMORY_HEADER = "# Mémoire\n\nFaits stables validés par l'humain (2000 caractères au plus).\n"
M.ARCHIVE_HEADER = "# Archive de la mémoire\n\nFaits et skills remplacés ou retirés par l'humain : ocmem ne les charge plus. Pour en rétablir un, recopiez-le (un fait dans MEMORY.md, un skill dans son dossier de Agents/Skills/) ou laissez l'agent le proposer à nouveau.\n"
M.DECISIONS_HEADER = "# Décisions sur les propositions\n\nÉcrite par la page de revue d'ocmem (Promouvoir, Refuser) ou à la main, une ligne par décision : « - P-0001 : promu (date) », « - P-0002 : refusé (date) : raison ». ocmem la lit à chaque pull et ne l'écrit jamais.\n"
local DECISIONS_PAGE = "decisions"
local SEP = " · "
local CONTENT_LABEL = "Contenu proposé"
local PENDING, PROMOTED, REFUSED, MERGED = "en attente", "promu", "refusé", "fusionné"
local LABELS = {
  status = "Statut",
  exposure = "Exposition",
  created = "Date",
  updated = "Mis à jour",
  sources = "Sources",
  origin = "Origine",
  replaces = "Remplace",
  contradiction = "Contradiction",
  check = "À vérifier",
  skill_name = "Skill",
  description = "Description",
}
-- generated: end

-- --- code points -------------------------------------------------------------------------

local byte, sub, find, char = string.byte, string.sub, string.find, string.char
local WIDE = pcall(char, 256) -- true in Space Lua (UTF-16 units), false in a real Lua

local function decode(s)
  local cps, i, n = {}, 1, #s
  while i <= n do
    local c = byte(s, i)
    local cp, size = c, 1
    if WIDE then
      if c >= 0xD800 and c <= 0xDBFF and i < n then
        local d = byte(s, i + 1)
        if d >= 0xDC00 and d <= 0xDFFF then
          cp, size = 0x10000 + (c - 0xD800) * 0x400 + (d - 0xDC00), 2
        end
      end
    elseif c >= 0xC0 then
      local extra = (c >= 0xF0 and 3) or (c >= 0xE0 and 2) or 1
      local base = (extra == 3 and 0xF0) or (extra == 2 and 0xE0) or 0xC0
      cp = c - base
      for k = 1, extra do
        cp = cp * 64 + ((byte(s, i + k) or 0x80) - 0x80)
      end
      size = extra + 1
    end
    cps[#cps + 1] = cp
    i = i + size
  end
  return cps
end

local function encode(cp)
  if WIDE then
    if cp < 0x10000 then
      return char(cp)
    end
    local v = cp - 0x10000
    return char(0xD800 + v // 0x400, 0xDC00 + v % 0x400)
  end
  if cp < 0x80 then
    return char(cp)
  elseif cp < 0x800 then
    return char(0xC0 + cp // 64, 0x80 + cp % 64)
  elseif cp < 0x10000 then
    return char(0xE0 + cp // 4096, 0x80 + (cp // 64) % 64, 0x80 + cp % 64)
  end
  return char(0xF0 + cp // 262144, 0x80 + (cp // 4096) % 64, 0x80 + (cp // 64) % 64, 0x80 + cp % 64)
end

local function encodeAll(cps, first, last)
  local out = {}
  for k = first or 1, last or #cps do
    out[#out + 1] = encode(cps[k])
  end
  return table.concat(out)
end

--- Characters (code points) in s, as Python's len() counts them.
function M.length(s)
  local count = 0
  for i = 1, #s do
    local c = byte(s, i)
    if WIDE then
      if not (c >= 0xDC00 and c <= 0xDFFF and i > 1 and byte(s, i - 1) >= 0xD800 and byte(s, i - 1) <= 0xDBFF) then
        count = count + 1
      end
    elseif c < 0x80 or c >= 0xC0 then
      count = count + 1
    end
  end
  return count
end

-- What Python's str.isspace() calls whitespace (str.strip() and re's \s use it).
local SPACES = {
  [9] = true, [10] = true, [11] = true, [12] = true, [13] = true, [28] = true, [29] = true,
  [30] = true, [31] = true, [32] = true, [0x85] = true, [0xA0] = true, [0x1680] = true,
  [0x2028] = true, [0x2029] = true, [0x202F] = true, [0x205F] = true, [0x3000] = true,
}
for cp = 0x2000, 0x200A do
  SPACES[cp] = true
end

function M.isSpace(cp)
  return SPACES[cp] == true
end

--- Python's str.strip(): whitespace off both ends.
function M.strip(s)
  local n = #s
  if n == 0 then
    return s
  end
  local first, last = byte(s, 1), byte(s, n)
  if first < 0x80 and not SPACES[first] and last < 0x80 and not SPACES[last] then
    return s -- the common case, without decoding
  end
  local cps = decode(s)
  local i, j = 1, #cps
  while i <= j and SPACES[cps[i]] do
    i = i + 1
  end
  while j >= i and SPACES[cps[j]] do
    j = j - 1
  end
  return encodeAll(cps, i, j)
end

local function rstrip(s)
  local n = #s
  if n == 0 or (byte(s, n) < 0x80 and not SPACES[byte(s, n)]) then
    return s
  end
  local cps = decode(s)
  local j = #cps
  while j >= 1 and SPACES[cps[j]] do
    j = j - 1
  end
  return encodeAll(cps, 1, j)
end

-- ocmem.inert.clean: \n line ends, no control characters, tabs as spaces unless kept.
-- (No NFC normalisation: plain Lua has no Unicode tables. It changes no escaping decision,
-- since every character that is escaped is ASCII and NFC never composes an ASCII character.)
local NEWLINES = { [13] = true, [0x2028] = true, [0x2029] = true, [0x85] = true, [11] = true, [12] = true }

local function isControl(cp)
  return (cp <= 8) or (cp >= 0x0E and cp <= 0x1F) or (cp >= 0x7F and cp <= 0x84) or (cp >= 0x86 and cp <= 0x9F)
end

function M.clean(s, keepTabs)
  local cps, out = decode(s), {}
  local k = 1
  while k <= #cps do
    local cp = cps[k]
    if cp == 13 and cps[k + 1] == 10 then
      k = k + 1
      cp = 10
    elseif NEWLINES[cp] then
      cp = 10
    end
    if not isControl(cp) then
      if cp == 9 and not keepTabs then
        cp = 32
      end
      out[#out + 1] = encode(cp)
    end
    k = k + 1
  end
  return table.concat(out)
end

local function splitLines(text)
  local lines, start = {}, 1
  while true do
    local nl = find(text, "\n", start, true)
    if not nl then
      lines[#lines + 1] = sub(text, start)
      return lines
    end
    lines[#lines + 1] = sub(text, start, nl - 1)
    start = nl + 1
  end
end

-- --- escaping (a port of ocmem.inert) ---------------------------------------------------------

local function set(chars)
  local t = {}
  for i = 1, #chars do
    t[byte(chars, i)] = true
  end
  return t
end

local PUNCTUATION = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
local PLAIN = set("\\`*_[]<>#${}|~=^&")
local DRAFT = set("\\`[]<>#${}~=^&")
local NOT_IN_SPAN = set("<[]#{}")
-- Technical tokens (ocmem.inert._token_wraps): a core with a letter or digit and one of TRIGGER
-- goes in a code span; a span of the agent's that stands alone with such a core gets one
-- backtick more, which unescape takes off again.
local BLANK = set(" \t\n")
local TOKEN_OPEN = set("(\"'")
local TOKEN_CLOSE = set(")\"'.,;:!?")
local TRIGGER = set("\\*_|~=^&$>")

local function isDigit(c)
  return c ~= nil and c >= 48 and c <= 57
end

local function isAlpha(c)
  return c ~= nil and ((c >= 65 and c <= 90) or (c >= 97 and c <= 122))
end

local function isHex(c)
  return isDigit(c) or (c ~= nil and ((c >= 65 and c <= 70) or (c >= 97 and c <= 102)))
end

local function backtickRuns(line, start)
  local runs, i, n = {}, start, #line
  while i <= n do
    if byte(line, i) == 96 then
      local j = i
      while j <= n and byte(line, j) == 96 do
        j = j + 1
      end
      runs[#runs + 1] = { i, j - i }
      i = j
    else
      i = i + 1
    end
  end
  return runs
end

-- Code spans kept as written, as {start = end + 1}: an opening run closes at the next run of
-- the same length, and only if nothing inside could be active whatever the parser.
local function codeSpans(line)
  local runs, spans, i = backtickRuns(line, 1), {}, 1
  while i <= #runs do
    local start, len = runs[i][1], runs[i][2]
    local close
    for k = i + 1, #runs do
      if runs[k][2] == len then
        close = k
        break
      end
    end
    local inert = close ~= nil
    if close then
      for p = start + len, runs[close][1] - 1 do
        if NOT_IN_SPAN[byte(line, p)] then
          inert = false
          break
        end
      end
    end
    if inert then
      spans[start] = runs[close][1] + len
      i = close + 1
    else
      i = i + 1
    end
  end
  return spans
end

-- "1." to "999999999)" at the start of a line: an ordered list marker.
local function orderedMarker(line, from)
  local i = from
  while isDigit(byte(line, i)) do
    i = i + 1
  end
  local digits = i - from
  local c = byte(line, i)
  if digits >= 1 and digits <= 9 and (c == 46 or c == 41) then
    return i -- position of the "." or ")"
  end
  return nil
end

-- ocmem.inert._token_like: s[from..to] (inclusive) may be put in a code span.
local function tokenLike(s, from, to)
  if to < from then
    return false
  end
  local trigger, alnum = false, false
  for p = from, to do
    local c = byte(s, p)
    if BLANK[c] or c == 96 or NOT_IN_SPAN[c] then
      return false
    end
    trigger = trigger or TRIGGER[c] == true
    alnum = alnum or isAlpha(c) or isDigit(c)
  end
  return trigger and alnum
end

-- ocmem.inert._stands_alone: s[start..stop - 1] is bounded as a token's core is.
local function standsAlone(s, start, stop)
  local before, after = start > 1 and byte(s, start - 1), stop <= #s and byte(s, stop)
  return (not before or BLANK[before] == true or TOKEN_OPEN[before] == true)
    and (not after or BLANK[after] == true or TOKEN_CLOSE[after] == true)
end

-- ocmem.inert._laddered: the code span s[start..stop - 1] with `step` backticks more (or fewer)
-- on each side if it stands alone and holds a token's core; as written otherwise.
local function laddered(s, start, stop, step)
  local len = 1
  while byte(s, start + len) == 96 do
    len = len + 1
  end
  if tokenLike(s, start + len, stop - len - 1) and standsAlone(s, start, stop) then
    local ticks = string.rep("`", len + step)
    return ticks .. sub(s, start + len, stop - len - 1) .. ticks
  end
  return sub(s, start, stop - 1)
end

-- ocmem.inert._token_wraps: the cores put in a code span, as {start = end + 1}.
local function tokenWraps(line, spans, escaped)
  local wraps, i, n = {}, 1, #line
  while i <= n do
    if BLANK[byte(line, i)] then
      i = i + 1
    else
      local start, ticked = i, false
      while i <= n and not BLANK[byte(line, i)] do
        if spans[i] then
          i, ticked = spans[i], true
        else
          ticked = ticked or byte(line, i) == 96
          i = i + 1
        end
      end
      if not ticked then
        local first, last = start, i - 1
        while first <= last and TOKEN_OPEN[byte(line, first)] do
          first = first + 1
        end
        while last >= first and TOKEN_CLOSE[byte(line, last)] do
          last = last - 1
        end
        local escapes = false
        for p = first, last do
          escapes = escapes or escaped[byte(line, p)] == true
        end
        if escapes and tokenLike(line, first, last) then
          wraps[first] = last + 1
        end
      end
    end
  end
  return wraps
end

local function escapeLine(line, escaped, lineStart)
  local spans = codeSpans(line)
  local wraps = tokenWraps(line, spans, escaped)
  local out, i, n = {}, 1, #line
  if lineStart and not wraps[1] then
    local marker = orderedMarker(line, 1)
    local first = byte(line, 1)
    if marker then
      out[1] = sub(line, 1, marker - 1) .. "\\" .. sub(line, marker, marker)
      i = marker + 1
    elseif first == 45 or first == 43 then
      out[1] = "\\" .. sub(line, 1, 1)
      i = 2
    end
  end
  local plainFrom = i
  while i <= n do
    local c = byte(line, i)
    if spans[i] or wraps[i] then
      out[#out + 1] = sub(line, plainFrom, i - 1)
      if spans[i] then
        out[#out + 1] = laddered(line, i, spans[i], 1)
        i = spans[i]
      else
        out[#out + 1] = "`" .. sub(line, i, wraps[i] - 1) .. "`"
        i = wraps[i]
      end
      plainFrom = i
    elseif escaped[c] then
      out[#out + 1] = sub(line, plainFrom, i - 1)
      out[#out + 1] = (c == 60) and "&lt;" or ("\\" .. sub(line, i, i))
      i = i + 1
      plainFrom = i
    else
      i = i + 1
    end
  end
  out[#out + 1] = sub(line, plainFrom, n)
  return table.concat(out)
end

--- ocmem.inert.inline: one line of text, inert wherever SilverBullet parses inline Markdown.
function M.inline(text)
  local t = M.strip(M.clean(text))
  if find(t, "\n", 1, true) then
    error("inline() takes one line")
  end
  return escapeLine(t, PLAIN, true)
end

-- Numeric references decoded the way Python's html.unescape does for ordinary characters;
-- the rare ones it maps specially (controls, C1, noncharacters) and named references other
-- than these six stay as written (shown literally, which is inert too).
local NAMED = { lt = "<", gt = ">", amp = "&", quot = '"', apos = "'", nbsp = encode(0xA0) }

local function entityAt(text, i)
  local n = #text
  local j = i + 1
  if byte(text, j) == 35 then -- "#"
    local hex = byte(text, j + 1) == 120 or byte(text, j + 1) == 88
    local k = hex and j + 2 or j + 1
    local from = k
    while k <= n and (hex and isHex(byte(text, k)) or (not hex and isDigit(byte(text, k)))) do
      k = k + 1
    end
    local digits = k - from
    if digits < 1 or digits > (hex and 6 or 7) or byte(text, k) ~= 59 then
      return nil
    end
    local num = tonumber(sub(text, from, k - 1), hex and 16 or 10)
    local plain = num >= 0x20 and not (num >= 0x7F and num <= 0x9F) and not (num >= 0xD800 and num <= 0xDFFF)
      and num <= 0x10FFFF and not (num >= 0xFDD0 and num <= 0xFDEF) and (num % 0x10000) < 0xFFFE
    return k + 1, plain and encode(num) or sub(text, i, k)
  end
  if not isAlpha(byte(text, j)) then
    return nil
  end
  local k = j + 1
  while k <= n and (isAlpha(byte(text, k)) or isDigit(byte(text, k))) do
    k = k + 1
  end
  if k - j - 1 < 1 or k - j - 1 > 31 or byte(text, k) ~= 59 then
    return nil
  end
  return k + 1, NAMED[sub(text, j, k - 1)] or sub(text, i, k)
end

--- ocmem.inert.unescape: rendered text back to what the agent wrote (the spans ocmem put around
--- tokens taken off, the agent's as written).
function M.unescape(text)
  local out, i, n = {}, 1, #text
  while i <= n do
    local c = byte(text, i)
    if c == 92 and i < n and PUNCTUATION[byte(text, i + 1)] then
      out[#out + 1] = sub(text, i + 1, i + 1)
      i = i + 2
    elseif c == 96 then
      local j = i
      while j <= n and byte(text, j) == 96 do
        j = j + 1
      end
      local len, stop = j - i, nil
      for _, run in ipairs(backtickRuns(text, j)) do
        if run[2] == len then
          stop = run[1] + len
          break
        end
      end
      if stop then
        out[#out + 1] = laddered(text, i, stop, -1)
        i = stop
      else
        out[#out + 1] = sub(text, i, j - 1)
        i = j
      end
    else
      local after, value
      if c == 38 then
        after, value = entityAt(text, i)
      end
      if after then
        out[#out + 1] = value
        i = after
      else
        out[#out + 1] = sub(text, i, i)
        i = i + 1
      end
    end
  end
  return table.concat(out)
end

--- ocmem.inert.unlines: a multi-line field back to its text.
function M.unlines(text)
  local out = {}
  for _, line in ipairs(splitLines(text)) do
    out[#out + 1] = M.unescape(M.strip(line))
  end
  return table.concat(out, "\n")
end

-- --- drafts (skill bodies) --------------------------------------------------------------------

M.PLAIN_LANGUAGES = {}
for word in string.gmatch([[text txt plaintext markdown md bash sh shell zsh console powershell
    python py javascript js typescript ts json yaml yml toml ini conf sql diff patch dockerfile
    nginx lua css html xml go rust c cpp java php ruby makefile log csv]], "%a+") do
  M.PLAIN_LANGUAGES[word] = true
end

local function spacesAt(s, i)
  while byte(s, i) == 32 do
    i = i + 1
  end
  return i
end

-- A fence opening after optional container markers (list items, quotes), as
-- ocmem.inert._FENCE_OPEN: returns the prefix length, the marker and the info string.
local function fenceOpen(line)
  local i = 1
  while true do
    local j = spacesAt(line, i)
    local c = byte(line, j)
    local after
    if c == 45 or c == 42 or c == 43 then
      after = j + 1
    elseif c == 62 then
      after = j + 1
    else
      local marker = orderedMarker(line, j)
      after = marker and marker + 1
    end
    if after and (c == 62 or byte(line, after) == 32) then
      i = spacesAt(line, after)
    else
      break
    end
  end
  local j = spacesAt(line, i)
  local c = byte(line, j)
  if c ~= 96 and c ~= 126 then
    return nil
  end
  local k = j
  while byte(line, k) == c do
    k = k + 1
  end
  if k - j < 3 then
    return nil
  end
  return j - 1, sub(line, j, k - 1), sub(line, k)
end

local function detab(s)
  local out, from = {}, 1
  while true do
    local t = find(s, "\t", from, true)
    if not t then
      out[#out + 1] = sub(s, from)
      return table.concat(out)
    end
    out[#out + 1] = sub(s, from, t - 1) .. "    "
    from = t + 1
  end
end

local function allSame(s, c)
  for i = 1, #s do
    if byte(s, i) ~= c then
      return false
    end
  end
  return #s > 0
end

local function infoWord(info)
  local stripped = M.strip(info)
  if stripped == "" then
    return "text"
  end
  local space = find(stripped, " ", 1, true)
  local word = space and sub(stripped, 1, space - 1) or stripped
  local kelvin = encode(0x212A) -- the one non-ASCII letter Python lowercases to ASCII ("k")
  local lowered, from = {}, 1
  while true do
    local k = find(word, kelvin, from, true)
    if not k then
      lowered[#lowered + 1] = string.lower(sub(word, from))
      break
    end
    lowered[#lowered + 1] = string.lower(sub(word, from, k - 1)) .. "k"
    from = k + #kelvin
  end
  word = table.concat(lowered)
  return M.PLAIN_LANGUAGES[word] and word or "text"
end

--- ocmem.inert.fence: content verbatim in a tilde fence that nothing inside can close.
function M.fence(content, info)
  local longest, run = 0, 0
  for i = 1, #content do
    if byte(content, i) == 126 then
      run = run + 1
      if run > longest then
        longest = run
      end
    else
      run = 0
    end
  end
  local marker = string.rep("~", math.max(3, longest + 1))
  local body = content
  while #body > 0 and byte(body, #body) == 10 do
    body = sub(body, 1, #body - 1)
  end
  if body == "" then
    return marker .. info .. "\n" .. marker
  end
  return marker .. info .. "\n" .. body .. "\n" .. marker
end

local function ruleLike(body)
  local c = byte(body, 1)
  if not (c == 45 or c == 42 or c == 95 or c == 61) then
    return false
  end
  for i = 2, #body do
    local d = byte(body, i)
    if not (d == 32 or d == 45 or d == 42 or d == 95 or d == 61) then
      return false
    end
  end
  return true
end

local function draftTextLine(line)
  local indent = spacesAt(line, 1) - 1
  local body = sub(line, indent + 1)
  local pad = string.rep(" ", indent)
  if body ~= "" and ruleLike(body) then
    return pad .. "\\" .. sub(body, 1, 1) .. escapeLine(sub(body, 2), DRAFT, false)
  end
  local prefix = ""
  local hashes = 0
  while byte(body, hashes + 1) == 35 do
    hashes = hashes + 1
  end
  if hashes >= 1 and hashes <= 6 and (byte(body, hashes + 1) == 32 or hashes == #body) then
    local stop = byte(body, hashes + 1) == 32 and hashes + 1 or hashes
    prefix, body = sub(body, 1, stop), sub(body, stop + 1)
  else
    while true do
      local c = byte(body, 1)
      local after
      if c == 45 or c == 42 or c == 43 then
        after = 2
      else
        local marker = orderedMarker(body, 1)
        after = marker and marker + 1
      end
      if not (after and byte(body, after) == 32) then
        break
      end
      prefix, body = prefix .. sub(body, 1, after), sub(body, after + 1)
    end
  end
  return pad .. prefix .. escapeLine(body, DRAFT, true)
end

--- ocmem.inert.draft: a Markdown draft kept to an inert subset (headings, lists, emphasis,
--- safe code spans, fences rewritten by us); everything else escaped, visibly.
function M.draft(markdown)
  local source = splitLines(M.clean(markdown, true))
  local out, i = {}, 1
  while i <= #source do
    local prefixLen, marker, info = fenceOpen(detab(source[i]))
    if marker and not (byte(marker, 1) == 96 and find(info, "`", 1, true)) then
      local content = {}
      i = i + 1
      while i <= #source do
        local stripped = M.strip(source[i])
        if #stripped >= #marker and allSame(stripped, byte(marker, 1)) then
          i = i + 1
          break
        end
        local line = source[i]
        local strip = math.min(prefixLen, spacesAt(line, 1) - 1)
        content[#content + 1] = sub(line, strip + 1)
        i = i + 1
      end
      out[#out + 1] = M.fence(table.concat(content, "\n"), infoWord(info))
    else
      out[#out + 1] = draftTextLine(rstrip(detab(source[i])))
      i = i + 1
    end
  end
  while #out > 0 and M.strip(out[#out]) == "" do
    out[#out] = nil
  end
  return table.concat(out, "\n")
end

local function ocmemFence(line)
  local k = 1
  while byte(line, k) == 126 do
    k = k + 1
  end
  if k - 1 < 3 then
    return nil
  end
  for p = k, #line do
    local c = byte(line, p)
    if c < 97 or c > 122 then
      return nil
    end
  end
  return sub(line, 1, k - 1)
end

--- ocmem.inert.undraft: inverse of draft (our fences kept as written, other lines unescaped).
function M.undraft(rendered)
  local lines, out, i = splitLines(rendered), {}, 1
  while i <= #lines do
    local marker = ocmemFence(lines[i])
    if marker then
      out[#out + 1] = lines[i]
      i = i + 1
      while i <= #lines and lines[i] ~= marker do
        out[#out + 1] = lines[i]
        i = i + 1
      end
      if i <= #lines then
        out[#out + 1] = lines[i]
        i = i + 1
      end
    else
      out[#out + 1] = M.unescape(lines[i])
      i = i + 1
    end
  end
  return table.concat(out, "\n")
end

-- --- pending pages ----------------------------------------------------------------------------

local function isWordDash(c)
  return isAlpha(c) or isDigit(c) or c == 95 or c == 45
end

local function parseHeader(line)
  if sub(line, 1, 5) ~= "## P-" then
    return nil
  end
  local i = 6
  while isDigit(byte(line, i)) do
    i = i + 1
  end
  if i - 6 < 4 then
    return nil
  end
  if byte(line, i) == 126 then
    local j = i + 1
    while isWordDash(byte(line, j)) do
      j = j + 1
    end
    if j == i + 1 then
      return nil
    end
    i = j
  end
  if sub(line, i, i + #SEP - 1) ~= SEP then
    return nil
  end
  local id, rest = sub(line, 4, i - 1), sub(line, i + #SEP)
  local k = find(rest, SEP, 1, true)
  local kind = k and sub(rest, 1, k - 1) or rest
  local title = k and sub(rest, k + #SEP) or ""
  while #title > 0 and (byte(title, #title) == 32 or byte(title, #title) == 9) do
    title = sub(title, 1, #title - 1)
  end
  return id, kind, title
end

-- "- Label : value", as ocmem.pending._FIELD reads it.
local function parseField(line)
  if sub(line, 1, 2) ~= "- " then
    return nil
  end
  local colon = find(line, ":", 3, true)
  if not colon or colon < 5 or byte(line, colon - 1) ~= 32 then
    return nil
  end
  local value = sub(line, colon + 1)
  if byte(value, 1) == 32 then
    value = sub(value, 2)
  end
  return M.strip(sub(line, 3, colon - 2)), M.strip(value)
end

local function fencedContent(lines, from, to)
  local i = from
  while i <= to and M.strip(lines[i]) == "" do
    i = i + 1
  end
  local c = i <= to and byte(lines[i], 1)
  if not (c == 96 or c == 126) then
    return nil, "pas de bloc de code après « " .. CONTENT_LABEL .. " »"
  end
  local k = 1
  while byte(lines[i], k) == c do
    k = k + 1
  end
  if k - 1 < 3 then
    return nil, "pas de bloc de code après « " .. CONTENT_LABEL .. " »"
  end
  local len = k - 1
  for j = i + 1, to do
    local stripped = M.strip(lines[j])
    if #stripped >= len and allSame(stripped, c) then
      local body = {}
      for m = i + 1, j - 1 do
        body[#body + 1] = lines[m]
      end
      return table.concat(body, "\n"), sub(lines[i], k)
    end
  end
  return nil, "bloc de code non refermé"
end

local function stateOf(status)
  for _, state in ipairs({ PROMOTED, REFUSED, MERGED, PENDING }) do
    if sub(status, 1, #state) == state then
      return state
    end
  end
  return nil
end

--- The proposals of one pending page. Lenient: the human may write anything between them;
--- a block that cannot be read is returned with `problem` set (and can only be refused).
function M.parsePending(text)
  local lines = splitLines(text)
  local proposals, current = {}, nil
  for index, raw in ipairs(lines) do
    local line = raw
    if byte(line, #line) == 13 then
      line = sub(line, 1, #line - 1)
      lines[index] = line
    end
    local id, kind, title = parseHeader(line)
    if id then
      current = { id = id, kind = kind, title = M.unescape(title), header = index, last = index }
      proposals[#proposals + 1] = current
    elseif current then
      current.last = index
    end
  end
  for _, p in ipairs(proposals) do
    p.fields, p.field = {}, {}
    local contentAt
    for index = p.header + 1, p.last do
      local label, value = parseField(lines[index])
      if label == CONTENT_LABEL then
        contentAt = index
        break
      elseif label and label ~= "" then
        p.fields[#p.fields + 1] = { label = label, value = M.unescape(value), line = index }
        if p.field[label] == nil then
          p.field[label] = M.unescape(value)
          if label == LABELS.status then
            p.statusLine = index
          end
        end
      end
    end
    p.status = p.field[LABELS.status] or ""
    p.state = stateOf(p.status)
    p.exposure = p.field[LABELS.exposure]
    if p.kind ~= "fait" and p.kind ~= "skill" then
      p.problem = "type « " .. p.kind .. " » inconnu (fait ou skill)"
    elseif not p.statusLine then
      p.problem = "ligne « - " .. LABELS.status .. " : » absente"
    elseif not contentAt then
      p.problem = "« - " .. CONTENT_LABEL .. " : » absent"
    else
      local content, info = fencedContent(lines, contentAt + 1, p.last)
      if content then
        p.content, p.info = content, info
      else
        p.problem = info
      end
    end
    p.sources = {}
    local sources, from = p.field[LABELS.sources] or "", 1
    while from <= #sources + 1 do
      local semicolon = find(sources, ";", from, true) or #sources + 1
      local source = M.strip(sub(sources, from, semicolon - 1))
      if source ~= "" then
        p.sources[#p.sources + 1] = source
      end
      from = semicolon + 1
    end
  end
  return proposals
end

local function validHome(home)
  if #home < 2 or #home > 24 then
    return false
  end
  for i = 1, #home do
    local c = byte(home, i)
    local ok = isDigit(c) or (c >= 97 and c <= 122) or (c == 45 and i > 1)
    if not ok then
      return false
    end
  end
  return true
end

--- The pending pages among page names: "<inbox><home>/pending" for each home, and the legacy
--- "<inbox>pending" (home unknown). Returns {name = ..., home = ... or nil}, sorted by name.
function M.pendingPages(names)
  local inbox, found = M.pages.inbox, {}
  for _, name in ipairs(names) do
    if sub(name, 1, #inbox) == inbox then
      local rest = sub(name, #inbox + 1)
      if rest == "pending" then
        found[#found + 1] = { name = name }
      else
        local slash = find(rest, "/", 1, true)
        if slash and sub(rest, slash + 1) == "pending" and validHome(sub(rest, 1, slash - 1)) then
          found[#found + 1] = { name = name, home = sub(rest, 1, slash - 1) }
        end
      end
    end
  end
  table.sort(found, function(a, b)
    return a.name < b.name
  end)
  return found
end

--- Names of the skills (folders holding a SKILL page) among page names.
function M.skillNames(names)
  local prefix, found = M.pages.skills, {}
  for _, name in ipairs(names) do
    if sub(name, 1, #prefix) == prefix then
      local rest = sub(name, #prefix + 1)
      local slash = find(rest, "/", 1, true)
      if slash and slash > 1 and sub(rest, slash + 1) == "SKILL" then
        found[#found + 1] = sub(rest, 1, slash - 1)
      end
    end
  end
  table.sort(found)
  return found
end

-- --- MEMORY.md --------------------------------------------------------------------------------

-- "1 474/2 000 (74 %)", as ocmem.fill.Fill prints it (round half to even, as Python does).
local function group(n)
  local s, out = tostring(math.floor(n)), {}
  local head = #s % 3
  if head > 0 then
    out[1] = sub(s, 1, head)
  end
  for i = head + 1, #s, 3 do
    out[#out + 1] = sub(s, i, i + 2)
  end
  return table.concat(out, " ")
end

function M.fill(used, cap)
  local percent = 100
  if cap > 0 then
    local q, r = (100 * used) // cap, (100 * used) % cap
    percent = (2 * r > cap or (2 * r == cap and q % 2 == 1)) and q + 1 or q
  end
  return group(used) .. "/" .. group(cap) .. " (" .. percent .. " %)"
end

local function isDate(s, i)
  for k = 0, 9 do
    local c = byte(s, i + k)
    if k == 4 or k == 7 then
      if c ~= 45 then
        return false
      end
    elseif not isDigit(c) then
      return false
    end
  end
  return true
end

--- ocmem.memoryfile.fact_statement: a fact line without its "(date, Source : …)" tail.
function M.factStatement(line)
  local stripped = rstrip(line)
  if byte(stripped, #stripped) ~= 41 then
    return line
  end
  local open
  for i = #stripped - 1, 1, -1 do
    local c = byte(stripped, i)
    if c == 41 then
      return line
    elseif c == 40 then
      open = i
      break
    end
  end
  if not open or not isDate(stripped, open + 1) then
    return line
  end
  return rstrip(sub(stripped, 1, open - 1))
end

--- The fact lines of MEMORY.md (list items), without "- ".
function M.factLines(text)
  local found = {}
  for _, line in ipairs(splitLines(text)) do
    if sub(line, 1, 2) == "- " then
      found[#found + 1] = M.strip(sub(line, 3))
    end
  end
  return found
end

--- ocmem.memoryfile.with_fact: MEMORY.md with one more fact line.
function M.withFact(text, line)
  local base = M.strip(text) ~= "" and text or M.MEMORY_HEADER
  local body = base
  while #body > 0 and byte(body, #body) == 10 do
    body = sub(body, 1, #body - 1)
  end
  local lines = splitLines(body)
  local separator = sub(lines[#lines], 1, 2) == "- " and "\n" or "\n\n"
  return body .. separator .. "- " .. line .. "\n"
end

--- ocmem.formats.memorymd.replaced_fact: MEMORY.md with the fact line `old` (as factLines
--- gives it) now `new`, in its place; every other byte as it was.
function M.replacedFact(text, old, new)
  local lines = splitLines(text)
  for i, line in ipairs(lines) do
    if sub(line, 1, 2) == "- " and M.strip(sub(line, 3)) == old then
      lines[i] = "- " .. new
      return table.concat(lines, "\n")
    end
  end
  return text
end

--- ocmem.formats.memorymd.without_fact: MEMORY.md without the fact line `old`.
function M.withoutFact(text, old)
  local kept, done = {}, false
  for _, line in ipairs(splitLines(text)) do
    if not done and sub(line, 1, 2) == "- " and M.strip(sub(line, 3)) == old then
      done = true
    else
      kept[#kept + 1] = line
    end
  end
  return table.concat(kept, "\n")
end

--- Python's " ".join(s.split()): each run of whitespace one space, none at the ends.
function M.squash(s)
  local out, gap = {}, false
  for _, cp in ipairs(decode(s)) do
    if SPACES[cp] then
      gap = #out > 0
    else
      if gap then
        out[#out + 1] = " "
        gap = false
      end
      out[#out + 1] = encode(cp)
    end
  end
  return table.concat(out)
end

--- ocmem.services.supersession.replacement: « MEMORY.md « statement » — why » read back (the
--- statement and why, "" when not said), or nil when « Remplace » names no fact.
function M.replacedStatement(replaces)
  local text = M.strip(M.unescape(replaces or ""))
  local head, close, dash = "MEMORY.md « ", " »", " » — "
  if sub(text, 1, #head) ~= head then
    return nil
  end
  local rest = sub(text, #head + 1)
  local at = find(rest, dash, 1, true)
  if at then
    return sub(rest, 1, at - 1), sub(rest, at + #dash)
  end
  if #rest >= #close and sub(rest, #rest - #close + 1) == close then
    return sub(rest, 1, #rest - #close), ""
  end
  return nil
end

--- The MEMORY.md line (as factLines gives it) whose statement is `statement`, or nil. ocmem
--- names the statement as MEMORY.md holds it (ocmem.services.promotion compares it so); one
--- read back (unescaped) is looked for next.
function M.factLineOf(memory, statement)
  local wanted = M.squash(statement)
  for _, readBack in ipairs({ false, true }) do
    for _, line in ipairs(M.factLines(memory)) do
      local held = M.factStatement(line)
      if M.squash(readBack and M.unescape(held) or held) == wanted then
        return line
      end
    end
  end
  return nil
end

local function withoutTrailingNewlines(text)
  while #text > 0 and byte(text, #text) == 10 do
    text = sub(text, 1, #text - 1)
  end
  return text
end

--- ocmem.formats.archive.Entry.render: {when, kind, action, about, old, new, reason}.
function M.archiveEntry(e)
  local lines = { "## " .. e.when .. SEP .. e.kind .. " " .. e.action .. SEP .. e.about }
  if e.kind == "fait" then
    lines[#lines + 1] = "- Ancien : " .. e.old
    if e.new ~= "" then
      lines[#lines + 1] = "- Nouveau : " .. M.inline(e.new)
    end
    lines[#lines + 1] = "- Raison : " .. M.inline(e.reason)
    return table.concat(lines, "\n") .. "\n"
  end
  lines[#lines + 1] = "- Raison : " .. M.inline(e.reason)
  lines[#lines + 1] = "- Ancien :"
  lines[#lines + 1] = ""
  lines[#lines + 1] = M.fence(withoutTrailingNewlines(e.old), "markdown")
  return table.concat(lines, "\n") .. "\n"
end

--- ocmem.formats.archive.with_entry: the archive page with one more entry.
function M.withArchiveEntry(text, entry)
  local base = M.strip(text) ~= "" and withoutTrailingNewlines(text) or withoutTrailingNewlines(M.ARCHIVE_HEADER)
  return base .. "\n\n" .. M.archiveEntry(entry)
end

-- --- skills -----------------------------------------------------------------------------------

--- ocmem.skills.name_problems: a valid skill (folder) name, or why not.
function M.nameProblem(name)
  local ok = #name >= 1 and #name <= 64
  for i = 1, #name do
    local c = byte(name, i)
    local alnum = isDigit(c) or (c >= 97 and c <= 122)
    if not alnum and not (c == 45 and i > 1 and i < #name and byte(name, i - 1) ~= 45) then
      ok = false
    end
  end
  if ok then
    return nil
  end
  return "nom « " .. name .. " » invalide : 1 à 64 caractères, minuscules, chiffres et tirets simples"
end

local ELLIPSIS = 0x2026

-- ocmem.skills.sentence_count, rule for rule: a sentence ends with a run of . ! ? … (then
-- closing » " ' ) ]) followed by whitespace and a capital or a digit (after an optional opening
-- « " ' ( [), unless the word before the run is an abbreviation (« p. ex. », « M. X », « cf. »).
local TERMINATORS = { [46] = true, [33] = true, [63] = true, [ELLIPSIS] = true }
local CLOSERS = { [0xBB] = true, [34] = true, [39] = true, [41] = true, [93] = true }
local OPENERS = { [0xAB] = true, [34] = true, [39] = true, [40] = true, [91] = true }
local ABBREVIATIONS = {}
for _, word in ipairs({ "p", "ex", "cf", "etc", "env", "resp", "min", "max", "approx", "fig", "vol",
  "chap", "art", "no", "n°", "m", "mme", "mlle", "dr", "pr", "st", "c.-à-d", "i.e", "e.g", "vs" }) do
  ABBREVIATIONS[word] = true
end

local function isCapitalOrDigit(cp)
  return cp ~= nil and ((cp >= 65 and cp <= 90) or (cp >= 48 and cp <= 57)
    or (cp >= 0xC0 and cp <= 0xDE and cp ~= 0xD7))
end

-- Python's str.lower() on the only characters that can lower into an abbreviation.
local function lowered(cps, from, to)
  local out = {}
  for k = from, to do
    local cp = cps[k]
    if (cp >= 65 and cp <= 90) or (cp >= 0xC0 and cp <= 0xDE and cp ~= 0xD7) then
      cp = cp + 32
    elseif cp == 0x212A then -- KELVIN SIGN
      cp = 107
    end
    out[#out + 1] = encode(cp)
  end
  return table.concat(out)
end

-- Where a sentence end matched at ``from`` stops (after its whitespace), and whether it counts;
-- nil when no end starts at ``from``. The word before the run is as short as possible.
local function sentenceEndAt(cps, from)
  local wordEnd = from - 1
  while true do
    local t = wordEnd + 1
    if TERMINATORS[cps[t]] then
      while TERMINATORS[cps[t]] do
        t = t + 1
      end
      while CLOSERS[cps[t]] do
        t = t + 1
      end
      if SPACES[cps[t]] then
        while SPACES[cps[t]] do
          t = t + 1
        end
        local next = cps[t]
        if isCapitalOrDigit(next) or (OPENERS[next] and isCapitalOrDigit(cps[t + 1])) then
          return t, not ABBREVIATIONS[lowered(cps, from, wordEnd)]
        end
      end
    end
    wordEnd = wordEnd + 1
    if cps[wordEnd] == nil or SPACES[cps[wordEnd]] then
      return nil
    end
  end
end

function M.sentenceCount(text)
  local cps = decode(M.strip(text))
  if #cps == 0 then
    return 0
  end
  local count, k = 1, 1
  while k <= #cps do
    local after, counts = sentenceEndAt(cps, k)
    if after then
      if counts then
        count = count + 1
      end
      k = after
    else
      k = k + 1
    end
  end
  return count
end

function M.descriptionProblems(description)
  local problems = {}
  if M.strip(description) == "" then
    problems[1] = "description absente : OpenCode n'annonce pas un skill sans description"
    return problems
  end
  local length = M.length(description)
  if length > M.limits.descriptionChars then
    problems[#problems + 1] = "description de " .. length .. " caractères (maximum " .. M.limits.descriptionChars .. ")"
  end
  local sentences = M.sentenceCount(description)
  if sentences > M.limits.descriptionSentences then
    problems[#problems + 1] = "description de " .. sentences .. " phrases (maximum " .. M.limits.descriptionSentences .. ")"
  end
  return problems
end

-- YAML scalars: plain when nothing in them can be read as another type or as YAML syntax,
-- else double-quoted with every character that could start a SilverBullet construct written
-- as an escape (so the frontmatter, too, holds no "${", "<", "#", "[" or "{").
local YAML_WORDS = { yes = true, no = true, ["true"] = true, ["false"] = true, on = true, off = true, null = true, y = true, n = true }
local YAML_PLAIN = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,'()/-")
local YAML_ESCAPED = set("\\\"$<#[{")

function M.yamlScalar(s)
  local cps = decode(s)
  local plain = #cps > 0 and isAlpha(cps[1]) and cps[#cps] ~= 32 and not YAML_WORDS[string.lower(s)]
  for _, cp in ipairs(cps) do
    if cp < 0x80 then
      plain = plain and YAML_PLAIN[cp] == true
    else
      plain = plain and cp >= 0xA1 and not SPACES[cp] and cp ~= 0xFEFF and cp < 0xFFF0
    end
  end
  if plain then
    return s
  end
  local out = { '"' }
  for _, cp in ipairs(cps) do
    if YAML_ESCAPED[cp] or cp < 0x20 or (cp >= 0x7F and cp <= 0x9F) then
      out[#out + 1] = (cp == 92 and "\\\\") or (cp == 34 and '\\"') or string.format("\\x%02X", cp)
    elseif cp == 0x2028 then
      out[#out + 1] = "\\L"
    elseif cp == 0x2029 then
      out[#out + 1] = "\\P"
    elseif cp == 0xFEFF or (cp >= 0xD800 and cp <= 0xDFFF) or cp == 0xFFFE or cp == 0xFFFF then
      out[#out + 1] = string.format("\\u%04X", cp)
    else
      out[#out + 1] = encode(cp)
    end
  end
  out[#out + 1] = '"'
  return table.concat(out)
end

--- A SKILL.md with the frontmatter ocmem.skills.render_skill writes (same YAML values).
function M.renderSkill(name, description, body, metadata)
  return "---\nname: " .. M.yamlScalar(name) .. "\ndescription: " .. M.yamlScalar(description)
    .. "\nmetadata:\n  source: " .. M.yamlScalar(metadata.source)
    .. "\n  promu: " .. M.yamlScalar(metadata.promu)
    .. "\n  proposition: " .. M.yamlScalar(metadata.proposition)
    .. "\n---\n\n" .. M.strip(body) .. "\n"
end

local function lineCount(text)
  local count, from = 0, 1
  while true do
    local nl = find(text, "\n", from, true)
    if not nl then
      return count + ((from <= #text) and 1 or 0)
    end
    count = count + 1
    from = nl + 1
  end
end
M.lineCount = lineCount

-- A name as a whole word of the « Remplace » text.
local function mentions(text, name)
  local from = 1
  while true do
    local at = find(text, name, from, true)
    if not at then
      return false
    end
    local before, after = byte(text, at - 1), byte(text, at + #name)
    local function wordChar(c)
      return c ~= nil and (isDigit(c) or (c >= 97 and c <= 122) or c == 45)
    end
    if not wordChar(before) and not wordChar(after) then
      return true
    end
    from = at + 1
  end
end

-- --- decisions --------------------------------------------------------------------------------

local function refusal(message, fix)
  return { ok = false, message = message .. ". Correction : " .. fix }
end

--- The status line's new value for a refusal (the reason written inert), or nil and why.
function M.refusedStatus(today, reason)
  local cleaned = M.strip(M.clean(reason or ""))
  if cleaned == "" then
    return nil, "donne une raison"
  end
  if find(cleaned, "\n", 1, true) then
    return nil, "la raison tient sur une ligne"
  end
  return REFUSED .. " (" .. today .. ") : " .. M.inline(cleaned)
end

--- The page text with proposal `id`'s status line set to `status`, or nil and why.
function M.markStatus(text, id, status)
  for _, p in ipairs(M.parsePending(text)) do
    if p.id == id then
      if not p.statusLine then
        return nil, "ligne « - " .. LABELS.status .. " : » absente dans " .. id
      end
      if p.state ~= PENDING then
        return nil, id .. " n'est plus en attente (" .. p.status .. ")"
      end
      local lines = splitLines(text)
      local original = lines[p.statusLine]
      local crlf = byte(original, #original) == 13 and "\r" or ""
      lines[p.statusLine] = "- " .. LABELS.status .. " : " .. status .. crlf
      return table.concat(lines, "\n")
    end
  end
  return nil, "proposition " .. id .. " introuvable"
end

--- The decisions page beside a pending page ("…/pending" → "…/decisions"): the human's
--- gestures are written there, never into the pending page ocmem pushes (one writer per page).
function M.decisionsPage(pendingPage)
  return sub(pendingPage, 1, #pendingPage - #"pending") .. DECISIONS_PAGE
end

local function isDecided(status)
  local state = stateOf(status)
  return state ~= nil and state ~= PENDING
end

--- Proposal id → its decided status (unescaped), from a decisions page: « - P-0003 : promu
--- (date) », only lines ending in a newline, only decided states, the last line for an id wins
--- (as ocmem.formats.decisionspage.parse).
function M.parseDecisions(text)
  local found, lines = {}, splitLines(text)
  for index = 1, #lines - 1 do -- the last piece has no newline after it
    local line = lines[index]
    if sub(line, 1, 4) == "- P-" then
      local i = 5
      while isDigit(byte(line, i)) do
        i = i + 1
      end
      local ok = i - 5 >= 4
      if ok and byte(line, i) == 126 then
        local j = i + 1
        while isWordDash(byte(line, j)) do
          j = j + 1
        end
        ok, i = j > i + 1, j
      end
      if ok and sub(line, i, i + 2) == " : " then
        local id, rest = sub(line, 3, i - 1), sub(line, i + 3)
        if byte(rest, #rest) == 13 then
          rest = sub(rest, 1, #rest - 1)
        end
        while #rest > 0 and (byte(rest, #rest) == 32 or byte(rest, #rest) == 9) do
          rest = sub(rest, 1, #rest - 1)
        end
        local status = M.unescape(rest)
        if isDecided(status) then
          found[id] = status
        end
      end
    end
  end
  return found
end

--- The decisions page with `status` (as written: already inert) recorded for `id`, or nil and
--- why (already decided there).
function M.withDecision(text, id, status)
  local already = M.parseDecisions(text)[id]
  if already then
    return nil, id .. " n'est plus en attente (" .. already .. ")"
  end
  local base = text
  if M.strip(base) == "" then
    base = M.DECISIONS_HEADER .. "\n"
  elseif byte(base, #base) ~= 10 then
    base = base .. "\n"
  end
  return base .. "- " .. id .. " : " .. status .. "\n"
end

--- Everything a decision reads, from a store {list(), read(name)} (SilverBullet's space, or a
--- stand-in): page names, the pending pages parsed, MEMORY.md, the skills.
function M.snapshot(store)
  local names = store.list()
  local snap = { names = names, pages = {}, proposals = {}, byId = {}, read = store.read }
  local present = {}
  for _, name in ipairs(names) do
    present[name] = true
  end
  for _, page in ipairs(M.pendingPages(names)) do
    page.text = store.read(page.name) or ""
    page.decisionsPage = M.decisionsPage(page.name)
    page.decisions = present[page.decisionsPage] and M.parseDecisions(store.read(page.decisionsPage) or "") or {}
    snap.pages[#snap.pages + 1] = page
    for _, p in ipairs(M.parsePending(page.text)) do
      p.page, p.home, p.decisionsPage = page.name, page.home, page.decisionsPage
      local decided = page.decisions[p.id]
      if decided and p.state == PENDING then
        -- decided on the decisions page, not yet pulled (the pending page is ocmem's)
        p.status, p.state = decided, stateOf(decided)
      end
      p.gid = page.home and (page.home .. "/" .. p.id) or p.id
      snap.proposals[#snap.proposals + 1] = p
      if snap.byId[p.gid] == nil then
        snap.byId[p.gid] = p
      else
        snap.byId[p.gid] = false -- the same id twice: ambiguous, refused
      end
    end
  end
  snap.memory = store.read(M.pages.memory) or ""
  snap.archive = store.read(M.pages.archive) or ""
  snap.skills = M.skillNames(names)
  return snap
end

local function sourceText(p)
  local joined = table.concat(p.sources, " ; ")
  return p.home and (p.home .. " " .. joined) or joined
end

--- The MEMORY.md line a fact proposal becomes, or nil and why.
function M.factLine(p, today)
  local fact = M.strip(M.unlines(p.content or ""))
  if fact == "" or find(fact, "\n", 1, true) then
    return nil, "un fait tient sur une ligne non vide"
  end
  if #p.sources == 0 then
    return nil, "la proposition ne cite aucune source"
  end
  return M.inline(fact) .. " (" .. today .. ", Source : " .. M.inline(sourceText(p)) .. " ; "
    .. M.inline(p.gid) .. ")"
end

local function lookup(snap, gid, readable)
  local p = snap.byId[gid]
  if p == false then
    return nil, refusal("l'identifiant " .. gid .. " apparaît deux fois", "renumérote ou supprime le doublon dans " .. M.pages.inbox)
  end
  if not p then
    return nil, refusal("pas de proposition " .. gid, "la revue des propositions montre les identifiants")
  end
  if p.state ~= PENDING then
    return nil, refusal(gid .. " n'est plus en attente (« " .. p.status .. " »)", "rien à faire")
  end
  if p.problem and (readable or not p.statusLine) then
    return nil, refusal(gid .. " est illisible : " .. p.problem, "corrige le bloc dans " .. p.page .. " ou refuse la proposition")
  end
  return p
end

local function markWrite(p, today)
  return { page = p.decisionsPage, id = p.id, status = PROMOTED .. " (" .. today .. ")" }
end

local function planFact(snap, p, today)
  local line, why = M.factLine(p, today)
  if not line then
    return refusal(p.gid .. " : " .. why, "corrige la proposition dans " .. p.page .. " ou refuse-la")
  end
  local tail = "; " .. M.inline(p.gid) .. ")"
  local wanted = M.unescape(M.factStatement(line))
  -- « Remplace : MEMORY.md « … » »: the fact this one takes the place of (ocmem named it).
  local oldStatement, why = M.replacedStatement(p.field[LABELS.replaces])
  local oldLine = oldStatement and M.factLineOf(snap.memory, oldStatement)
  for _, existing in ipairs(M.factLines(snap.memory)) do
    if sub(existing, -#tail) == tail and M.unescape(M.factStatement(existing)) == wanted then
      -- promoted before, but the status was not marked (interrupted): only mark it now; another
      -- fact under this id (a reinstalled home numbers from P-0001 again) is not this proposal
      return { ok = true, writes = { markWrite(p, today) }, message = p.gid .. " était déjà dans MEMORY.md : marquée « promu »" }
    end
    if existing ~= oldLine and M.unescape(M.factStatement(existing)) == wanted then
      return refusal("ce fait est déjà dans MEMORY.md : « " .. existing .. " »", "refuse la proposition (« déjà présent »)")
    end
  end
  local text = oldLine and M.replacedFact(snap.memory, oldLine, line) or M.withFact(snap.memory, line)
  local used = M.length(text)
  if used > M.limits.memoryChars then
    return refusal(
      "MEMORY.md dépasserait son plafond : " .. M.fill(used, M.limits.memoryChars) .. ", rien n'a été écrit",
      "consolide MEMORY.md (fusionne ou retire des faits dépassés), puis relance la promotion"
    )
  end
  local message = p.gid .. " promue dans MEMORY.md (" .. M.fill(used, M.limits.memoryChars) .. ")"
  local writes = {}
  if oldLine then
    local entry = {
      when = today, kind = "fait", action = "remplacé", about = p.gid, old = oldLine,
      new = M.strip(M.unlines(p.content or "")), reason = why ~= "" and why or "remplacé",
    }
    writes[#writes + 1] = { page = M.pages.archive, text = M.withArchiveEntry(snap.archive, entry) }
    message = message .. ". Ancien fait remplacé, gardé dans " .. M.pages.archive .. " : « " .. oldLine .. " »"
  elseif oldStatement then
    message = message .. ". Le fait remplacé n'est plus dans MEMORY.md : le nouveau est ajouté"
  end
  writes[#writes + 1] = { page = M.pages.memory, text = text }
  writes[#writes + 1] = markWrite(p, today)
  return { ok = true, writes = writes, message = message }
end

--- The SKILL.md a skill proposal becomes, its problems (empty when it may be written) and name.
function M.skillText(p, today)
  local name = M.strip(p.field[LABELS.skill_name] or "")
  local description = M.strip(M.clean(p.field[LABELS.description] or ""))
  local problems = {}
  local nameProblem = M.nameProblem(name)
  if nameProblem then
    problems[#problems + 1] = nameProblem
  end
  if find(description, "\n", 1, true) then
    problems[#problems + 1] = "la description tient sur une ligne"
  end
  for _, problem in ipairs(M.descriptionProblems(description)) do
    problems[#problems + 1] = problem
  end
  if #p.sources == 0 then
    problems[#problems + 1] = "la proposition ne cite aucune source"
  end
  local source = sourceText(p)
  local body = M.draft(M.undraft(p.content or "")) .. "\n\nSource : " .. M.inline(source)
    .. " (promu le " .. today .. ", " .. M.inline(p.gid) .. ")"
  local text = M.renderSkill(name, description, body, { source = source, promu = today, proposition = p.gid })
  local lines = lineCount(text)
  if lines > M.limits.skillLines then
    problems[#problems + 1] = lines .. " lignes (maximum " .. M.limits.skillLines .. ")"
  end
  return text, problems, name
end

local function planSkill(snap, p, today)
  local text, problems, name = M.skillText(p, today)
  if #problems > 0 then
    return refusal(
      "le skill ne respecterait pas les règles : " .. table.concat(problems, " ; "),
      "refuse la proposition et demande une version corrigée"
    )
  end
  local page = M.pages.skills .. name .. "/SKILL"
  local exists = false
  for _, known in ipairs(snap.skills) do
    exists = exists or known == name
  end
  if exists then
    local current = snap.read(page) or ""
    if find(current, "\n  proposition: " .. M.yamlScalar(p.gid) .. "\n", 1, true) then
      -- promoted before, but the status was not marked (interrupted): only mark it now
      return { ok = true, writes = { markWrite(p, today) }, message = p.gid .. " était déjà dans " .. page .. " : marquée « promu »" }
    end
    if not mentions(p.field[LABELS.replaces] or "", name) then
      return refusal(
        "le skill " .. name .. " existe déjà et la proposition ne dit pas le remplacer",
        "refuse la proposition, ou modifie le skill à la main"
      )
    end
  elseif #snap.skills >= M.limits.skillsMax then
    return refusal(
      #snap.skills .. " skills déjà installés (maximum " .. M.limits.skillsMax .. ")",
      "fusionne ou retire un skill avant d'en créer un nouveau"
    )
  end
  return {
    ok = true,
    writes = { { page = page, text = text }, markWrite(p, today) },
    message = p.gid .. " promue : " .. page .. " (" .. lineCount(text) .. "/" .. M.limits.skillLines
      .. " lignes, " .. (exists and #snap.skills or #snap.skills + 1) .. "/" .. M.limits.skillsMax .. " skills)",
  }
end

--- What promoting `gid` writes ({ok, writes, message}); nothing is written here.
function M.planPromote(snap, gid, today)
  local p, refused = lookup(snap, gid, true)
  if not p then
    return refused
  end
  if p.kind == "fait" then
    return planFact(snap, p, today)
  end
  return planSkill(snap, p, today)
end

--- What refusing `gid` with `reason` writes (a block that cannot be read may be refused).
function M.planRefuse(snap, gid, reason, today)
  local p, refused = lookup(snap, gid, false)
  if not p then
    return refused
  end
  local status, why = M.refusedStatus(today, reason)
  if not status then
    return refusal(why, "relance la commande avec une raison sur une ligne")
  end
  return { ok = true, writes = { { page = p.decisionsPage, id = p.id, status = status } }, message = gid .. " refusée" }
end

--- What retiring a validated fact (`target`: its text, whole or the statement) or a skill
--- (`target` = "skill NAME") writes: the archive first, then MEMORY.md without the line or the
--- skill's page deleted. The human's gesture only (the agent has no command for it).
function M.planRetire(snap, target, reason, today)
  local cleaned = M.strip(M.clean(reason or ""))
  if cleaned == "" or find(cleaned, "\n", 1, true) then
    return refusal("donne une raison sur une ligne", "relance la commande avec la raison (elle reste dans l'archive)")
  end
  local wanted = M.strip(target or "")
  if sub(wanted, 1, 6) == "skill " then
    local name = M.strip(sub(wanted, 7))
    local page = M.pages.skills .. name .. "/SKILL"
    local current = snap.read(page)
    if current == nil then
      return refusal("pas de skill " .. name, "les skills sont les pages " .. M.pages.skills .. "<nom>/SKILL")
    end
    local entry = { when = today, kind = "skill", action = "retiré", about = name, old = current, new = "", reason = cleaned }
    return {
      ok = true,
      writes = { { page = M.pages.archive, text = M.withArchiveEntry(snap.archive, entry) }, { page = page, delete = true } },
      message = "Skill " .. name .. " retiré (gardé dans " .. M.pages.archive .. ")",
    }
  end
  local line = M.factLineOf(snap.memory, M.unescape(M.factStatement(wanted)))
  if line == nil then
    return refusal("aucun fait de MEMORY.md ne correspond à « " .. wanted .. " »", "copie la ligne du fait depuis " .. M.pages.memory)
  end
  local entry = { when = today, kind = "fait", action = "retiré", about = "à la main", old = line, new = "", reason = cleaned }
  return {
    ok = true,
    writes = {
      { page = M.pages.archive, text = M.withArchiveEntry(snap.archive, entry) },
      { page = M.pages.memory, text = M.withoutFact(snap.memory, line) },
    },
    message = "Fait retiré de MEMORY.md (gardé dans " .. M.pages.archive .. ") : « " .. line .. " »",
  }
end

--- Carries out a plan on a store {read(name), write(name, text)}: target pages first, the
--- decision last, added to the decisions page as read just before writing it. ocmem never
--- writes that page, so this write races no push; the pending page is ocmem's alone.
function M.apply(store, plan)
  if not plan.ok then
    return plan
  end
  for _, write in ipairs(plan.writes) do
    if write.status then
      local text, why = M.withDecision(store.read(write.page) or "", write.id, write.status)
      if not text then
        return { ok = false, message = plan.message .. ", mais la décision n'a pas pu être notée : " .. why
          .. ". Correction : écris « - " .. write.id .. " : " .. write.status .. " » dans " .. write.page }
      end
      store.write(write.page, text)
    elseif write.delete then
      store.delete(write.page)
    else
      store.write(write.page, write.text)
    end
  end
  return plan
end

function M.promote(store, gid, today)
  return M.apply(store, M.planPromote(M.snapshot(store), gid, today))
end

function M.refuse(store, gid, reason, today)
  return M.apply(store, M.planRefuse(M.snapshot(store), gid, reason, today))
end

function M.retire(store, target, reason, today)
  return M.apply(store, M.planRetire(M.snapshot(store), target, reason, today))
end

--- The MEMORY.md line a waiting fact proposal would replace, as it stands now (or nil): what
--- the review shows next to the new fact.
function M.replacedLine(snap, p)
  local statement = M.replacedStatement(p.field[LABELS.replaces])
  return statement and M.factLineOf(snap.memory, statement)
end

--- A proposal's content as the review shows it (a text node): a fact as it reads, a skill draft
--- as the Markdown it will be written as.
function M.shownContent(p)
  if not p.content then
    return ""
  end
  return p.kind == "fait" and M.unlines(p.content) or p.content
end

--- What the review says first about a proposal written by a session that had read outside
--- content (a web page, an MCP tool, a download: its « Exposition » field, see ocmem.exposure),
--- or nil. Plain text, for a text node.
function M.exposureWarning(p)
  if p.exposure == nil or M.strip(p.exposure) == "" then
    return nil
  end
  return "⚠ Exposée : " .. p.exposure .. " — la session qui l'a écrite avait lu un contenu externe ;"
    .. " vérifie le contenu toi-même avant de promouvoir"
end

--- The review: proposals waiting (every field as plain text, for text nodes) and the budgets.
function M.review(store)
  local snap = M.snapshot(store)
  local entries, decided = {}, 0
  for _, p in ipairs(snap.proposals) do
    if p.state == PENDING then
      p.replacedLine = p.kind == "fait" and M.replacedLine(snap, p) or nil
      entries[#entries + 1] = p
    else
      decided = decided + 1
    end
  end
  return {
    entries = entries,
    decided = decided,
    memory = "MEMORY.md " .. M.fill(M.length(snap.memory), M.limits.memoryChars),
    skills = "skills " .. #snap.skills .. "/" .. M.limits.skillsMax,
  }
end
