/** Default mode's tamper monitor: the home (OpenCode's config dir) kept as it was when OpenCode
 * started plus what ocmem announces in its writes journal (sync/ocmem/home/announce.py); anything else
 * that changed is moved to the quarantine and the kept version put back. */
import { createHash } from "node:crypto"
import {
  chmodSync,
  closeSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  readSync,
  renameSync,
  symlinkSync,
  watch,
  writeFileSync,
  type BigIntStats,
  type FSWatcher,
} from "node:fs"
import { homedir } from "node:os"
import { dirname, join, relative, sep } from "node:path"
import type { Settings } from "./contract.ts"
import { LinkRefused, openInside, readInside } from "./nofollow.ts"
import { within } from "./paths.ts"

const KEEP_BYTES = 4 * 1024 * 1024 // larger files are watched by digest only

type Seen = { kind: "file" | "dir" | "link"; size: bigint; mtime: bigint; ctime: bigint; mode: number; ino: bigint }
type Kept = Seen & { hash?: string; bytes?: Buffer; target?: string }

function seen(st: BigIntStats): Seen {
  const kind = st.isSymbolicLink() ? "link" : st.isDirectory() ? "dir" : "file"
  return { kind, size: st.size, mtime: st.mtimeNs, ctime: st.ctimeNs, mode: Number(st.mode & 0o7777n), ino: st.ino }
}

function same(a: Seen, b: Seen): boolean {
  return a.kind === b.kind && a.size === b.size && a.mtime === b.mtime && a.ctime === b.ctime && a.mode === b.mode && a.ino === b.ino
}

function digest(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex")
}

/** What ocmem announced for one file: its whole new digest (null: removed), or an append of
 * bytes whose digest is given, from `at` to `size` (appends cost ocmem the same on any file). */
export type Announcement = { sha256: string | null } | { at: number; size: number; sha256: string }

/** Whether `current` is what the announcements since `before` leave: the last whole digest, or
 * a run of contiguous appends, each as announced, over bytes that were a known state — the file
 * kept, or the whole digest announced just before the run. The run is found from the newest
 * append back, as a writes journal trimmed by ocmem is read again with older appends in it. */
export function announcedState(chain: Announcement[], before: Kept | undefined, current: Kept | undefined, bytes: () => Buffer): boolean {
  const last = chain[chain.length - 1]
  if (!("at" in last)) return last.sha256 === null ? !current : current?.hash === last.sha256
  if (current?.kind !== "file" || current.size !== BigInt(last.size)) return false
  const data = bytes()
  for (let i = chain.length - 1, end = last.size; i >= 0; i--) {
    const a = chain[i]
    if (!("at" in a) || a.size !== end || digest(data.subarray(a.at, a.size)) !== a.sha256) return false
    const previous = i > 0 ? chain[i - 1] : undefined
    const known = previous !== undefined && !("at" in previous) ? previous.sha256 : before?.hash
    if (a.at === 0 ? !known || known === digest(Buffer.alloc(0)) : digest(data.subarray(0, a.at)) === known) return true
    end = a.at
  }
  return false
}

/**
 * Default mode: the whole home (OpenCode's config dir: plugins, tools, skills, agents, commands,
 * config files, node_modules, AGENTS.md, memory) is kept as it was when OpenCode started, plus
 * what ocmem announces in its writes journal. A recursive inotify watch marks what moved, so a
 * tool call that changed nothing costs one flag test; a change is hashed, then accepted (ocmem's),
 * or moved to the quarantine and put back. Before each model call every kept entry is also
 * compared at stat level (ctime included) and every folder listed, in case an event was missed
 * (a write through a hard link elsewhere raises no event here).
 */
export class Monitor {
  kept = new Map<string, Kept>()
  dirty = new Set<string>()
  watcher?: FSWatcher
  rootIno = 0n
  journalOffset = 0
  // Other folders OpenCode loads plugins and config from, that did not exist at start.
  absent = [join(homedir(), ".opencode")].filter((dir) => !this.exists(dir))
  announced = new Map<string, Announcement[]>()
  running: Promise<string[]> = Promise.resolve([])

  constructor(
    readonly home: string,
    readonly settings: Settings,
    readonly now: () => number = Date.now,
  ) {}

  rel(path: string): string {
    return relative(this.home, path)
  }

  /** Whether the monitor keeps `rel`: all of the home but ocmem's own state (plugin.json kept). */
  watched(rel: string): boolean {
    if (rel === "" || rel.startsWith("..")) return false
    const state = this.rel(this.settings.state_dir)
    return !within(rel, state) || rel === this.rel(this.settings.plugin_command_file)
  }

  /** Packages inside node_modules are watched by metadata only (there may be thousands); the
   * folder's own top-level files (ocmem init's seed note, npm's lock) are kept like any other. */
  light(rel: string): boolean {
    return rel === "node_modules" || (rel.startsWith("node_modules" + sep) && rel.split(sep).length > 2)
  }

