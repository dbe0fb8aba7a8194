/** The plugin's core: what ocmem does in the agent's host, whatever the host (host.ts is all it
 * knows of it; plugin/ocmem.ts adapts OpenCode 1).
 *
 * It counts tool calls per root session, pulls memory in the background when a root session starts
 * (the prompt uses the local copy at once; what the pull brings reaches the next model call),
 * puts validated memory and fenced short-term notes in the main agent's system prompt, asks once
 * per session for the `retrospective` skill (after 5 tool calls, « retiens ça » or a correction),
 * pushes after turns that changed the journal or the proposals, and guards the home. For each
 * tool call it notes whether it brings outside content into the session (taint.ts, with the rules
 * ocmem sends) and hands that exposure to ocmem. Every decision about memory content (caps,
 * formats, quarantine, one journal entry per session) is taken by ocmem, through one long-lived
 * process, the gate.
 *
 * Two modes (docs/security.md):
 * - hardened (`ocmem harden`): the home belongs to another Unix user; the gate runs as that user
 *   through one sudoers rule, and once it is open the plugin forbids the host and everything it
 *   starts to gain privileges (no_new_privs): the model's shell can reach neither ocmem nor sudo;
 * - default: the agent's user owns everything, so the plugin watches the whole home (monitor.ts)
 *   and puts back, before the model's next step, any change ocmem did not announce; it also
 *   erases the SilverBullet token from every tool output. */
import { resolve } from "node:path"
import { homedir } from "node:os"
import { AGENT_ENV, MASKED_ENV_VALUE, MAX_EXPOSURES, RETROSPECTIVE_REMINDER, SHAPES, SPACE_ENV, TOKEN_ENV, type Exposure, type McpWriteVerdict, type PromptContext, type ProposalSummary, type Settings, type SpaceAnswer, type ToolEnvelope } from "./contract.ts"
import { gateCommand, lockProcess, startGate, type Gate, type Run } from "./gate.ts"
import { Guard, WRITE_TOOLS, writeTargets } from "./guards.ts"
import type { Core, Host, LogLevel, ToastVariant, ToolSpec } from "./host.ts"
import { SilverBulletMcp } from "./mcp.ts"
import { Monitor, projectConfig } from "./monitor.ts"
import { canonical, within } from "./paths.ts"
import { Sessions, type SessionState } from "./sessions.ts"
import { coldStart, parsed } from "./shapes.ts"
import { SPACE_TOOL_NAMES, spaceTools } from "./space.ts"
import { MEMORY_TOOLS, Taint } from "./taint.ts"
import { fold, redact } from "./text.ts"
import { Asks, PROMOTION, memoryTools } from "./tools.ts"

// Tools that cannot change a file: no tamper check after them (the others, MCP tools included, can).
const READ_ONLY_TOOLS = new Set(["read", "glob", "grep", "list", "webfetch", "websearch", "todoread", "todowrite", "skill", "invalid", ...MEMORY_TOOLS, ...SPACE_TOOL_NAMES])
const REPORT_EVERY_MS = 5_000 // an exposed session's window, told to ocmem during a turn
const SHARED_GATE = Symbol.for("ocmem.gate") // one gate per process, even if the plugin is loaded twice
const SHARED_LOCK = Symbol.for("ocmem.locked")
const SHARED_REOPENED = Symbol.for("ocmem.reopened")
// The header of a pull's changes (sync/ocmem/silverbullet/changes.py, tests/test_pull_changes.py).
const PULL_CHANGES_HEADER = "Mémoire validée changée depuis le pull précédent"

