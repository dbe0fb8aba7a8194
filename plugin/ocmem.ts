/**
 * ocmem plugin for OpenCode (plugin API V1, OpenCode 1.18.33): a thin shim.
 *
 * It counts tool calls per root session, pulls memory before a root session's first model call,
 * puts validated memory and fenced short-term notes in the main agent's system prompt, asks once
 * per session for the `retrospective` skill (after 5 tool calls, « retiens ça » or a correction),
 * pushes after turns that changed the journal or the proposals, and guards the home. It also
 * notes, for each tool call, whether it brings outside content into the session (the rules ocmem
 * sends in its settings, see sync/ocmem/guards/exposure.py) and hands that exposure to ocmem. Every
 * decision about memory content (caps, formats, quarantine of an exposed session's writes, one
 * journal entry per session) is taken by ocmem, which it reaches through one long-lived process,
 * the gate (`ocmem gate`).
 *
 * Two modes (docs/security.md):
 * - hardened (`ocmem harden`): the home belongs to another Unix user; the gate runs as that user
 *   through one sudoers rule, and once it is open the plugin forbids OpenCode and everything it
 *   starts to gain privileges (no_new_privs): the model's shell can reach neither ocmem nor sudo;
 * - default: the agent's user owns everything, so the plugin watches the whole home (OpenCode's
 *   config dir) and puts back, before the model's next step, any change ocmem did not announce;
 *   it also erases the SilverBullet token from every tool output.
 *
 * Installed by `ocmem init` as <home>/plugin/ocmem.ts, where <home> is OpenCode's config dir.
 * It imports no package at run time (types only), so it loads even when OpenCode could not
 * install `@opencode-ai/plugin` (offline). It keeps the token's encodings in memory to erase
 * them, and never writes or logs them.
 */
import type { Hooks, Plugin } from "@opencode-ai/plugin"
import type { ToolContext } from "@opencode-ai/plugin/tool"
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process"
import { createHash } from "node:crypto"
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  closeSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  watch,
  writeFileSync,
  type BigIntStats,
  type FSWatcher,
} from "node:fs"
import { readFile } from "node:fs/promises"
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path"
import { homedir, tmpdir } from "node:os"
import { fileURLToPath } from "node:url"

// <ocmem:contract>
// Generated from sync/ocmem/plugin/contract.py by `python -m ocmem.plugin.contract --write plugin/ocmem.ts`: do not edit by hand.
type Exposure = {
  kind: string
  source: string
}
type Window = {
  session: string
  start: number
  end: number
  open: boolean
}
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
  state_dir: string
  plugin_command_file: string
  writes_journal: string
  quarantine_dir: string
  hardened: boolean
  redact: string[]
  fetch_commands: string
  path_tokens: string
  file_tokens: string
  untrusted_dirs: string[]
  system_paths: string[]
  trust_project: boolean
  exposure_windows: Window[]
  windows_file: string
}
type PromptContext = {
  system: string[]
  warnings: string[]
  journal_written: boolean
  quarantined: string[]
}
type ToolEnvelope = {
  session: string
  user_messages: string[]
  exposures: Exposure[]
  args: Record<string, unknown>
}
type ProposalSummary = {
  id: string
  kind: string
  title: string
  exposure: string
}
const SHAPES = {
  "Exposure": {
    "kind": "string",
    "source": "string"
  },
  "Window": {
    "session": "string",
    "start": "number",
    "end": "number",
    "open": "boolean"
  },
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
    "maintenance_marker": "string",
    "state_dir": "string",
    "plugin_command_file": "string",
    "writes_journal": "string",
    "quarantine_dir": "string",
    "hardened": "boolean",
    "redact": "string[]",
    "fetch_commands": "string",
    "path_tokens": "string",
    "file_tokens": "string",
    "untrusted_dirs": "string[]",
    "system_paths": "string[]",
    "trust_project": "boolean",
    "exposure_windows": "Window[]",
    "windows_file": "string"
  },
  "PromptContext": {
    "system": "string[]",
    "warnings": "string[]",
    "journal_written": "boolean",
    "quarantined": "string[]"
  },
  "ToolEnvelope": {
    "session": "string",
    "user_messages": "string[]",
    "exposures": "Exposure[]",
    "args": "Record<string, unknown>"
  },
  "ProposalSummary": {
    "id": "string",
    "kind": "string",
    "title": "string",
    "exposure": "string"
  }
} as const
const PATH_FIELDS = ["protected_files", "protected_dirs", "secret_files", "skill_usage_file", "state_dir", "plugin_command_file", "writes_journal", "quarantine_dir", "windows_file"] as const
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
  "maintenance_marker": "<!-- ocmem:maintenance -->",
  "state_dir": ".ocmem",
  "plugin_command_file": ".ocmem/plugin.json",
  "writes_journal": ".ocmem/writes.jsonl",
  "quarantine_dir": ".ocmem/quarantine",
  "hardened": false,
  "redact": [],
  "fetch_commands": "(?:^|[ \\t\\n\\r\\f\\v;&|()`'\\\"=/])(?:(?:curl|wget|wget2|aria2c|axel|lynx|links|elinks|w3m|httpie|xh|nc|ncat|netcat|socat|telnet|ssh|scp|sftp|ftp|tftp|rsync|svn|hg|gh|hub|dig|nslookup|whois|npx|bunx|uvx|pipx|composer|ollama)(?=$|[ \\t\\n\\r\\f\\v;&|()`'\\\"])|(?:git(?:[ \\t\\n\\r\\f\\v]+-[Cc][ \\t\\n\\r\\f\\v]+[^ \\t\\n\\r\\f\\v]+|[ \\t\\n\\r\\f\\v]+--?[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:clone|fetch|pull|ls-remote|submodule|remote|archive|send-email|svn)|(?:npm|pnpm|yarn|bun)(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:install|i|add|ci|view|info|show|x|dlx|create|init|exec|update|upgrade|outdated|audit|search)|(?:pip[0-9.]*|python[0-9.]*[ \\t\\n\\r\\f\\v]+-m[ \\t\\n\\r\\f\\v]+pip)(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:install|download|index|search)|uv(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:pip|add|sync|run|tool|lock)|cargo(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:install|add|search|update|fetch|build|run)|go[ \\t\\n\\r\\f\\v]+(?:get|install|mod[ \\t\\n\\r\\f\\v]+download|run)|(?:apt|apt-get|dnf|yum|apk|pacman|zypper|brew|snap|flatpak|gem|conda|mamba)(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:install|download|source|changelog|info|fetch|search|update|add|-S[A-Za-z]*)|(?:docker|podman|buildah|nerdctl)(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:pull|run|build|search|compose|login)|openssl[ \\t\\n\\r\\f\\v]+s_client)(?=$|[ \\t\\n\\r\\f\\v;&|()`'\\\"])|(?:python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl|ruby|php|lua[0-9.]*|Rscript|osascript|pwsh|powershell|tclsh)(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]+(?:-[A-Za-z]*[ceE]|-r|-p|-|eval|--eval|--print|-command)(?=$|[ \\t\\n\\r\\f\\v;&|()`'\\\"])|(?:python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl|ruby|php|lua[0-9.]*|Rscript|osascript|pwsh|powershell|tclsh)(?:[ \\t\\n\\r\\f\\v]+-[A-Za-z0-9_-]+(?:=[^ \\t\\n\\r\\f\\v]+)?)*[ \\t\\n\\r\\f\\v]*<<)|(?:https?|ftps?|sftp|ssh|git|rsync|s3|gs|wss?)://|/dev/(?:tcp|udp)/",
  "path_tokens": "(?:^|[ \\t\\n\\r\\f\\v'\\\"=:<>|;&(])((?:~|\\$HOME|\\$\\{HOME\\})?/(?!/)[^ \\t\\n\\r\\f\\v'\\\"|;&<>()`$:]*|\\.\\.(?:/[^ \\t\\n\\r\\f\\v'\\\"|;&<>()`$:]*)?(?=$|[ \\t\\n\\r\\f\\v'\\\"|;&<>()]))",
  "file_tokens": "(?:^|[ \\t\\n\\r\\f\\v'\\\"=<>|;&(])([A-Za-z0-9_@+-][^ \\t\\n\\r\\f\\v'\\\"|;&<>()`$=:]*[./][^ \\t\\n\\r\\f\\v'\\\"|;&<>()`$=:]*)",
  "untrusted_dirs": [
    "node_modules",
    "vendor",
    "third_party",
    "third-party",
    "bower_components",
    "site-packages",
    "dist-packages",
    "__pypackages__",
    ".git",
    ".venv",
    "venv",
    ".tox",
    ".cargo",
    ".gradle",
    ".m2",
    "Pods",
    ".terraform"
  ],
  "system_paths": [
    "/dev/null",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/fd/",
    "/bin/",
    "/sbin/",
    "/usr/bin/",
    "/usr/sbin/",
    "/usr/local/bin/"
  ],
  "trust_project": true,
  "exposure_windows": [],
  "windows_file": ".ocmem/windows.json"
}
// </ocmem:contract>

