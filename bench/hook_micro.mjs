// Micro-benchmark of the ocmem plugin's per-tool-call hooks, run by bench/plugin_hook.py.
//
// Loads <home>/plugin/ocmem.ts (as installed by `ocmem init`) the way OpenCode does: call the
// exported plugin function with a client, then await its hooks. Every call is timed on its own
// with process.hrtime.bigint(); the anchor is an empty async hook timed the same way (the cost
// of an awaited call plus the timer). Spawned processes are counted from the log written by the
// wrapper command that plugin.json points to.
//
// usage: <bun|node> hook_micro.mjs PLUGIN_FILE PROJECT_DIR SPAWN_LOG ITERATIONS OUT_JSON
import { readFileSync, writeFileSync, existsSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"

const [pluginFile, project, spawnLog, iterationsArg, outFile] = process.argv.slice(2)
const iterations = Number(iterationsArg)
const spawns = () => (existsSync(spawnLog) ? readFileSync(spawnLog, "utf8").split("\n").filter(Boolean) : [])

const calls = { log: 0, toast: 0, sessionGet: 0 }
const client = {
  app: { log: async () => { calls.log++; return {} } },
  tui: { showToast: async () => { calls.toast++; return {} } },
  session: { get: async ({ path }) => { calls.sessionGet++; return { data: { id: path.id } } } },
}

const mod = await import(pathToFileURL(pluginFile).href)
const plugin = mod.OcmemPlugin
const spawnedBeforeInit = spawns().length
const initStart = process.hrtime.bigint()
const hooks = await plugin({
  client,
  directory: project,
  worktree: project,
  project: { id: "bench", worktree: project },
  serverUrl: new URL("http://127.0.0.1:1"),
  $: undefined,
  experimental_workspace: { register() {} },
})
const initNs = Number(process.hrtime.bigint() - initStart)

// OpenCode announces a session before its tool calls (the hook awaits the plugin's start).
const sessionID = "ses_bench_root"
await hooks.event({ event: { type: "session.created", properties: { info: { id: sessionID } } } })
const spawnedAtInit = spawns().slice(spawnedBeforeInit)

const src = join(project, "src")
const cases = {
  "after:read": ["tool.execute.after", { tool: "read", sessionID, callID: "c8", args: {} },
    () => ({ title: "app.ts", output: "export const a = 1\n", metadata: {} })],
  "after:edit": ["tool.execute.after", { tool: "edit", sessionID, callID: "c9", args: {} },
    () => ({ title: "app.ts", output: "Edit applied successfully.", metadata: {} })],
  "before:bash": ["tool.execute.before", { tool: "bash", sessionID, callID: "c1" },
    () => ({ args: { command: "ls -la src && git status --short", description: "état du dépôt" } })],
  "before:read": ["tool.execute.before", { tool: "read", sessionID, callID: "c2" },
    () => ({ args: { filePath: "src/app.ts" } })],
  "before:grep": ["tool.execute.before", { tool: "grep", sessionID, callID: "c3" },
    () => ({ args: { pattern: "TODO", path: "src" } })],
  "before:edit": ["tool.execute.before", { tool: "edit", sessionID, callID: "c4" },
    () => ({ args: { filePath: join(src, "app.ts"), oldString: "a", newString: "b" } })],
  "before:write": ["tool.execute.before", { tool: "write", sessionID, callID: "c5" },
    () => ({ args: { filePath: join(src, "new", "file.ts"), content: "export {}\n" } })],
  "after:bash": ["tool.execute.after", { tool: "bash", sessionID, callID: "c6", args: {} },
    () => ({ title: "ls", output: "app.ts\nindex.ts\n", metadata: {} })],
  "after:webfetch": ["tool.execute.after", { tool: "webfetch", sessionID, callID: "c7", args: {} },
    () => ({ title: "page", output: "<html>page</html>".repeat(20), metadata: {} })],
}
const empty = async (_input, _output) => {}

async function timeHook(fn, input, makeOutput, n, pair) {
  if (pair) {
    const ns = new Float64Array(n)
    for (let i = 0; i < n; i++) {
      const t0 = process.hrtime.bigint()
      await pair(i)
      ns[i] = Number(process.hrtime.bigint() - t0)
    }
    return ns
  }
  const outputs = Array.from({ length: n }, makeOutput)
  const ns = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint()
    await fn(input, outputs[i])
    ns[i] = Number(process.hrtime.bigint() - t0)
  }
  return ns
}

