/** Session taint (sync/ocmem/guards/exposure.py holds the rules, sent in the settings;
 * docs/security.md): which tool calls bring outside content into a session. Decided by where the
 * session has been, never by what a text looks like. */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, relative, resolve, sep } from "node:path"
import { SHAPES, SPACE_TOOLS, TOOLS, type Exposure, type Settings, type Window } from "./contract.ts"
import { canonical, expand, within } from "./paths.ts"
import type { SessionState } from "./sessions.ts"
import { readInside } from "./nofollow.ts"
import { conforms } from "./shapes.ts"

export const MEMORY_TOOLS: ReadonlySet<string> = new Set(Object.keys(TOOLS))
// ocmem's own tools: a memory tool brings nothing from outside; what a space tool brings is
// ocmem's to say, with its answer (space.ts).
const OCMEM_TOOLS: ReadonlySet<string> = new Set([...MEMORY_TOOLS, ...Object.keys(SPACE_TOOLS)])
const WINDOW_SLACK_MS = 50 // a file's ctime (the kernel's coarse clock) and Date.now() differ by a tick

let clockOffset: number | undefined
/** This process's clock minus the file system's, in ms: the kernel stamps a file's ctime with
 * its own time, which a process clock moved on purpose (libfaketime) does not follow; 0 on a
 * normal machine (under a second: the kernel's file clock is coarse). Measured once, on a new
 * file in the temp dir. */
