import { expect, test } from "bun:test"
import { Sessions } from "../ocmem/sessions.ts"

test("a subagent counts towards the session that started it; OpenCode is asked once", async () => {
  const asked: string[] = []
  const sessions = new Sessions(async (id) => {
    asked.push(id)
    return id === "child" ? "root" : undefined
  })
  expect(sessions.rootIfKnown("child")).toBeUndefined()
  expect(await sessions.rootOf("child")).toBe("root")
  expect(await sessions.rootOf("child")).toBe("root")
  expect(asked).toEqual(["child", "root"])
  expect(sessions.rootIfKnown("child")).toBe("root")
  sessions.learn("grandchild", "child")
  expect(sessions.rootIfKnown("grandchild")).toBe("root")
  expect(sessions.state("root")).toBe(sessions.state("root"))
})
