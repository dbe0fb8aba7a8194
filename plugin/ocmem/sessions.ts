/** What the plugin knows of each root session (subagents count towards the session that started
 * them): its calls, the user's words, where it has been, its turn, its retrospective. */
import type { Exposure } from "./contract.ts"

export type SessionState = {
  calls: number
  userMessages: string[]
  exposures: Exposure[] // only grows (ocmem keeps the union too)
  exposureKeys: Set<string>
  exposedAt?: number // ms: the start of this session's window (sync/ocmem/home/sessions.py)
  lastActive: number // ms: the end of its window so far
  lastReported: number // ms: when ocmem last heard of this window
  turnOpen: boolean // a turn runs: the window reaches every later moment until it ends
  started: boolean
  start?: Promise<void>
  system: string[]
  retrospectiveAsked: boolean
  corrected: boolean
  retrospectiveLoaded: boolean
  maintenance: boolean
  journalWritten: boolean
  memoryChanged: boolean
  notices: string[] // what the monitor put back, said in the next system prompt
}

export function newSession(): SessionState {
  return {
    calls: 0,
    userMessages: [],
    exposures: [],
    exposureKeys: new Set(),
    lastActive: 0,
    lastReported: 0,
    turnOpen: false,
    started: false,
    system: [],
    retrospectiveAsked: false,
    corrected: false,
    retrospectiveLoaded: false,
    maintenance: false,
    journalWritten: false,
    memoryChanged: false,
    notices: [],
  }
}

/** The sessions of this OpenCode and how they nest; `parentOf` asks OpenCode when an event did
 * not say. */
export class Sessions {
  readonly states = new Map<string, SessionState>()
  readonly parents = new Map<string, string | undefined>()

  constructor(private readonly parentOf: (id: string) => Promise<string | undefined>) {}

  state(root: string): SessionState {
    let s = this.states.get(root)
    if (!s) this.states.set(root, (s = newSession()))
    return s
  }

  learn(id: string, parent: string | undefined): void {
    this.parents.set(id, parent)
  }

  /** The root session of `id`. */
  async rootOf(id: string): Promise<string> {
    let current = id
    for (let depth = 0; depth < 32; depth++) {
      if (!this.parents.has(current)) this.parents.set(current, await this.parentOf(current))
      const parent = this.parents.get(current)
      if (!parent) return current
      current = parent
    }
    return current
  }

  /** The root session of `id` when every step up is known (no question to OpenCode). */
  rootIfKnown(id: string): string | undefined {
    let current = id
    for (let depth = 0; depth < 32; depth++) {
      if (!this.parents.has(current)) return undefined
      const parent = this.parents.get(current)
      if (!parent) return current
      current = parent
    }
    return current
  }
}
