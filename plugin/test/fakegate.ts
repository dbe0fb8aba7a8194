/** A stand-in for `ocmem gate` in the core's unit tests (the real one is behind
 * tests/test_plugin_taint.py and the e2e suite): the same JSON-lines protocol
 * (sync/ocmem/bridge/gate.py), answers of the right shapes, every request written to
 * $FAKE_GATE_LOG. $FAKE_GATE_SETTINGS: fields laid over the cold-start settings of $OCMEM_HOME.
 *
 * usage (as the core starts it): <bun> fakegate.ts gate */
import { appendFileSync } from "node:fs"
import { createInterface } from "node:readline"
import { coldStart } from "../ocmem/shapes.ts"

export const MEMORY_BLOCK = "Mémoire validée (test) : le port SSH est 2222."

const settings = { ...coldStart(process.env.OCMEM_HOME ?? "."), ...JSON.parse(process.env.FAKE_GATE_SETTINGS || "{}") }

function answer(request: any): { code: number; out: string; err?: string } {
  switch (request.op) {
    case "plugin-config":
      return { code: 0, out: JSON.stringify(settings) }
    case "prompt-context":
      return { code: 0, out: JSON.stringify({ system: [MEMORY_BLOCK], warnings: [], journal_written: false, quarantined: [] }) }
    case "tool":
      return { code: 0, out: `ok ${request.name}\n` }
    case "space": {
      // As ocmem answers (sync/ocmem/bridge/spaceanswers.py): a write outside the inbox is
      // refused; a page under Agents/Memory/ is validated memory, anything else exposes.
      const page = String(request.args?.page ?? "")
      if (request.name === "space_write" && !page.startsWith("Agents/Inbox/"))
        return { code: 3, out: "", err: `ocmem : refusé : ${page} est hors de Agents/Inbox/maison/.\n` }
      const validated = request.name === "space_read" && page.startsWith("Agents/Memory/")
      const exposures = validated || request.name === "space_write" ? [] : [{ kind: "space_content", source: `${request.name} ${page}`.trim() }]
      return { code: 0, out: JSON.stringify({ text: `ok ${request.name} ${page}`.trim(), exposures }) }
    }
    case "mcp-write": {
      // The rule is Python's (tests/test_mcp_writes.py): here, a page outside Agents/Inbox/ is
      // refused; a tool named `…_garbled` gets an answer that is no verdict.
      if (String(request.tool).endsWith("_garbled")) return { code: 0, out: "[null]" }
      const outside = (request.pages ?? []).find((p: string) => !p.startsWith("Agents/Inbox/"))
      return { code: 0, out: JSON.stringify({ refusal: outside ? `refusé : ${outside} est hors de Agents/Inbox/maison/.` : "" }) }
    }
    case "proposal":
      return { code: 0, out: JSON.stringify({ id: request.proposal, kind: "fait", title: "T", exposure: "", replaces: "" }) }
    default:
      return { code: 0, out: "" }
  }
}

if (import.meta.main) {
  process.stdout.write(JSON.stringify({ hello: { version: "test", pid: process.pid, hardened: false } }) + "\n")
  for await (const line of createInterface({ input: process.stdin })) {
    const request = JSON.parse(line)
    if (process.env.FAKE_GATE_LOG) appendFileSync(process.env.FAKE_GATE_LOG, line + "\n")
    process.stdout.write(JSON.stringify({ id: request.id, ...answer(request) }) + "\n")
  }
}
