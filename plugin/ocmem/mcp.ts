/** SilverBullet MCP servers in the agent's hands (issue 23, sync/ocmem/bridge/mcpdiscovery.py finds
 * them; docs/security.md). Such a server holds a token for the whole space: through it the model
 * could write Agents/Memory/MEMORY.md in SilverBullet, which the next pull installs as validated
 * memory. OpenCode 1.18.33 names an MCP tool `<server>_<tool>`, both with every character but
 * [A-Za-z0-9_-] made `_` (`wB` in the binary). Before such a tool runs, the plugin lets through
 * only reads (a name that says read/get/list/search…) and writes whose every page lies under this
 * home's `Agents/Inbox/<home-id>/` (ocmem's own pages there excepted: which names pass for one,
 * the gate says, by the rule space_write applies, ocmem.home.pagenames.mimicked_page); any other
 * call, and any tool whose effect its name does not tell, is refused. */
import type { Exposure, Settings } from "./contract.ts"

const sanitize = (name: string) => name.replace(/[^a-zA-Z0-9_-]/g, "_")
// Words of a tool's name (`writePage`, `write-page`, `page_write` → write, page).
const words = (name: string) =>
  name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean)
// Effects that are not a page's: code, commands, queries (SilverBullet's run Space Lua, which can
// write any page). Never let through.
const RUNS = new Set(["query", "queries", "expression", "expr", "code", "run", "exec", "execute", "eval", "evaluate", "invoke", "call", "command", "commands", "lua", "script", "shell", "template", "render", "widget", "plug", "syscall", "reload", "restart", "config", "configure", "settings", "setting", "admin", "auth", "token", "login"])
const WRITES = new Set(["write", "create", "update", "delete", "del", "remove", "rm", "rename", "move", "mv", "append", "prepend", "edit", "put", "patch", "set", "save", "insert", "replace", "upload", "modify", "mkdir", "copy", "cp", "trash", "add", "new", "overwrite", "change", "store", "post", "publish", "import", "sync", "upsert", "apply", "commit", "restore", "archive", "tag", "untag", "link", "attach", "merge", "clear", "truncate", "drop", "purge", "unlink"])
const READS = new Set(["read", "get", "list", "search", "find", "fetch", "show", "view", "describe", "info", "stat", "stats", "exists", "ls", "cat", "grep", "lookup", "browse", "tree", "backlinks", "links", "outline", "count", "download", "open", "load", "recent", "history", "diff", "ping", "version", "status", "resolve", "preview", "metadata", "meta"])
// Arguments that are a page's content, never where it goes (keys lower-cased, separators dropped).
const CONTENT_KEYS = new Set(["content", "contents", "text", "body", "markdown", "md", "data", "value", "snippet", "line", "lines", "message", "oldstring", "newstring", "oldtext", "newtext", "search", "replace", "replacement", "find", "pattern", "query", "insert", "patch", "diff", "chunk", "append", "prepend", "frontmatter", "description", "summary"])
const PATH_KEY = /page|path|name|file|title|note|target|dest|source|src|^from$|^to$|uri|url|ref|location|folder|dir|prefix|^old|^new|base|parent/

export type Effect = "read" | "write" | "unknown"

/** What a tool (its name without the server's prefix) does, by its name only. */
export function effect(tool: string): Effect {
  const w = words(tool)
  if (w.some((x) => RUNS.has(x))) return "unknown"
  if (w.some((x) => WRITES.has(x))) return "write"
  if (w.some((x) => READS.has(x))) return "read"
  return "unknown"
}

/** A page name as SilverBullet would store it: percent-decoding (repeated), a URL's path, `\`
 * as `/`, `.` and `..` resolved, no leading `/` nor `/.fs/`, no `.md`. Undefined when it cannot
 * be one (control characters, `..` above the root, an encoding that never settles). */
