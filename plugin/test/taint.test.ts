import { expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileClockOffset, Taint } from "../ocmem/taint.ts"
import { newSession, type SessionState } from "../ocmem/sessions.ts"
import { coldStart } from "../ocmem/shapes.ts"

function scene() {
  const root = mkdtempSync(join(tmpdir(), "ocmem-taint-"))
  const home = join(root, "home")
  const project = join(root, "project")
  mkdirSync(join(home, ".ocmem"), { recursive: true })
  mkdirSync(join(project, "node_modules"), { recursive: true })
  const live = new Map<string, SessionState>()
  const taint = new Taint([project], live, join(root, "user"))
  const settings = coldStart(home)
  taint.apply(settings)
  return { root, home, project, live, taint, settings }
}

test("the rules classify each call by where it reads, not what it says", () => {
  const { root, project, taint } = scene()
  writeFileSync(join(project, "a.ts"), "x")
  expect(taint.exposuresOf("webfetch", { url: "http://x/doc" }, project, undefined, "s")[0]).toEqual({
    kind: "untrusted_tool",
    source: "webfetch http://x/doc",
  })
  expect(taint.exposuresOf("bash", { command: "curl -s http://x" }, project, undefined, "s")[0].kind).toBe("shell_fetch")
  expect(taint.exposuresOf("read", {}, project, join(root, "elsewhere.md"), "s")[0].kind).toBe("outside_read")
  expect(taint.exposuresOf("read", {}, project, join(project, "node_modules/p/README.md"), "s")[0].kind).toBe("third_party")
  expect(taint.exposuresOf("read", {}, project, join(project, "a.ts"), "s")).toEqual([])
  expect(taint.exposuresOf("bash", { command: "cat /dev/null" }, project, undefined, "s")).toEqual([])
  expect(taint.exposuresOf("memory_note", { text: "x" }, project, undefined, "s")).toEqual([])
})

test("a file written in another session's open window is tainted; a closed one stops at its end", () => {
  const { project, live, taint } = scene()
  const other = newSession()
  other.exposedAt = Date.now() - 1000
  other.lastActive = Date.now() - 500
  other.turnOpen = true
  live.set("other", other)
  writeFileSync(join(project, "saved.md"), "page")
  expect(taint.changedWhileExposed(join(project, "saved.md"), "me")).toBe("other")
  other.turnOpen = false // its turn ended half a second before the file was written
  expect(taint.changedWhileExposed(join(project, "saved.md"), "me")).toBeUndefined()
  expect(taint.changedWhileExposed(join(project, "saved.md"), "other")).toBeUndefined() // its own
})

test("a window another OpenCode opened after the index was read is read before the file is trusted", () => {
  const { home, project, taint, settings } = scene()
  taint.knowWindows([], Date.now() - 60_000) // the index as this OpenCode read it a minute ago
  const start = Date.now() - 100
  writeFileSync(settings.windows_file, JSON.stringify({ windows: [{ session: "far", start, end: start, open: true }] }))
  writeFileSync(join(project, "from-far.md"), "page")
  expect(taint.changedWhileExposed(join(project, "from-far.md"), "me")).toBe("far")
  expect(home).toBeTruthy()
})

test("the file clock offset is this process's clock minus the file system's, 0 when they agree", () => {
  // Measured here on a file of our own: 0 on a normal machine, the moved amount under libfaketime
  // (CI runs this suite both ways, scripts/test-clock-moved).
  const dir = mkdtempSync(join(tmpdir(), "ocmem-clock-test-"))
  writeFileSync(join(dir, "probe"), "")
  const measured = Date.now() - statSync(join(dir, "probe")).ctimeMs
  rmSync(dir, { recursive: true, force: true })
  if (Math.abs(measured) < 1000) expect(fileClockOffset()).toBe(0)
  else expect(Math.abs(fileClockOffset() - measured)).toBeLessThan(1000)
})
