/** The memory tools the model calls (their schemas: sync/ocmem/formats/operations.py, generated
 * into the contract); each runs in ocmem, through the gate. Promotion asks the user first. */
import { TOOLS, type ProposalSummary, type ToolName } from "./contract.ts"
import type { ToolContext, ToolSpec } from "./host.ts"

export const ASK_SHOWN_MS = 30_000 // longest wait for the host's word that an answered ask was shown
export const PROMOTION = "memory_accept" // the permission a promotion asks the user for

/** The permission prompts the host showed (OpenCode 1: its permission.asked events), by
 * `${sessionID}/${messageID}/${proposal}`: events reach plugins asynchronously, a loaded machine
 * delivers them late, so a promotion waits for its own (up to a bound). */
export class Asks {
  private readonly seen = new Set<string>()
  private readonly waiters = new Map<string, Array<() => void>>()

  shown(key: string): void {
    this.seen.add(key)
    for (const waiter of this.waiters.get(key) ?? []) waiter()
    this.waiters.delete(key)
  }

  /** Whether prompt `key` was shown, waiting for it up to `timeoutMs`. */
  wasShown(key: string, timeoutMs: number): Promise<boolean> {
    if (this.seen.has(key)) return Promise.resolve(true)
    return new Promise((done) => {
      const arrived = () => {
        clearTimeout(timer)
        done(true)
      }
      const timer = setTimeout(() => {
        this.waiters.set(key, (this.waiters.get(key) ?? []).filter((w) => w !== arrived))
        done(false)
      }, timeoutMs)
      this.waiters.set(key, [...(this.waiters.get(key) ?? []), arrived])
    })
  }
}

export type ToolRunner = {
  /** The tool run by ocmem for the session: its answer as the model reads it. */
  run(name: ToolName, args: Record<string, unknown>, sessionID: string): Promise<string>
  /** Whether promotion goes through OpenCode's permission prompt here (not with SilverBullet,
   * where it happens there, nor in the hardened mode, where the agent never promotes). */
  asksToPromote(): Promise<boolean>
  /** What the promotion prompt shows of a proposal. */
  proposal(id: string): Promise<ProposalSummary | undefined>
  asks: Asks
  askShownMs?: number
}

export function memoryTools(runner: ToolRunner): Record<ToolName, ToolSpec> {
  const tools = {} as Record<ToolName, ToolSpec>
  for (const name of Object.keys(TOOLS) as ToolName[]) {
    tools[name] = {
      description: TOOLS[name].description,
      args: TOOLS[name].args,
      execute: (args: any, ctx: ToolContext) => runner.run(name, args, ctx.sessionID),
    }
  }
  tools.memory_accept.permission = PROMOTION
  tools.memory_accept.execute = async (args: any, ctx: ToolContext) => {
    if (await runner.asksToPromote()) {
      // What the human must see before saying yes: above all, an exposed session's proposal.
      const shown = await runner.proposal(String(args.id))
      const patterns = [String(args.id)]
      if (shown?.exposure) patterns.push(`⚠ exposée : ${shown.exposure}`)
      if (shown?.replaces) patterns.push(`remplace : « ${shown.replaces} »`)
      const metadata = {
        id: args.id,
        titre: shown?.title ?? "",
        exposition: shown?.exposure ?? "",
        remplace: shown?.replaces ?? "",
      }
      await ctx.ask({ permission: PROMOTION, patterns, always: [], metadata })
      const wait = runner.askShownMs ?? ASK_SHOWN_MS
      if (!(await runner.asks.wasShown(`${ctx.sessionID}/${ctx.messageID}/${args.id}`, wait)))
        return (
          `REFUSÉ : OpenCode a autorisé memory_accept sans montrer la demande à l'utilisateur (aucune demande ` +
          `de permission en ${wait / 1000} s : une règle de permission « allow » ?) ; la promotion exige ` +
          "son accord : retire cette règle, ou promeus avec `ocmem pending accept` dans un terminal."
        )
    }
    return runner.run("memory_accept", args, ctx.sessionID)
  }
  return tools
}