function summary(ns) {
  const sorted = Array.from(ns).sort((a, b) => a - b)
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
  return { n: sorted.length, median: at(0.5), p10: at(0.1), p90: at(0.9), p99: at(0.99), max: sorted[sorted.length - 1] }
}

// A tool call costs its before and its after hook: timed together, as OpenCode runs them.
const pairs = {
  "pair:bash": ["before:bash", "after:bash"],
  "pair:read": ["before:read", "after:read"],
  "pair:edit": ["before:edit", "after:edit"],
}
for (const [name, [b, a]] of Object.entries(pairs)) {
  const [hb, ib, mb] = cases[b]
  const [ha, ia, ma] = cases[a]
  cases[name] = ["pair", null, null, async (i) => {
    await hooks[hb](ib, mb())
    await hooks[ha](ia, ma())
  }]
}

const results = {}
const before = spawns().length
const warm = Math.min(2000, iterations)
for (const [name, [hook, input, makeOutput, pair]] of Object.entries(cases)) {
  await timeHook(hooks[hook], input, makeOutput, warm, pair)
  await timeHook(empty, {}, () => ({}), warm)
}
// Interleave rounds of every case with the empty anchor, so drift hits them alike.
const rounds = 5
const per = Math.max(1, Math.floor(iterations / rounds))
const samples = { "anchor:empty async hook": [] }
for (const name of Object.keys(cases)) samples[name] = []
for (let r = 0; r < rounds; r++) {
  for (const [name, [hook, input, makeOutput, pair]] of Object.entries(cases)) {
    samples[name].push(...(await timeHook(hooks[hook], input, makeOutput, per, pair)))
    samples["anchor:empty async hook"].push(...(await timeHook(empty, {}, () => ({}), per)))
  }
}
// Session taint's costly path: another session is exposed (its window is open), so each project
// file a call names is stat-ed against that window (a file it may have written).
await hooks["tool.execute.before"](
  { tool: "webfetch", sessionID: "ses_bench_exposed", callID: "w1" },
  { args: { url: "http://127.0.0.1:1/doc", format: "text" } },
)
const windowCases = {
  "before:read, a window open": ["tool.execute.before", { tool: "read", sessionID, callID: "c10" },
    () => ({ args: { filePath: "src/app.ts" } })],
  "before:bash cat, a window open": ["tool.execute.before", { tool: "bash", sessionID, callID: "c11" },
    () => ({ args: { command: "cat src/app.ts | wc -l", description: "lignes" } })],
}
for (const name of Object.keys(windowCases)) samples[name] = []
for (const [, [hook, input, makeOutput]] of Object.entries(windowCases)) await timeHook(hooks[hook], input, makeOutput, warm)
for (let r = 0; r < rounds; r++) {
  for (const [name, [hook, input, makeOutput]] of Object.entries(windowCases)) {
    samples[name].push(...(await timeHook(hooks[hook], input, makeOutput, per)))
    samples["anchor:empty async hook"].push(...(await timeHook(empty, {}, () => ({}), per)))
  }
}
for (const [name, values] of Object.entries(samples)) results[name] = summary(values)
const after = spawns()

// A memory tool through the gate (one JSON line each way, no process): its round trip.
const ctx = { sessionID, messageID: "m1", agent: "build", directory: project, worktree: project, abort: new AbortController().signal, metadata() {}, async ask() {} }
const memoryNs = []
for (let i = 0; i < 40; i++) {
  const t0 = process.hrtime.bigint()
  await hooks.tool.memory_search.execute({ query: "port", tags: null, last: null }, ctx)
  memoryNs.push(Number(process.hrtime.bigint() - t0))
}
results["memory_search via the gate"] = summary(memoryNs.slice(5))

const runtime = typeof Bun !== "undefined" ? `bun ${Bun.version}` : `node ${process.version}`
writeFileSync(
  outFile,
  JSON.stringify({
    runtime,
    initNs,
    spawnedAtInit,
    spawnedDuringCalls: after.slice(before),
    totalCalls: (Object.keys(cases).length + Object.keys(windowCases).length) * (per * rounds + warm) + 41,
    clientCalls: calls,
    results,
  }, null, 1),
)
// The plugin's watch and its gate live as long as OpenCode does: end here, as OpenCode would.
await hooks.dispose?.()
process.exit(0)
