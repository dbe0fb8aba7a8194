import { afterEach, expect, test } from "bun:test"
import { join } from "node:path"
import { AGENT_ENV, SPACE_TOOLS, TOOLS } from "../ocmem/contract.ts"
import { startCore } from "../ocmem/core.ts"
import type { Core, PermissionRequest } from "../ocmem/host.ts"
import { REDACTED } from "../ocmem/text.ts"
import { MEMORY_BLOCK } from "./fakegate.ts"
import { FakeHost, scene, until } from "./fakehost.ts"

// The core through its host alone (host.ts), with a stand-in gate behind it.
let started: Core | undefined
afterEach(async () => {
  await started?.dispose()
  started = undefined
})

async function start(settings: Record<string, unknown> = {}, command?: string[]) {
  const s = scene(settings, command)
  const host = new FakeHost(s.project)
  const core = (started = await startCore(host, s.home))
  return { ...s, host, core }
}

test("a root session: its memory in the system prompt, its calls counted with its subagents', one reminder of the retrospective", async () => {
  const { core, host, project } = await start({ threshold: 2 })
  await core.sessionStarted("root", undefined)
  await core.sessionStarted("child", "root")
  await core.userMessage("root", ["déploie le service X"])
  expect(await core.systemBlocks("root")).toEqual([MEMORY_BLOCK])
  expect(await core.toolBefore({ tool: "bash", sessionID: "root" }, { command: "ls" })).toBeUndefined()
  expect(await core.toolBefore({ tool: "read", sessionID: "child" }, { filePath: join(project, "a.ts") })).toBeUndefined()
  const due = await core.systemBlocks("root")
  expect(due[0]).toBe(MEMORY_BLOCK)
  expect(due[1]).toContain("(2 appels d'outils)")
  expect(await core.systemBlocks("child")).toEqual([]) // a subagent gets neither memory nor reminder
  expect(await core.systemBlocks(undefined)).toEqual([])
  await core.toolAfter({ tool: "skill", sessionID: "root" }, { name: "retrospective" }, { output: "", metadata: { name: "retrospective" } })
  expect(await core.systemBlocks("root")).toEqual([MEMORY_BLOCK])
  expect(host.asked).toEqual([]) // every parent was said by sessionStarted
})

test("« retiens ça » from the user asks for the retrospective at once; a subagent's prompt is not the user", async () => {
  const { core, host, requests } = await start()
  host.parents.set("child", "root")
  await core.userMessage("child", ["Retiens ÇA : on déploie avec Podman"])
  expect(host.asked).toEqual(["child", "root"]) // no event said it: the host was asked
  await core.userMessage("root", ["Retiens ÇA : on déploie avec Podman"])
  const blocks = await core.systemBlocks("root")
  expect(blocks.at(-1)).toContain("l'utilisateur a dit « retiens ça »")
  await core.tools.memory_note.execute({ text: "x", days: null }, { sessionID: "root", messageID: "m", ask: async () => undefined })
  expect(requests().find((r) => r.op === "tool").envelope.user_messages).toEqual(["Retiens ÇA : on déploie avec Podman"])
})

test("a refused call rejects with what the model reads; an allowed one resolves", async () => {
  const { core, home } = await start()
  const edit = core.toolBefore({ tool: "edit", sessionID: "s" }, { filePath: join(home, "AGENTS.md"), oldString: "a", newString: "b" })
  await expect(edit).rejects.toThrow(/^ocmem : refusé : .*AGENTS\.md est protégé/)
  await expect(core.toolBefore({ tool: "bash", sessionID: "s" }, { command: "ocmem note 'le port est 22'" })).rejects.toThrow(/^ocmem : refusé/)
  expect(await core.toolBefore({ tool: "bash", sessionID: "s" }, { command: "ls" })).toBeUndefined()
})

