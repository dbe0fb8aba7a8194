import { expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { LinkRefused, readInside } from "../ocmem/nofollow.ts"

function home(): { root: string; home: string } {
  const root = mkdtempSync(join(tmpdir(), "ocmem-nofollow-"))
  const home = join(root, "home")
  mkdirSync(join(home, ".ocmem"), { recursive: true })
  writeFileSync(join(root, "token"), "secret")
  writeFileSync(join(home, ".ocmem", "plugin.json"), "{}")
  return { root, home }
}

test("a file of the home is read", () => {
  const { home: h } = home()
  expect(readInside(h, join(h, ".ocmem", "plugin.json")).toString()).toBe("{}")
})

test("a linked file, or a file in a linked folder, is refused and never read", () => {
  const { root, home: h } = home()
  symlinkSync(join(root, "token"), join(h, ".ocmem", "windows.json"))
  expect(() => readInside(h, join(h, ".ocmem", "windows.json"))).toThrow(LinkRefused)
  expect(() => readInside(h, join(h, ".ocmem", "windows.json"))).toThrow(".ocmem/windows.json est un lien symbolique")
  mkdirSync(join(root, "state"))
  writeFileSync(join(root, "state", "writes.jsonl"), "secret")
  symlinkSync(join(root, "state"), join(h, "linked"))
  expect(() => readInside(h, join(h, "linked", "writes.jsonl"))).toThrow("linked est un lien symbolique")
})

test("the home itself may be a link, and a path outside it is read as given", () => {
  const { root, home: h } = home()
  symlinkSync(h, join(root, "alias"))
  const alias = join(root, "alias")
  expect(readInside(alias, join(alias, ".ocmem", "plugin.json")).toString()).toBe("{}")
  symlinkSync(join(root, "token"), join(root, "outside-link"))
  expect(readInside(h, join(root, "outside-link")).toString()).toBe("secret")
})
