/**
 * ocmem plugin for OpenCode (plugin API V1, OpenCode 1.18.33): a thin shim.
 *
 * It counts tool calls per root session, pulls memory before a root session's first model call,
 * puts validated memory and fenced short-term notes in the system prompt, asks once per session
 * for the `retrospective` skill, pushes after turns that changed the journal or the proposals,
 * and blocks writes to the protected files. Every decision about memory content (caps, formats,
 * provenance, one journal entry per session) is taken by the `ocmem` command it calls.
 *
 * Installed by `ocmem init` as <home>/plugin/ocmem.ts, where <home> is OpenCode's config dir.
 * It never reads, passes or logs the SilverBullet token.
 */
import { spawn } from "node:child_process"
import { realpathSync } from "node:fs"
import { appendFile, readFile } from "node:fs/promises"
import { dirname, isAbsolute, join, resolve, sep } from "node:path"
import { fileURLToPath } from "node:url"
import { tool, type Plugin } from "@opencode-ai/plugin"

// <ocmem:contract>
// Generated from sync/ocmem/contract.py by `python -m ocmem.contract --write plugin/ocmem.ts`: do not edit by hand.
type Settings = {
  version: string
  home: string
  threshold: number
  sync: boolean
  pull_timeout_seconds: number
  protected_files: string[]
  protected_dirs: string[]
  secret_files: string[]
  trusted_tools: string[]
  untrusted_tools: string[]
  retiens: string
  corrections: string
  skill_usage_file: string
  maintenance_marker: string
}
type PromptContext = {
  system: string[]
  warnings: string[]
  journal_written: boolean
}
type ToolEnvelope = {
  session: string
  user_messages: string[]
  untrusted_outputs: string[]
  args: Record<string, unknown>
}
const SHAPES = {
  "Settings": {
    "version": "string",
    "home": "string",
    "threshold": "number",
    "sync": "boolean",
    "pull_timeout_seconds": "number",
    "protected_files": "string[]",
    "protected_dirs": "string[]",
    "secret_files": "string[]",
    "trusted_tools": "string[]",
    "untrusted_tools": "string[]",
    "retiens": "string",
    "corrections": "string",
    "skill_usage_file": "string",
    "maintenance_marker": "string"
  },
  "PromptContext": {
    "system": "string[]",
    "warnings": "string[]",
    "journal_written": "boolean"
  },
  "ToolEnvelope": {
    "session": "string",
    "user_messages": "string[]",
    "untrusted_outputs": "string[]",
    "args": "Record<string, unknown>"
  }
} as const
const PATH_FIELDS = ["protected_files", "protected_dirs", "secret_files", "skill_usage_file"] as const
/** Until `ocmem plugin-config` answers: paths relative to the home. */
const COLD_START: Settings = {
  "version": "0.1.0",
  "home": ".",
  "threshold": 5,
  "sync": false,
  "pull_timeout_seconds": 20.0,
  "protected_files": [
    "AGENTS.md",
    "ocmem.yaml"
  ],
  "protected_dirs": [
    "memory",
    "skills",
    ".ocmem",
    "plugin"
  ],
  "secret_files": [
    ".ocmem/silverbullet.token"
  ],
  "trusted_tools": [
    "bash",
    "edit",
    "glob",
    "grep",
    "list",
    "read",
    "patch",
    "multiedit",
    "apply_patch",
    "skill",
    "task",
    "todoread",
    "todowrite",
    "write",
    "invalid"
  ],
  "untrusted_tools": [
    "webfetch",
    "websearch"
  ],
  "retiens": "\\bretiens\\b|\\bretenir\\b|\\bsouviens[- ]toi\\b|\\bmemorise\\b|\\bn'oublie pas\\b|\\bremember (?:this|that)\\b|\\bkeep in mind\\b",
  "corrections": "(?:(?:^|[\\n.!?;])[ \\t\"«]*(?:(?:ah|oh|mais|euh|bah|ben|hm+|hum|ok|okay|well|uh|um|hey|eh)[ \\t,]+)*(?:(?:non|nope)\\b(?!-)(?![ \\t,.!:;]*(?:merci|thanks|thank[ \\t]+you|problem|probleme|worries|souci|soucis|need|besoin|pas[ \\t]+de[ \\t]+souci|pas[ \\t]+de[ \\t]+probleme|pas[ \\t]+besoin|plus|seulement|idea|idee|such|matter|longer)\\b)[ \\t,.!:;]*[a-z0-9'’]|(?:no|nan|nah)(?:[ \\t]*[,.!:;]|[ \\t]+(?:no|not|don(?:['’] ?| )?t|stop)\\b)(?![ \\t,.!:;]*(?:merci|thanks|thank[ \\t]+you|problem|probleme|worries|souci|soucis|need|besoin|pas[ \\t]+de[ \\t]+souci|pas[ \\t]+de[ \\t]+probleme|pas[ \\t]+besoin|plus|seulement|idea|idee|such|matter|longer)\\b)[ \\t,.!:;]*[a-z0-9'’]|(?:arrete|arretes|arretez|stop|stoppe)(?:[ \\t]*[,!.]|[ \\t]+(?:de|d(?:['’] ?| )?|ca|it|that|doing|changing|touching|editing|deleting|modifying|removing|rewriting|guessing|making|adding)|[ \\t\\r\\n]*(?![\\s\\S]))|(?:erreur|faux|incorrect|wrong)[ \\t]*[,!]|actually,?[ \\t]+(?:no\\b|it(?:['’] ?| )?s|it[ \\t]+is|it[ \\t]+was|it[ \\t]+should|that(?:['’] ?| )?s|that[ \\t]+is)|en[ \\t]+fait,?[ \\t]+non\\b))|(?:(?:^|[\\n.!?;:,\"«»()])[ \\t]*(?:(?!(?:si|s(?:['’] ?| )?il(?![ \\t]+(?:te|vous)[ \\t]+pla)|pourquoi|comment|quand|est-ce|est[ \\t]+ce|qu(?:['’] ?| )?est-ce|quel|quelle|rien|if|whether|unless|why|how|what|what(?:['’] ?| )?s|when|which|do|does|did|can|could|would|should|nothing|something|anything)\\b)[^ \\t\\n.!?;:,\"«»()]+[ \\t]+)*(?:(?:c(?:['’] ?| )?est|c(?:['’] ?| )?etait|ce[ \\t]+n(?:['’] ?| )?est|ce[ \\t]+n(?:['’] ?| )?etait|ca[ \\t]+n(?:['’] ?| )?est)[ \\t]+(?:faux|incorrect|errone|n(?:['’] ?| )?importe[ \\t]+quoi|pas[ \\t]+(?:ca|cela|bon(?![ \\t]+signe)|juste|correct|exact|le[ \\t]+bon|la[ \\t]+bonne|les[ \\t]+bons|les[ \\t]+bonnes)|pas[ \\t]+ce[ \\t]+que|pas[ \\t]+ce[ \\t]+qu(?:['’] ?| )?)|pas[ \\t]+comme[ \\t]+(?:ca|cela)|pas[ \\t]+(?:celui|celle|ceux|celles)(?:-|[ \\t]+)la|(?:est|sont|etait|etaient)[ \\t]+(?:faux|fausse|fausses|incorrecte?s?|errone(?:e|s|es)?)|(?:tu[ \\t]+(?:t(?:['’] ?| )?es|t(?:['’] ?| )?etais|te)[ \\t]+(?:trompe|trompes|plante|plantes|goure|goures|melange)|vous[ \\t]+vous[ \\t]+etes[ \\t]+trompes?|(?:tu[ \\t]+as|t(?:['’] ?| )?as|vous[ \\t]+avez)[ \\t]+(?:tort|tout[ \\t]+casse|casse|tout[ \\t]+efface|efface[ \\t]+mon|supprime[ \\t]+mon|mal[ \\t]+(?:compris|lu|fait)|oublie|fait[ \\t]+(?:une|n(?:['’] ?| )?importe))|(?:tu[ \\t]+n(?:['’] ?| )?as|t(?:['’] ?| )?as|vous[ \\t]+n(?:['’] ?| )?avez)[ \\t]+pas[ \\t]+(?:compris|lu|ecoute|suivi|respecte|fait[ \\t]+ce[ \\t]+que)|tu[ \\t]+m(?:['’] ?| )?as[ \\t]+mal[ \\t]+compris)|(?:je[ \\t]+(?:t(?:['’] ?| )?ai|t(?:['’] ?| )?avais|vous[ \\t]+ai|vous[ \\t]+avais)[ \\t]+(?:dit|demande|precise|explique)|j(?:['’] ?| )?(?:ai|avais)[ \\t]+(?:dit|precise)|j(?:['’] ?| )?avais[ \\t]+demande|je[ \\t]+voulais[ \\t]+dire|je[ \\t]+(?:n(?:['’] ?| )?ai|ne[ \\t]+t(?:['’] ?| )?ai|t(?:['’] ?| )?ai)[ \\t]+jamais[ \\t]+(?:dit|demande)|j(?:['’] ?| )?ai[ \\t]+jamais[ \\t]+(?:dit|demande))|(?:mauvais|mauvaise|mauvaises)[ \\t]+(?:fichier|port|dossier|repertoire|chemin|branche|serveur|conteneur|commande|version|cle|base|table|service|utilisateur|projet|depot|image|reseau|domaine|variable|option|hote|endroit|methode|approche|outil|ligne|fonction|config|configuration|url|adresse|mot[ \\t]+de[ \\t]+passe)|(?:(?:ne[ \\t]+)?fais[ \\t]+pas[ \\t]+(?:ca|cela)|remets[ \\t]+(?:tout[ \\t]+|le[ \\t]+|la[ \\t]+|les[ \\t]+)?comme[ \\t]+(?:avant|c(?:['’] ?| )?etait)|reviens[ \\t]+en[ \\t]+arriere|annule[ \\t]+(?:ca|ta|tes|ce[ \\t]+que[ \\t]+tu)|(?:tu[ \\t]+aurais|t(?:['’] ?| )?aurais|vous[ \\t]+auriez)[ \\t]+(?:pas[ \\t]+)?du|tu[ \\t]+n(?:['’] ?| )?aurais[ \\t]+pas[ \\t]+du|il[ \\t]+aurait[ \\t]+fallu|relis[ \\t]+(?:ma[ \\t]+demande|mon[ \\t]+message|ce[ \\t]+que|la[ \\t]+consigne))|(?:that|this|it|that[ \\t]+one|this[ \\t]+one)(?:(?:['’] ?| )?s|[ \\t]+is|[ \\t]+was)[ \\t]+(?:(?:completely[ \\t]+|totally[ \\t]+|all[ \\t]+|just[ \\t]+)?wrong|incorrect|not[ \\t]+(?:right|correct|true|it|what|how|the[ \\t]+right|the[ \\t]+correct|the[ \\t]+one))|(?:you(?:['’] ?| )?re[ \\t]+wrong|you[ \\t]+are[ \\t]+wrong|you(?:(?:['’] ?| )?ve|[ \\t]+have)?[ \\t]+got[ \\t]+(?:it|that|this)[ \\t]+wrong|(?:is|are|was|were)[ \\t]+(?:wrong|incorrect))|not[ \\t]+(?:like[ \\t]+(?:that|this)|that[ \\t]+way|this[ \\t]+way|that[ \\t]+one|what[ \\t]+i)|you[ \\t]+(?:broke|messed[ \\t]+up|screwed[ \\t]+up|misunderstood|misread|forgot|ignored|deleted[ \\t]+my|overwrote|didn(?:['’] ?| )?t[ \\t]+(?:listen|read|follow|do[ \\t]+what)|did[ \\t]+not[ \\t]+(?:listen|read|follow)|have[ \\t]+broken|(?:['’] ?| )?ve[ \\t]+broken|should[ \\t]+not[ \\t]+have|shouldn(?:['’] ?| )?t[ \\t]+have)|i[ \\t]+(?:said|told[ \\t]+you|already[ \\t]+(?:said|told[ \\t]+you)|asked[ \\t]+you[ \\t]+to|meant|didn(?:['’] ?| )?t[ \\t]+(?:ask|say|want)|never[ \\t]+(?:asked|said|told[ \\t]+you))|wrong[ \\t]+(?:file|port|folder|directory|path|branch|server|container|command|version|key|database|table|service|user|project|repo|repository|image|network|domain|variable|option|host|place|way|approach|tool|one|line|function|method|config|url|address|password)|(?:(?:don(?:['’] ?| )?t|do[ \\t]+not)[ \\t]+do[ \\t]+that|undo[ \\t]+(?:that|this|it|your)|revert[ \\t]+(?:that|this|it|your)|put[ \\t]+it[ \\t]+back|change[ \\t]+it[ \\t]+back))\\b(?![^\\n.!?;:,]*\\?))",
  "skill_usage_file": ".ocmem/skill-usage.jsonl",
  "maintenance_marker": "<!-- ocmem:maintenance -->"
}
// </ocmem:contract>

