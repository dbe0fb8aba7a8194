-- priority: 10
-- ocmem review: SilverBullet glue. Kept thin: every edit is ocmem.*'s (previous block).
-- Plain text from ocmem's data (titles, warnings, notes) is only ever shown as DOM text nodes;
-- the review page shows each proposal's block as its pending page does (ocmem's inert Markdown).

ocmem.sb = ocmem.sb or {}
local sb = ocmem.sb
local REVIEW = "ocmem:Revue"

local function today() return os.date("%Y-%m-%d") end

function sb.store()
  return {
    list = function()
      local names = {}
      for _, page in ipairs(space.listPages()) do names[#names + 1] = page.name end
      return names
    end,
    read = function(name) return space.pageExists(name) and space.readPage(name) or nil end,
    write = space.writePage, -- the client sends a write at once, a deletion at its next sync (20 s):
    delete = function(name) space.deletePage(name); sync.performFileSync(name .. ".md") end,
  }
end

local function report(result)
  editor.flashNotification(result.message, result.ok and "info" or "error")
  if result.ok and editor.getCurrentPage() == REVIEW then
    editor.reloadPage() -- the review reads the pages again
  end
end

local function reason(what)
  return editor.prompt(what .. " : raison (une ligne)", "")
end

-- The gestures, by their buttons' names.
sb.act = {
  Promouvoir = function(gid) report(ocmem.promote(sb.store(), gid, today())) end,
  Refuser = function(gid)
    local why = reason("Refuser " .. gid)
    if why ~= nil then report(ocmem.refuse(sb.store(), gid, why, today())) end
  end,
  Annuler = function(gid) report(ocmem.undo(sb.store(), gid, today())) end,
}

-- A choice among `choices` ({name, description, value}), or nil.
local function pick(verb, choices)
  local options, byName = {}, {}
  for _, choice in ipairs(choices) do
    options[#options + 1] = { name = choice.name, description = choice.description }
    byName[choice.name] = choice.value or choice.name
  end
  if #options == 0 then
    editor.flashNotification("Rien à " .. string.lower(verb))
    return nil
  end
  local picked = editor.filterBox(verb, options)
  return picked and byName[picked.name]
end

-- A command: the gesture `verb` on a proposal picked from the review's `list`.
local function picking(verb, list)
  return function()
    local choices = {}
    for _, p in ipairs(ocmem.review(sb.store())[list]) do
      choices[#choices + 1] = { name = p.gid .. " · " .. (p.titre or ""), description = p.alerte or p.page, value = p.gid }
    end
    local gid = pick(verb, choices)
    if gid then sb.act[verb](gid) end
  end
end

function sb.retire()
  local choices = {}
  for _, target in ipairs(ocmem.retirable(sb.store())) do
    choices[#choices + 1] = { name = target }
  end
  local target = pick("Retirer", choices)
  local why = target and reason("Retirer (gardé dans l'archive)")
  if why ~= nil and target then
    report(ocmem.retire(sb.store(), target, why, today()))
  end
end

-- An id ocmem writes (ASCII letters, digits, « /-_~ »): safe inside the review page's directives.
local ID = "-/_~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
local function plainId(gid)
  for i = 1, #gid do
    if not string.find(ID, string.sub(gid, i, i), 1, true) then return false end
  end
  return #gid > 0
end

-- Under each proposal's block: what ocmem says of it, and its buttons.
function sb.card(gid)
  local p
  for _, shown in ipairs(sb.shown or {}) do
    p = p or (shown.gid == gid and shown) or nil
  end
  if not p then return "" end
  local box, promote, undo = { class = "ocmem-proposal" }, p.gestures.promouvoir or {}, p.gestures.annuler
  local function say(text, class, warn) -- a warning first, where the human cannot miss it
    box[#box + 1] = dom.p { class = class, style = warn and "font-weight: bold; color: #b00020", __rawText = text }
  end
  if p.alerte then say(p.alerte, "ocmem-exposed", true) end
  if not p.intact then
    say("⚠ modifiée depuis le dernier envoi d'ocmem : lance `ocmem sync` avant d'agir", "ocmem-changed", true)
  end
  local verbs = undo and { "Annuler" } or { "Promouvoir", "Refuser" }
  say(promote.impossible or (verbs[1] .. " : " .. table.concat(p.notes, " ; ")), "ocmem-notes", promote.impossible)
  for _, verb in ipairs(verbs) do
    box[#box + 1] = widgets.button(verb, function() sb.act[verb](p.gid) end)
  end
  return widget.htmlBlock(dom.div(box))
end

virtualPage.define {
  pattern = "^" .. REVIEW .. "$",
  run = function()
    local review = ocmem.review(sb.store())
    local waiting = #review.entries
    local out = { "# Propositions de l'agent\n\n" .. waiting .. " proposition(s) en attente.\n" }
    sb.shown, sb.shows = table.move(review.promoted, 1, #review.promoted, waiting + 1, review.entries), (sb.shows or 0) + 1
    for i, p in ipairs(sb.shown) do -- each card's directive unique: SilverBullet caches by its text
      if i == waiting + 1 then out[#out + 1] = "## Promotions que tu peux annuler\n" end
      local card = plainId(p.gid) and ('${ocmem.sb.card("' .. p.gid .. '", ' .. sb.shows .. ")}")
      out[#out + 1] = p.markdown .. "\n\n" .. (card or "(identifiant illisible : commandes ocmem)") .. "\n"
    end
    return table.concat(out, "\n")
  end,
}

local COMMANDS = {
  ["ocmem: Revue des propositions"] = function() editor.navigate(REVIEW) end,
  ["ocmem: Promouvoir une proposition"] = picking("Promouvoir", "entries"),
  ["ocmem: Refuser une proposition"] = picking("Refuser", "entries"),
  ["ocmem: Annuler une promotion"] = picking("Annuler", "promoted"),
  ["ocmem: Retirer un fait ou un skill"] = sb.retire,
}
for name, run in pairs(COMMANDS) do command.define { name = name, run = run } end
