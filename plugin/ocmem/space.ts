/** The human's SilverBullet space for the model: read any page, list and search them, write only
 * under this home's Agents/Inbox/<id>/ (their schemas: sync/ocmem/formats/operations.py,
 * generated into the contract). Each is answered by ocmem through the gate, which alone reads the
 * token and applies the policy (sync/ocmem/bridge/spacetools.py); its answer says what the call
 * brings into the session, recorded before the model reads it (core.ts). */
import { SPACE_TOOLS, type SpaceToolName } from "./contract.ts"
import type { ToolContext, ToolSpec } from "./host.ts"

export const SPACE_TOOL_NAMES: ReadonlySet<string> = new Set(Object.keys(SPACE_TOOLS))

/** The tool run by ocmem for the session: its answer as the model reads it. */
export type SpaceRunner = (name: SpaceToolName, args: Record<string, unknown>, sessionID: string) => Promise<string>

export function spaceTools(run: SpaceRunner): Record<SpaceToolName, ToolSpec> {
  const tools = {} as Record<SpaceToolName, ToolSpec>
  for (const name of Object.keys(SPACE_TOOLS) as SpaceToolName[])
    tools[name] = {
      description: SPACE_TOOLS[name].description,
      args: SPACE_TOOLS[name].args,
      execute: (args: any, ctx: ToolContext) => run(name, args ?? {}, ctx.sessionID),
    }
  return tools
}