export function fileClockOffset(): number {
  if (clockOffset !== undefined) return clockOffset
  clockOffset = 0
  try {
    const dir = mkdtempSync(join(tmpdir(), "ocmem-clock-"))
    try {
      const before = Date.now()
      writeFileSync(join(dir, "probe"), "")
      const now = (before + Date.now()) / 2
      const offset = now - statSync(join(dir, "probe")).ctimeMs
      if (Math.abs(offset) > 1000) clockOffset = offset
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  } catch {
    // no temp dir: the two clocks are taken as one
  }
  return clockOffset
}

/** The rules of one OpenCode process: `apply` them from ocmem's settings; `live` are this
 * process's sessions, whose windows the plugin knows first hand. */
export class Taint {
  private settings!: Settings
  private home = ""
  private trusted = new Set<string>()
  private untrusted = new Set<string>()
  private untrustedDirs = new Set<string>()
  private fetching = /$^/
  private pathTokens = /$^/g
  private fileTokens = /$^/g
  /** Memory files holding quarantined items (prompt-context): reading one exposes. */
  quarantined: string[] = []
  // The windows of other OpenCode processes' exposed sessions, as ocmem's index last said
  // (sync/ocmem/home/sessions.py) and when it was read: a file changed after that moment may come
  // from a window opened since, so the index is read again before the file is trusted.
  private windows: Window[] = []
  private windowsReadAt = 0
  private windowsStat = ""

  constructor(
    private readonly projects: string[],
    private readonly live: ReadonlyMap<string, SessionState>,
    private readonly userHome: string,
    private readonly now: () => number = Date.now,
  ) {}

  apply(settings: Settings): void {
    this.settings = settings
    this.home = canonical(settings.home)
    this.trusted = new Set([...settings.trusted_tools, ...MEMORY_TOOLS])
    this.untrusted = new Set(settings.untrusted_tools)
    this.untrustedDirs = new Set(settings.untrusted_dirs)
    this.fetching = new RegExp(settings.fetch_commands)
    this.pathTokens = new RegExp(settings.path_tokens, "g")
    this.fileTokens = new RegExp(settings.file_tokens, "g")
  }

  /** The windows ocmem sent, as its index was when the request left (`readAt`). */
  knowWindows(windows: Window[], readAt: number): void {
    this.windows = windows
    this.windowsReadAt = readAt
  }

  private readWindows(force: boolean): void {
    const started = this.now()
    let mark = ""
    try {
      const st = statSync(this.settings.windows_file, { bigint: true })
      mark = `${st.ino}/${st.size}/${st.mtimeNs}/${st.ctimeNs}`
    } catch {
      mark = "absent"
    }
    if (force || mark !== this.windowsStat) {
      try {
        const index = JSON.parse(readInside(this.settings.home, this.settings.windows_file).toString("utf8"))
        if (Array.isArray(index?.windows)) this.windows = index.windows.filter((w: unknown) => conforms(w, SHAPES.Window))
      } catch {
        // absent (no session was ever exposed), being replaced, or a link (never followed): the copy stands
      }
      this.windowsStat = mark
    }
    this.windowsReadAt = started
  }

  /** The exposed session (of this process or another) in whose window `path` changed. */
  changedWhileExposed(path: string, root: string): string | undefined {
    let ctime: number
    try {
      ctime = statSync(path).ctimeMs + fileClockOffset()
    } catch {
      return undefined
    }
    const inside = (start: number, end: number, open: boolean) =>
      ctime >= start - WINDOW_SLACK_MS && (open || ctime <= end + WINDOW_SLACK_MS)
    for (const [id, s] of this.live)
      if (id !== root && s.exposedAt !== undefined && inside(s.exposedAt, s.lastActive, s.turnOpen)) return id
    if (ctime >= this.windowsReadAt - WINDOW_SLACK_MS) this.readWindows(false)
    let hit = this.windows.find((w) => w.session !== root && inside(w.start, w.end, w.open))
    // An open window is a session still running when the index was read: it may have closed.
    if (hit?.open) {
      this.readWindows(true)
      hit = this.windows.find((w) => w.session !== root && inside(w.start, w.end, w.open))
    }
    return hit?.session
  }

  /** What reading `path` brings: outside the project and the home, third-party folders,
   * quarantined memory, an untrusted project, a file changed during an exposed session. */
  pathExposure(path: string, file: boolean, root: string): Exposure | undefined {
    for (const q of this.quarantined) if (within(q, path)) return { kind: "quarantined_memory", source: q }
    const project = this.projects.find((d) => within(path, d))
    const base = within(path, this.home) ? this.home : project
    if (base === undefined) {
      for (const system of this.settings.system_paths)
        if (system.endsWith("/") ? path.startsWith(system) || path + "/" === system : path === system) return undefined
      return { kind: "outside_read", source: path }
    }
    const rel = relative(base, path)
    if (rel && rel.split(sep).some((part) => this.untrustedDirs.has(part))) return { kind: "third_party", source: path }
    if (base !== this.home && !this.settings.trust_project) return { kind: "project_read", source: path }
    if (file) {
      const session = this.changedWhileExposed(path, root)
      if (session) return { kind: "tainted_file", source: `${path} (session ${session})` }
    }
    return undefined
  }

  /** The exposures one tool call brings into the session (none for ocmem's own tools). `read`:
   * the canonical path a `read` call reads. */
  exposuresOf(tool: string, args: any, cwd: string, read: string | undefined, root: string): Exposure[] {
    if (OCMEM_TOOLS.has(tool)) return []
    if (!this.trusted.has(tool) || this.untrusted.has(tool)) {
      const what = tool === "webfetch" ? args?.url : tool === "websearch" ? args?.query : JSON.stringify(args ?? {})
      return [{ kind: "untrusted_tool", source: `${tool} ${String(what ?? "")}`.slice(0, 300) }]
    }
    if (tool === "read") {
      const e = read === undefined ? undefined : this.pathExposure(read, true, root)
      return e ? [e] : []
    }
    if (tool === "grep" || tool === "glob" || tool === "list") {
      const e = this.pathExposure(typeof args?.path === "string" ? resolve(cwd, args.path) : cwd, false, root)
      return e ? [e] : []
    }
    if (tool !== "bash" || typeof args?.command !== "string") return []
    const command: string = args.command
    const found: Exposure[] = []
    if (this.fetching.test(command)) found.push({ kind: "shell_fetch", source: command.slice(0, 300) })
    if (!within(cwd, this.home) && !this.projects.some((d) => within(cwd, d)))
      found.push({ kind: "outside_read", source: `${cwd} (dossier de la commande)` })
    for (const m of command.matchAll(this.pathTokens)) {
      const e = this.pathExposure(expand(m[1], cwd, this.userHome), true, root)
      if (e) found.push(e)
    }
    for (const m of command.matchAll(this.fileTokens)) {
      const e = this.pathExposure(resolve(cwd, m[1]), true, root)
      if (e) found.push(e)
    }
    return found
  }
}