  start(): void {
    this.snapshot()
    this.journalOffset = this.journalSize()
    this.arm()
  }

  arm(): void {
    this.watcher?.close()
    this.rootIno = this.stat("")?.ino ?? 0n
    this.watcher = watch(this.home, { recursive: true }, (_event, name) => {
      if (name) this.dirty.add(String(name))
    })
    this.watcher.unref?.()
  }

  exists(path: string): boolean {
    try {
      lstatSync(path)
      return true
    } catch {
      return false
    }
  }

  stop(): void {
    this.watcher?.close()
  }

  snapshot(): void {
    const walk = (rel: string) => {
      for (const name of this.list(rel)) {
        const child = rel ? join(rel, name) : name
        if (!this.watched(child)) continue
        const entry = this.read(child)
        if (!entry) continue
        this.kept.set(child, entry)
        if (entry.kind === "dir") walk(child)
      }
    }
    walk("")
    const plugin = this.rel(this.settings.plugin_command_file)
    const entry = this.read(plugin)
    if (entry) this.kept.set(plugin, entry)
  }

  list(rel: string): string[] {
    try {
      return readdirSync(join(this.home, rel))
    } catch {
      return []
    }
  }

  /** The entry as it is on disk now (bytes kept for files outside node_modules). */
  read(rel: string): Kept | undefined {
    const path = join(this.home, rel)
    let st: BigIntStats
    try {
      st = lstatSync(path, { bigint: true })
    } catch {
      return undefined
    }
    const entry: Kept = seen(st)
    if (entry.kind === "link") entry.target = readlinkSync(path)
    if (entry.kind === "file" && !this.light(rel)) {
      let bytes: Buffer
      try {
        bytes = readInside(this.home, path) // a file swapped for a link since the lstat is not followed
      } catch (error) {
        if (!(error instanceof LinkRefused)) throw error
        try {
          return { ...seen(lstatSync(path, { bigint: true })), target: readlinkSync(path) }
        } catch {
          return undefined
        }
      }
      entry.hash = digest(bytes)
      if (bytes.length <= KEEP_BYTES) entry.bytes = bytes
    }
    return entry
  }

  journalSize(): number {
    try {
      return Number(lstatSync(this.settings.writes_journal).size)
    } catch {
      return 0
    }
  }

  /** What ocmem announced since the last look: path → its new digest (null: removed). */
  readJournal(): void {
    const size = this.journalSize()
    if (size < this.journalOffset) this.journalOffset = 0 // trimmed by ocmem
    if (size === this.journalOffset) return
    let fd: number
    try {
      fd = openInside(this.home, this.settings.writes_journal) // never through a link (ocmem/nofollow.ts)
    } catch {
      return // a link: ocmem refuses to write through it too, so nothing was announced there
    }
    try {
      const buffer = Buffer.alloc(size - this.journalOffset)
      readSync(fd, buffer, 0, buffer.length, this.journalOffset)
      this.journalOffset = size
      for (const line of buffer.toString("utf8").split("\n")) {
        try {
          const entry = JSON.parse(line)
          if (typeof entry?.file !== "string") continue
          const sha256 = typeof entry.sha256 === "string" ? entry.sha256 : null
          if (typeof entry.append_at === "number" && typeof entry.size === "number" && sha256 !== null)
            this.announced.set(entry.file, [...(this.announced.get(entry.file) ?? []), { at: entry.append_at, size: entry.size, sha256 }])
          else this.announced.set(entry.file, [{ sha256 }])
        } catch {
          // a partial last line: read again next time
        }
      }
    } finally {
      closeSync(fd)
    }
  }

  /** Let pending inotify events reach the watcher, then handle what moved. */
  async check(sweep = false): Promise<string[]> {
    await new Promise((r) => setImmediate(r))
    if (!sweep && this.dirty.size === 0) return []
    const previous = this.running
    const run = previous.then(() => this.handle(sweep))
    this.running = run.catch(() => [])
    return run
  }

