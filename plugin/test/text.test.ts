import { expect, test } from "bun:test"
import { fold, REDACTED, redact } from "../ocmem/text.ts"

test("fold drops accents and spreads ligatures, as ocmem does", () => {
  expect(fold("Cœur ÉTÉ Straße Øre")).toBe("coeur ete strasse ore")
  expect(fold("RETIENS ça")).toBe("retiens ca")
})

test("redact erases every secret it is given", () => {
  expect(redact("a tok123456 b tok123456", ["tok123456"])).toBe(`a ${REDACTED} b ${REDACTED}`)
  expect(redact("rien", ["tok123456"])).toBe("rien")
})