/** ocmem in `host`, for the home the plugin was installed in (`pluginHome`). */
export async function startCore(host: Host, pluginHome: string): Promise<Core> {
  const HOME = pluginHome
  const log = (level: LogLevel, message: string) => host.log(level, message)
  const toast = (message: string, variant: ToastVariant) => host.toast(message, variant)
  const shared = globalThis as any
  const cmd = await gateCommand(HOME)
  const childEnv: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (key !== TOKEN_ENV && value !== undefined) childEnv[key] = value
  childEnv.OCMEM_HOME = HOME
  const gateOpened: Promise<Gate> = (shared[SHARED_GATE] ??= startGate(cmd, childEnv))

  let gate: Gate | undefined
  let opened = gateOpened
  async function ocmem(body: Record<string, unknown>, timeoutMs = 60_000): Promise<Run> {
    if (shared[SHARED_GATE] !== opened) gate = await (opened = shared[SHARED_GATE]) // reopened by a twin
    // Default mode: a gate that stopped is opened again, at most once every 30 s. (In the
    // hardened mode the host can no longer run sudo: it takes a restart of the host.)
    if (gate?.failure && !gate.hello?.hardened && Date.now() - (shared[SHARED_REOPENED] ?? 0) > 30_000) {
      shared[SHARED_REOPENED] = Date.now()
      await log("warn", `passerelle ocmem arrêtée (${gate.failure}) : réouverture`)
      gate = await (opened = shared[SHARED_GATE] = startGate(cmd, childEnv))
    }
    return gate ? gate.request(body, timeoutMs) : { code: 1, out: "", err: "passerelle ocmem non démarrée" }
  }

  const sessions = new Sessions((id) => host.parentOf(id))
  // The project: the host's directory, and its git worktree (a non-git project's is "/").
  const directory = host.directory
  const worktree = host.worktree
  const projects = [...new Set([directory, ...(worktree && worktree !== "/" ? [worktree] : [])].map(canonical))]
  const taint = new Taint(projects, sessions.states, homedir())
  const guard = new Guard()
  // SilverBullet MCP servers: their writes contained, each judged by the gate (fails closed)
  const silverbullet = new SilverBulletMcp(async (call) => {
    const r = await ocmem({ op: "mcp-write", ...call }, 15_000)
    if (r.code !== 0) throw new Error(r.err.trim() || `code ${r.code}`)
    const verdict = parsed<McpWriteVerdict>(r.out, SHAPES.McpWriteVerdict)
    if (!verdict) throw new Error(`réponse illisible : ${r.out.slice(0, 100)}`)
    return verdict.refusal || undefined
  })
  let toldServers = false
  let settings = coldStart(HOME)
  let home = HOME
  let retiens = /$^/
  let corrections = /$^/
  function apply(next: Settings): void {
    settings = next
    home = canonical(next.home)
    retiens = new RegExp(next.retiens)
    corrections = new RegExp(next.corrections)
    taint.apply(next)
    guard.apply(next)
    silverbullet.apply(next)
  }
  apply(settings) // the defaults already guard the home, before ocmem has answered
  let monitor: Monitor | undefined
  let project = new Map<string, bigint>()
  // ocmem's settings arrive without holding up the host's start-up; every hook awaits them.
  const ready = (async () => {
    gate = await opened
    if (!gate.hello) {
      await log("error", `passerelle ocmem fermée : ${gate.failure} ; la mémoire est indisponible`)
      await toast(`ocmem indisponible : ${gate.failure}`, "error")
      return
    }
    const hardened = gate.hello.hardened
    if (!shared[SHARED_LOCK]) {
      shared[SHARED_LOCK] = true
      const why = await lockProcess(hardened)
      if (why && hardened) {
        await log("error", `mode durci : impossible d'interdire les gains de privilège à OpenCode (${why})`)
        await toast(`mode durci incomplet : ${why}`, "error")
      }
    }
    const asked = Date.now()
    // What OpenCode's environment sets for the space, that a gate started by sudo would not
    // see: ocmem says what is lost (the token only by presence; ocmem.home.gateenv).
    const environment: Record<string, string> = {}
    for (const name of SPACE_ENV) {
      const value = process.env[name]
      if (value) environment[name] = name === TOKEN_ENV ? MASKED_ENV_VALUE : value
    }
    const loaded = await ocmem({ op: "plugin-config", environment }, 15_000)
    const answer = loaded.code === 0 ? parsed<Settings>(loaded.out, SHAPES.Settings) : undefined
    if (answer) {
      apply(answer)
      taint.knowWindows(answer.exposure_windows, asked) // the index as it was when the request left
      for (const warning of answer.environment_warnings) {
        await log("warn", warning)
        await toast(warning, "warning")
      }
    } else await log("error", `ocmem plugin-config a échoué (${loaded.code}) : ${(loaded.err || loaded.out).trim()} ; réglages par défaut`)
    if (!settings.hardened) {
      monitor = new Monitor(home, settings)
      try {
        monitor.start()
      } catch (e) {
        monitor = undefined
        await log("error", `surveillance du dossier ${home} impossible : ${e}`)
      }
    }
    if (!within(canonical(directory), home)) project = projectConfig(directory)
  })()
  if (TOKEN_ENV in process.env)
    await log("warn", `${TOKEN_ENV} est dans l'environnement d'OpenCode, donc visible par l'agent : préfère un fichier (mode 600)`)

  const asks = new Asks()
  let queue: Promise<unknown> = Promise.resolve()
  const pending = new Set<Promise<unknown>>()
  function track(work: Promise<unknown>): Promise<unknown> {
    pending.add(work)
    work.finally(() => pending.delete(work))
    return work
  }

  /** Serialised: never two pushes at once, in this process (and ocmem's lock across processes). */
  function push(): Promise<unknown> {
    if (!settings.sync) return Promise.resolve()
    const job = async () => {
      const r = await ocmem({ op: "push", wait: 30, timeout: 120 }, 130_000)
      if (r.code !== 0) {
        await log(r.code === 3 ? "warn" : "error", `ocmem push (${r.code}) : ${(r.err || r.out).trim()}`)
        if (r.code === 3) await toast("Push : un conflit d'édition attend une action dans SilverBullet", "warning")
      }
    }
    return track((queue = queue.then(job, job)))
  }

  async function refreshSystem(root: string, s: SessionState): Promise<string[] | undefined> {
    const r = await ocmem({ op: "prompt-context", session: root }, 15_000)
    if (r.code !== 0) {
      await log("error", `ocmem prompt-context (${r.code}) : ${r.err.trim()}`)
      return undefined
    }
    const context = parsed<PromptContext>(r.out, SHAPES.PromptContext)
    if (!context) {
      await log("error", `ocmem prompt-context : réponse illisible (${r.out.slice(0, 200)})`)
      return undefined
    }
    s.system = context.system
    s.journalWritten ||= context.journal_written
    taint.quarantined = context.quarantined.map(canonical)
    return context.warnings
  }

  /** The memory blocks from the local copy at once, and a pull in the background: the session
   * never waits for SilverBullet. What the pull brings reaches the next model call of every
   * started session (their blocks are read again when it lands), so the first call of a session
   * may still see the copy as it was before. Not cached when prompt-context fails: the next
   * message tries again. */
  async function startSession(root: string, s: SessionState): Promise<void> {
    pullInBackground()
    const servers = silverbullet.servers()
    if (servers.length && !toldServers) {
      toldServers = true
      const names = servers.map((n) => `« ${n} »`).join(", ")
      const message =
        `serveur(s) MCP SilverBullet ${names} : ses écritures hors de ${settings.silverbullet_inbox || "la boîte de dépôt"} ` +
        "sont refusées par ocmem ; retire-le de la configuration d'OpenCode (ocmem doctor)"
      await log("warn", message)
      await toast(message, "warning")
    }
    const warnings = await refreshSystem(root, s)
    if (warnings === undefined) return
    s.started = true
    for (const warning of warnings) {
      await log("warn", warning)
      await toast(warning, "warning")
    }
  }

  let pulling: Promise<unknown> | undefined
  /** One pull at a time per process (a session starting while one runs gets its result too),
   * bounded by pull_timeout_seconds, kept in `pending` (dispose waits for it). When it fails,
   * the user is told the local copy is used and may be stale. */
  function pullInBackground(): void {
    if (!settings.sync || pulling) return
    const job = async () => {
      const started = Date.now()
      const timeout = settings.pull_timeout_seconds
      const r = await ocmem({ op: "pull", wait: 5, timeout }, timeout * 1000 + 5_000)
      if (r.code !== 0) {
        const why = (r.err || r.out).trim().split("\n")[0]
        await log("warn", `pull au démarrage impossible (${r.code}, ${Date.now() - started} ms) : ${why} ; la session utilise la copie locale, peut-être en retard`)
        await toast(`Mémoire peut-être en retard sur SilverBullet (copie locale utilisée) : ${why}`, "warning")
        return
      }
      // What became validated memory (ocmem.silverbullet.changes), whoever wrote it: the user
      // is told now; the diff is in `ocmem history`.
      const changed = r.out.split("\n").flatMap((line) => /^  (?:modifié|nouveau|supprimé) : (\S+)/.exec(line)?.[1] ?? [])
      if (r.out.includes(PULL_CHANGES_HEADER) && changed.length) {
        await log("info", `pull : mémoire validée changée dans SilverBullet : ${changed.join(", ")}`)
        await toast(`Mémoire validée changée dans SilverBullet : ${changed.join(", ")} (détail : ocmem history)`, "info")
      }
      for (const [root, s] of sessions.states) {
        if (s.start) await s.start.catch(() => undefined) // its blocks may predate the pull
        if (s.started) await refreshSystem(root, s)
      }
    }
    pulling = track(job().finally(() => (pulling = undefined)))
  }

  /** Tamper check: put back what moved, tell the user now and the model with `tell`. */
  async function watchHome(sweep: boolean): Promise<string[]> {
    let reports: string[] = []
    try {
      if (monitor) reports = await monitor.check(sweep)
    } catch (e) {
      await log("error", `surveillance d'ocmem : ${e}`)
    }
    if (sweep) {
      const now = projectConfig(directory)
      for (const [path, mark] of now)
        if (project.get(path) !== mark && !within(canonical(directory), home))
          reports.push(`${path} ajouté ou modifié dans le projet : OpenCode le chargera au prochain démarrage, vérifie-le`)
      project = now
    }
    for (const report of reports) await log("warn", `ocmem : ${report}`)
    if (reports.length > 8) reports.splice(8, reports.length, `… et ${reports.length - 8} autre(s) (journal d'OpenCode)`)
    if (reports.length) await toast(reports.join("\n"), "warning")
    return reports
  }

  /** Tells ocmem what entered the session and that its window reaches now, open while the turn
   * runs (kept in `pending`: dispose waits for it, so a window is not cut short by the host
   * exiting). */
  function report(root: string, s: SessionState, exposures: Exposure[]): Promise<unknown> {
    s.lastReported = Date.now()
    const sent = ocmem({ op: "exposure", session: root, exposures, open: s.turnOpen }, 30_000).then(async (r) => {
      if (r.code !== 0) await log("warn", `ocmem exposure (${r.code}) : ${(r.err || r.out).trim()}`)
    })
    return track(sent)
  }

  /** Adds the call's exposures to its root session; new ones are recorded by ocmem before the
   * call runs (the caller awaits): its window is in ocmem's index before the tool can write a
   * file or return outside content, so no other session, in this process or another, can read
   * what it brings as trusted. */
  function expose(root: string, s: SessionState, found: Exposure[]): Promise<unknown> {
    const fresh: Exposure[] = []
    for (const e of found) {
      const key = `${e.kind}\u0000${e.source}`
      if (s.exposureKeys.has(key) || s.exposures.length >= MAX_EXPOSURES) continue
      s.exposureKeys.add(key)
      s.exposures.push(e)
      fresh.push(e)
    }
    if (!fresh.length) return Promise.resolve()
    s.exposedAt ??= Date.now()
    s.lastActive = Date.now()
    s.turnOpen = true
    return report(root, s, fresh)
  }

  // Every tool ocmem gives the model, each run by ocmem through the gate: a new one is one more
  // set of ToolSpecs here (the adapter registers them all, with the permission each asks).
  const memory = memoryTools({
    async run(name, args, sessionID) {
      await ready
      const root = await sessions.rootOf(sessionID)
      const s = sessions.state(root)
      const envelope: ToolEnvelope = { session: root, user_messages: s.userMessages, exposures: s.exposures, args }
      const r = await ocmem({ op: "tool", name, envelope })
      if (r.code !== 0) return `REFUSÉ (code ${r.code}) : ${(r.err || r.out).trim().replace(/^ocmem : /, "")}`
      if (name === "memory_journal") s.journalWritten = true
      if (name === "memory_journal" || name === "memory_propose") s.memoryChanged = true
      if (name === "memory_note" || name === "memory_forget" || name === "memory_accept") await refreshSystem(root, s)
      return r.out.trim()
    },
    async asksToPromote() {
      await ready
      return !settings.sync && !settings.hardened
    },
    async proposal(id) {
      const r = await ocmem({ op: "proposal", proposal: id }, 15_000)
      return r.code === 0 ? parsed<ProposalSummary>(r.out, SHAPES.ProposalSummary) : undefined
    },
    asks,
  })
  const space = spaceTools(async (name, args, sessionID) => {
    await ready
    const root = await sessions.rootOf(sessionID)
    const r = await ocmem({ op: "space", name, session: root, args }, 90_000)
    if (r.code !== 0) return `REFUSÉ (code ${r.code}) : ${(r.err || r.out).trim().replace(/^ocmem : /, "")}`
    const answer = parsed<SpaceAnswer>(r.out, SHAPES.SpaceAnswer)
    if (!answer) {
      await log("error", `ocmem ${name} : réponse illisible (${r.out.slice(0, 200)})`)
      return `REFUSÉ : réponse illisible d'ocmem pour ${name}`
    }
    // What the page, the listing or the search brings enters the session before the model reads
    // it: its window is in ocmem's index first (a validated page brings nothing).
    await expose(root, sessions.state(root), answer.exposures)
    return answer.text
  })
  const tools: Record<string, ToolSpec> = { ...memory, ...space }

  const core: Core = {
    tools,

    mcpConfigured(servers) {
      silverbullet.learn(servers) // every MCP server the host starts, project ones included
    },

    // Events wait for ocmem's start like every hook: the host's first event also tells it
    // that ocmem is up (bench/hook_micro.mjs counts the processes started before the calls).
    async sessionStarted(sessionID, parentID) {
      await ready
      sessions.learn(sessionID, parentID)
    },

    async permissionShown({ sessionID, messageID, permission, pattern }) {
      await ready
      if (permission === PROMOTION) asks.shown(`${sessionID}/${messageID}/${pattern}`)
    },

    async sessionIdle(sessionID) {
      await ready
      const root = sessions.rootIfKnown(sessionID)
      const s = root !== undefined && root === sessionID ? sessions.states.get(root) : undefined
      if (s?.exposedAt !== undefined) {
        s.lastActive = Date.now()
        s.turnOpen = false
        void report(root!, s, []) // the turn is over: the window closes now
      }
      if (s?.memoryChanged) {
        s.memoryChanged = false
        void push()
      }
    },

    async userMessage(sessionID, texts) {
      await ready
      const root = await sessions.rootOf(sessionID)
      if (root !== sessionID) return // a subagent's prompt is not the user speaking
      const s = sessions.state(root)
      for (const text of texts) {
        s.userMessages.push(text)
        const folded = fold(text)
        if (retiens.test(folded)) s.retrospectiveAsked = true
        if (corrections.test(folded)) s.retrospectiveAsked = s.corrected = true
        if (text.includes(settings.maintenance_marker)) s.maintenance = true // curation runs
      }
      if (!s.started) {
        s.start ??= startSession(root, s).finally(() => (s.start = undefined))
        await s.start
      }
    },

    async systemBlocks(sessionID) {
      await ready
      const reports = await watchHome(true)
      if (!sessionID) return []
      const root = sessions.rootIfKnown(sessionID)
      const s = root === undefined ? undefined : sessions.states.get(root)
      if (s && reports.length) s.notices.push(...reports)
      if (root !== sessionID || !s) return [] // subagents: no memory blocks, no retrospective
      const blocks = [...s.system]
      if (s.notices.length) {
        blocks.push(
          "ocmem : changements faits hors d'ocmem depuis ta dernière étape (ne recommence pas) :\n- " +
            s.notices.splice(0).join("\n- "),
        )
      }
      const due = s.calls >= settings.threshold || s.retrospectiveAsked
      if (due && !s.retrospectiveLoaded && !s.journalWritten && !s.maintenance) {
        const why = s.corrected ? ", et l'utilisateur t'a corrigé" : s.retrospectiveAsked ? ", et l'utilisateur a dit « retiens ça »" : ""
        blocks.push(
          `ocmem : cette tâche est non triviale (${s.calls} appels d'outils${why}). Une fois la tâche terminée ` +
            `et avant ta réponse finale, ${RETROSPECTIVE_REMINDER}`,
        )
      }
      return blocks
    },

    redacts: () => settings.redact.length > 0,

    redacted: (text) => redact(text, settings.redact),

    shellEnv: (sessionID) => ({ [AGENT_ENV]: sessionID ?? "shell" }),

    async toolBefore(call, args) {
      await ready
      const root = sessions.rootIfKnown(call.sessionID) ?? (await sessions.rootOf(call.sessionID))
      const s = sessions.state(root)
      if (!MEMORY_TOOLS.has(call.tool) && !(call.tool === "skill" && args?.name === "retrospective")) s.calls++
      const cwd = typeof args?.workdir === "string" ? resolve(directory, args.workdir) : directory
      // Write targets are canonicalised (symlinks resolved); reads only need the cheap check.
      const targets = WRITE_TOOLS.has(call.tool)
        ? writeTargets(args, cwd).map(canonical)
        : call.tool === "read" && typeof args?.filePath === "string"
          ? [canonical(resolve(cwd, args.filePath))]
          : []
      const refusal = guard.refusal(call.tool, args, cwd, targets) ?? (await silverbullet.refusal(call.tool, args))
      if (refusal) throw new Error(`ocmem : ${refusal}`)
      // Exposed from the call on (erring on the side of exposure: even if the tool then fails).
      if (s.exposures.length < MAX_EXPOSURES) {
        const read = call.tool === "read" ? targets[0] : undefined
        const found = taint.exposuresOf(call.tool, args, cwd, read, root)
        const server = silverbullet.exposure(call.tool, args) // even if ocmem.yaml trusts it
        if (server) found.push(server)
        if (found.length) await expose(root, s, found)
      }
      if (s.exposedAt !== undefined) {
        s.lastActive = Date.now()
        if (!s.turnOpen) {
          s.turnOpen = true // a new turn of an exposed session: open again, before the call runs
          await report(root, s, [])
        }
      }
    },

    async toolAfter(call, args, result) {
      await ready
      if (settings.redact.length && typeof result.output === "string") {
        result.output = redact(result.output, settings.redact)
        if (typeof result.metadata?.output === "string") result.metadata.output = redact(result.metadata.output, settings.redact)
      }
      if (monitor && !READ_ONLY_TOOLS.has(call.tool)) {
        const reports = await watchHome(false)
        if (reports.length)
          result.output =
            `${result.output ?? ""}\n\nocmem : cette action a modifié des fichiers protégés, remis en état ` +
            `(les changements passent par les outils memory_* ou par l'utilisateur) :\n- ${reports.join("\n- ")}`
      }
      if (call.tool === "skill") {
        const name = result.metadata?.name ?? args?.name
        const root = await sessions.rootOf(call.sessionID)
        if (name === "retrospective") sessions.state(root).retrospectiveLoaded = true
        void ocmem({ op: "skill-used", skill: String(name), session: root }, 5_000)
        return
      }
      // An exposed session's window lasts until its last call has ended (files it wrote).
      const root = sessions.rootIfKnown(call.sessionID)
      const s = root === undefined ? undefined : sessions.states.get(root)
      if (s?.exposedAt !== undefined) {
        s.lastActive = Date.now()
        // Now and then during a long turn too: a killed host reports nothing at its end.
        if (s.lastActive - s.lastReported > REPORT_EVERY_MS) void report(root!, s, [])
      }
    },

    async dispose() {
      await ready
      for (const [root, s] of sessions.states)
        if (s.exposedAt !== undefined) {
          s.turnOpen = false
          void report(root, s, [])
        }
      await Promise.allSettled([...pending])
      if ([...sessions.states.values()].some((s) => s.memoryChanged)) {
        for (const s of sessions.states.values()) s.memoryChanged = false
        await push()
      }
      monitor?.stop()
    },
  }
  return core
}
