import { expect, test } from "bun:test"
import { COLD_START, PATH_FIELDS, SHAPES, type Exposure } from "../ocmem/contract.ts"
import { coldStart, conforms, parsed } from "../ocmem/shapes.ts"

test("a document conforms when every field has its type, nested ones included", () => {
  expect(conforms({ kind: "untrusted_tool", source: "webfetch x" }, SHAPES.Exposure)).toBe(true)
  expect(conforms({ kind: "untrusted_tool" }, SHAPES.Exposure)).toBe(false)
  expect(conforms({ session: "s", user_messages: [], exposures: [{ kind: 1, source: "" }], args: {} }, SHAPES.ToolEnvelope)).toBe(false)
  expect(conforms({ session: "s", user_messages: ["a"], exposures: [], args: {} }, SHAPES.ToolEnvelope)).toBe(true)
  expect(conforms({ session: "s", user_messages: [], exposures: [], args: [] }, SHAPES.ToolEnvelope)).toBe(false)
  expect(conforms(null, SHAPES.Exposure)).toBe(false)
})

test("an answer that is not JSON of its shape is no answer", () => {
  expect(parsed("{", SHAPES.Exposure)).toBeUndefined()
  expect(parsed<Exposure>('{"kind": "k", "source": "s"}', SHAPES.Exposure)).toEqual({ kind: "k", source: "s" })
})

test("the cold-start settings are made absolute for the home, path fields only", () => {
  const settings = coldStart("/h")
  for (const field of PATH_FIELDS) {
    const value = (settings as any)[field]
    for (const path of Array.isArray(value) ? value : [value]) expect(path.startsWith("/h/")).toBe(true)
  }
  expect(settings.trusted_tools).toEqual(COLD_START.trusted_tools)
  expect(conforms(settings, SHAPES.Settings)).toBe(true)
})
