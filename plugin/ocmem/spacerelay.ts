/** The relay between `ocmem mcp` and the gate (sync/ocmem/bridge/mcpserve.py). OpenCode starts
 * MCP servers as the agent's user, and in the hardened mode that user cannot read the
 * SilverBullet token: only the gate (the home's owner) can. So the plugin listens on a Unix
 * socket in a folder of its own (mode 0700), names it in `OCMEM_SPACE_SOCKET` for the servers
 * OpenCode starts after it, and answers each call — one JSON line `{tool, args}`, one line
 * back `{code, out, err}` — by asking the gate, after recording what the call brings into the
 * sessions. Any process of the agent's user can reach the socket (the model's shell too): it
 * gets the same four tools, under the same policy, and every call that reads something other
 * than validated memory exposes every session of this OpenCode. */
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Run } from "./gate.ts"

export const RELAY_ENV = "OCMEM_SPACE_SOCKET"
export const RELAY_TOOLS = new Set(["lire_page", "lister_pages", "chercher_pages", "ecrire_page"])
const MAX_REQUEST_CHARS = 200_000

export type Relay = { path: string; close(): void }
export type Handler = (tool: string, args: Record<string, unknown>) => Promise<Run>

/** One request per connection, checked before `handle` sees it. */
export function openRelay(handle: Handler): Relay | undefined {
  let dir: string
  try {
    dir = mkdtempSync(join(tmpdir(), "ocmem-relais-"))
  } catch {
    return undefined // no temporary folder: ocmem mcp then says the relay does not answer
  }
  const path = join(dir, "espace.sock")
  const server = createServer((socket) => {
    let buffer = ""
    let answered = false
    socket.setEncoding("utf8")
    socket.on("error", () => undefined)
    socket.on("data", async (chunk: string) => {
      if (answered) return
      buffer += chunk
      const end = buffer.indexOf("\n")
      if (end < 0 && buffer.length <= MAX_REQUEST_CHARS) return
      answered = true
      let answer: Run
      try {
        if (end < 0) throw new Error(`requête de plus de ${MAX_REQUEST_CHARS} caractères`)
        const request = JSON.parse(buffer.slice(0, end))
        const { tool, args } = request ?? {}
        if (typeof tool !== "string" || !RELAY_TOOLS.has(tool)) throw new Error(`outil inconnu : ${String(tool).slice(0, 60)}`)
        if (!args || typeof args !== "object" || Array.isArray(args)) throw new Error("« args » doit être un objet")
        answer = await handle(tool, args)
      } catch (e) {
        answer = { code: 2, out: "", err: `requête refusée par le relais ocmem : ${e instanceof Error ? e.message : String(e)}` }
      }
      socket.end(JSON.stringify(answer) + "\n")
    })
  })
  server.on("error", () => undefined)
  server.listen(path)
  server.unref() // never what keeps OpenCode alive
  // It lives as long as OpenCode (instances come and go, the MCP servers stay).
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }))
  return {
    path,
    close() {
      server.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
