import { expect, test } from "bun:test"
import { TOOLS } from "../ocmem/contract.ts"
import { Asks, memoryTools, type ToolRunner } from "../ocmem/tools.ts"

function runner(overrides: Partial<ToolRunner> = {}): ToolRunner & { calls: string[] } {
  const calls: string[] = []
  return {
    calls,
    async run(name) {
      calls.push(name)
      return `ok ${name}`
    },
    async asksToPromote() {
      return true
    },
    async proposal(id) {
      return { id, kind: "fait", title: "T", exposure: "", replaces: "" }
    },
    asks: new Asks(),
    askShownMs: 50,
    ...overrides,
  }
}

const ctx = (ask: (request?: any) => Promise<void>) => ({ sessionID: "s", messageID: "m", ask }) as any

test("a prompt shown after the answer still counts: the wait follows its event", async () => {
  const asks = new Asks()
  const shown = asks.wasShown("k", 1000)
  setTimeout(() => asks.shown("k"), 20)
  expect(await shown).toBe(true)
  expect(await asks.wasShown("k", 0)).toBe(true)
  expect(await asks.wasShown("never", 20)).toBe(false)
})

test("every memory tool of the contract is declared, with its schema", () => {
  const tools = memoryTools(runner())
  expect(Object.keys(tools).sort()).toEqual(Object.keys(TOOLS).sort())
  expect(tools.memory_journal.args).toEqual(TOOLS.memory_journal.args)
})

test("a promotion runs only once the user was shown the prompt", async () => {
  const r = runner()
  const tools = memoryTools(r)
  const refused = await tools.memory_accept.execute({ id: "P-0001" }, ctx(async () => {}))
  expect(refused.startsWith("REFUSÉ")).toBe(true)
  expect(r.calls).toEqual([])
  const accepted = await tools.memory_accept.execute(
    { id: "P-0001" },
    ctx(async () => r.asks.shown("s/m/P-0001")),
  )
  expect(accepted).toBe("ok memory_accept")
})

test("with SilverBullet or in the hardened mode, ocmem itself answers (it refuses)", async () => {
  const r = runner({ asksToPromote: async () => false })
  expect(await memoryTools(r).memory_accept.execute({ id: "P-0001" }, ctx(async () => {}))).toBe("ok memory_accept")
})

test("the promotion prompt shows the fact a proposal replaces, next to it", async () => {
  let asked: any
  const r = runner({
    proposal: async (id) => ({ id, kind: "fait", title: "Port SSH", exposure: "", replaces: "Le port SSH est 2222." }),
  })
  await memoryTools(r).memory_accept.execute(
    { id: "P-0002" },
    ctx(async (request) => {
      asked = request
    }),
  )
  expect(asked.patterns).toContain("remplace : « Le port SSH est 2222. »")
  expect(asked.metadata.remplace).toBe("Le port SSH est 2222.")
})