type SessionState = {
  calls: number
  userMessages: string[]
  untrusted: string[]
  untrustedChars: number
  start?: Promise<void>
  system: string[]
  retrospectiveAsked: boolean
  retrospectiveLoaded: boolean
  maintenance: boolean
  journalWritten: boolean
  memoryChanged: boolean
}

type Run = { code: number; out: string; err: string }

const HOME = dirname(dirname(fileURLToPath(import.meta.url)))
const TOKEN_ENV = "OCMEM_SILVERBULLET_TOKEN"
const MEMORY_TOOLS = new Set([
  "memory_note",
  "memory_forget",
  "memory_search",
  "memory_journal",
  "memory_propose",
  "memory_accept",
])
const WRITE_TOOLS = new Set(["edit", "write", "patch", "multiedit", "apply_patch"])
const UNTRUSTED_KEEP_CHARS = 200_000
const SHELL_WRITE =
  /(^|[^<>&])>{1,2}|\btee\b|\bsed\s+(-[a-z]*i|--in-place)|\bperl\s+-[a-z]*i|\b(cp|mv|rm|rmdir|truncate|dd|chmod|chown|install|ln|rsync|touch|unlink|shred)\b|\bopen\([^)]*['"][wa]|write_text|writeFile/
const OCMEM_WRITE =
  /\b(ocmem|-m\s+ocmem)\b[^|;&]*\b(note|journal\s+add|propose|pending\s+(accept|reject)|init|pull|push|sync|tool|cron)\b/

/** Lowercase without accents, as ocmem compares text. */
function fold(text: string): string {
  return text.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase()
}

function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep)
}