  handle(sweep: boolean): string[] {
    const names = new Set(this.dirty)
    this.dirty.clear()
    const reports: string[] = []
    if (sweep && this.stat("")?.ino !== this.rootIno) {
      // The folder itself was renamed or replaced: the watch followed the old one.
      reports.push(`${this.home} a été remplacé hors d'ocmem : son contenu est remis`)
      if (!this.exists(this.home)) mkdirSync(this.home, { recursive: true })
      this.arm()
      for (const rel of this.kept.keys()) names.add(rel)
    }
    if (sweep)
      for (const dir of this.absent)
        if (this.exists(dir)) {
          const aside = join(this.settings.quarantine_dir, new Date(this.now()).toISOString().replace(/[:.]/g, "-"), "hors-du-dossier", dir)
          mkdirSync(dirname(aside), { recursive: true })
          renameSync(dir, aside)
          reports.push(`${dir} créé hors d'ocmem (OpenCode y charge plugins et config) : retiré (dans ${aside})`)
        }
    // Any event (an editor's temp file renamed over the original names only the temp file) or a
    // sweep: compare every kept entry; a sweep also lists every kept folder for additions.
    if (sweep || names.size) {
      for (const [rel, entry] of this.kept) {
        if (this.light(rel)) continue
        const now = this.stat(rel)
        if (!now || !same(now, entry)) names.add(rel)
        if (sweep && entry.kind === "dir") for (const name of this.list(rel)) names.add(join(rel, name))
      }
      if (sweep) for (const name of this.list("")) names.add(name)
    }
    // Shallowest first: a folder moved to the quarantine takes its content with it.
    for (const rel of [...names].sort((a, b) => a.split(sep).length - b.split(sep).length)) {
      if (!this.watched(rel)) continue
      const report = this.examine(rel)
      if (report) reports.push(report)
    }
    return reports
  }

  stat(rel: string): Seen | undefined {
    try {
      return seen(lstatSync(join(this.home, rel), { bigint: true }))
    } catch {
      return undefined
    }
  }

  examine(rel: string): string | undefined {
    const before = this.kept.get(rel)
    const now = this.stat(rel)
    if (before && now && same(before, now)) return undefined
    if (!before && !now) return undefined
    const current = now ? this.read(rel) : undefined
    if (before && current && current.kind === before.kind && current.hash === before.hash && current.target === before.target) {
      this.kept.set(rel, { ...before, ...current }) // metadata only (chmod, touch, the same bytes)
      return undefined
    }
    if (current?.kind === "dir" && before?.kind === "dir") {
      this.kept.set(rel, { ...before, ...current })
      return undefined
    }
    this.readJournal()
    const chain = this.announced.get(rel)
    if (chain !== undefined && announcedState(chain, before, current, () => current?.bytes ?? readInside(this.home, join(this.home, rel)))) {
      if (current) this.kept.set(rel, current)
      else this.kept.delete(rel)
      this.announced.set(rel, [{ sha256: current?.hash ?? null }]) // later appends start here
      return undefined
    }
    return this.putBack(rel, before, current)
  }

  /** Move what the agent left to the quarantine and restore the kept version. */
  putBack(rel: string, before: Kept | undefined, current: Kept | undefined): string {
    const path = join(this.home, rel)
    let aside = ""
    if (current) {
      aside = join(this.settings.quarantine_dir, new Date(this.now()).toISOString().replace(/[:.]/g, "-"), rel)
      mkdirSync(dirname(aside), { recursive: true })
      renameSync(path, aside)
    }
    const where = aside ? ` (ce qui s'y trouvait est dans ${aside})` : ""
    if (!before) {
      this.forget(rel)
      return `${rel} ajouté hors d'ocmem : retiré${where}`
    }
    mkdirSync(dirname(path), { recursive: true })
    if (before.kind === "dir") {
      mkdirSync(path, { recursive: true })
      this.restoreChildren(rel)
    } else if (before.kind === "link" && before.target !== undefined) {
      symlinkSync(before.target, path)
    } else if (before.bytes) {
      writeFileSync(path, before.bytes, { mode: before.mode })
      chmodSync(path, before.mode)
    } else {
      this.forget(rel)
      return `${rel} ${current ? "modifié" : "supprimé"} hors d'ocmem, sans copie à remettre${where} : lance \`ocmem doctor\``
    }
    const restored = this.read(rel)
    if (restored) this.kept.set(rel, { ...before, ...restored })
    return `${rel} ${current ? "modifié" : "supprimé"} hors d'ocmem : version précédente remise${where}`
  }

  restoreChildren(dir: string): void {
    for (const [rel, entry] of this.kept) {
      if (!rel.startsWith(dir + sep) || dirname(rel) !== dir) continue
      if (this.stat(rel)) continue
      this.putBack(rel, entry, undefined)
    }
  }

  forget(rel: string): void {
    this.kept.delete(rel)
    for (const key of [...this.kept.keys()]) if (key.startsWith(rel + sep)) this.kept.delete(key)
  }
}

/** Project-level config the model could add for the next OpenCode start (reported, not undone). */
export function projectConfig(directory: string): Map<string, bigint> {
  const found = new Map<string, bigint>()
  const look = (path: string, depth: number) => {
    let st: BigIntStats
    try {
      st = lstatSync(path, { bigint: true })
    } catch {
      return
    }
    found.set(path, st.mtimeNs ^ st.size)
    if (st.isDirectory() && depth > 0 && !path.endsWith(sep + "node_modules"))
      for (const name of readdirSync(path)) look(join(path, name), depth - 1)
  }
  for (const name of ["opencode.json", "opencode.jsonc", "config.json"]) look(join(directory, name), 0)
  look(join(directory, ".opencode"), 3)
  return found
}
