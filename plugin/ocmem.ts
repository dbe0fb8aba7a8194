/**
 * ocmem plugin for OpenCode 1 (plugin API V1, checked on 1.18.33): the V1 adapter of the plugin's
 * core (plugin/ocmem/core.ts), which knows its host only through plugin/ocmem/host.ts. This file
 * maps OpenCode 1's hooks and events to that interface, and nothing else: what ocmem does is the
 * core's (docs/opencode.md: the hooks used, when OpenCode calls them, and their OpenCode 2
 * equivalents).
 *
 * Installed by `ocmem init` as <home>/plugin/ocmem.ts with its parts in <home>/plugin/ocmem/
 * (OpenCode loads only the top-level files of plugin/), where <home> is OpenCode's config dir.
 * It imports no package at run time (types only), so it loads even when OpenCode could not
 * install `@opencode-ai/plugin` (offline). Only the plugin function is exported: OpenCode calls
 * every export of this file as a plugin (an OpenCode 2 entry, `{ id, setup }`, would be one; none
 * is exported until it can be run).
 */
import type { Hooks, Plugin } from "@opencode-ai/plugin"
import { dirname } from "node:path"
import { fileURLToPath } from "node:url"
import { startCore } from "./ocmem/core.ts"
import type { Host, ToolContext } from "./ocmem/host.ts"

const HOME = dirname(dirname(fileURLToPath(import.meta.url)))
const TITLE_PROMPT = "You are a title generator" // OpenCode 1's title request: no memory there

export const OcmemPlugin: Plugin = async ({ client, directory, worktree }) => {
  const host: Host = {
    directory,
    worktree,
    async parentOf(id) {
      const info = await client.session.get({ path: { id } }).catch(() => undefined)
      return (info?.data as any)?.parentID
    },
    async log(level, message) {
      await client.app.log({ body: { service: "ocmem", level, message } }).catch(() => undefined)
    },
    async toast(message, variant) {
      await client.tui.showToast({ body: { title: "ocmem", message, variant } }).catch(() => undefined)
    },
  }
  const core = await startCore(host, HOME)
  // OpenCode 1 allows any permission it has no rule for: each one the core's tools ask is set to
  // « ask » (a `deny` of the user's would be overridden: these must reach the user).
  const permissions = Object.values(core.tools).flatMap((spec) => (spec.permission ? [spec.permission] : []))
  const tools: Record<string, unknown> = {}
  for (const [name, spec] of Object.entries(core.tools))
    tools[name] = { description: spec.description, args: spec.args, execute: (args: any, ctx: ToolContext) => spec.execute(args, ctx) }

  const hooks: Hooks = {
    config: async (cfg: any) => {
      const current = cfg.permission
      const rules = typeof current === "string" ? { "*": current } : typeof current === "object" ? current : {}
      cfg.permission = { ...rules }
      for (const permission of permissions) cfg.permission[permission] = "ask"
      core.mcpConfigured(cfg.mcp) // the merged `mcp` section: every server OpenCode starts, project ones included
    },

    // 1.18.33 sends v2 bus events (`properties`), not awaited; the V1 type union lacks some of
    // them (permission.asked).
    event: async ({ event }) => {
      const type = event.type as string
      const props: any = event.properties
      if (type === "session.created" || type === "session.updated") await core.sessionStarted(props.info.id, props.info.parentID)
      else if (type === "permission.asked")
        await core.permissionShown({ sessionID: props.sessionID, messageID: props.tool?.messageID, permission: props.permission, pattern: props.patterns?.[0] })
      else if (type === "session.idle") await core.sessionIdle(props.sessionID)
    },

    "chat.message": async (input, output) => {
      const texts: string[] = []
      for (const part of output.parts as any[]) if (part.type === "text" && !part.synthetic && typeof part.text === "string") texts.push(part.text)
      await core.userMessage(input.sessionID, texts)
    },

    "experimental.chat.system.transform": async (input, output) => {
      if (output.system.some((text) => text.includes(TITLE_PROMPT))) return
      output.system.push(...(await core.systemBlocks(input.sessionID)))
    },

    "experimental.chat.messages.transform": async (_input, output) => {
      if (!core.redacts()) return
      // A last pass before each request: no part of the history carries a secret.
      for (const message of output.messages)
        for (const part of message.parts as any[]) {
          if (typeof part.text === "string") part.text = core.redacted(part.text)
          const st = part.state
          if (st && typeof st.output === "string") st.output = core.redacted(st.output)
          if (st?.input) {
            const input = JSON.stringify(st.input)
            const redacted = core.redacted(input)
            if (redacted !== input) st.input = JSON.parse(redacted)
          }
        }
    },

    "shell.env": async (input, output) => {
      Object.assign(output.env, core.shellEnv(input.sessionID))
    },

    // Passed on as they are (no await of our own: each costs more than some hooks). A refusal
    // rejects: the tool does not run, the model reads why, the session goes on.
    "tool.execute.before": (input, output) => core.toolBefore(input, output.args),

    "tool.execute.after": (input, output) => core.toolAfter(input, input.args, output),

    tool: tools as Hooks["tool"], // JSON Schema arguments, not Zod (docs/opencode.md §4)

    dispose: () => core.dispose(),
  }
  return hooks
}
