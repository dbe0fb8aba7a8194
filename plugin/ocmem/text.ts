/** Text as ocmem reads it: folded (sync/ocmem/text/words.py, the same rule), and the token erased. */
import { LIGATURES } from "./contract.ts"

const LIGATURE = new RegExp(`[${Object.keys(LIGATURES).join("")}]`, "g")

/** Lowercase, without accents or ligatures: « Cœur » and "COEUR" are one word. */
export function fold(text: string): string {
  return text
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(LIGATURE, (c) => LIGATURES[c])
}

export const REDACTED = "[jeton SilverBullet masqué par ocmem]"

/** `text` with every secret (and its encodings, as ocmem lists them) replaced by a mark. */
export function redact(text: string, secrets: string[]): string {
  for (const secret of secrets) if (text.includes(secret)) text = text.replaceAll(secret, REDACTED)
  return text
}
