/** The shapes of ocmem's answers, checked at run time (the types are generated from
 * sync/ocmem/bridge/contract.py, which applies the same rule in `problems`). */
import { resolve } from "node:path"
import { COLD_START, PATH_FIELDS, SHAPES, type Settings } from "./contract.ts"

export type Shape = Readonly<Record<string, string>>

/** Whether `value` has every field of `shape` with its type. */
export function conforms(value: unknown, shape: Shape): boolean {
  if (typeof value !== "object" || value === null) return false
  return Object.entries(shape).every(([key, kind]) => {
    const field = (value as Record<string, unknown>)[key]
    const base = kind.slice(0, -2)
    const nested: Shape | undefined = (SHAPES as Record<string, Shape>)[base]
    if (kind.endsWith("[]") && nested) return Array.isArray(field) && field.every((item) => conforms(item, nested))
    if (kind.endsWith("[]")) return Array.isArray(field) && field.every((item) => typeof item === base)
    if (kind.startsWith("Record<")) return typeof field === "object" && field !== null && !Array.isArray(field)
    return typeof field === kind
  })
}

/** A child's JSON answer, or undefined when it is not JSON of the expected shape. */
export function parsed<T>(text: string, shape: Shape): T | undefined {
  try {
    const value: unknown = JSON.parse(text)
    return conforms(value, shape) ? (value as T) : undefined
  } catch {
    return undefined
  }
}

/** The cold-start settings made absolute for `home`, as `ocmem plugin-config` does. */
export function coldStart(home: string): Settings {
  const settings: Settings = { ...COLD_START, home }
  for (const field of PATH_FIELDS) {
    const value = COLD_START[field]
    ;(settings as any)[field] = Array.isArray(value) ? value.map((p) => resolve(home, p)) : resolve(home, value)
  }
  return settings
}
