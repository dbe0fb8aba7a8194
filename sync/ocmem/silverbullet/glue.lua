-- priority: 10
-- ocmem review: SilverBullet glue. Kept thin: every decision is in ocmem.* (previous block).
-- Proposal text is only ever shown as DOM text nodes (__rawText): never parsed as Markdown.

ocmem.sb = ocmem.sb or {}
local sb = ocmem.sb

local function today()
  return os.date("%Y-%m-%d")
end

function sb.store()
  return {
    list = function()
      local names = {}
      for _, page in ipairs(space.listPages()) do
        names[#names + 1] = page.name
      end
      return names
    end,
    read = function(name)
      if space.pageExists(name) then
        return space.readPage(name)
      end
      return nil
    end,
    write = function(name, text)
      space.writePage(name, text)
    end,
    delete = function(name)
      space.deletePage(name)
    end,
  }
end

local function report(result)
  editor.flashNotification(result.message, result.ok and "info" or "error")
  codeWidget.refreshAll() -- the review, if shown, reads the pages again
end

function sb.promote(gid)
  report(ocmem.promote(sb.store(), gid, today()))
end

function sb.retire()
  local target = editor.prompt("Retirer : la ligne du fait (copiée de MEMORY), ou « skill NOM »", "")
  if target == nil or target == "" then
    return
  end
  local reason = editor.prompt("Retirer : raison (une ligne, gardée dans l'archive)", "")
  if reason == nil then
    return
  end
  report(ocmem.retire(sb.store(), target, reason, today()))
end

function sb.refuse(gid)
  local reason = editor.prompt("Refuser " .. gid .. " : raison (une ligne)", "")
  if reason == nil then
    return
  end
  report(ocmem.refuse(sb.store(), gid, reason, today()))
end

local function choose(verb)
  local review = ocmem.review(sb.store())
  local options, byName = {}, {}
  for _, p in ipairs(review.entries) do
    local name = p.gid .. " · " .. p.kind .. " · " .. p.title
    local about = p.problem or ocmem.exposureWarning(p) or p.field["Origine"] or ""
    options[#options + 1] = { name = name, description = about }
    byName[name] = p.gid
  end
  if #options == 0 then
    editor.flashNotification("Aucune proposition en attente")
    return nil
  end
  local picked = editor.filterBox(verb, options, review.memory .. " · " .. review.skills)
  return picked and byName[picked.name]
end

function sb.reviewWidget()
  local review = ocmem.review(sb.store())
  local children = {
    dom.p { __rawText = #review.entries .. " proposition(s) en attente · " .. review.memory .. " · " .. review.skills },
  }
  for _, p in ipairs(review.entries) do
    local fields = {}
    for _, field in ipairs(p.fields) do
      if field.label ~= "Statut" and field.label ~= "Exposition" then
        fields[#fields + 1] = dom.li { __rawText = field.label .. " : " .. field.value }
      end
    end
    local gid = p.gid
    local box = {
      class = "ocmem-proposal",
      style = "border-top: 1px solid; margin-top: 1em",
      dom.h3 { __rawText = gid .. " · " .. p.kind .. " · " .. p.title },
    }
    local exposed = ocmem.exposureWarning(p)
    if exposed then -- first, where the human cannot miss it
      box[#box + 1] = dom.p { class = "ocmem-exposed", style = "font-weight: bold; color: #b00020", __rawText = exposed }
    end
    box[#box + 1] = dom.p { __rawText = p.problem and ("⚠ illisible : " .. p.problem) or ("page " .. p.page) }
    box[#box + 1] = dom.ul(fields)
    if p.replacedLine then -- old and new side by side, before the buttons
      box[#box + 1] = dom.p { class = "ocmem-before", __rawText = "Avant (MEMORY) : " .. p.replacedLine }
      box[#box + 1] = dom.p { class = "ocmem-after", __rawText = "Après : " .. ocmem.shownContent(p) }
    end
    box[#box + 1] = dom.pre { style = "white-space: pre-wrap", __rawText = ocmem.shownContent(p) }
    box[#box + 1] = widgets.button("Promouvoir", function()
      sb.promote(gid)
    end)
    box[#box + 1] = widgets.button("Refuser", function()
      sb.refuse(gid)
    end)
    children[#children + 1] = dom.div(box)
  end
  return widget.htmlBlock(dom.div(children))
end

virtualPage.define {
  pattern = "^ocmem:Revue$",
  run = function()
    return "# Propositions de l'agent\n\n${ocmem.sb.reviewWidget()}\n"
  end,
}

command.define {
  name = "ocmem: Revue des propositions",
  run = function()
    editor.navigate("ocmem:Revue")
  end,
}

command.define {
  name = "ocmem: Promouvoir une proposition",
  run = function()
    local gid = choose("Promouvoir")
    if gid then
      sb.promote(gid)
    end
  end,
}

command.define {
  name = "ocmem: Retirer un fait ou un skill",
  run = function()
    sb.retire()
  end,
}

command.define {
  name = "ocmem: Refuser une proposition",
  run = function()
    local gid = choose("Refuser")
    if gid then
      sb.refuse(gid)
    end
  end,
}