type SessionState = {
  calls: number
  userMessages: string[]
  exposures: Exposure[] // only grows (ocmem keeps the union too)
  exposureKeys: Set<string>
  exposedAt?: number // ms: the start of this session's window (sync/ocmem/home/sessions.py)
  lastActive: number // ms: the end of its window so far
  lastReported: number // ms: when ocmem last heard of this window
  turnOpen: boolean // a turn runs: the window reaches every later moment until it ends
  started: boolean
  start?: Promise<void>
  system: string[]
  retrospectiveAsked: boolean
  corrected: boolean
  retrospectiveLoaded: boolean
  maintenance: boolean
  journalWritten: boolean
  memoryChanged: boolean
  notices: string[] // what the monitor put back, said in the next system prompt
}

type Run = { code: number; out: string; err: string }
// The gate's greeting (sync/ocmem/plugin/gate.py): its version, pid and mode.
type Hello = Record<"version", string> & Record<"pid", number> & Record<"hardened", boolean>
type Gate = { hello?: Hello; failure?: string; request(body: Record<string, unknown>, timeoutMs: number): Promise<Run> }

const HOME = dirname(dirname(fileURLToPath(import.meta.url)))
const TOKEN_ENV = "OCMEM_SILVERBULLET_TOKEN"
const AGENT_ENV = "OCMEM_AGENT_SESSION" // in every shell the model runs (see ocmem.plugin.agentproc)
const MEMORY_TOOLS = new Set([
  "memory_note",
  "memory_forget",
  "memory_search",
  "memory_journal",
  "memory_propose",
  "memory_accept",
])
const WRITE_TOOLS = new Set(["edit", "write", "patch", "multiedit", "apply_patch"])
// Tools that cannot change a file: no tamper check after them (the others, MCP tools included, can).
const READ_ONLY_TOOLS = new Set(["read", "glob", "grep", "list", "webfetch", "websearch", "todoread", "todowrite", "skill", "invalid", ...MEMORY_TOOLS])
const MAX_EXPOSURES = 50 // distinct items kept per session (ocmem caps the same way)
const REPORT_EVERY_MS = 5_000 // an exposed session's window, told to ocmem during a turn
const ASK_SHOWN_MS = 30_000 // longest wait for OpenCode's permission.asked event after an answered ask
const WINDOW_SLACK_MS = 50 // a file's ctime (the kernel's coarse clock) and Date.now() differ by a tick
const KEEP_BYTES = 4 * 1024 * 1024 // larger files are watched by digest only
const REDACTED = "[jeton SilverBullet masqué par ocmem]"
const TITLE_PROMPT = "You are a title generator"
const SHELL_WRITE =
  /(^|[^<>&])>{1,2}|\btee\b|\bsed\s+(-[a-z]*i|--in-place)|\bperl\s+-[a-z]*i|\b(cp|mv|rm|rmdir|truncate|dd|chmod|chown|install|ln|rsync|touch|unlink|shred)\b|\bopen\([^)]*['"][wa]|write_text|writeFile/
const OCMEM_WRITE =
  /\b(ocmem|-m\s+ocmem)\b[^|;&]*\b(note|journal\s+add|propose|pending\s+(accept|reject)|init|harden|gate|tool|cron)\b/
const SHARED_GATE = Symbol.for("ocmem.gate") // one gate per OpenCode process, even if loaded twice
const SHARED_LOCK = Symbol.for("ocmem.locked")
const SHARED_REOPENED = Symbol.for("ocmem.reopened")

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

/** Whether `value` has every field of `shape` with its type (see sync/ocmem/plugin/contract.py). */
function conforms(value: unknown, shape: Shape): boolean {
  if (typeof value !== "object" || value === null) return false
  return Object.entries(shape).every(([key, kind]) => {
    const field = (value as Record<string, unknown>)[key]
    const base = kind.slice(0, -2)
    const nested: Shape | undefined = (SHAPES as Record<string, Shape>)[base]
    if (kind.endsWith("[]") && nested) return Array.isArray(field) && field.every((item) => conforms(item, nested))
    if (kind.endsWith("[]")) return Array.isArray(field) && field.every((item) => typeof item === base)
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

/** Starts `ocmem gate` and talks to it, one JSON object per line (see sync/ocmem/plugin/gate.py). */
function startGate(cmd: string[], env: Record<string, string>): Promise<Gate> {
  return new Promise((opened) => {
    const waiting = new Map<number, (r: Run) => void>()
    let next = 1
    let buffer = ""
    let stderr = ""
    let child: ChildProcessWithoutNullStreams
    const gate: Gate = {
      request(body, timeoutMs) {
        if (gate.failure) return Promise.resolve({ code: 1, out: "", err: `passerelle ocmem indisponible : ${gate.failure}` })
        const id = next++
        return new Promise((done) => {
          const settle = (r: Run) => {
            clearTimeout(timer)
            waiting.delete(id)
            done(r)
          }
          // A pending timer also keeps OpenCode's event loop alive until the answer comes.
          const timer = setTimeout(() => settle({ code: 124, out: "", err: `pas de réponse d'ocmem après ${timeoutMs} ms` }), timeoutMs)
          waiting.set(id, settle)
          child.stdin.write(JSON.stringify({ ...body, id }) + "\n")
        })
      },
    }
    const fail = (why: string) => {
      clearTimeout(greeting)
      if (!gate.failure) gate.failure = why
      for (const answer of [...waiting.values()]) answer({ code: 1, out: "", err: `passerelle ocmem arrêtée : ${why}` })
      opened(gate)
    }
    try {
      child = spawn(cmd[0], [...cmd.slice(1), "gate"], { env, stdio: ["pipe", "pipe", "pipe"] })
    } catch (e) {
      gate.failure = String(e)
      return opened(gate)
    }
    // The gate lives as long as OpenCode: it must never keep OpenCode from exiting (the timers
    // of the greeting and of each request keep the event loop alive while an answer is due).
    child.unref()
    for (const stream of [child.stdin, child.stdout, child.stderr] as any[]) stream.unref?.()
    const greeting = setTimeout(() => fail("pas de salut de la passerelle après 30 s"), 30_000)
    child.stdin.on("error", (e) => fail(`entrée : ${e.message}`)) // EPIPE when the gate died
    child.on("error", (e) => fail(String(e)))
    child.on("exit", (code, signal) => fail((stderr.trim() || `code ${code ?? signal}`).replace(/^ocmem : /, "")))
    child.stderr.on("data", (d) => (stderr = (stderr + d).slice(-4000)))
    child.stdout.on("data", (d) => {
      buffer += d
      let end: number
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, end)
        buffer = buffer.slice(end + 1)
        let message: any
        try {
          message = JSON.parse(line)
        } catch {
          continue
        }
        if (message?.hello) {
          clearTimeout(greeting)
          gate.hello = message.hello
          opened(gate)
        } else if (typeof message?.id === "number") {
          waiting.get(message.id)?.({ code: Number(message.code), out: String(message.out ?? ""), err: String(message.err ?? "") })
        }
      }
    })
  })
}

/** no_new_privs (hardened mode: nothing OpenCode starts can ever sudo or run ocmem as the owner)
 * and not dumpable (no ptrace, no /proc/<pid>/fd or /proc/<pid>/mem for the agent's other
 * processes: the gate's pipe and the plugin's memory stay the plugin's). */
async function lockProcess(noNewPrivs: boolean): Promise<string | undefined> {
  try {
    const ffi: any = await import("bun:" + "ffi")
    for (const lib of ["libc.so.6", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"]) {
      let libc: any
      try {
        libc = ffi.dlopen(lib, { prctl: { args: ["i32", "u64", "u64", "u64", "u64"], returns: "i32" } })
      } catch {
        continue
      }
      const failed = (noNewPrivs && libc.symbols.prctl(38, 1, 0, 0, 0) !== 0) || libc.symbols.prctl(4, 0, 0, 0, 0) !== 0
      libc.close()
      if (failed) return "prctl a échoué"
      if (noNewPrivs && !/NoNewPrivs:\s*1/.test(readFileSync("/proc/self/status", "utf8"))) return "no_new_privs absent"
      return undefined
    }
    return "libc introuvable"
  } catch (e) {
    return String(e)
  }
}

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
type Announcement = { sha256: string | null } | { at: number; size: number; sha256: string }

/** Whether `current` is what the announcements since `before` leave: the last whole digest, or
 * a run of contiguous appends, each as announced, over bytes that were a known state — the file
 * kept, or the whole digest announced just before the run. The run is found from the newest
 * append back, as a writes journal trimmed by ocmem is read again with older appends in it. */
function announcedState(chain: Announcement[], before: Kept | undefined, current: Kept | undefined, bytes: () => Buffer): boolean {
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
class Monitor {
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

  light(rel: string): boolean {
    return rel === "node_modules" || rel.startsWith("node_modules" + sep) // watched by metadata only
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
      const bytes = readFileSync(path)
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
    const fd = openSync(this.settings.writes_journal, "r")
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
          const aside = join(this.settings.quarantine_dir, new Date().toISOString().replace(/[:.]/g, "-"), "hors-du-dossier", dir)
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
    if (chain !== undefined && announcedState(chain, before, current, () => current?.bytes ?? readFileSync(join(this.home, rel)))) {
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
      aside = join(this.settings.quarantine_dir, new Date().toISOString().replace(/[:.]/g, "-"), rel)
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
function projectConfig(directory: string): Map<string, bigint> {
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

let clockOffset: number | undefined
/** This process's clock minus the file system's, in ms: the kernel stamps a file's ctime with
 * its own time, which a process clock moved on purpose (libfaketime) does not follow; 0 on a
 * normal machine (under a second: the kernel's file clock is coarse). Measured once, on a new
 * file in the temp dir. */
function fileClockOffset(): number {
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

function redact(text: string, secrets: string[]): string {
  for (const secret of secrets) if (text.includes(secret)) text = text.replaceAll(secret, REDACTED)
  return text
}

/** Plain JSON Schema tool arguments (OpenCode 1.18.33 takes them as they are, no zod needed). */
const S = {
  str: (description?: string) => ({ type: "string", ...(description && { description }) }),
  int: (description?: string) => ({ type: "integer", ...(description && { description }) }),
  strs: (description?: string) => ({ type: "array", items: { type: "string" }, ...(description && { description }) }),
  oneOf: (values: string[]) => ({ type: "string", enum: values }),
  // Every argument is listed as required: an optional one accepts null.
  opt: (schema: Record<string, unknown>) => ({ ...schema, type: [schema.type as string, "null"] }),
}

export const OcmemPlugin: Plugin = async ({ client, directory, worktree }) => {
  const cmd = await command()
  const childEnv: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (key !== TOKEN_ENV && value !== undefined) childEnv[key] = value
  childEnv.OCMEM_HOME = HOME
  const shared = globalThis as any
  const gateOpened: Promise<Gate> = (shared[SHARED_GATE] ??= startGate(cmd, childEnv))

  async function log(level: "info" | "warn" | "error", message: string): Promise<void> {
    await client.app.log({ body: { service: "ocmem", level, message } }).catch(() => undefined)
  }

  async function toast(message: string, variant: "info" | "warning" | "error"): Promise<void> {
    await client.tui.showToast({ body: { title: "ocmem", message, variant } }).catch(() => undefined)
  }

  let gate: Gate | undefined
  let opened = gateOpened
  async function ocmem(body: Record<string, unknown>, timeoutMs = 60_000): Promise<Run> {
    if (shared[SHARED_GATE] !== opened) gate = await (opened = shared[SHARED_GATE]) // reopened by a twin
    // Default mode: a gate that stopped is opened again, at most once every 30 s. (In the
    // hardened mode OpenCode can no longer run sudo: it takes a restart of OpenCode.)
    if (gate?.failure && !gate.hello?.hardened && Date.now() - (shared[SHARED_REOPENED] ?? 0) > 30_000) {
      shared[SHARED_REOPENED] = Date.now()
      await log("warn", `passerelle ocmem arrêtée (${gate.failure}) : réouverture`)
      gate = await (opened = shared[SHARED_GATE] = startGate(cmd, childEnv))
    }
    return gate ? gate.request(body, timeoutMs) : { code: 1, out: "", err: "passerelle ocmem non démarrée" }
  }

  let settings = coldStart()
  let home = HOME
  let protectedFiles: string[] = []
  let protectedDirs: string[] = []
  let secretFiles: string[] = []
  let stateDir = ""
  let trusted = new Set<string>()
  let untrusted = new Set<string>()
  let retiens = /$^/
  let corrections = /$^/
  let fetching = /$^/
  let pathTokens = /$^/g
  let fileTokens = /$^/g
  let untrustedDirs = new Set<string>()
  let quarantinedFiles: string[] = [] // memory files holding quarantined items (prompt-context)
  // The project: OpenCode's directory, and its git worktree (a non-git project's is "/").
  const projects = [...new Set([directory, ...(worktree && worktree !== "/" ? [worktree] : [])].map(canonical))]
  let monitor: Monitor | undefined
  // The windows of other OpenCode processes' exposed sessions, as ocmem's index last said
  // (sync/ocmem/home/sessions.py) and when it was read: a file changed after that moment may come
  // from a window opened since, so the index is read again before the file is trusted.
  let windows: Window[] = []
  let windowsReadAt = 0
  let windowsStat = ""
  function apply(next: Settings): void {
    settings = next
    home = canonical(next.home)
    protectedFiles = next.protected_files.map(canonical)
    protectedDirs = next.protected_dirs.map(canonical)
    secretFiles = next.secret_files.map(canonical)
    stateDir = canonical(next.state_dir)
    trusted = new Set([...next.trusted_tools, ...MEMORY_TOOLS])
    untrusted = new Set(next.untrusted_tools)
    retiens = new RegExp(next.retiens)
    corrections = new RegExp(next.corrections)
    fetching = new RegExp(next.fetch_commands)
    pathTokens = new RegExp(next.path_tokens, "g")
    fileTokens = new RegExp(next.file_tokens, "g")
    untrustedDirs = new Set(next.untrusted_dirs)
  }
  apply(settings) // the defaults already guard the home, before ocmem has answered
  let project = new Map<string, bigint>()
  // ocmem's settings arrive without holding up OpenCode's start-up; every hook awaits them.
  const ready = (async () => {
    gate = await opened
    if (!gate.hello) {
      await log("error", `passerelle ocmem fermée : ${gate.failure} ; la mémoire est indisponible`)
      await toast(`ocmem indisponible : ${gate.failure}`, "error")
      return
    }
    const hardened = gate.hello.hardened
    if (!shared[SHARED_LOCK]) {
      shared[SHARED_LOCK] = true
      const why = await lockProcess(hardened)
      if (why && hardened) {
        await log("error", `mode durci : impossible d'interdire les gains de privilège à OpenCode (${why})`)
        await toast(`mode durci incomplet : ${why}`, "error")
      }
    }
    const asked = Date.now()
    const loaded = await ocmem({ op: "plugin-config" }, 15_000)
    const answer = loaded.code === 0 ? parsed<Settings>(loaded.out, SHAPES.Settings) : undefined
    if (answer) {
      apply(answer)
      windows = answer.exposure_windows // the index as it was when the request left
      windowsReadAt = asked
    }
    else await log("error", `ocmem plugin-config a échoué (${loaded.code}) : ${(loaded.err || loaded.out).trim()} ; réglages par défaut`)
    if (!settings.hardened) {
      monitor = new Monitor(home, settings)
      try {
        monitor.start()
      } catch (e) {
        monitor = undefined
        await log("error", `surveillance du dossier ${home} impossible : ${e}`)
      }
    }
    if (!within(canonical(directory), home)) project = projectConfig(directory)
  })()
  if (TOKEN_ENV in process.env)
    await log("warn", `${TOKEN_ENV} est dans l'environnement d'OpenCode, donc visible par l'agent : préfère un fichier (mode 600)`)

  const sessions = new Map<string, SessionState>()
  const parents = new Map<string, string | undefined>()
  const asked = new Set<string>() // `${sessionID}/${messageID}/${proposal}` seen in permission.asked
  const askWaiters = new Map<string, Array<() => void>>()
  /** Whether OpenCode showed the user the permission prompt `key` (its permission.asked event),
   * waiting for that event up to `timeoutMs`: events reach plugins asynchronously, a loaded
   * machine delivers them late. */
  function askShown(key: string, timeoutMs: number): Promise<boolean> {
    if (asked.has(key)) return Promise.resolve(true)
    return new Promise((done) => {
      const seen = () => {
        clearTimeout(timer)
        done(true)
      }
      const timer = setTimeout(() => {
        askWaiters.set(key, (askWaiters.get(key) ?? []).filter((w) => w !== seen))
        done(false)
      }, timeoutMs)
      askWaiters.set(key, [...(askWaiters.get(key) ?? []), seen])
    })
  }
  let queue: Promise<unknown> = Promise.resolve()
  const pending = new Set<Promise<unknown>>()

  function state(root: string): SessionState {
    let s = sessions.get(root)
    if (!s) {
      s = {
        calls: 0,
        userMessages: [],
        exposures: [],
        exposureKeys: new Set(),
        lastActive: 0,
        lastReported: 0,
        turnOpen: false,
        started: false,
        system: [],
        retrospectiveAsked: false,
        corrected: false,
        retrospectiveLoaded: false,
        maintenance: false,
        journalWritten: false,
        memoryChanged: false,
        notices: [],
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
      const r = await ocmem({ op: "push", wait: 30, timeout: 120 }, 130_000)
      if (r.code !== 0) {
        await log(r.code === 3 ? "warn" : "error", `ocmem push (${r.code}) : ${(r.err || r.out).trim()}`)
        if (r.code === 3) await toast("Push : un conflit d'édition attend une action dans SilverBullet", "warning")
      }
    })
  }

  async function refreshSystem(root: string, s: SessionState): Promise<string[] | undefined> {
    const r = await ocmem({ op: "prompt-context", session: root }, 15_000)
    if (r.code !== 0) {
      await log("error", `ocmem prompt-context (${r.code}) : ${r.err.trim()}`)
      return undefined
    }
    const context = parsed<PromptContext>(r.out, SHAPES.PromptContext)
    if (!context) {
      await log("error", `ocmem prompt-context : réponse illisible (${r.out.slice(0, 200)})`)
      return undefined
    }
    s.system = context.system
    s.journalWritten ||= context.journal_written
    quarantinedFiles = context.quarantined.map(canonical)
    return context.warnings
  }

  /** Pull, then the memory blocks. Not cached when it fails: the next message tries again. */
  async function startSession(root: string, s: SessionState): Promise<void> {
    if (settings.sync) {
      const started = Date.now()
      const timeout = settings.pull_timeout_seconds
      const r = await ocmem({ op: "pull", wait: 5, timeout }, timeout * 1000 + 5_000)
      if (r.code !== 0) {
        const why = (r.err || r.out).trim().split("\n")[0]
        await log("warn", `pull au démarrage impossible (${r.code}, ${Date.now() - started} ms) : ${why}`)
        await toast(`Mémoire non synchronisée : ${why}`, "warning")
      }
    }
    const warnings = await refreshSystem(root, s)
    if (warnings === undefined) return
    s.started = true
    for (const warning of warnings) {
      await log("warn", warning)
      await toast(warning, "warning")
    }
  }

  /** Tamper check: put back what moved, tell the user now and the model with `tell`. */
  async function watchHome(sweep: boolean): Promise<string[]> {
    let reports: string[] = []
    try {
      if (monitor) reports = await monitor.check(sweep)
    } catch (e) {
      await log("error", `surveillance d'ocmem : ${e}`)
    }
    if (sweep) {
      const now = projectConfig(directory)
      for (const [path, mark] of now)
        if (project.get(path) !== mark && !within(canonical(directory), home))
          reports.push(`${path} ajouté ou modifié dans le projet : OpenCode le chargera au prochain démarrage, vérifie-le`)
      project = now
    }
    for (const report of reports) await log("warn", `ocmem : ${report}`)
    if (reports.length > 8) reports.splice(8, reports.length, `… et ${reports.length - 8} autre(s) (journal d'OpenCode)`)
    if (reports.length) await toast(reports.join("\n"), "warning")
    return reports
  }

  function guard(toolName: string, args: any, cwd: string, targets: string[]): string | undefined {
    for (const target of targets) {
      if (secretFiles.includes(target) || target.endsWith("silverbullet.token") || within(target, stateDir))
        return `refusé : ${target} est l'état privé d'ocmem (le jeton SilverBullet y est) : ni lecture ni écriture`
      if (toolName === "read" || toolName === "glob" || toolName === "grep" || toolName === "list") continue
      if (protectedFiles.includes(target) || protectedDirs.some((d) => within(target, d)))
        return (
          `refusé : ${target} est protégé par ocmem. AGENTS.md, memory/MEMORY.md et skills/ ne changent que par une ` +
          `promotion validée par l'utilisateur ; le journal, les propositions et les notes passent par les outils ` +
          `memory_journal, memory_propose et memory_note.`
        )
    }
    if (toolName === "grep" || toolName === "glob" || toolName === "list" || toolName === "bash") {
      const text = JSON.stringify(args ?? {})
      if (text.includes(".ocmem") || secretFiles.some((f) => text.includes(f)) || text.includes("silverbullet.token"))
        return "refusé : l'état privé d'ocmem (.ocmem, le jeton SilverBullet) n'est pas pour l'agent"
    }
    if (toolName === "bash" && typeof args?.command === "string") {
      const text: string = args.command
      if (OCMEM_WRITE.test(text))
        return (
          "refusé : les écritures d'ocmem passent par les outils memory_note, memory_journal, memory_propose et " +
          "memory_accept (la promotion demande l'accord de l'utilisateur) ; pull et push sont faits par le plugin"
        )
      const mentionsHome = text.includes(home) || text.includes(settings.home) || /~\/\.config\/opencode|\$\{?(HOME|XDG_CONFIG_HOME)\}?\/(\.config\/)?opencode/.test(text)
      const relativeInHome = within(cwd, home) && /\b(AGENTS\.md|MEMORY\.md|SHORT_TERM\.md|journal\.md|pending\.md|SKILL\.md|skills\/|memory\/)/.test(text)
      if ((mentionsHome || relativeInHome) && SHELL_WRITE.test(text))
        return "refusé : cette commande écrirait dans la mémoire protégée d'ocmem ; utilise les outils memory_* à la place"
    }
    return undefined
  }

  // --- session taint (sync/ocmem/guards/exposure.py holds the rules; docs/security.md) -------------

  function readWindows(force: boolean): void {
    const started = Date.now()
    let mark = ""
    try {
      const st = statSync(settings.windows_file, { bigint: true })
      mark = `${st.ino}/${st.size}/${st.mtimeNs}/${st.ctimeNs}`
    } catch {
      mark = "absent"
    }
    if (force || mark !== windowsStat) {
      try {
        const index = JSON.parse(readFileSync(settings.windows_file, "utf8"))
        if (Array.isArray(index?.windows)) windows = index.windows.filter((w: unknown) => conforms(w, SHAPES.Window))
      } catch {
        // absent (no session was ever exposed) or being replaced: the settings' copy stands
      }
      windowsStat = mark
    }
    windowsReadAt = started
  }

  /** Whether a project file changed (its ctime) inside another exposed session's window. */
  function changedWhileExposed(path: string, root: string): string | undefined {
    let ctime: number
    try {
      ctime = statSync(path).ctimeMs + fileClockOffset()
    } catch {
      return undefined
    }
    const inside = (start: number, end: number, open: boolean) =>
      ctime >= start - WINDOW_SLACK_MS && (open || ctime <= end + WINDOW_SLACK_MS)
    for (const [id, s] of sessions)
      if (id !== root && s.exposedAt !== undefined && inside(s.exposedAt, s.lastActive, s.turnOpen)) return id
    if (ctime >= windowsReadAt - WINDOW_SLACK_MS) readWindows(false)
    let hit = windows.find((w) => w.session !== root && inside(w.start, w.end, w.open))
    // An open window is a session still running when the index was read: it may have closed.
    if (hit?.open) {
      readWindows(true)
      hit = windows.find((w) => w.session !== root && inside(w.start, w.end, w.open))
    }
    return hit?.session
  }

  /** What reading `path` brings: outside the project and the home, third-party folders,
   * quarantined memory, an untrusted project, a file changed during an exposed session. */
  function pathExposure(path: string, file: boolean, root: string): Exposure | undefined {
    for (const q of quarantinedFiles) if (within(q, path)) return { kind: "quarantined_memory", source: q }
    const project = projects.find((d) => within(path, d))
    const base = within(path, home) ? home : project
    if (base === undefined) {
      for (const system of settings.system_paths)
        if (system.endsWith("/") ? path.startsWith(system) || path + "/" === system : path === system) return undefined
      return { kind: "outside_read", source: path }
    }
    const rel = relative(base, path)
    if (rel && rel.split(sep).some((part) => untrustedDirs.has(part))) return { kind: "third_party", source: path }
    if (base !== home && !settings.trust_project) return { kind: "project_read", source: path }
    if (file) {
      const session = changedWhileExposed(path, root)
      if (session) return { kind: "tainted_file", source: `${path} (session ${session})` }
    }
    return undefined
  }

  function expand(token: string, cwd: string): string {
    const user = homedir()
    if (token.startsWith("~/") || token === "~") return join(user, token.slice(1))
    const bare = token.replace(/^\$\{HOME\}|^\$HOME/, user)
    return resolve(cwd, bare)
  }

  /** The exposures one tool call brings into the session (none for a memory tool). */
  function exposuresOf(tool: string, args: any, cwd: string, read: string | undefined, root: string): Exposure[] {
    if (MEMORY_TOOLS.has(tool)) return []
    if (!trusted.has(tool) || untrusted.has(tool)) {
      const what = tool === "webfetch" ? args?.url : tool === "websearch" ? args?.query : JSON.stringify(args ?? {})
      return [{ kind: "untrusted_tool", source: `${tool} ${String(what ?? "")}`.slice(0, 300) }]
    }
    if (tool === "read") {
      const e = read === undefined ? undefined : pathExposure(read, true, root)
      return e ? [e] : []
    }
    if (tool === "grep" || tool === "glob" || tool === "list") {
      const e = pathExposure(typeof args?.path === "string" ? resolve(cwd, args.path) : cwd, false, root)
      return e ? [e] : []
    }
    if (tool !== "bash" || typeof args?.command !== "string") return []
    const command: string = args.command
    const found: Exposure[] = []
    if (fetching.test(command)) found.push({ kind: "shell_fetch", source: command.slice(0, 300) })
    if (!within(cwd, home) && !projects.some((d) => within(cwd, d))) found.push({ kind: "outside_read", source: `${cwd} (dossier de la commande)` })
    for (const m of command.matchAll(pathTokens)) {
      const e = pathExposure(expand(m[1], cwd), true, root)
      if (e) found.push(e)
    }
    for (const m of command.matchAll(fileTokens)) {
      const e = pathExposure(resolve(cwd, m[1]), true, root)
      if (e) found.push(e)
    }
    return found
  }

  /** Adds the call's exposures to its root session; new ones are recorded by ocmem before the
   * call runs (awaited by tool.execute.before): its window is in ocmem's index before the tool
   * can write a file or return outside content, so no other session, in this OpenCode or
   * another, can read what it brings as trusted. */
  function expose(root: string, s: SessionState, found: Exposure[]): Promise<unknown> {
    const fresh: Exposure[] = []
    for (const e of found) {
      const key = `${e.kind}\u0000${e.source}`
      if (s.exposureKeys.has(key) || s.exposures.length >= MAX_EXPOSURES) continue
      s.exposureKeys.add(key)
      s.exposures.push(e)
      fresh.push(e)
    }
    if (!fresh.length) return Promise.resolve()
    s.exposedAt ??= Date.now()
    s.lastActive = Date.now()
    s.turnOpen = true
    return report(root, s, fresh)
  }

  /** Tells ocmem what entered the session and that its window reaches now, open while the turn
   * runs (kept in `pending`: dispose waits for it, so a window is not cut short by OpenCode
   * exiting). */
  function report(root: string, s: SessionState, exposures: Exposure[]): Promise<unknown> {
    s.lastReported = Date.now()
    const sent = ocmem({ op: "exposure", session: root, exposures, open: s.turnOpen }, 30_000).then(async (r) => {
      if (r.code !== 0) await log("warn", `ocmem exposure (${r.code}) : ${(r.err || r.out).trim()}`)
    })
    pending.add(sent)
    sent.finally(() => pending.delete(sent))
    return sent
  }

  function answer(r: Run): string {
    return r.code === 0 ? r.out.trim() : `REFUSÉ (code ${r.code}) : ${(r.err || r.out).trim().replace(/^ocmem : /, "")}`
  }

  async function memoryTool(name: string, args: Record<string, unknown>, sessionID: string): Promise<string> {
    await ready
    const root = await rootOf(sessionID)
    const s = state(root)
    const envelope: ToolEnvelope = { session: root, user_messages: s.userMessages, exposures: s.exposures, args }
    const r = await ocmem({ op: "tool", name, envelope })
    if (r.code === 0) {
      if (name === "memory_journal") s.journalWritten = true
      if (name === "memory_journal" || name === "memory_propose") s.memoryChanged = true
      if (name === "memory_note" || name === "memory_forget" || name === "memory_accept") await refreshSystem(root, s)
    }
    return answer(r)
  }

  const tools = {
    memory_note: {
      description:
        "Ajoute une note de travail à court terme (une ligne, 7 jours par défaut) dans memory/SHORT_TERM.md. " +
        "Si c'est plein, ocmem montre les notes : supprime-en avec memory_forget avant de réessayer.",
      args: { text: S.str("La note, une ligne"), days: S.opt(S.int("Durée de vie en jours (null : 7)")) },
      execute: (args: any, ctx: ToolContext) => memoryTool("memory_note", args, ctx.sessionID),
    },
    memory_forget: {
      description: "Supprime la note de travail n°N (numéros donnés par memory_note quand c'est plein).",
      args: { number: S.int("Numéro de la note") },
      execute: (args: any, ctx: ToolContext) => memoryTool("memory_forget", args, ctx.sessionID),
    },
    memory_search: {
      description:
        "Cherche dans le journal des épisodes passés : 5 entrées au plus, les plus pertinentes d'abord. " +
        "Avec recent: N (20 au plus), les titres seuls des N dernières entrées, pour survoler le travail récent.",
      args: {
        query: S.opt(S.str("Mots-clés")),
        tags: S.opt(S.strs("Tags exigés")),
        last: S.opt(S.int("Les N dernières entrées (5 au plus)")),
        recent: S.opt(S.int("Titres seuls des N dernières entrées (20 au plus)")),
      },
      execute: (args: any, ctx: ToolContext) => memoryTool("memory_search", args, ctx.sessionID),
    },
    memory_journal: {
      description:
        "Consigne l'épisode de la tâche dans memory/journal.md (skill retrospective ; une entrée par session, 10 lignes au plus).",
      args: {
        titre: S.str(),
        tags: S.strs(),
        demande: S.str(),
        fait: S.str(),
        piege: S.str(),
        lecon: S.str(),
        resultat: S.oneOf(["réussi", "partiel", "échec"]),
      },
      execute: (args: any, ctx: ToolContext) => memoryTool("memory_journal", args, ctx.sessionID),
    },
    memory_propose: {
      description:
        "Propose un fait ou un skill à l'utilisateur (memory/pending.md) : leçon vue dans 2 entrées du journal, ou « retiens ça » de l'utilisateur.",
      args: {
        type: S.oneOf(["fait", "skill"]),
        titre: S.str(),
        contenu: S.str(),
        sources: S.strs("Références « journal AAAA-MM-JJ HH:MM »"),
        contradiction: S.str("« aucune » ou ce que la proposition contredit"),
        remplace: S.str("« rien » ou le fait/skill remplacé ou modifié"),
        retiens_ca: S.opt({ type: "boolean", description: "L'utilisateur a dit « retiens ça » dans cette session" }),
        note_recurrente: S.opt({
          type: "boolean",
          description: "Fait tiré d'une note qu'ocmem a signalée comme récurrente (sources peut alors être vide)",
        }),
        name: S.opt(S.str("Nom du skill proposé")),
        description: S.opt(S.str("Description du skill, 2 phrases au plus")),
      },
      execute: (args: any, ctx: ToolContext) => memoryTool("memory_propose", args, ctx.sessionID),
    },
    memory_accept: {
      description:
        "Promeut une proposition validée par l'utilisateur (« valide pending ») : OpenCode lui demande confirmation.",
      args: { id: S.str("Identifiant, ex. P-0003") },
      async execute(args: any, ctx: ToolContext) {
        await ready
        if (!settings.sync && !settings.hardened) {
          // What the human must see before saying yes: above all, an exposed session's proposal.
          const r = await ocmem({ op: "proposal", proposal: String(args.id) }, 15_000)
          const shown = r.code === 0 ? parsed<ProposalSummary>(r.out, SHAPES.ProposalSummary) : undefined
          const patterns = [String(args.id)]
          if (shown?.exposure) patterns.push(`⚠ exposée : ${shown.exposure}`)
          const metadata = { id: args.id, titre: shown?.title ?? "", exposition: shown?.exposure ?? "" }
          await ctx.ask({ permission: "memory_accept", patterns, always: [], metadata })
          if (!(await askShown(`${ctx.sessionID}/${ctx.messageID}/${args.id}`, ASK_SHOWN_MS)))
            return (
              `REFUSÉ : OpenCode a autorisé memory_accept sans montrer la demande à l'utilisateur (aucune demande ` +
              `de permission en ${ASK_SHOWN_MS / 1000} s : une règle de permission « allow » ?) ; la promotion exige ` +
              "son accord : retire cette règle, ou promeus avec `ocmem pending accept` dans un terminal."
            )
        }
        return memoryTool("memory_accept", args, ctx.sessionID)
      },
    },
  }

  const hooks: Hooks = {
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
        const key = `${props.sessionID}/${props.tool?.messageID}/${props.patterns?.[0]}`
        asked.add(key)
        for (const waiter of askWaiters.get(key) ?? []) waiter()
        askWaiters.delete(key)
      } else if (type === "session.idle") {
        const root = rootIfKnown(props.sessionID)
        const s = root !== undefined && root === props.sessionID ? sessions.get(root) : undefined
        if (s?.exposedAt !== undefined) {
          s.lastActive = Date.now()
          s.turnOpen = false
          void report(root!, s, []) // the turn is over: the window closes now
        }
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
          const folded = fold(part.text)
          if (retiens.test(folded)) s.retrospectiveAsked = true
          if (corrections.test(folded)) s.retrospectiveAsked = s.corrected = true
          if (part.text.includes(settings.maintenance_marker)) s.maintenance = true // curation runs
        }
      if (!s.started) {
        s.start ??= startSession(root, s).finally(() => (s.start = undefined))
        await s.start
      }
    },

    "experimental.chat.system.transform": async (input, output) => {
      await ready
      // The title request gets nothing of ocmem: memory is for the main agent only.
      if (output.system.some((text) => text.includes(TITLE_PROMPT))) return
      const reports = await watchHome(true)
      if (!input.sessionID) return
      const root = rootIfKnown(input.sessionID)
      const s = root === undefined ? undefined : sessions.get(root)
      if (s && reports.length) s.notices.push(...reports)
      if (root !== input.sessionID || !s) return // subagents: no memory blocks, no retrospective
      output.system.push(...s.system)
      if (s.notices.length) {
        output.system.push(
          "ocmem : changements faits hors d'ocmem depuis ta dernière étape (ne recommence pas) :\n- " +
            s.notices.splice(0).join("\n- "),
        )
      }
      const due = s.calls >= settings.threshold || s.retrospectiveAsked
      if (due && !s.retrospectiveLoaded && !s.journalWritten && !s.maintenance) {
        const why = s.corrected ? ", et l'utilisateur t'a corrigé" : s.retrospectiveAsked ? ", et l'utilisateur a dit « retiens ça »" : ""
        output.system.push(
          `ocmem : cette tâche est non triviale (${s.calls} appels d'outils${why}). Une fois la tâche terminée ` +
            "et avant ta réponse finale, charge le skill `retrospective` et applique-le, une seule fois pour cette session.",
        )
      }
    },

    "experimental.chat.messages.transform": async (_input, output) => {
      if (!settings.redact.length) return
      // A last pass before each request: no part of the history carries the token.
      for (const message of output.messages)
        for (const part of message.parts as any[]) {
          if (typeof part.text === "string") part.text = redact(part.text, settings.redact)
          const st = part.state
          if (st && typeof st.output === "string") st.output = redact(st.output, settings.redact)
          if (st?.input) {
            const input = JSON.stringify(st.input)
            if (settings.redact.some((secret) => input.includes(secret))) st.input = JSON.parse(redact(input, settings.redact))
          }
        }
    },

    "shell.env": async (input, output) => {
      output.env[AGENT_ENV] = input.sessionID ?? "shell"
    },

    "tool.execute.before": async (input, output) => {
      await ready
      const known = rootIfKnown(input.sessionID)
      const root = known ?? (await rootOf(input.sessionID))
      const s = state(root)
      if (!MEMORY_TOOLS.has(input.tool) && !(input.tool === "skill" && output.args?.name === "retrospective")) s.calls++
      const cwd = typeof output.args?.workdir === "string" ? resolve(directory, output.args.workdir) : directory
      // Write targets are canonicalised (symlinks resolved); reads only need the cheap check.
      const targets = WRITE_TOOLS.has(input.tool)
        ? writeTargets(input.tool, output.args, cwd).map(canonical)
        : input.tool === "read" && typeof output.args?.filePath === "string"
          ? [canonical(resolve(cwd, output.args.filePath))]
          : []
      const refusal = guard(input.tool, output.args, cwd, targets)
      if (refusal) throw new Error(`ocmem : ${refusal}`)
      // Exposed from the call on (erring on the side of exposure: even if the tool then fails).
      if (s.exposures.length < MAX_EXPOSURES) {
        const read = input.tool === "read" ? targets[0] : undefined
        const found = exposuresOf(input.tool, output.args, cwd, read, root)
        if (found.length) await expose(root, s, found)
      }
      if (s.exposedAt !== undefined) {
        s.lastActive = Date.now()
        if (!s.turnOpen) {
          s.turnOpen = true // a new turn of an exposed session: open again, before the call runs
          await report(root, s, [])
        }
      }
    },

    "tool.execute.after": async (input, output) => {
      await ready
      if (settings.redact.length && typeof output.output === "string") {
        output.output = redact(output.output, settings.redact)
        if (typeof output.metadata?.output === "string") output.metadata.output = redact(output.metadata.output, settings.redact)
      }
      if (monitor && !READ_ONLY_TOOLS.has(input.tool)) {
        const reports = await watchHome(false)
        if (reports.length)
          output.output =
            `${output.output ?? ""}\n\nocmem : cette action a modifié des fichiers protégés, remis en état ` +
            `(les changements passent par les outils memory_* ou par l'utilisateur) :\n- ${reports.join("\n- ")}`
      }
      if (input.tool === "skill") {
        const name = output.metadata?.name ?? input.args?.name
        const root = await rootOf(input.sessionID)
        if (name === "retrospective") state(root).retrospectiveLoaded = true
        void ocmem({ op: "skill-used", skill: String(name), session: root }, 5_000)
        return
      }
      // An exposed session's window lasts until its last call has ended (files it wrote).
      const root = rootIfKnown(input.sessionID)
      const s = root === undefined ? undefined : sessions.get(root)
      if (s?.exposedAt !== undefined) {
        s.lastActive = Date.now()
        // Now and then during a long turn too: a killed OpenCode reports nothing at its end.
        if (s.lastActive - s.lastReported > REPORT_EVERY_MS) void report(root!, s, [])
      }
    },

    tool: tools as unknown as Hooks["tool"],

    dispose: async () => {
      await ready
      for (const [root, s] of sessions)
        if (s.exposedAt !== undefined) {
          s.turnOpen = false
          void report(root, s, [])
        }
      await Promise.allSettled([...pending])
      if ([...sessions.values()].some((s) => s.memoryChanged)) {
        for (const s of sessions.values()) s.memoryChanged = false
        await push()
      }
      monitor?.stop()
    },
  }
  return hooks
}