function canonical(path: string): string {
  // Resolve symlinks of the deepest existing ancestor, so a link cannot smuggle a write in.
  // Synchronous on purpose: a few stat calls cost less than an async round trip per hook.
  let head = path
  const tail: string[] = []
  for (;;) {
    try {
      return join(realpathSync(head), ...tail.reverse())
    } catch {
      const parent = dirname(head)
      if (parent === head) return path
      tail.push(head.slice(parent.length + 1))
      head = parent
    }
  }
}

async function command(): Promise<string[]> {
  try {
    const saved = JSON.parse(await readFile(join(HOME, ".ocmem", "plugin.json"), "utf8"))
    if (Array.isArray(saved.command) && saved.command.length > 0) return saved.command
  } catch {
    // not installed by `ocmem init`: fall back to PATH
  }
  return ["ocmem"]
}

/** The cold-start settings made absolute, as `ocmem plugin-config` does for a plain home. */
function coldStart(): Settings {
  const settings: Settings = { ...COLD_START, home: HOME }
  for (const field of PATH_FIELDS) {
    const value = COLD_START[field]
    ;(settings as any)[field] = Array.isArray(value) ? value.map((p) => resolve(HOME, p)) : resolve(HOME, value)
  }
  return settings
}

type Shape = Readonly<Record<string, string>>

