import { afterAll, expect, test } from "bun:test"
import { cpSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { AGENT_ENV, SPACE_TOOLS, TOOLS } from "../ocmem/contract.ts"
import { REDACTED } from "../ocmem/text.ts"
import { MEMORY_BLOCK } from "./fakegate.ts"
import { scene } from "./fakehost.ts"

// The V1 adapter (plugin/ocmem.ts) as OpenCode 1.18.33 calls it: installed in a home as
// `ocmem init` does, the plugin function given a client, its hooks called with V1's shapes.
const SECRET = "sekret-0123456789abcdef"
const s = scene({ redact: [SECRET] })
mkdirSync(join(s.home, "plugin"))
cpSync(join(import.meta.dir, "..", "ocmem.ts"), join(s.home, "plugin", "ocmem.ts"))
cpSync(join(import.meta.dir, "..", "ocmem"), join(s.home, "plugin", "ocmem"), { recursive: true })
const asked: string[] = []
const client = {
  app: { log: async () => ({}) },
  tui: { showToast: async () => ({}) },
  session: { get: async ({ path }: { path: { id: string } }) => (asked.push(path.id), { data: { id: path.id } }) },
}
const { OcmemPlugin } = await import(pathToFileURL(join(s.home, "plugin", "ocmem.ts")).href)
const hooks = await OcmemPlugin({ client, directory: s.project, worktree: "/", project: {}, serverUrl: new URL("http://127.0.0.1:1"), $: undefined })
afterAll(() => hooks.dispose())

test("the promotion always asks: memory_accept is « ask » over the user's rules; the MCP section reaches the core", async () => {
  for (const [permission, rules] of <Array<[unknown, Record<string, string>]>>[
    ["allow", { "*": "allow" }],
    [{ bash: "deny", memory_accept: "allow" }, { bash: "deny" }],
    [undefined, {}],
  ]) {
    const cfg: any = { permission, mcp: {} }
    await hooks.config(cfg)
    expect(cfg.permission).toEqual({ ...rules, memory_accept: "ask" })
  }
})

test("the core's tools are OpenCode's, with their JSON Schema arguments", () => {
  expect(Object.keys(hooks.tool).sort()).toEqual([...Object.keys(TOOLS), ...Object.keys(SPACE_TOOLS)].sort())
  expect(hooks.tool.memory_note.args).toEqual(TOOLS.memory_note.args)
  expect(hooks.tool.space_write.args).toEqual(SPACE_TOOLS.space_write.args)
})

test("a refusal is thrown (OpenCode then tells the model and goes on); an allowed call returns", async () => {
  const refused = hooks["tool.execute.before"]({ tool: "edit", sessionID: "ses_r", callID: "c1" }, { args: { filePath: join(s.home, "AGENTS.md") } })
  await expect(refused).rejects.toThrow(/^ocmem : refusé/)
  await hooks["tool.execute.before"]({ tool: "bash", sessionID: "ses_r", callID: "c2" }, { args: { command: "ls" } })
})

test("events, the user's message, the system prompt: a subagent is known from its event, a title request gets nothing", async () => {
  await hooks.event({ event: { type: "session.created", properties: { sessionID: "ses_1", info: { id: "ses_1" } } } })
  await hooks.event({ event: { type: "session.created", properties: { sessionID: "ses_2", info: { id: "ses_2", parentID: "ses_1" } } } })
  const parts = [
    { type: "text", text: "déploie X" },
    { type: "text", text: "retiens ça", synthetic: true }, // added by OpenCode, not said by the user
    { type: "file", url: "file:///x" },
  ]
  await hooks["chat.message"]({ sessionID: "ses_1" }, { message: {}, parts })
  const system = { system: ["agent prompt"] }
  await hooks["experimental.chat.system.transform"]({ sessionID: "ses_1", model: {} }, system)
  expect(system.system).toEqual(["agent prompt", MEMORY_BLOCK])
  const child = { system: ["agent prompt"] }
  await hooks["experimental.chat.system.transform"]({ sessionID: "ses_2", model: {} }, child)
  const title = { system: ["You are a title generator. …"] }
  await hooks["experimental.chat.system.transform"]({ sessionID: "ses_1", model: {} }, title)
  expect([child.system, title.system]).toEqual([["agent prompt"], ["You are a title generator. …"]])
  expect(asked).not.toContain("ses_2")
  const ctx = { sessionID: "ses_1", messageID: "m1", agent: "build", directory: s.project, worktree: "/", abort: new AbortController().signal, metadata() {}, async ask() {} }
  await hooks.tool.memory_note.execute({ text: "x", days: null }, ctx)
  expect(s.requests().find((r) => r.op === "tool").envelope.user_messages).toEqual(["déploie X"])
})

test("the permission.asked event is the proof a promotion prompt was shown", async () => {
  const ctx = {
    sessionID: "ses_p",
    messageID: "m2",
    async ask(request: any) {
      const properties = { id: "per_1", sessionID: "ses_p", permission: request.permission, patterns: request.patterns, metadata: {}, always: [], tool: { messageID: "m2", callID: "c" } }
      void hooks.event({ event: { type: "permission.asked", properties } })
    },
  }
  expect(await hooks.tool.memory_accept.execute({ id: "P-0007" }, ctx)).toBe("ok memory_accept")
})

test("a shell carries its session; no part of the history nor a tool's output carries the secret", async () => {
  const shell = { env: { PATH: "/bin" } as Record<string, string> }
  await hooks["shell.env"]({ cwd: s.project, sessionID: "ses_1", callID: "c" }, shell)
  expect(shell.env).toEqual({ PATH: "/bin", [AGENT_ENV]: "ses_1" })
  const tool = { type: "tool", state: { output: `x ${SECRET}`, input: { command: `echo ${SECRET}` } } }
  const kept = { type: "tool", state: { output: "rien", input: { command: "ls" } } }
  const messages = { messages: [{ info: {}, parts: [{ type: "text", text: `le jeton ${SECRET}` }, tool, kept] }] }
  const keptInput = kept.state.input
  await hooks["experimental.chat.messages.transform"]({}, messages)
  expect(messages.messages[0].parts).toEqual([
    { type: "text", text: `le jeton ${REDACTED}` },
    { type: "tool", state: { output: `x ${REDACTED}`, input: { command: `echo ${REDACTED}` } } },
    { type: "tool", state: { output: "rien", input: { command: "ls" } } },
  ])
  expect(kept.state.input).toBe(keptInput) // untouched, not parsed again
  const result = { title: "cat", output: SECRET, metadata: { output: SECRET } }
  await hooks["tool.execute.after"]({ tool: "read", sessionID: "ses_1", callID: "c3", args: {} }, result)
  expect(result).toEqual({ title: "cat", output: REDACTED, metadata: { output: REDACTED } })
})
