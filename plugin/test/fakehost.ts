/** What the core's tests stand on: a home whose plugin.json starts the stand-in gate
 * (fakegate.ts), and a host that records what the core asks of it. */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Host, LogLevel, ToastVariant } from "../ocmem/host.ts"

export const FAKE_GATE = join(import.meta.dir, "fakegate.ts")

export class FakeHost implements Host {
  logs: Array<[LogLevel, string]> = []
  toasts: Array<[string, ToastVariant]> = []
  parents = new Map<string, string>()
  asked: string[] = [] // sessions whose parent the core had to ask for

  constructor(
    readonly directory: string,
    readonly worktree: string | undefined = undefined,
  ) {}

  async parentOf(sessionID: string): Promise<string | undefined> {
    this.asked.push(sessionID)
    return this.parents.get(sessionID)
  }

  async log(level: LogLevel, message: string): Promise<void> {
    this.logs.push([level, message])
  }

  async toast(message: string, variant: ToastVariant): Promise<void> {
    this.toasts.push([message, variant])
  }
}

export type Scene = { root: string; home: string; project: string; gateLog: string; requests(): any[] }

/** A home and a project in a new temporary folder; the next core started there talks to a new
 * stand-in gate answering `settings` over the cold-start ones (`command`: another gate). */
export function scene(settings: Record<string, unknown> = {}, command?: string[]): Scene {
  const root = mkdtempSync(join(tmpdir(), "ocmem-core-"))
  const home = join(root, "home")
  const project = join(root, "project")
  mkdirSync(join(home, ".ocmem"), { recursive: true })
  mkdirSync(project)
  writeFileSync(join(home, "AGENTS.md"), "# Règles\n")
  writeFileSync(join(home, ".ocmem", "plugin.json"), JSON.stringify({ command: command ?? [process.execPath, FAKE_GATE] }))
  const gateLog = join(root, "gate.jsonl")
  // The gate inherits these (the core copies the environment); one gate per process otherwise.
  process.env.FAKE_GATE_LOG = gateLog
  process.env.FAKE_GATE_SETTINGS = JSON.stringify(settings)
  delete (globalThis as any)[Symbol.for("ocmem.gate")]
  const requests = () =>
    existsSync(gateLog)
      ? readFileSync(gateLog, "utf8")
          .split("\n")
          .filter(Boolean)
          .map((line) => JSON.parse(line))
      : []
  return { root, home, project, gateLog, requests }
}

/** Waits until `done()` holds (the gate answers in its own process), up to `ms`. */
export async function until(done: () => boolean, ms = 5_000): Promise<void> {
  for (const deadline = Date.now() + ms; !done(); ) {
    if (Date.now() > deadline) throw new Error("never came")
    await new Promise((r) => setTimeout(r, 10))
  }
}
