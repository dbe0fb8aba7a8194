/** The plugin's own refusals, before a tool runs: the home's protected files, ocmem's private
 * state and token, and ocmem's writing commands from the model's shell. In the default mode they
 * are a courtesy (clear early refusals); the boundary is the tamper monitor, or the OS in the
 * hardened mode (docs/security.md). */
import { isAbsolute, resolve } from "node:path"
import { AGENT_REFUSED_COMMANDS, TOKEN_FILE_NAME, type Settings } from "./contract.ts"
import { canonical, within } from "./paths.ts"

export const WRITE_TOOLS: ReadonlySet<string> = new Set(["edit", "write", "patch", "multiedit", "apply_patch"])
const READERS = new Set(["read", "glob", "grep", "list"])
const SHELL_WRITE =
  /(^|[^<>&])>{1,2}|\btee\b|\bsed\s+(-[a-z]*i|--in-place)|\bperl\s+-[a-z]*i|\b(cp|mv|rm|rmdir|truncate|dd|chmod|chown|install|ln|rsync|touch|unlink|shred)\b|\bopen\([^)]*['"][wa]|write_text|writeFile/
const ESCAPE = (word: string) => word.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&")
// A global option of ocmem's command line and its value (`--home /h`, `--wait=5`, `--home "a b"`).
const OPTION = String.raw`\s+--?[A-Za-z][\w-]*(?:=\S+|\s+(?:"[^"]*"|'[^']*'|[^\s|;&"'-][^\s|;&]*))?`
/** `ocmem [options] <a command the agent may not run>` in a shell command
 * (sync/ocmem/formats/operations.py): the command word right after ocmem and its options, so a
 * search for « note » is not a note. A courtesy: the command line refuses the agent itself. */
export const OCMEM_WRITE = new RegExp(
  String.raw`(?:^|[\s/;&|(\`"'])(?:ocmem|-m\s+ocmem)(?:${OPTION})*\s+(` +
    AGENT_REFUSED_COMMANDS.map((c) => c.split(" ").map(ESCAPE).join(String.raw`\s+`)).join("|") +
    String.raw`)(?![\w-])`,
)

/** Paths a write tool call would touch, relative paths resolved against the session directory. */
export function writeTargets(args: any, directory: string): string[] {
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

export class Guard {
  private home = ""
  private settingsHome = ""
  private protectedFiles: string[] = []
  private protectedDirs: string[] = []
  private secretFiles: string[] = []
  private stateDir = ""

  apply(settings: Settings): void {
    this.settingsHome = settings.home
    this.home = canonical(settings.home)
    this.protectedFiles = settings.protected_files.map(canonical)
    this.protectedDirs = settings.protected_dirs.map(canonical)
    this.secretFiles = settings.secret_files.map(canonical)
    this.stateDir = canonical(settings.state_dir)
  }

  /** Why the call is refused, or undefined. `targets`: the canonical paths it writes (or reads). */
  refusal(toolName: string, args: any, cwd: string, targets: string[]): string | undefined {
    for (const target of targets) {
      if (this.secretFiles.includes(target) || target.endsWith(TOKEN_FILE_NAME) || within(target, this.stateDir))
        return `refusé : ${target} est l'état privé d'ocmem (le jeton SilverBullet y est) : ni lecture ni écriture`
      if (READERS.has(toolName)) continue
      if (this.protectedFiles.includes(target) || this.protectedDirs.some((d) => within(target, d)))
        return (
          `refusé : ${target} est protégé par ocmem. AGENTS.md, memory/MEMORY.md et skills/ ne changent que par une ` +
          `promotion validée par l'utilisateur ; le journal, les propositions et les notes passent par les outils ` +
          `memory_journal, memory_propose et memory_note.`
        )
    }
    if (READERS.has(toolName) || toolName === "bash") {
      const text = JSON.stringify(args ?? {})
      if (text.includes(".ocmem") || this.secretFiles.some((f) => text.includes(f)) || text.includes(TOKEN_FILE_NAME))
        return "refusé : l'état privé d'ocmem (.ocmem, le jeton SilverBullet) n'est pas pour l'agent"
    }
    if (toolName === "bash" && typeof args?.command === "string") {
      const text: string = args.command
      if (OCMEM_WRITE.test(text))
        return (
          "refusé : les écritures d'ocmem passent par les outils memory_note, memory_journal, memory_propose et " +
          "memory_accept (la promotion demande l'accord de l'utilisateur) ; pull et push sont faits par le plugin"
        )
      const mentionsHome =
        text.includes(this.home) ||
        text.includes(this.settingsHome) ||
        /~\/\.config\/opencode|\$\{?(HOME|XDG_CONFIG_HOME)\}?\/(\.config\/)?opencode/.test(text)
      const relativeInHome =
        within(cwd, this.home) && /\b(AGENTS\.md|MEMORY\.md|SHORT_TERM\.md|journal\.md|pending\.md|SKILL\.md|skills\/|memory\/)/.test(text)
      if ((mentionsHome || relativeInHome) && SHELL_WRITE.test(text))
        return "refusé : cette commande écrirait dans la mémoire protégée d'ocmem ; utilise les outils memory_* à la place"
    }
    return undefined
  }
}
