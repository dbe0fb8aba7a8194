import { expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { announcedState, Monitor, type Announcement } from "../ocmem/monitor.ts"
import { coldStart } from "../ocmem/shapes.ts"

const sha = (data: string) => createHash("sha256").update(data).digest("hex")

test("appends are recognised when each matches its digest over a known start", () => {
  const kept = "# Journal\n"
  const first = "\n## a\n"
  const second = "\n## b\n"
  const data = Buffer.from(kept + first + second)
  const chain: Announcement[] = [
    { at: kept.length, size: kept.length + first.length, sha256: sha(first) },
    { at: kept.length + first.length, size: data.length, sha256: sha(second) },
  ]
  const current = { kind: "file", size: BigInt(data.length) } as any
  expect(announcedState(chain, { hash: sha(kept) } as any, current, () => data)).toBe(true)
  expect(announcedState(chain, { hash: sha("autre") } as any, current, () => data)).toBe(false)
  expect(announcedState([{ sha256: sha(kept) }], undefined, { hash: sha(kept) } as any, () => data)).toBe(true)
})

test("a change ocmem did not announce is put back, and the changed copy kept aside", async () => {
  const home = mkdtempSync(join(tmpdir(), "ocmem-monitor-"))
  mkdirSync(join(home, ".ocmem"), { recursive: true })
  mkdirSync(join(home, "memory"))
  writeFileSync(join(home, "memory/MEMORY.md"), "- fait\n")
  const monitor = new Monitor(home, coldStart(home), () => Date.parse("2026-01-01T00:00:00Z"))
  monitor.start()
  appendFileSync(join(home, "memory/MEMORY.md"), "- injecté\n")
  const reports = await monitor.check(true)
  monitor.stop()
  expect(reports.length).toBe(1)
  expect(reports[0]).toContain("memory/MEMORY.md modifié hors d'ocmem : version précédente remise")
  expect(readFileSync(join(home, "memory/MEMORY.md"), "utf8")).toBe("- fait\n")
})
