// Drives plugin/ocmem.ts without OpenCode: loads it as OpenCode does (the exported plugin
// function, a fake client), then plays a list of steps against its hooks and its memory tools,
// with the real `ocmem gate` behind it (the home's plugin.json). Used by
// tests/test_plugin_taint.py to check the plugin's exposure rules (sync/ocmem/guards/exposure.py)
// as the plugin really applies them.
//
// usage: <bun|node> plugin_driver.mjs PLUGIN_FILE PROJECT_DIR STEPS_JSON OUT_JSON
// A step: {"session", "tool", "args"} (tool.execute.before, then .after), or
// {"session", "note": "text"} (the memory_note tool: its answer is recorded), or
// {"session", "idle": true} (session.idle), or {"write": path, "text"} (a file written now),
// or {"session", "journal": fields} (the memory_journal tool), or {"session", "space": name,
// "args"} (a space tool, between its before and after hooks: its answer is recorded), or
// {"append": path, "text"}
// (bytes added to a file now), or {"session", "model_call": true} (what the plugin does before a
// model call: its sweep of the home included), or {"wait": ms}, or {"until": path} (wait until
// another driver, run at the same time, has written that file: no step depends on a delay).
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs"
import { pathToFileURL } from "node:url"

const [pluginFile, project, stepsFile, outFile] = process.argv.slice(2)
const steps = JSON.parse(readFileSync(stepsFile, "utf8"))
const client = {
  app: { log: async () => ({}) },
  tui: { showToast: async () => ({}) },
  session: { get: async ({ path }) => ({ data: { id: path.id } }) },
}
const mod = await import(pathToFileURL(pluginFile).href)
const hooks = await mod.OcmemPlugin({
  client,
  directory: project,
  worktree: "/",
  project: { id: "test", worktree: "/" },
  serverUrl: new URL("http://127.0.0.1:1"),
  $: undefined,
  experimental_workspace: { register() {} },
})
const known = new Set()
const answers = []
let call = 0
for (const step of steps) {
  if (step.wait) {
    await new Promise((r) => setTimeout(r, step.wait))
    continue
  }
  if (step.until) {
    for (const deadline = Date.now() + 120_000; !existsSync(step.until); ) {
      if (Date.now() > deadline) throw new Error(`${step.until} never came`)
      await new Promise((r) => setTimeout(r, 10))
    }
    continue
  }
  if (step.write) {
    writeFileSync(step.write, step.text ?? "")
    continue
  }
  if (step.append) {
    appendFileSync(step.append, step.text ?? "")
    continue
  }
  const sessionID = step.session
  if (!known.has(sessionID)) {
    known.add(sessionID)
    await hooks.event({ event: { type: "session.created", properties: { info: { id: sessionID } } } })
  }
  if (step.model_call) {
    await hooks["experimental.chat.system.transform"]({ sessionID, model: {} }, { system: [] })
    continue
  }
  if (step.idle) {
    await hooks.event({ event: { type: "session.idle", properties: { sessionID } } })
    continue
  }
  const ctx = { sessionID, messageID: `m${call}`, agent: "build", directory: project, worktree: "/", abort: new AbortController().signal, metadata() {}, async ask() {} }
  if (step.note !== undefined) {
    answers.push(await hooks.tool.memory_note.execute({ text: step.note, days: null }, ctx))
    continue
  }
  if (step.journal !== undefined) {
    answers.push(await hooks.tool.memory_journal.execute(step.journal, ctx))
    continue
  }
  if (step.space !== undefined) {
    const input = { tool: step.space, sessionID, callID: `c${++call}` }
    await hooks["tool.execute.before"](input, { args: step.args })
    const said = await hooks.tool[step.space].execute(step.args, ctx)
    await hooks["tool.execute.after"]({ ...input, args: step.args }, { title: "", output: said, metadata: {} })
    answers.push(said)
    continue
  }
  call++
  const output = { args: step.args }
  let refused = ""
  try {
    await hooks["tool.execute.before"]({ tool: step.tool, sessionID, callID: `c${call}` }, output)
  } catch (e) {
    refused = String(e)
  }
  await hooks["tool.execute.after"]({ tool: step.tool, sessionID, callID: `c${call}`, args: step.args }, { title: "", output: "", metadata: {} })
  if (refused) answers.push(`guard: ${refused}`)
}
writeFileSync(outFile, JSON.stringify(answers))
await hooks.dispose?.()
process.exit(0)