test("a SilverBullet MCP server's write: the gate judges it, given the call's pages; an answer that is no verdict refuses", async () => {
  const { core, requests } = await start({ silverbullet_mcp: ["notes"] })
  const write = (tool: string, page: string) => core.toolBefore({ tool, sessionID: "s" }, { page, content: "Agents/Memory/MEMORY.md" })
  await expect(write("notes_write_page", "Agents/Memory/MEMORY.md")).rejects.toThrow(/^ocmem : refusé : Agents\/Memory\/MEMORY\.md est hors de/)
  expect(await write("notes_write_page", "Agents/Inbox/maison/a")).toBeUndefined()
  await expect(write("notes_write_garbled", "Agents/Inbox/maison/a")).rejects.toThrow(/^ocmem : refusé : .*n'a pas pu juger.*réponse illisible/)
  expect(requests().filter((r) => r.op === "mcp-write").map((r) => [r.server, r.tool, r.pages])).toEqual([
    ["notes", "notes_write_page", ["Agents/Memory/MEMORY.md"]],
    ["notes", "notes_write_page", ["Agents/Inbox/maison/a"]],
    ["notes", "notes_write_garbled", ["Agents/Inbox/maison/a"]],
  ])
})

test("secrets reach the model neither in a tool's output nor in the history; a shell carries its session", async () => {
  const secret = "sekret-0123456789abcdef"
  const { core } = await start({ redact: [secret] })
  const result = { output: `jeton : ${secret}`, metadata: { output: secret } }
  await core.toolAfter({ tool: "bash", sessionID: "s" }, { command: "cat x" }, result)
  expect(result).toEqual({ output: `jeton : ${REDACTED}`, metadata: { output: REDACTED } })
  expect(core.redacts()).toBe(true)
  expect(core.redacted(`a ${secret} b`)).toBe(`a ${REDACTED} b`)
  expect(core.shellEnv("s")).toEqual({ [AGENT_ENV]: "s" })
  expect(core.shellEnv(undefined)).toEqual({ [AGENT_ENV]: "shell" })
})

test("an exposure is recorded by ocmem before the call that brings it runs; the turn's end closes its window", async () => {
  const { core, requests } = await start()
  await core.toolBefore({ tool: "webfetch", sessionID: "s" }, { url: "http://127.0.0.1:1/page" })
  const sent = requests().filter((r) => r.op === "exposure")
  expect(sent).toHaveLength(1)
  expect(sent[0]).toMatchObject({ session: "s", open: true, exposures: [{ kind: "untrusted_tool", source: "webfetch http://127.0.0.1:1/page" }] })
  await core.sessionIdle("s")
  await until(() => requests().filter((r) => r.op === "exposure").length === 2)
  expect(requests().at(-1)).toMatchObject({ op: "exposure", session: "s", open: false, exposures: [] })
})

test("the tools the core adds: the memory and space tools, the promotion asks its permission and waits for the host to show it", async () => {
  const { core, requests } = await start()
  expect(Object.keys(core.tools).sort()).toEqual([...Object.keys(TOOLS), ...Object.keys(SPACE_TOOLS)].sort())
  expect(core.tools.memory_journal.args).toEqual(TOOLS.memory_journal.args)
  expect(Object.entries(core.tools).flatMap(([name, t]) => (t.permission ? [[name, t.permission]] : []))).toEqual([["memory_accept", "memory_accept"]])
  const asked: PermissionRequest[] = []
  const ctx = {
    sessionID: "s",
    messageID: "m1",
    async ask(request: PermissionRequest) {
      asked.push(request)
      setTimeout(() => void core.permissionShown({ sessionID: "s", messageID: "m1", permission: request.permission, pattern: request.patterns[0] }), 20)
    },
  }
  expect(await core.tools.memory_accept.execute({ id: "P-0001" }, ctx)).toBe("ok memory_accept")
  expect(asked.map((r) => r.permission)).toEqual(["memory_accept"])
  expect(requests().filter((r) => r.op === "tool").map((r) => [r.name, r.envelope.session])).toEqual([["memory_accept", "s"]])
})

test("a space call: ocmem answers through the gate, and what it brings is recorded before the model reads it", async () => {
  const { core, requests } = await start({ threshold: 2 })
  const ctx = { sessionID: "s", messageID: "m", ask: async () => undefined }
  const call = async (tool: string, args: Record<string, unknown>) => {
    await core.toolBefore({ tool, sessionID: "s" }, args) // the host's hooks, around the tool
    const said = await core.tools[tool].execute(args, ctx)
    await core.toolAfter({ tool, sessionID: "s" }, args, { output: said })
    return said
  }
  expect(await call("space_read", { page: "Agents/Memory/MEMORY" })).toBe("ok space_read Agents/Memory/MEMORY")
  expect(await call("space_write", { page: "Agents/Memory/MEMORY", content: "x", replace: null })).toStartWith("REFUSÉ (code 3) : refusé : Agents/Memory/MEMORY est hors de")
  expect(requests().filter((r) => r.op === "exposure")).toEqual([]) // validated memory, a refused write: nothing came in
  expect(await call("space_read", { page: "Projets/Notes" })).toBe("ok space_read Projets/Notes")
  const log = requests()
  const exposed = log.findIndex((r) => r.op === "exposure")
  expect(log[exposed]).toMatchObject({ session: "s", exposures: [{ kind: "space_content", source: "space_read Projets/Notes" }] })
  expect(log.slice(0, exposed).filter((r) => r.op === "space").map((r) => [r.name, r.session])).toEqual([
    ["space_read", "s"],
    ["space_write", "s"],
    ["space_read", "s"],
  ])
  // ocmem's own answer decides: the host's before hook adds no exposure of its own for a space tool.
  await call("space_list", { prefix: null })
  const sources = requests().filter((r) => r.op === "exposure").flatMap((r) => r.exposures.map((e: any) => e.source))
  expect(sources).toEqual(["space_read Projets/Notes", "space_list"])
  expect((await core.systemBlocks("s")).at(-1)).toContain("(4 appels d'outils)") // they count as work
})

test("a gate that cannot start: the host's log and screen say so, and the home is still guarded", async () => {
  const { core, host, home } = await start({}, ["/nonexistent/ocmem"])
  await expect(core.toolBefore({ tool: "write", sessionID: "s" }, { filePath: join(home, "AGENTS.md"), content: "x" })).rejects.toThrow(/^ocmem : refusé/)
  expect(host.logs.some(([level, m]) => level === "error" && m.startsWith("passerelle ocmem fermée"))).toBe(true)
  expect(host.toasts.some(([m, variant]) => variant === "error" && m.startsWith("ocmem indisponible"))).toBe(true)
})

test("the session start says what of OpenCode's environment the gate does not see; the token only by presence", async () => {
  const saved = { url: process.env.OCMEM_SILVERBULLET_URL, token: process.env.OCMEM_SILVERBULLET_TOKEN }
  process.env.OCMEM_SILVERBULLET_URL = "https://notes.example.org"
  process.env.OCMEM_SILVERBULLET_TOKEN = "jeton-secret-1234"
  try {
    const warning = "OCMEM_SILVERBULLET_URL (https://notes.example.org) est dans l'environnement d'OpenCode, mais la passerelle ne le voit pas"
    const { core, host, requests } = await start({ environment_warnings: [warning] })
    await core.sessionStarted("root", undefined)
    const config = requests().find((r) => r.op === "plugin-config")
    expect(config.environment).toEqual({ OCMEM_SILVERBULLET_URL: "https://notes.example.org", OCMEM_SILVERBULLET_TOKEN: "***" })
    expect(JSON.stringify(requests())).not.toContain("jeton-secret")
    expect(host.logs.some(([level, m]) => level === "warn" && m === warning)).toBe(true)
    expect(host.toasts.some(([m, variant]) => variant === "warning" && m === warning)).toBe(true)
  } finally {
    for (const [name, value] of [["OCMEM_SILVERBULLET_URL", saved.url], ["OCMEM_SILVERBULLET_TOKEN", saved.token]] as const)
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
  }
})
