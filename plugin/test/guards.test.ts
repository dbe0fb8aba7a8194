import { expect, test } from "bun:test"
import { coldStart } from "../ocmem/shapes.ts"
import { Guard, OCMEM_WRITE, writeTargets } from "../ocmem/guards.ts"

test("ocmem's writing commands are refused in the shell, after any global option", () => {
  for (const command of [
    "ocmem note 'x'",
    "/home/u/ocmem/.venv/bin/ocmem --home /h note x",
    'ocmem --home "/a b" --wait=5 propose',
    "cd /p && python3 -m ocmem journal add",
    "ocmem pending   accept P-0001",
    "ocmem doctor --fix",
    "(ocmem cron remove)",
  ])
    expect(OCMEM_WRITE.test(command)).toBe(true)
  for (const command of [
    "ocmem journal search note tool",
    "ocmem status",
    "ocmem doctor",
    "ocmem pending reject P-1 --reason x",
    "ocmem cron print",
    "ocmem notes",
    "echo notes",
    // A name the guard cannot read: the command line itself refuses the agent (agentproc).
    'sh -c "/home/u/ocmem/.venv/bin/oc""mem --home /h note x"',
  ])
    expect(OCMEM_WRITE.test(command)).toBe(false)
})

test("every refusal says « refusé » first", () => {
  const guard = new Guard()
  guard.apply(coldStart("/h"))
  const refusals = [
    guard.refusal("write", {}, "/p", ["/h/memory/MEMORY.md"]),
    guard.refusal("read", {}, "/p", ["/h/.ocmem/silverbullet.token"]),
    guard.refusal("bash", { command: "cat /h/.ocmem/log.jsonl" }, "/p", []),
    guard.refusal("bash", { command: "ocmem note x" }, "/p", []),
    guard.refusal("bash", { command: "echo x >> /h/AGENTS.md" }, "/p", []),
  ]
  for (const refusal of refusals) expect(refusal?.startsWith("refusé : ")).toBe(true)
  expect(guard.refusal("read", {}, "/p", ["/h/memory/MEMORY.md"])).toBeUndefined()
  expect(guard.refusal("bash", { command: "ls" }, "/p", [])).toBeUndefined()
})

test("a patch's targets are every file it adds, changes, moves or deletes", () => {
  const patch = "*** Begin Patch\n*** Update File: a.ts\n*** Move to: b.ts\n*** Add File: /abs/c.ts\n*** End Patch"
  expect(writeTargets({ patchText: patch }, "/p")).toEqual(["/p/a.ts", "/p/b.ts", "/abs/c.ts"])
  expect(writeTargets({ filePath: "x" }, "/p")).toEqual(["/p/x"])
})
