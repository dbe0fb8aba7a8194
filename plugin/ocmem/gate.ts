/** The plugin's one door into ocmem: the gate, one long-lived `ocmem gate` per OpenCode process,
 * spoken to one JSON object per line (sync/ocmem/bridge/gate.py). */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { readInside } from "./nofollow.ts"

export type Run = { code: number; out: string; err: string }
// The gate's greeting: its version, pid and mode.
export type Hello = Record<"version", string> & Record<"pid", number> & Record<"hardened", boolean>
export type Gate = { hello?: Hello; failure?: string; request(body: Record<string, unknown>, timeoutMs: number): Promise<Run> }

/** How `ocmem init` said to start ocmem (<home>/.ocmem/plugin.json), else `ocmem` from PATH. */
export async function gateCommand(home: string): Promise<string[]> {
  try {
    // never through a link below the home (ocmem/nofollow.ts): a linked plugin.json is not ocmem's
    const saved = JSON.parse(readInside(home, join(home, ".ocmem", "plugin.json")).toString("utf8"))
    if (Array.isArray(saved.command) && saved.command.length > 0) return saved.command
  } catch {
    // not installed by `ocmem init`, or a link (`ocmem doctor` names it): fall back to PATH
  }
  return ["ocmem"]
}

/** Starts `ocmem gate` and talks to it; resolves once it greets (or fails: `failure` says why). */
export function startGate(cmd: string[], env: Record<string, string>): Promise<Gate> {
  return new Promise((opened) => {
    const waiting = new Map<number, (r: Run) => void>()
    let next = 1
    let buffer = ""
    let stderr = ""
    let child: ChildProcessWithoutNullStreams
    const gate: Gate = {
      request(body, timeoutMs) {
        if (gate.failure) return Promise.resolve({ code: 1, out: "", err: `passerelle ocmem indisponible : ${gate.failure}` })
        const id = next++
        return new Promise((done) => {
          const settle = (r: Run) => {
            clearTimeout(timer)
            waiting.delete(id)
            done(r)
          }
          // A pending timer also keeps OpenCode's event loop alive until the answer comes.
          const timer = setTimeout(() => settle({ code: 124, out: "", err: `pas de réponse d'ocmem après ${timeoutMs} ms` }), timeoutMs)
          waiting.set(id, settle)
          child.stdin.write(JSON.stringify({ ...body, id }) + "\n")
        })
      },
    }
    const fail = (why: string) => {
      clearTimeout(greeting)
      if (!gate.failure) gate.failure = why
      for (const answer of [...waiting.values()]) answer({ code: 1, out: "", err: `passerelle ocmem arrêtée : ${why}` })
      opened(gate)
    }
    try {
      child = spawn(cmd[0], [...cmd.slice(1), "gate"], { env, stdio: ["pipe", "pipe", "pipe"] })
    } catch (e) {
      gate.failure = String(e)
      return opened(gate)
    }
    // The gate lives as long as OpenCode: it must never keep OpenCode from exiting (the timers
    // of the greeting and of each request keep the event loop alive while an answer is due).
    child.unref()
    for (const stream of [child.stdin, child.stdout, child.stderr] as any[]) stream.unref?.()
    const greeting = setTimeout(() => fail("pas de salut de la passerelle après 30 s"), 30_000)
    child.stdin.on("error", (e) => fail(`entrée : ${e.message}`)) // EPIPE when the gate died
    child.on("error", (e) => fail(String(e)))
    child.on("exit", (code, signal) => fail((stderr.trim() || `code ${code ?? signal}`).replace(/^ocmem : /, "")))
    child.stderr.on("data", (d) => (stderr = (stderr + d).slice(-4000)))
    child.stdout.on("data", (d) => {
      buffer += d
      let end: number
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, end)
        buffer = buffer.slice(end + 1)
        let message: any
        try {
          message = JSON.parse(line)
        } catch {
          continue
        }
        if (message?.hello) {
          clearTimeout(greeting)
          gate.hello = message.hello
          opened(gate)
        } else if (typeof message?.id === "number") {
          waiting.get(message.id)?.({ code: Number(message.code), out: String(message.out ?? ""), err: String(message.err ?? "") })
        }
      }
    })
  })
}

/** no_new_privs (hardened mode: nothing OpenCode starts can ever sudo or run ocmem as the owner)
 * and not dumpable (no ptrace, no /proc/<pid>/fd or /proc/<pid>/mem for the agent's other
 * processes: the gate's pipe and the plugin's memory stay the plugin's). */
export async function lockProcess(noNewPrivs: boolean): Promise<string | undefined> {
  try {
    const ffi: any = await import("bun:" + "ffi")
    for (const lib of ["libc.so.6", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"]) {
      let libc: any
      try {
        libc = ffi.dlopen(lib, { prctl: { args: ["i32", "u64", "u64", "u64", "u64"], returns: "i32" } })
      } catch {
        continue
      }
      const failed = (noNewPrivs && libc.symbols.prctl(38, 1, 0, 0, 0) !== 0) || libc.symbols.prctl(4, 0, 0, 0, 0) !== 0
      libc.close()
      if (failed) return "prctl a échoué"
      if (noNewPrivs && !/NoNewPrivs:\s*1/.test(readFileSync("/proc/self/status", "utf8"))) return "no_new_privs absent"
      return undefined
    }
    return "libc introuvable"
  } catch (e) {
    return String(e)
  }
}
