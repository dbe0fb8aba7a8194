/** The seam between the plugin's core (plugin/ocmem/: everything that decides) and the program
 * that hosts it. The core reaches its host only through `Host`, and the host reaches the core
 * only through `Core`; no core module imports a host's own types. OpenCode 1 (plugin API V1) is
 * adapted by plugin/ocmem.ts, the only user of the core; docs/opencode.md (« OpenCode 2 ») maps
 * each entry below to what OpenCode 2 offers, for the adapter that will be written once an
 * OpenCode 2 package can be installed and run.
 *
 * A tool the model can call is a `ToolSpec` in `Core.tools` (core.ts gathers them; tools.ts
 * builds the memory tools, space.ts the SilverBullet space's, each run by ocmem through the
 * gate). */

export type LogLevel = "info" | "warn" | "error"
export type ToastVariant = "info" | "warning" | "error"

/** What the core asks of its host. */
export interface Host {
  /** The project: the directory the host runs in, and its git worktree ("/" or undefined when
   * the project is not in git). */
  readonly directory: string
  readonly worktree: string | undefined
  /** The session that started `sessionID` (undefined: a root session), when no
   * `sessionStarted` said it. */
  parentOf(sessionID: string): Promise<string | undefined>
  /** The host's log (never fails). */
  log(level: LogLevel, message: string): Promise<void>
  /** A notice the user sees now, if the host has a screen (never fails). */
  toast(message: string, variant: ToastVariant): Promise<void>
}

/** A tool call, as the host hands it over before and after it runs. */
export type ToolCall = { readonly tool: string; readonly sessionID: string }

/** What a tool returned, as the model will read it: the core may rewrite `output` (and
 * `metadata.output`, the host's copy of it) in place. */
export type ToolResult = { output: string; metadata?: any }

/** A permission prompt: the user is asked before a tool does something only they may allow. */
export type PermissionRequest = {
  permission: string
  patterns: string[]
  always: string[]
  metadata: Record<string, unknown>
}

/** A prompt the host has shown the user (its first pattern: what it is about). */
export type PermissionShown = { sessionID: string; messageID: string; permission: string; pattern: string }

/** What a tool of the core receives from the host when the model calls it. */
export type ToolContext = {
  readonly sessionID: string
  readonly messageID: string
  /** Asks the user; resolves once allowed, throws when refused. */
  ask(request: PermissionRequest): Promise<void>
}

/** A tool the core adds to the model's. */
export type ToolSpec = {
  description: string
  /** JSON Schema properties of the arguments: every one is required, an optional one admits null. */
  args: Record<string, unknown>
  /** The permission it asks with `ctx.ask`: the host must ask the user for it every time (no
   * rule of the user's configuration may allow it silently). */
  permission?: string
  /** Its answer, as the model reads it. */
  execute(args: any, ctx: ToolContext): Promise<string>
}

/** What the host tells the core, and asks of it. */
export interface Core {
  /** The tools the core adds, by name. */
  readonly tools: Readonly<Record<string, ToolSpec>>
  /** The MCP servers of the host's configuration (name → entry), once it is loaded. */
  mcpConfigured(servers: unknown): void
  /** A session exists and who started it (undefined: a root session); may be said again. */
  sessionStarted(sessionID: string, parentID: string | undefined): Promise<void>
  /** A turn of the session is over: its last answer is given. */
  sessionIdle(sessionID: string): Promise<void>
  /** A permission prompt reached the user. */
  permissionShown(shown: PermissionShown): Promise<void>
  /** The user's own words in a new message of the session (nothing the host added), awaited
   * before the model is asked. */
  userMessage(sessionID: string, texts: string[]): Promise<void>
  /** The blocks to add to the system prompt of a model request of the session (undefined: a
   * request outside any session). Never called for a title request. */
  systemBlocks(sessionID: string | undefined): Promise<string[]>
  /** Whether any text must be redacted before it reaches the model (`redacted` then does it). */
  redacts(): boolean
  /** `text` without the secrets the model must never see. */
  redacted(text: string): string
  /** Variables to add to the environment of a shell the session starts. */
  shellEnv(sessionID: string | undefined): Record<string, string>
  /** Before a tool runs (`args`: the model's, unchecked). Rejects when it must not run, with an
   * Error whose message says why, for the model: both OpenCode 1 and 2 refuse a call whose
   * before hook throws, so a host passes this promise on as it is (one more await per tool call
   * would cost more than some whole hooks). */
  toolBefore(call: ToolCall, args: any): Promise<void>
  /** After a tool ran, before the model reads `result`. */
  toolAfter(call: ToolCall, args: any, result: ToolResult): Promise<void>
  /** The host is closing: finish what is pending. */
  dispose(): Promise<void>
}
