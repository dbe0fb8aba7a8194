/** SilverBullet MCP servers in the agent's hands (issue 23, sync/ocmem/bridge/mcpdiscovery.py finds
 * them; docs/security.md). Such a server holds a token for the whole space: through it the model
 * could write Agents/Memory/MEMORY.md in SilverBullet, which the next pull installs as validated
 * memory. OpenCode 1.18.33 names an MCP tool `<server>_<tool>`, both with every character but
 * [A-Za-z0-9_-] made `_` (`wB` in the binary). Before such a tool runs, the plugin lets through
 * only reads (a name that says read/get/list/search…) and refuses any tool whose effect its name
 * does not tell; a write, it hands to the gate with the page arguments it picks from the call
 * (what a tool's arguments look like is this module's), and the gate judges the pages by the rule
 * space_write applies (`mcp-write`, sync/ocmem/bridge/spacetools.py): only strictly under this
 * home's `Agents/Inbox/<home-id>/`, never a page ocmem pushes there nor a name passing for one. */
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

/** Why ocmem refuses a write call of such a server (French, for the model), or undefined when it
 * may run: the gate's `mcp-write` (sync/ocmem/bridge/gate.py), given the call's page arguments as
 * they are. Throws when ocmem cannot say. */
export type WriteVerdict = (call: { server: string; tool: string; pages: string[] }) => Promise<string | undefined>

export class SilverBulletMcp {
  private named = new Set<string>() // found by ocmem in the configs it reads
  private pattern = /$^/
  private secrets: string[] = []
  private inbox = "" // named in the plugin's own refusals; the gate applies the rule
  private configured: Record<string, unknown> = {} // the merged `mcp` section OpenCode hands the config hook
  private known: string[] | undefined // servers(), until the settings or the configuration change

  constructor(private verdict: WriteVerdict) {}

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
    const kind = effect(found.name)
    if (kind === "read") return undefined
    const what = `l'outil ${tool} du serveur MCP SilverBullet « ${found.server} »`
    const rule =
      "Dans SilverBullet, l'agent n'écrit que sous " +
      (this.inbox ? `${this.inbox} (hors des pages qu'ocmem y pousse)` : "la boîte de dépôt de ce dossier") +
      " : la mémoire validée (Agents/Memory/), les skills (Agents/Skills/) et Agents/AGENTS.md ne changent que " +
      "par l'utilisateur ; un fait ou une leçon passe par memory_note, memory_journal ou memory_propose."
    if (kind === "unknown") return `refusé : ${what} a un effet qu'ocmem ne sait pas lire à son nom (ni lecture ni écriture de page reconnaissable). ${rule}`
    try {
      return await this.verdict({ server: found.server, tool, pages: pageArgs(args) })
    } catch (e) {
      return `refusé : ${what} : ocmem n'a pas pu juger les pages qu'il écrirait, et rien n'est écrit sans son accord (${String(e).slice(0, 200)}). ${rule}`
    }
  }

  /** What a call of such a server brings into the session: always an exposure, even if
   * ocmem.yaml trusts the tool (its pages are anyone's, its writes land where others read). */
  exposure(tool: string, args: unknown): Exposure | undefined {
    const found = this.owner(tool)
    if (!found) return undefined
    return { kind: "untrusted_tool", source: `${tool} (MCP SilverBullet « ${found.server} ») ${JSON.stringify(args ?? {})}`.slice(0, 300) }
  }
}