/** Whether `value` has every field of `shape` with its type (see sync/ocmem/contract.py). */
function conforms(value: unknown, shape: Shape): boolean {
  if (typeof value !== "object" || value === null) return false
  return Object.entries(shape).every(([key, kind]) => {
    const field = (value as Record<string, unknown>)[key]
    if (kind.endsWith("[]")) return Array.isArray(field) && field.every((item) => typeof item === kind.slice(0, -2))
    if (kind.startsWith("Record<")) return typeof field === "object" && field !== null && !Array.isArray(field)
    return typeof field === kind
  })
}

/** A child's JSON answer, or undefined when it is not JSON of the expected shape. */
function parsed<T>(text: string, shape: Shape): T | undefined {
  try {
    const value: unknown = JSON.parse(text)
    return conforms(value, shape) ? (value as T) : undefined
  } catch {
    return undefined
  }
}

/** Paths a write tool call would touch, relative paths resolved against the session directory. */
function writeTargets(toolName: string, args: any, directory: string): string[] {
  const found: string[] = []
  if (typeof args?.filePath === "string") found.push(args.filePath)
  const patch = args?.patchText ?? args?.patch ?? args?.input
  if (typeof patch === "string") {
    for (const m of patch.matchAll(/^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$/gm))
      found.push((m[1] ?? m[2]).trim())
    for (const m of patch.matchAll(/^(?:\+\+\+|---) (?:[ab]\/)?(.+)$/gm)) if (m[1] !== "/dev/null") found.push(m[1].trim())
  }
  if (Array.isArray(args?.edits)) for (const e of args.edits) if (typeof e?.filePath === "string") found.push(e.filePath)
  return found.map((p) => (isAbsolute(p) ? p : resolve(directory, p)))
}

