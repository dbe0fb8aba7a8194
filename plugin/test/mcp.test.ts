import { expect, test } from "bun:test"
import { coldStart } from "../ocmem/shapes.ts"
import { type Mimicked, SilverBulletMcp, effect, pageArgs, pagePath } from "../ocmem/mcp.ts"

const INBOX = "Agents/Inbox/maison/"
// A stand-in for the gate's `mimicked` (the rule itself is Python's, tested through the real gate
// in tests/test_mcpservers.py): what it was asked, and ocmem's own pages by their plain names.
const asked: string[][] = []
const gate: Mimicked = async (pages) => {
  asked.push(pages)
  return pages.map((p) => (/^Agents\/Inbox\/maison\/(journal|pending|decisions)$/i.test(p) ? p : null))
}
function contained(servers: string[] = ["silverbullet"], mcp: Record<string, unknown> = {}, mimicked = gate): SilverBulletMcp {
  const settings = coldStart("/h")
  settings.silverbullet_mcp = servers
  settings.silverbullet_inbox = INBOX
  settings.redact = ["sb-token-0123456789"]
  const sb = new SilverBulletMcp(mimicked)
  sb.apply(settings)
  sb.learn(mcp)
  return sb
}

test("a tool's effect is told by its name; anything else is unknown", () => {
  for (const name of ["write_page", "createPage", "update-note", "delete_page", "rename_page", "move", "append_to_page", "edit", "page_put"])
    expect(effect(name)).toBe("write")
  for (const name of ["read_page", "getPage", "list_pages", "search", "search_pages", "page_backlinks"]) expect(effect(name)).toBe("read")
  // A SilverBullet query is Space Lua, which can write any page.
  for (const name of ["run_command", "eval_lua", "do_thing", "space_lua_exec", "page", "get_and_run", "query_pages"]) expect(effect(name)).toBe("unknown")
  expect(effect("read_then_write")).toBe("write")
})

test("page paths are normalised before they are checked", () => {
  const cases: Record<string, string | undefined> = {
    "Agents/Memory/MEMORY.md": "Agents/Memory/MEMORY",
    "/Agents/Memory/MEMORY": "Agents/Memory/MEMORY",
    "Agents/Inbox/maison/../../Memory/MEMORY.md": "Agents/Memory/MEMORY",
    "Agents%2FSkills%2Fx%2FSKILL.md": "Agents/Skills/x/SKILL",
    "Agents%252FAGENTS.md": "Agents/AGENTS",
    "Agents/Inbox/maison/./note.MD": "Agents/Inbox/maison/note",
    "Agents\\Inbox\\maison\\..\\..\\AGENTS.md": "Agents/AGENTS",
    "http://127.0.0.1:3000/.fs/Agents/Skills/x/SKILL.md?raw=1": "Agents/Skills/x/SKILL",
    "/.fs/Agents/Inbox/maison/a.md": "Agents/Inbox/maison/a",
    "../Agents/AGENTS.md": undefined,
    "Agents/\u0000x": undefined,
    "%E0%A4%A": undefined,
  }
  for (const [raw, want] of Object.entries(cases)) expect([raw, pagePath(raw)]).toEqual([raw, want])
})

test("the pages of a call are its path arguments, never its content", () => {
  expect(pageArgs({ page: "A/b", content: "Agents/Memory/MEMORY.md" })).toEqual(["A/b"])
  expect(pageArgs({ from: "a", to: "b", overwrite: true, mode: "append" })).toEqual(["a", "b"])
  expect(pageArgs({ pages: [{ name: "x", text: "y" }], other: "Agents/Skills/z" })).toEqual(["x", "Agents/Skills/z"])
})

