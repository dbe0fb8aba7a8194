import { expect, test } from "bun:test"
import { mkdtempSync, mkdirSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { canonical, expand, within } from "../ocmem/paths.ts"

test("a path whose folders do not exist yet keeps every part, up to the root", () => {
  expect(canonical("/no-such-top/memory/MEMORY.md")).toBe("/no-such-top/memory/MEMORY.md")
  expect(within(canonical("/no-such-top/memory/MEMORY.md"), canonical("/no-such-top/memory"))).toBe(true)
})

test("a symlinked folder is resolved, so a link cannot smuggle a write past the guard", () => {
  const root = mkdtempSync(join(tmpdir(), "ocmem-paths-"))
  mkdirSync(join(root, "memory"))
  symlinkSync(join(root, "memory"), join(root, "link"))
  expect(canonical(join(root, "link", "new.md"))).toBe(join(canonical(root), "memory", "new.md"))
})

test("~, $HOME and relative paths are made absolute", () => {
  expect(expand("~/x", "/cwd", "/u")).toBe("/u/x")
  expect(expand("$HOME/x", "/cwd", "/u")).toBe("/u/x")
  expect(expand("../x", "/cwd/a", "/u")).toBe("/cwd/x")
  expect(within("/a/bc", "/a/b")).toBe(false)
})