export const OcmemPlugin: Plugin = async ({ client, directory }) => {
  const cmd = await command()
  const childEnv: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (key !== TOKEN_ENV && value !== undefined) childEnv[key] = value
  childEnv.OCMEM_HOME = HOME

  function ocmem(args: string[], input?: string, timeoutMs = 60_000): Promise<Run> {
    return new Promise((done) => {
      const child = spawn(cmd[0], [...cmd.slice(1), ...args], { env: childEnv, stdio: ["pipe", "pipe", "pipe"] })
      let out = ""
      let err = ""
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
      child.stdout.on("data", (d) => (out += d))
      child.stderr.on("data", (d) => (err += d))
      child.on("error", (e) => {
        clearTimeout(timer)
        done({ code: 127, out, err: String(e) })
      })
      child.on("close", (code, signal) => {
        clearTimeout(timer)
        done({ code: code ?? (signal ? 124 : 1), out, err: signal ? `${err}\narrêté après ${timeoutMs} ms` : err })
      })
      child.stdin.end(input ?? "")
    })
  }

  async function log(level: "info" | "warn" | "error", message: string): Promise<void> {
    await client.app.log({ body: { service: "ocmem", level, message } }).catch(() => undefined)
  }

  async function toast(message: string, variant: "info" | "warning" | "error"): Promise<void> {
    await client.tui.showToast({ body: { title: "ocmem", message, variant } }).catch(() => undefined)
  }

  let settings = coldStart()
  let home = HOME
  let protectedFiles: string[] = []
  let protectedDirs: string[] = []
  let secretFiles: string[] = []
  let trusted = new Set<string>()
  let untrusted = new Set<string>()
  let retiens = /$^/
  function apply(next: Settings): void {
    settings = next
    home = canonical(next.home)
    protectedFiles = next.protected_files.map(canonical)
    protectedDirs = next.protected_dirs.map(canonical)
    secretFiles = next.secret_files.map(canonical)
    trusted = new Set([...next.trusted_tools, ...MEMORY_TOOLS])
    untrusted = new Set(next.untrusted_tools)
    retiens = new RegExp(next.retiens)
  }
  apply(settings) // the defaults already guard the home, before ocmem has answered
  // ocmem's settings arrive without holding up OpenCode's start-up; every hook awaits them.
  const ready = ocmem(["plugin-config"], undefined, 15_000).then(async (loaded) => {
    const answer = loaded.code === 0 ? parsed<Settings>(loaded.out, SHAPES.Settings) : undefined
    if (answer) apply(answer)
    else await log("error", `ocmem plugin-config a échoué (${loaded.code}) : ${(loaded.err || loaded.out).trim()} ; réglages par défaut`)
  })
  if (TOKEN_ENV in process.env)
    await log("warn", `${TOKEN_ENV} est dans l'environnement d'OpenCode, donc visible par l'agent : préfère un fichier (mode 600)`)

  const sessions = new Map<string, SessionState>()
  const parents = new Map<string, string | undefined>()
  const asked = new Set<string>() // `${sessionID}/${messageID}/${proposal}` seen in permission.asked
  let queue: Promise<unknown> = Promise.resolve()
  const pending = new Set<Promise<unknown>>()

  function state(root: string): SessionState {
    let s = sessions.get(root)
    if (!s) {
      s = {
        calls: 0,
        userMessages: [],
        untrusted: [],
        untrustedChars: 0,
        system: [],
        retrospectiveAsked: false,
        retrospectiveLoaded: false,
        maintenance: false,
        journalWritten: false,
        memoryChanged: false,
      }
      sessions.set(root, s)
    }
    return s
  }

  /** The root session of `id`: subagent sessions count towards the session that started them. */
  async function rootOf(id: string): Promise<string> {
    let current = id
    for (let depth = 0; depth < 32; depth++) {
      if (!parents.has(current)) {
        const info = await client.session.get({ path: { id: current } }).catch(() => undefined)
        parents.set(current, (info?.data as any)?.parentID)
      }
      const parent = parents.get(current)
      if (!parent) return current
      current = parent
    }
    return current
  }

  function rootIfKnown(id: string): string | undefined {
    let current = id
    for (let depth = 0; depth < 32; depth++) {
      if (!parents.has(current)) return undefined
      const parent = parents.get(current)
      if (!parent) return current
      current = parent
    }
    return current
  }

  /** Serialised: never two pushes at once, in this process (and ocmem's lock across processes). */
  function enqueue(job: () => Promise<unknown>): Promise<unknown> {
    const next = queue.then(job, job)
    queue = next
    pending.add(next)
    next.finally(() => pending.delete(next))
    return next
  }

  function push(): Promise<unknown> {
    if (!settings.sync) return Promise.resolve()
    return enqueue(async () => {
      const r = await ocmem(["--wait", "30", "push"])
      if (r.code !== 0) {
        await log(r.code === 3 ? "warn" : "error", `ocmem push (${r.code}) : ${(r.err || r.out).trim()}`)
        if (r.code === 3) await toast("Push : un conflit d'édition attend une action dans SilverBullet", "warning")
      }
    })
  }

  async function refreshSystem(root: string, s: SessionState): Promise<string[]> {
    const r = await ocmem(["prompt-context", "--session", root], undefined, 15_000)
    if (r.code !== 0) {
      await log("error", `ocmem prompt-context (${r.code}) : ${r.err.trim()}`)
      return []
    }
    const context = parsed<PromptContext>(r.out, SHAPES.PromptContext)
    if (!context) {
      await log("error", `ocmem prompt-context : réponse illisible (${r.out.slice(0, 200)})`)
      return []
    }
    s.system = context.system
    s.journalWritten ||= context.journal_written
    return context.warnings
  }

  async function startSession(root: string, s: SessionState): Promise<void> {
    if (settings.sync) {
      const started = Date.now()
      const r = await ocmem(["--wait", "5", "pull"], undefined, settings.pull_timeout_seconds * 1000)
      if (r.code !== 0) {
        const why = (r.err || r.out).trim().split("\n")[0]
        await log("warn", `pull au démarrage impossible (${r.code}, ${Date.now() - started} ms) : ${why}`)
        await toast(`Mémoire non synchronisée : ${why}`, "warning")
      }
    }
    const warnings = await refreshSystem(root, s)
    for (const warning of warnings) {
      await log("warn", warning)
      await toast(warning, "warning")
    }
  }

  function guard(toolName: string, args: any, cwd: string, targets: string[]): string | undefined {
    for (const target of targets) {
      if (secretFiles.includes(target) || target.endsWith("silverbullet.token"))
        return `${target} contient le jeton SilverBullet : ni lecture ni écriture`
      if (toolName === "read" || toolName === "glob" || toolName === "grep") continue
      if (protectedFiles.includes(target) || protectedDirs.some((d) => within(target, d)))
        return (
          `${target} est protégé par ocmem. AGENTS.md, memory/MEMORY.md et skills/ ne changent que par une ` +
          `promotion validée par l'utilisateur ; le journal, les propositions et les notes passent par les outils ` +
          `memory_journal, memory_propose et memory_note.`
        )
    }
    if (toolName === "bash" && typeof args?.command === "string") {
      const text: string = args.command
      if (secretFiles.some((f) => text.includes(f)) || text.includes("silverbullet.token"))
        return "la commande touche au jeton SilverBullet : refusé"
      if (OCMEM_WRITE.test(text))
        return (
          "les écritures d'ocmem passent par les outils memory_note, memory_journal, memory_propose et " +
          "memory_accept (la promotion demande l'accord de l'utilisateur) ; pull et push sont faits par le plugin"
        )
      const mentionsHome = text.includes(home) || text.includes(settings.home) || /~\/\.config\/opencode|\$\{?(HOME|XDG_CONFIG_HOME)\}?\/(\.config\/)?opencode/.test(text)
      const relativeInHome = within(cwd, home) && /\b(AGENTS\.md|MEMORY\.md|SHORT_TERM\.md|journal\.md|pending\.md|SKILL\.md|skills\/|memory\/)/.test(text)
      if ((mentionsHome || relativeInHome) && SHELL_WRITE.test(text))
        return "cette commande écrirait dans la mémoire protégée d'ocmem : utilise les outils memory_* à la place"
    }
    return undefined
  }

  function run(name: string, args: Record<string, unknown>, root: string): Promise<Run> {
    const s = state(root)
    const envelope: ToolEnvelope = { session: root, user_messages: s.userMessages, untrusted_outputs: s.untrusted, args }
    return ocmem(["--wait", "10", "tool", name], JSON.stringify(envelope))
  }

  function answer(r: Run): string {
    return r.code === 0 ? r.out.trim() : `REFUSÉ (code ${r.code}) : ${(r.err || r.out).trim().replace(/^ocmem : /, "")}`
  }

  async function memoryTool(name: string, args: Record<string, unknown>, sessionID: string): Promise<string> {
    await ready
    const root = await rootOf(sessionID)
    const r = await run(name, args, root)
    if (r.code === 0) {
      const s = state(root)
      if (name === "memory_journal") s.journalWritten = true
      if (name === "memory_journal" || name === "memory_propose") s.memoryChanged = true
      if (name === "memory_note" || name === "memory_forget" || name === "memory_accept") await refreshSystem(root, s)
    }
    return answer(r)
  }

  const z = tool.schema
  return {
    config: async (cfg: any) => {
      // OpenCode allows any permission it has no rule for; promotion must always ask the human.
      const current = cfg.permission
      const rules = typeof current === "string" ? { "*": current } : typeof current === "object" ? current : {}
      cfg.permission = { ...rules, memory_accept: "ask" }
    },

    event: async ({ event }) => {
      await ready
      // 1.18.33 sends v2 bus events; the V1 type union lacks some of them (permission.asked).
      const type = event.type as string
      const props: any = event.properties
      if (type === "session.created" || type === "session.updated") {
        parents.set(props.info.id, props.info.parentID)
      } else if (type === "permission.asked" && props.permission === "memory_accept") {
        asked.add(`${props.sessionID}/${props.tool?.messageID}/${props.patterns?.[0]}`)
      } else if (type === "session.idle") {
        const root = rootIfKnown(props.sessionID)
        const s = root !== undefined && root === props.sessionID ? sessions.get(root) : undefined
        if (s?.memoryChanged) {
          s.memoryChanged = false
          void push()
        }
      }
    },

    "chat.message": async (input, output) => {
      await ready
      const root = await rootOf(input.sessionID)
      if (root !== input.sessionID) return // a subagent's prompt is not the user speaking
      const s = state(root)
      for (const part of output.parts as any[])
        if (part.type === "text" && !part.synthetic && typeof part.text === "string") {
          s.userMessages.push(part.text)
          if (retiens.test(fold(part.text))) s.retrospectiveAsked = true
          if (part.text.includes(settings.maintenance_marker)) s.maintenance = true // curation runs
        }
      s.start ??= startSession(root, s)
      await s.start
    },

    "experimental.chat.system.transform": async (input, output) => {
      await ready
      if (!input.sessionID) return
      const root = rootIfKnown(input.sessionID)
      if (root !== input.sessionID) return // subagents: no memory blocks, no retrospective
      const s = sessions.get(root)
      if (!s) return
      output.system.push(...s.system)
      const due = s.calls >= settings.threshold || s.retrospectiveAsked
      if (due && !s.retrospectiveLoaded && !s.journalWritten && !s.maintenance)
        output.system.push(
          `ocmem : cette tâche est non triviale (${s.calls} appels d'outils` +
            (s.retrospectiveAsked ? ", et l'utilisateur a dit « retiens ça »" : "") +
            "). Une fois la tâche terminée et avant ta réponse finale, charge le skill `retrospective` " +
            "et applique-le, une seule fois pour cette session.",
        )
    },

    "tool.execute.before": async (input, output) => {
      await ready
      const known = rootIfKnown(input.sessionID)
      const root = known ?? (await rootOf(input.sessionID))
      const s = state(root)
      if (!MEMORY_TOOLS.has(input.tool) && !(input.tool === "skill" && output.args?.name === "retrospective")) s.calls++
      const cwd = directory
      // Write targets are canonicalised (symlinks resolved); reads only need the cheap check.
      const targets = WRITE_TOOLS.has(input.tool)
        ? writeTargets(input.tool, output.args, cwd).map(canonical)
        : input.tool === "read" && typeof output.args?.filePath === "string"
          ? [resolve(cwd, output.args.filePath)]
          : []
      const refusal = guard(input.tool, output.args, cwd, targets)
      if (refusal) throw new Error(`ocmem : ${refusal}`)
    },

    "tool.execute.after": async (input, output) => {
      await ready
      if (input.tool === "skill") {
        const name = output.metadata?.name ?? input.args?.name
        const root = await rootOf(input.sessionID)
        if (name === "retrospective") state(root).retrospectiveLoaded = true
        const line = JSON.stringify({ ts: new Date().toISOString(), skill: name, session: root }) + "\n"
        await appendFile(settings.skill_usage_file, line).catch(() => undefined)
        return
      }
      if (trusted.has(input.tool) && !untrusted.has(input.tool)) return
      const s = state(await rootOf(input.sessionID))
      const text = String(output.output ?? "")
      s.untrusted.push(text)
      s.untrustedChars += text.length
      while (s.untrustedChars > UNTRUSTED_KEEP_CHARS && s.untrusted.length > 1)
        s.untrustedChars -= s.untrusted.shift()!.length
    },

    tool: {
      memory_note: tool({
        description:
          "Ajoute une note de travail à court terme (une ligne, 7 jours par défaut) dans memory/SHORT_TERM.md. " +
          "Si c'est plein, ocmem montre les notes : supprime-en avec memory_forget avant de réessayer.",
        args: { text: z.string().describe("La note, une ligne"), days: z.number().int().optional().describe("Durée de vie en jours") },
        execute: (args, ctx) => memoryTool("memory_note", args, ctx.sessionID),
      }),
      memory_forget: tool({
        description: "Supprime la note de travail n°N (numéros donnés par memory_note quand c'est plein).",
        args: { number: z.number().int().describe("Numéro de la note") },
        execute: (args, ctx) => memoryTool("memory_forget", args, ctx.sessionID),
      }),
      memory_search: tool({
        description: "Cherche dans le journal des épisodes passés : 5 entrées au plus, les plus récentes d'abord.",
        args: {
          query: z.string().optional().describe("Mots-clés"),
          tags: z.array(z.string()).optional().describe("Tags exigés"),
          last: z.number().int().optional().describe("Les N dernières entrées (5 au plus)"),
        },
        execute: (args, ctx) => memoryTool("memory_search", args, ctx.sessionID),
      }),
      memory_journal: tool({
        description:
          "Consigne l'épisode de la tâche dans memory/journal.md (skill retrospective ; une entrée par session, 10 lignes au plus).",
        args: {
          titre: z.string(),
          tags: z.array(z.string()),
          demande: z.string(),
          fait: z.string(),
          piege: z.string(),
          lecon: z.string(),
          resultat: z.enum(["réussi", "partiel", "échec"]),
        },
        execute: (args, ctx) => memoryTool("memory_journal", args, ctx.sessionID),
      }),
      memory_propose: tool({
        description:
          "Propose un fait ou un skill à l'utilisateur (memory/pending.md) : leçon vue dans 2 entrées du journal, ou « retiens ça » de l'utilisateur.",
        args: {
          type: z.enum(["fait", "skill"]),
          titre: z.string(),
          contenu: z.string(),
          sources: z.array(z.string()).describe("Références « journal AAAA-MM-JJ HH:MM »"),
          contradiction: z.string().describe("« aucune » ou ce que la proposition contredit"),
          remplace: z.string().describe("« rien » ou le fait/skill remplacé ou modifié"),
          retiens_ca: z.boolean().optional().describe("L'utilisateur a dit « retiens ça » dans cette session"),
          note_recurrente: z
            .boolean()
            .optional()
            .describe("Fait tiré d'une note que ocmem a signalée comme récurrente (sources peut alors être vide)"),
          name: z.string().optional().describe("Nom du skill proposé"),
          description: z.string().optional().describe("Description du skill, 2 phrases au plus"),
        },
        execute: (args, ctx) => memoryTool("memory_propose", args, ctx.sessionID),
      }),
      memory_accept: tool({
        description:
          "Promeut une proposition validée par l'utilisateur (« valide pending ») : OpenCode lui demande confirmation.",
        args: { id: z.string().describe("Identifiant, ex. P-0003") },
        async execute(args, ctx) {
          await ready
          if (!settings.sync) {
            await ctx.ask({ permission: "memory_accept", patterns: [args.id], always: [], metadata: { id: args.id } })
            const key = `${ctx.sessionID}/${ctx.messageID}/${args.id}`
            for (let i = 0; i < 50 && !asked.has(key); i++) await new Promise((r) => setTimeout(r, 20))
            if (!asked.has(key))
              return (
                "REFUSÉ : OpenCode a autorisé memory_accept sans demander à l'utilisateur (une règle de permission " +
                "« allow » ?) ; la promotion exige son accord : retire cette règle ou promeus avec `ocmem pending accept`."
              )
          }
          return memoryTool("memory_accept", args, ctx.sessionID)
        },
      }),
    },

    dispose: async () => {
      await ready
      await Promise.allSettled([...pending])
      if ([...sessions.values()].some((s) => s.memoryChanged)) {
        for (const s of sessions.values()) s.memoryChanged = false
        await push()
      }
    },
  }
}
