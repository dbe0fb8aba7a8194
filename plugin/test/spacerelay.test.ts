import { expect, test } from "bun:test"
import { statSync } from "node:fs"
import { connect } from "node:net"
import { dirname } from "node:path"
import { openRelay } from "../ocmem/spacerelay.ts"

function ask(path: string, line: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const socket = connect(path)
    let got = ""
    socket.setEncoding("utf8")
    socket.on("data", (chunk) => (got += chunk))
    socket.on("end", () => resolve(JSON.parse(got)))
    socket.on("error", reject)
    socket.write(line)
  })
}

test("the relay answers one checked request per connection, in a folder only this user enters", async () => {
  const seen: [string, Record<string, unknown>][] = []
  const relay = openRelay(async (tool, args) => {
    seen.push([tool, args])
    return { code: 0, out: `réponse à ${tool}`, err: "" }
  })!
  try {
    expect(statSync(dirname(relay.path)).mode & 0o777).toBe(0o700)
    expect(await ask(relay.path, JSON.stringify({ tool: "lire_page", args: { page: "Agents/AGENTS" } }) + "\n")).toEqual({ code: 0, out: "réponse à lire_page", err: "" })
    for (const bad of [{ tool: "gate", args: {} }, { tool: "lire_page", args: [] }, { tool: "ecrire_page" }, "pas du JSON"]) {
      const answer = await ask(relay.path, (typeof bad === "string" ? bad : JSON.stringify(bad)) + "\n")
      expect(answer.code).toBe(2)
      expect(answer.err).toContain("refusée par le relais")
    }
    const huge = await ask(relay.path, "x".repeat(300_000))
    expect(huge.err).toContain("caractères")
    expect(seen).toEqual([["lire_page", { page: "Agents/AGENTS" }]])
  } finally {
    relay.close()
  }
})
