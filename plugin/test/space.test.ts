import { expect, test } from "bun:test"
import { SPACE_TOOLS } from "../ocmem/contract.ts"
import { SPACE_TOOL_NAMES, spaceTools } from "../ocmem/space.ts"

test("every space tool of the contract is declared, with its schema, and run for the calling session", async () => {
  const calls: unknown[] = []
  const tools = spaceTools(async (name, args, sessionID) => {
    calls.push([name, args, sessionID])
    return `ok ${name}`
  })
  expect(Object.keys(tools).sort()).toEqual(Object.keys(SPACE_TOOLS).sort())
  expect([...SPACE_TOOL_NAMES].sort()).toEqual(Object.keys(SPACE_TOOLS).sort())
  expect(tools.space_write.args).toEqual(SPACE_TOOLS.space_write.args)
  expect(Object.values(tools).some((t) => t.permission)).toBe(false) // reading and the inbox need no prompt
  const ctx = { sessionID: "s", messageID: "m", ask: async () => undefined }
  expect(await tools.space_read.execute({ page: "Agents/AGENTS" }, ctx)).toBe("ok space_read")
  expect(calls).toEqual([["space_read", { page: "Agents/AGENTS" }, "s"]])
})