test("writes outside the home's inbox, to ocmem's own pages, or of unknown effect are refused", async () => {
  const sb = contained()
  const refused: [string, unknown][] = [
    ["silverbullet_write_page", { page: "Agents/Memory/MEMORY.md", content: "x" }],
    ["silverbullet_write_page", { page: "Agents/Skills/x/SKILL.md", content: "x" }],
    ["silverbullet_write_page", { page: "Agents/AGENTS.md", content: "x" }],
    ["silverbullet_write_page", { page: "Agents/Inbox/maison/../../Memory/MEMORY.md", content: "x" }],
    ["silverbullet_write_page", { page: "Agents%2FInbox%2Fmaison%2F..%2F..%2FSkills%2Fx%2FSKILL.md", content: "x" }],
    ["silverbullet_rename_page", { from: "Agents/Inbox/maison/a.md", to: "Agents/Skills/x/SKILL.md" }],
    ["silverbullet_write_page", { page: "Agents/Inbox/maison/pending.md", content: "x" }],
    ["silverbullet_write_page", { page: "Agents/Inbox/maison/Decisions", content: "x" }],
    ["silverbullet_write_page", { page: "Agents/Inbox/autre/x.md", content: "x" }],
    ["silverbullet_write_page", { page: "Agents/Inbox/maison/", content: "x" }],
    ["silverbullet_write_page", { content: "x" }],
    ["silverbullet_run_command", { name: "Agents/Inbox/maison/x" }],
    ["silverbullet_frobnicate", {}],
  ]
  for (const [tool, args] of refused) {
    const why = await sb.refusal(tool, args)
    expect([tool, args, why?.startsWith("refusé : ")]).toEqual([tool, args, true])
    expect(why).toContain("Agents/Inbox/maison/")
  }
  expect(await sb.refusal("silverbullet_write_page", { page: "Agents/Inbox/maison/notes/idee.md", content: "x" })).toBeUndefined()
  expect(await sb.refusal("silverbullet_read_page", { page: "Agents/Memory/MEMORY.md" })).toBeUndefined()
  expect(await sb.refusal("other_write_page", { page: "Agents/Memory/MEMORY.md" })).toBeUndefined()
  expect(sb.exposure("silverbullet_read_page", { page: "x" })?.kind).toBe("untrusted_tool")
  expect(sb.exposure("bash", {})).toBeUndefined()
})

test("which pages of the inbox are ocmem's own, the gate says; unsure, the write is refused", async () => {
  asked.length = 0
  const sb = contained()
  expect(await sb.refusal("silverbullet_move_page", { from: `${INBOX}a.md`, to: "Agents%2FInbox%2Fmaison%2FPending.md" })).toContain(
    `qui se lit comme ${INBOX}Pending`,
  )
  expect(asked).toEqual([[`${INBOX}a`, `${INBOX}Pending`]]) // every page, as pagePath reads it
  for (const failing of [
    async () => {
      throw new Error("passerelle ocmem non démarrée")
    },
    async () => [],
  ] as Mimicked[]) {
    const why = await contained(["silverbullet"], {}, failing).refusal("silverbullet_write_page", { page: `${INBOX}notes` })
    expect(why?.startsWith("refusé : ")).toBe(true)
  }
  const said = await contained(["silverbullet"], {}, async () => {
    throw new Error("passerelle ocmem non démarrée")
  }).refusal("silverbullet_write_page", { page: `${INBOX}notes` })
  expect(said).toContain("n'a pas pu vérifier")
  expect(said).toContain("passerelle ocmem non démarrée")
})

test("servers are known from ocmem's answer and from OpenCode's merged configuration", async () => {
  const sb = contained([], {
    notes: { type: "local", command: ["npx", "mcp-server-silverbullet"] },
    keyed: { type: "local", command: ["x"], environment: { K: "sb-token-0123456789" } },
    github: { type: "local", command: ["npx", "server-github"] },
    "my.sb": { type: "local", command: ["silverbullet-mcp"] },
  })
  expect(sb.servers().sort()).toEqual(["keyed", "my.sb", "notes"])
  // OpenCode names the tool with the server's name sanitised.
  expect(await sb.refusal("my_sb_write_page", { page: "Agents/AGENTS.md" })).toContain("« my.sb »")
  expect(await sb.refusal("github_create_issue", { title: "x" })).toBeUndefined()
})

test("a home without an id may write nowhere", async () => {
  const sb = contained()
  sb.apply({ ...coldStart("/h"), silverbullet_mcp: ["silverbullet"] })
  expect(await sb.refusal("silverbullet_write_page", { page: "Agents/Inbox/maison/x" })).toContain("identifiant")
})

test("no server is exempt by its name: an `ocmem` entry that reaches SilverBullet is contained like any other", async () => {
  const settings = coldStart("/h")
  settings.silverbullet_inbox = INBOX
  const sb = new SilverBulletMcp(gate)
  sb.apply(settings)
  sb.learn({ ocmem: { type: "local", command: ["/srv/silverbullet-vps/bin/ocmem", "--home", "/srv/silverbullet-vps/home", "mcp"] } })
  expect(sb.servers()).toEqual(["ocmem"])
  expect(await sb.refusal("ocmem_ecrire_page", { page: "Agents/Memory/MEMORY", contenu: "x" })).toContain("hors de")
})
