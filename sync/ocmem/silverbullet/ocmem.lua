-- priority: 20
-- ocmem review: performs, on the human's click, the edits ocmem computed for each waiting
-- proposal and each promotion it can take back. ocmem decides (the fact line, SKILL.md, the line
-- a fact replaces, the archive entry, what an undo removes, the decision line, the caps) and
-- pushes it at the end of the pending page, in a "~~~ocmem-gestes" fence read here line by line
-- (ocmem/formats/gestures.py). This finds it, checks that the pages it edits still hold what
-- ocmem saw (else it says so, writes nothing), performs the edits and records the decision. It
-- never escapes, renders or parses ocmem's formats; a retirement's text comes from templates
-- generated from ocmem's code.
--
-- Plain Lua 5.4 (CI runs it in a standard Lua: tests/test_sb_review.py); the glue is the next
-- block. Strings: real Lua strings are UTF-8 bytes, Space Lua strings are JavaScript strings
-- (UTF-16 units), and Space Lua's patterns see each unit through `& 0xff` (so "ģ" matches "#").
-- Hence no Lua pattern ever runs on page text here: only plain `find`, `sub` and `byte`,
-- comparing ASCII codes (the same in both), and `codePoints` where characters are counted.

ocmem = ocmem or {}
local M = ocmem

