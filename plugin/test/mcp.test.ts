import { expect, test } from "bun:test"
import { coldStart } from "../ocmem/shapes.ts"
import { SilverBulletMcp, type WriteVerdict, effect, pageArgs } from "../ocmem/mcp.ts"

const INBOX = "Agents/Inbox/maison/"
// A stand-in for the gate's `mcp-write` (the page rule itself is Python's, tested by tables in
// tests/test_mcp_writes.py and through the real gate): what it was asked, and a refusal of any
// page that does not start with the inbox.
const asked: Parameters<WriteVerdict>[0][] = []
const gate: WriteVerdict = async (call) => {
  asked.push(call)
  const outside = call.pages.find((p) => !p.startsWith(INBOX))
  return call.pages.length && outside === undefined ? undefined : `refusé : ${call.tool} vise ${outside ?? "rien"}, hors de ${INBOX}.`
}
function contained(servers: string[] = ["silverbullet"], mcp: Record<string, unknown> = {}, verdict = gate): SilverBulletMcp {
  const settings = coldStart("/h")
  settings.silverbullet_mcp = servers
  settings.silverbullet_inbox = INBOX
  settings.redact = ["sb-token-0123456789"]
  const sb = new SilverBulletMcp(verdict)
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

test("the pages of a call are its path arguments, never its content", () => {
  expect(pageArgs({ page: "A/b", content: "Agents/Memory/MEMORY.md" })).toEqual(["A/b"])
  expect(pageArgs({ from: "a", to: "b", overwrite: true, mode: "append" })).toEqual(["a", "b"])
  expect(pageArgs({ pages: [{ name: "x", text: "y" }], other: "Agents/Skills/z" })).toEqual(["x", "Agents/Skills/z"])
})

test("a write is judged by the gate, given the call's page arguments as they are", async () => {
  asked.length = 0
  const sb = contained()
  const call = { from: `${INBOX}a.md`, to: "Agents%2FSkills%2Fx%2FSKILL.md", overwrite: true }
  expect(await sb.refusal("silverbullet_rename_page", call)).toBe(`refusé : silverbullet_rename_page vise ${call.to}, hors de ${INBOX}.`)
  expect(asked).toEqual([{ server: "silverbullet", tool: "silverbullet_rename_page", pages: [call.from, call.to] }])
  expect(await sb.refusal("silverbullet_write_page", { page: `${INBOX}notes/idee.md`, content: "Agents/Memory/MEMORY.md" })).toBeUndefined()
  expect(asked[1].pages).toEqual([`${INBOX}notes/idee.md`]) // never its content
  expect(await sb.refusal("silverbullet_write_page", { content: "x" })).toStartWith("refusé : ") // no page: the gate refuses
  expect(asked[2].pages).toEqual([])
})

test("reads pass and tools of unknown effect are refused, without asking the gate", async () => {
  asked.length = 0
  const sb = contained()
  expect(await sb.refusal("silverbullet_read_page", { page: "Agents/Memory/MEMORY.md" })).toBeUndefined()
  for (const [tool, args] of [
    ["silverbullet_run_command", { name: `${INBOX}x` }],
    ["silverbullet_frobnicate", {}],
  ] as [string, unknown][]) {
    const why = await sb.refusal(tool, args)
    expect(why).toStartWith("refusé : ")
    expect(why).toContain("ni lecture ni écriture")
    expect(why).toContain(INBOX)
  }
  expect(await sb.refusal("other_write_page", { page: "Agents/Memory/MEMORY.md" })).toBeUndefined()
  expect(asked).toEqual([])
  expect(sb.exposure("silverbullet_read_page", { page: "x" })?.kind).toBe("untrusted_tool")
  expect(sb.exposure("bash", {})).toBeUndefined()
})

test("a gate that cannot answer refuses the write (fail closed), saying why", async () => {
  const failing: WriteVerdict = async () => {
    throw new Error("passerelle ocmem non démarrée")
  }
  const said = await contained(["silverbullet"], {}, failing).refusal("silverbullet_write_page", { page: `${INBOX}notes` })
  expect(said).toStartWith("refusé : l'outil silverbullet_write_page du serveur MCP SilverBullet « silverbullet »")
  expect(said).toContain("n'a pas pu juger")
  expect(said).toContain("passerelle ocmem non démarrée")
  expect(said).toContain(INBOX)
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
  expect(await sb.refusal("my_sb_run_command", {})).toContain("« my.sb »")
  expect(await sb.refusal("my_sb_write_page", { page: "Agents/AGENTS.md" })).toStartWith("refusé : ")
  expect(await sb.refusal("github_create_issue", { title: "x" })).toBeUndefined()
})

test("no server is exempt by its name: an `ocmem` entry that reaches SilverBullet is contained like any other", async () => {
  const settings = coldStart("/h")
  settings.silverbullet_inbox = INBOX
  const sb = new SilverBulletMcp(gate)
  sb.apply(settings)
  asked.length = 0
  sb.learn({ ocmem: { type: "local", command: ["/srv/silverbullet-vps/bin/ocmem", "--home", "/srv/silverbullet-vps/home", "mcp"] } })
  expect(sb.servers()).toEqual(["ocmem"])
  expect(await sb.refusal("ocmem_ecrire_page", { page: "Agents/Memory/MEMORY", contenu: "x" })).toContain("hors de")
  expect(await sb.refusal("ocmem_write_page", { page: "Agents/Memory/MEMORY", content: "x" })).toContain("hors de")
  expect(asked).toEqual([{ server: "ocmem", tool: "ocmem_write_page", pages: ["Agents/Memory/MEMORY"] }])
})