export function pagePath(raw: string): string | undefined {
  let s = raw.normalize("NFC").trim()
  for (let i = 0; ; i++) {
    if (i > 5) return undefined
    let decoded: string
    try {
      decoded = decodeURIComponent(s)
    } catch {
      return undefined
    }
    if (decoded === s) break
    s = decoded.normalize("NFC").trim()
  }
  if (/[\u0000-\u001f\u007f]/.test(s)) return undefined
  const url = /^[a-z][a-z0-9+.-]*:\/\/[^/]*(\/[^?#]*)?/i.exec(s)
  if (url) s = url[1] ?? ""
  s = s.replace(/\\/g, "/").replace(/^\/*\.fs\//, "")
  const out: string[] = []
  for (const part of s.split("/")) {
    if (part === "" || part === ".") continue
    if (part === "..") {
      if (!out.length) return undefined
      out.pop()
    } else out.push(part)
  }
  return out.join("/").replace(/\.md$/i, "")
}

/** Every string a write call names as a page (its content excepted): keys that say page, path,
 * name, from, to…, and any other string that looks like a path. */
export function pageArgs(args: unknown, key = ""): string[] {
  const k = key.toLowerCase().replace(/[^a-z0-9]/g, "")
  if (CONTENT_KEYS.has(k)) return []
  if (typeof args === "string") return PATH_KEY.test(k) || /[/\\%]|\.md$/i.test(args) ? [args] : []
  if (Array.isArray(args)) return args.flatMap((item) => pageArgs(item, key))
  if (args && typeof args === "object") return Object.entries(args).flatMap(([sub, v]) => pageArgs(v, sub))
  return []
}

/** For each page (as `pagePath` reads it), the reserved page it passes for, or null: the gate's
 * `mimicked` (sync/ocmem/bridge/gate.py). Throws when ocmem cannot say. */
export type Mimicked = (pages: string[]) => Promise<(string | null)[]>

export class SilverBulletMcp {
  private named = new Set<string>() // found by ocmem in the configs it reads
  private pattern = /$^/
  private secrets: string[] = []
  private inbox = ""
  private configured: Record<string, unknown> = {} // the merged `mcp` section OpenCode hands the config hook
  private known: string[] | undefined // servers(), until the settings or the configuration change

  constructor(private mimicked: Mimicked) {}

  apply(settings: Settings): void {
    this.named = new Set(settings.silverbullet_mcp)
    this.pattern = new RegExp(settings.silverbullet_mcp_pattern, "i")
    this.secrets = settings.redact
    this.inbox = settings.silverbullet_inbox
    this.known = undefined
  }

  /** OpenCode's merged configuration (the `config` hook): its MCP servers, project ones included. */
  learn(mcp: unknown): void {
    if (mcp && typeof mcp === "object") this.configured = mcp as Record<string, unknown>
    this.known = undefined
  }

  /** The SilverBullet servers: ocmem's, and those of OpenCode's configuration the rules tell. */
  servers(): string[] {
    if (this.known) return this.known
    const found = new Set(this.named)
    for (const [name, entry] of Object.entries(this.configured)) {
      const text = JSON.stringify(entry ?? {})
      if (this.pattern.test(name) || this.pattern.test(text) || this.secrets.some((s) => text.includes(s))) found.add(name)
    }
    return (this.known = [...found])
  }

  /** The SilverBullet server `tool` belongs to, and the tool's own name. */
  owner(tool: string): { server: string; name: string } | undefined {
    let best: { server: string; name: string } | undefined
    for (const server of this.servers()) {
      const prefix = sanitize(server) + "_"
      if (tool.startsWith(prefix) && tool.length > prefix.length && (!best || prefix.length > sanitize(best.server).length + 1))
        best = { server, name: tool.slice(prefix.length) }
    }
    return best
  }

  /** Why the call is refused (French, for the model), or undefined. */
  async refusal(tool: string, args: unknown): Promise<string | undefined> {
    const found = this.owner(tool)
    if (!found) return undefined
    const what = `l'outil ${tool} du serveur MCP SilverBullet « ${found.server} »`
    const rule =
      "Dans SilverBullet, l'agent n'écrit que sous " +
      (this.inbox ? `${this.inbox} (hors des pages qu'ocmem y pousse)` : "la boîte de dépôt de ce dossier") +
      " : la mémoire validée (Agents/Memory/), les skills (Agents/Skills/) et Agents/AGENTS.md ne changent que " +
      "par l'utilisateur ; un fait ou une leçon passe par memory_note, memory_journal ou memory_propose."
    const kind = effect(found.name)
    if (kind === "read") return undefined
    if (kind === "unknown") return `refusé : ${what} a un effet qu'ocmem ne sait pas lire à son nom (ni lecture ni écriture de page reconnaissable). ${rule}`
    if (!this.inbox) return `refusé : ${what} écrirait dans SilverBullet, et ce dossier n'a pas encore d'identifiant ocmem (ocmem init) : aucune page ne lui est ouverte. ${rule}`
    const pages = pageArgs(args)
    if (!pages.length) return `refusé : ${what} écrit, mais ocmem ne trouve pas dans ses arguments la page qu'il écrirait. ${rule}`
    const inside: string[] = []
    for (const raw of pages) {
      const page = pagePath(raw)
      const shown = JSON.stringify(raw).slice(0, 200)
      if (page === undefined) return `refusé : ${what} vise ${shown}, qui n'est pas un nom de page lisible. ${rule}`
      if (!page.startsWith(this.inbox) || page.length === this.inbox.length)
        return `refusé : ${what} écrirait ${page} (${shown}), hors de ${this.inbox}. ${rule}`
      inside.push(page)
    }
    let mimics: (string | null)[]
    try {
      mimics = await this.mimicked(inside)
    } catch (e) {
      return `refusé : ${what} : ocmem n'a pas pu vérifier que ${inside.join(", ")} n'est pas l'une de ses pages (${String(e).slice(0, 200)}). ${rule}`
    }
    for (const [i, page] of inside.entries()) {
      const reserved = mimics[i]
      if (reserved !== null) // undefined too: an answer short of a page refuses it
        return `refusé : ${what} écrirait ${page}, qui se lit comme ${reserved ?? "une page d'ocmem"}, une page qu'ocmem pousse lui-même (ou les décisions de l'utilisateur), ou l'une de ses copies de conflit. ${rule}`
    }
    return undefined
  }

  /** What a call of such a server brings into the session: always an exposure, even if
   * ocmem.yaml trusts the tool (its pages are anyone's, its writes land where others read). */
  exposure(tool: string, args: unknown): Exposure | undefined {
    const found = this.owner(tool)
    if (!found) return undefined
    return { kind: "untrusted_tool", source: `${tool} (MCP SilverBullet « ${found.server} ») ${JSON.stringify(args ?? {})}`.slice(0, 300) }
  }
}