-- generated: begin (scripts/generate.py, from ocmem's code: do not edit)
M.pages = M.pages or {
  inbox = "Agents/Inbox/",
  pending = "pending",
  memory = "Agents/Memory/MEMORY",
  archive = "Agents/Memory/ARCHIVE",
  skills = "Agents/Skills/",
  skill = "/SKILL",
}
M.FENCE, M.FENCE_CLOSE = "~~~ocmem-gestes", "~~~"
M.DECISIONS_HEADER = "# Décisions sur les propositions\n\nÉcrite par la page de revue d'ocmem (Promouvoir, Refuser, Annuler) ou à la main, une ligne par décision : « - P-0001 : promu (date) », « - P-0002 : refusé (date) : raison », « - P-0001 : annulé (date) ». ocmem la lit à chaque pull et ne l'écrit jamais.\n"
M.FACT_PREFIX = "- "
M.ARCHIVE_EMPTY = { "# Archive de la mémoire\n\nFaits et skills remplacés ou retirés par l'humain : ocmem ne les charge plus. Pour en rétablir un, recopie-le (un fait dans MEMORY.md, un skill dans son dossier de Agents/Skills/) ou laisse l'agent le proposer à nouveau.\n" }
M.RETIRE_FACT = { "\n## ", { "date" }, " · fait retiré · à la main\n- Ancien : ", { "ancien" }, "\n- Raison : ", { "raison" }, "\n" }
M.RETIRE_SKILL = { "\n## ", { "date" }, " · skill retiré · ", { "nom" }, "\n- Raison : ", { "raison" }, "\n- Ancien :\n\n~~~~~~~~~~~~markdown\n", { "ancien" }, "\n~~~~~~~~~~~~\n" }
M.RETIRE_SKILL_FENCE = "~~~~~~~~~~~~"
-- generated: end

local byte, sub, find, char = string.byte, string.sub, string.find, string.char
local WIDE = pcall(char, 256) -- true in Space Lua (UTF-16 units), false in a real Lua

-- --- text ---------------------------------------------------------------------------------

local function codePoints(s)
  local cps, i = {}, 1
  while i <= #s do
    local c, size, d = byte(s, i), 1, byte(s, i + 1)
    if WIDE and c >= 0xD800 and c <= 0xDBFF and d and d >= 0xDC00 and d <= 0xDFFF then
      c, size = 0x10000 + (c - 0xD800) * 0x400 + (d - 0xDC00), 2
    elseif not WIDE and c >= 0xC0 then
      size = (c >= 0xF0 and 4) or (c >= 0xE0 and 3) or 2
      c = c % ((size == 4 and 8) or (size == 3 and 16) or 32)
      for k = 1, size - 1 do
        c = c * 64 + (byte(s, i + k) or 0x80) % 64
      end
    end
    cps[#cps + 1], i = c, i + size
  end
  return cps
end

--- Characters (code points) in s, as Python's len() counts them.
function M.length(s) return #codePoints(s) end

--- « hash length » over the code points of s (ocmem.formats.gestures.digest).
function M.digest(s)
  local cps, h = codePoints(s), 0
  for _, cp in ipairs(cps) do
    h = (h * 131 + cp) % 2147483647
  end
  return h .. " " .. #cps
end

-- The pieces of s between separators (plain search).
local function split(s, separator)
  local found, from = {}, 1
  while true do
    local at = find(s, separator, from, true)
    found[#found + 1] = sub(s, from, (at or #s + 1) - 1)
    if not at then return found end
    from = at + #separator
  end
end

local function lines(text) return split(text or "", "\n") end

local function startsWith(s, prefix) return sub(s, 1, #prefix) == prefix end

local BLANK = { [9] = true, [10] = true, [13] = true, [32] = true }

local function blank(text)
  for i = 1, #(text or "") do
    if not BLANK[byte(text, i)] then return false end
  end
  return true
end

local function withoutTrailingNewlines(text)
  local n = #text
  while n > 0 and byte(text, n) == 10 do n = n - 1 end
  return sub(text, 1, n)
end

-- s without spaces and tabs at its ends (`left` false: at its end only, a CR too: a line as
-- the push normalises it, and as its digest counts it).
local function trim(s, left)
  local i, j = 1, #s
  while left ~= false and i <= j and (byte(s, i) == 32 or byte(s, i) == 9) do i = i + 1 end
  while j >= i and (byte(s, j) == 32 or byte(s, j) == 9 or (left == false and byte(s, j) == 13)) do j = j - 1 end
  return sub(s, i, j)
end

-- A text is pieces: strings, and slots ({"date"}, {"raison"}…) the page fills in.
local function fill(pieces, slots)
  local out = {}
  for _, piece in ipairs(pieces) do
    out[#out + 1] = type(piece) == "string" and piece or slots[piece[1]]
  end
  return table.concat(out)
end

-- Whether `line` is the text `pieces` make, whatever day its date slots hold.
local function matches(line, pieces)
  local at = 1
  for _, piece in ipairs(pieces) do
    if type(piece) ~= "string" then
      piece = sub(line, at, at + 9) -- a date: ten ASCII characters in either representation
    end
    if sub(line, at, at + #piece - 1) ~= piece then return false end
    at = at + #piece
  end
  return at == #line + 1
end

-- The first line of `text` that is `pieces`, or nil.
local function lineOf(text, pieces)
  for _, line in ipairs(lines(text)) do
    if matches(line, pieces) then return line end
  end
  return nil
end

-- The decision a decisions page shows for an entry, or nil: the last line that starts with one
-- of `decided` or `reopened`, when it is one of `decided` (« annulé » after « promu » reopens).
local function noted(text, entry)
  local last
  for _, line in ipairs(lines(text)) do
    for _, prefix in ipairs(entry.decided) do last = startsWith(line, prefix) and line or last end
    for _, prefix in ipairs(entry.reopened) do last = not startsWith(line, prefix) and last or nil end
  end
  return last
end

-- --- reading the gestures ocmem pushed ---------------------------------------------------------

-- The run of three or more backticks or tildes a Markdown fence line starts with, or nil.
local function fenceRun(line)
  local i = 1
  while i <= 3 and byte(line, i) == 32 do i = i + 1 end
  local c, j = byte(line, i), i
  if c ~= 96 and c ~= 126 then return nil end
  while byte(line, j) == c do j = j + 1 end
  return j - i >= 3 and sub(line, i, j - 1) or nil, j
end

local function closes(line, marker)
  local run, after = fenceRun(line)
  return run ~= nil and byte(run, 1) == byte(marker, 1) and #run >= #marker and blank(sub(line, after))
end

local EDITS = { ajoute = true, remplace = true, cree = true, ecrase = true, supprime = true }
local TEXTS = { texte = true, vide = true, ancien = true, deja = true }
local VALUES = { plafond = true, compte = true, correction = true, avant = true }
local LISTS = { note = "notes", decidee = "decided", rouvre = "reopened" }

-- The proposals in ocmem's data: one entry per « proposition », its gestures, their edits.
local function readData(page, data, found)
  local sink = { notes = {}, decided = {}, reopened = {}, gestures = {}, edits = {}, decision = {} }
  local entry, gesture, edit, target = sink, sink, sink, sink
  for _, line in ipairs(data) do
    local c, space = byte(line, 1), find(line, " ", 1, true)
    local key, value = space and sub(line, 1, space - 1) or line, space and sub(line, space + 1) or ""
    if c == 124 or c == 62 then -- "| text|": a line; "> text|": a piece of one
      target[#target + 1] = sub(line, 3, #line - 1) .. (c == 124 and "\n" or "")
    elseif c == 64 then -- "@date": a slot
      target[#target + 1] = { sub(line, 2) }
    elseif key == "proposition" then
      entry, gesture, edit, target = { page = page, gid = value, notes = {}, decided = {}, reopened = {}, gestures = {} }, sink, sink, sink
      found[#found + 1] = entry
    elseif LISTS[key] then
      local list = entry[LISTS[key]]
      list[#list + 1] = value
    elseif key == "geste" then
      gesture, edit = { edits = {}, decision = {} }, sink
      entry.gestures[value] = gesture
    elseif key == "message" or key == "impossible" then
      gesture[key] = value
    elseif key == "decision" then
      target = gesture.decision
    elseif EDITS[key] then
      edit = { kind = key, page = value }
      gesture.edits[#gesture.edits + 1] = edit
    elseif TEXTS[key] then
      target = {}
      edit[key] = target
    elseif VALUES[key] then
      edit[key] = value
    else -- bloc, empreinte, titre, alerte, decisions
      entry[key] = value
    end
  end
end

--- The proposals a pending page offers, each with the gestures ocmem computed for it and its
--- block as the page holds it (intact when its digest is still the one ocmem pushed). Only a
--- fence outside every other fence is ocmem's: a line inside a proposal's content (the agent's
--- text) can never pass for ocmem's data or a block's header.
function M.proposalsOf(page, text)
  local found, all, headers, data, other = {}, lines(text), {}, nil, nil
  for i, line in ipairs(all) do
    if data then
      if closes(line, M.FENCE_CLOSE) then
        readData(page, data, found)
        data = nil
      else
        data[#data + 1] = line
      end
    elseif other then
      other = not closes(line, other) and other or nil
    elseif line == M.FENCE then
      data = {}
    else -- a block is found by its header line's digest
      other = fenceRun(line)
      local key = M.digest(trim(line, false))
      headers[key] = headers[key] or i
    end
  end
  for _, entry in ipairs(found) do
    local counts, at, block = split(entry.empreinte or "", " "), headers[entry.bloc or ""], {}
    for k = at or 1, at and at + (tonumber(counts[1]) or 0) - 1 or 0 do
      block[#block + 1] = all[k] and trim(all[k], false)
    end
    entry.markdown = table.concat(block, "\n")
    entry.intact = at ~= nil and M.digest(entry.markdown) == (counts[2] or "") .. " " .. (counts[3] or "")
  end
  return found
end

--- Every proposal of every pending page (store: {list(), read(name)}), pages in name order.
function M.proposals(store)
  local inbox, pending, names, found = M.pages.inbox, M.pages.pending, {}, {}
  for _, name in ipairs(store.list()) do
    local rest = sub(name, #inbox + 1)
    if startsWith(name, inbox) and (rest == pending or sub(rest, -#pending - 1) == "/" .. pending) then
      names[#names + 1] = name
    end
  end
  table.sort(names)
  for _, name in ipairs(names) do
    for _, entry in ipairs(M.proposalsOf(name, store.read(name))) do
      found[#found + 1] = entry
    end
  end
  return found
end

--- The review: the proposals still waiting, and the promotions that can be taken back (those
--- not decided on their decisions page).
function M.review(store)
  local review, pages = { entries = {}, promoted = {} }, {}
  for _, entry in ipairs(M.proposals(store)) do
    local decisions = entry.decisions or ""
    pages[decisions] = pages[decisions] or store.read(decisions) or ""
    local list = review[entry.gestures.annuler and "promoted" or "entries"]
    if not noted(pages[decisions], entry) then list[#list + 1] = entry end
  end
  return review
end

-- --- performing ---------------------------------------------------------------------------------

local SYNC = "lance `ocmem sync` (ocmem relit la page et recalcule la proposition), puis recommence"
local DELETE = {}

local function refusal(message, fix)
  return { ok = false, message = message .. ", rien n'a été écrit. Correction : " .. fix }
end

-- One edit on `text` (nil: no such page): the page's new text, DELETE, nil when the edit is
-- already there (an interrupted gesture), or false and why not. « remplace » finds its lines
-- compared without trailing blanks.
local function edited(edit, text, slots)
  local new, kind = edit.texte and fill(edit.texte, slots), edit.kind
  if edit.deja and lineOf(text, edit.deja) then
    return nil
  elseif kind == "ajoute" then
    return blank(text) and fill(edit.vide or {}, slots) .. new or withoutTrailingNewlines(text) .. "\n" .. new
  elseif kind == "remplace" then
    local all, old = lines(text), lines(fill(edit.ancien, slots))
    for i = 1, #all do
      local n = 0
      while old[n + 1] and all[i + n] and trim(all[i + n], false) == old[n + 1] do n = n + 1 end
      if n == #old then
        for _ = 1, n do table.remove(all, i) end
        if new then table.insert(all, i, new) end
        return table.concat(all, "\n")
      end
    end
    return false, "la ligne à remplacer n'est plus dans " .. edit.page .. " : « " .. old[1] .. " »"
  elseif kind == "supprime" and (text == nil or not edit.avant) then
    return text ~= nil and DELETE or nil
  elseif text ~= nil and new and matches(text, edit.texte) then
    return nil
  elseif kind == "cree" then
    return text == nil and new, edit.page .. " existe déjà"
  end
  return text ~= nil and M.digest(text) == edit.avant and (new or DELETE), edit.page .. " a changé depuis le dernier pull d'ocmem"
end

-- Why `new` (the page's text after `edit`) breaks a cap ocmem set, or nil.
local function overCap(store, edit, new)
  local used, cap = edit.plafond and M.length(new), tonumber(edit.plafond)
  if used and used > cap then
    return edit.page .. " dépasserait son plafond : " .. used .. "/" .. cap .. " caractères"
  elseif edit.compte then -- "15 Agents/Skills/": pages like this one under the folder, at most
    local space = find(edit.compte, " ", 1, true) or #edit.compte + 1
    local folder, parts, count = sub(edit.compte, space + 1), split(edit.page, "/"), 0
    local last = "/" .. parts[#parts]
    for _, name in ipairs(store.list()) do
      if startsWith(name, folder) and sub(name, -#last) == last then count = count + 1 end
    end
    cap = tonumber(sub(edit.compte, 1, space - 1))
    if count + 1 > cap then
      return folder .. " a déjà " .. count .. " pages « " .. sub(last, 2) .. " » (maximum " .. cap .. ")"
    end
  end
  return nil
end

--- Performs `edits` on the store {list(), read(name), write(name, text), delete(name)}, then
--- adds the line `decision.text` to `decision.page` when given (refused when that page already
--- shows the decision). Every check runs before the first write: a refusal writes nothing.
--- Returns {ok, message, changed}.
function M.perform(store, edits, slots, decision)
  local texts, order, changed = {}, {}, 0
  local function current(name)
    if texts[name] == nil then texts[name] = store.read(name) or false end
    return texts[name] ~= DELETE and texts[name] or nil
  end
  local already = decision and noted(current(decision.page), decision)
  if already then
    return refusal("décision déjà notée dans " .. decision.page .. " : « " .. already .. " »", "rien à faire")
  end
  for _, edit in ipairs(edits) do
    local new, why = edited(edit, current(edit.page), slots)
    if new == false then return refusal(why, SYNC) end
    if new ~= nil then
      local over = new ~= DELETE and overCap(store, edit, new)
      if over then return refusal(over, edit.correction or SYNC) end
      texts[edit.page], order[#order + 1], changed = new, edit.page, changed + 1
    end
  end
  if decision then
    local text = current(decision.page)
    local start = blank(text) and M.DECISIONS_HEADER .. "\n" or withoutTrailingNewlines(text) .. "\n"
    texts[decision.page], order[#order + 1] = start .. fill(decision.text, slots), decision.page
  end
  for _, name in ipairs(order) do
    if texts[name] == DELETE then store.delete(name) else store.write(name, texts[name]) end
  end
  return { ok = true, changed = changed }
end

local function oneLine(reason)
  local cleaned = trim(reason or "")
  return cleaned ~= "" and not find(cleaned, "\n", 1, true) and not find(cleaned, "\r", 1, true) and cleaned or nil
end

local function decide(store, gid, name, slots)
  local entry
  for _, found in ipairs(M.proposals(store)) do -- the first one intact, if the id is twice
    if found.gid == gid and (entry == nil or (found.intact and not entry.intact)) then entry = found end
  end
  local gesture = entry and entry.gestures[name]
  if not entry then
    return refusal("pas de proposition " .. gid, "la revue des propositions montre celles qui attendent")
  elseif not gesture then
    return refusal(gid .. " : geste « " .. name .. " » absent de " .. entry.page, SYNC)
  elseif gesture.impossible then
    return { ok = false, message = gesture.impossible }
  elseif name ~= "refuser" and not entry.intact then
    return refusal(gid .. " a été modifiée dans " .. entry.page .. " depuis le dernier envoi d'ocmem", SYNC)
  elseif slots.raison == false then
    return refusal("donne une raison sur une ligne", "relance la commande avec une raison")
  end
  local decision = { page = entry.decisions, decided = entry.decided, reopened = entry.reopened, text = gesture.decision }
  local done = M.perform(store, gesture.edits, slots, decision)
  if done.ok then
    done.message = (#gesture.edits > 0 and done.changed == 0) and (gid .. " : déjà fait, décision notée")
      or gesture.message
  end
  return done
end

function M.promote(store, gid, today)
  return decide(store, gid, "promouvoir", { date = today })
end

function M.refuse(store, gid, reason, today)
  return decide(store, gid, "refuser", { date = today, raison = oneLine(reason) or false })
end

function M.undo(store, gid, today)
  return decide(store, gid, "annuler", { date = today })
end

-- --- retiring (the human's gesture on validated memory, from generated templates) --------------

--- What may be retired: MEMORY.md's fact lines as they are, then « skill NAME » for each skill.
function M.retirable(store)
  local found, folder, last, names = {}, M.pages.skills, M.pages.skill, {}
  for _, line in ipairs(lines(store.read(M.pages.memory))) do
    if startsWith(line, M.FACT_PREFIX) then found[#found + 1] = line end
  end
  for _, name in ipairs(store.list()) do
    if startsWith(name, folder) and sub(name, -#last) == last and #name > #folder + #last then
      names[#names + 1] = "skill " .. sub(name, #folder + 1, #name - #last)
    end
  end
  table.sort(names)
  table.move(names, 1, #names, #found + 1, found)
  return found
end

--- Retires `target` (a MEMORY.md line, exactly, or « skill NAME »): the archive first, then the
--- line removed or the skill's page deleted.
function M.retire(store, target, reason, today)
  local slots = { date = today, raison = oneLine(reason) }
  local archive = { kind = "ajoute", page = M.pages.archive, vide = M.ARCHIVE_EMPTY, texte = M.RETIRE_FACT }
  local edits, name = { archive }, startsWith(target, "skill ") and trim(sub(target, 7))
  local old = name and store.read(M.pages.skills .. name .. M.pages.skill)
  if not slots.raison then
    return refusal("donne une raison sur une ligne", "relance la commande avec la raison (elle reste dans l'archive)")
  elseif name and not old then
    return refusal("pas de skill " .. name, "les skills sont les pages " .. M.pages.skills .. "<nom>" .. M.pages.skill)
  elseif name and find(old, M.RETIRE_SKILL_FENCE, 1, true) then
    return refusal("le skill " .. name .. " contient « " .. M.RETIRE_SKILL_FENCE .. " »", "archive-le à la main")
  elseif name then
    archive.texte, slots.nom, slots.ancien = M.RETIRE_SKILL, name, withoutTrailingNewlines(old)
    edits[2] = { kind = "supprime", page = M.pages.skills .. name .. M.pages.skill }
  else
    slots.ancien = trim(sub(target, #M.FACT_PREFIX + 1))
    edits[2] = { kind = "remplace", page = M.pages.memory, ancien = { target } }
  end
  local done = M.perform(store, edits, slots)
  done.message = done.message or ("« " .. target .. " » retiré, gardé dans " .. M.pages.archive)
  return done
end
