"""``ocmem gate``: the plugin's one door into ocmem, one long-lived process per OpenCode.

The plugin starts it when OpenCode loads the plugin, before any model runs, and talks to it over
its standard input and output, one JSON object per line::

    ← {"hello": {"version": "0.1.0", "pid": 1234, "hardened": false}}
    → {"id": 1, "op": "tool", "name": "memory_note", "envelope": {…}}
    ← {"id": 1, "code": 0, "out": "Note ajoutée …", "err": ""}

Operations: ``plugin-config`` (``environment``: the OCMEM_SILVERBULLET_* variables OpenCode has,
the token masked, so that the session start says what a gate started by sudo does not see),
``prompt-context`` (``session``), ``tool`` (``name``,
``envelope``), ``exposure`` (``session``, ``exposures``: what the plugin saw enter a session, kept
at once so that its window holds even if it never calls a memory tool; ``open``: whether a turn
of the session still runs, its window then stays open), ``proposal``
(``proposal``: an id; what OpenCode's promotion prompt shows), ``pull`` and ``push`` (``wait``,
``timeout`` in seconds: run as child commands so a hung server can be killed), ``skill-used``
(``skill``, ``session``), ``space`` (``name``, ``session``, ``args``: a space tool, read or
write the human's SilverBullet space, answered as ``contract.SpaceAnswer``), ``mcp-write``
(``server``, ``tool``, ``pages``: a SilverBullet MCP server's write call and the page arguments
the plugin picked from it, raw; answered as ``contract.McpWriteVerdict`` by the rule space_write
applies, ``ocmem.bridge.spacetools.mcp_write_refusal``) and ``ping``. Each
answer carries the exit code and the text the same command line would have printed. Requests run
concurrently (a push never holds up a tool call); the gate exits when its input closes.

Why a process rather than one command per call:

- the pipe is the plugin's capability. In the hardened mode the gate runs as the home's owner
  (through one sudoers rule) and the plugin then forbids OpenCode and everything it starts from
  ever gaining privileges again (``no_new_privs``): no process the model starts can reach the
  gate or run ocmem as the owner. In both modes, a memory write that did not come through a gate
  is recorded as the session's exposure (``ocmem.home.sessions``);
- no Python start-up per memory tool call (see docs/benchmarks.md).

The gate registers the OpenCode process it serves (``ocmem.bridge.agentproc``) and refuses to serve when
it was started from a model's shell, for an OpenCode that already has a gate, or from inside an
OpenCode it serves: so the model cannot open a second door of its own from its shell.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from ocmem import __version__
from ocmem.bridge import agentproc
from ocmem.clock import Clock
from ocmem.errors import Busy, InputError, OcmemError, Refused
from ocmem.execution import execute
from ocmem.home.actionlog import log_event
from ocmem.home.atomic import register_home
from ocmem.home.paths import Paths, resolve_home
from ocmem.home.statefiles import append_state, remove_state, write_state
from ocmem.home.workspace import Workspace, open_workspace
from ocmem.outcome import Outcome

OPS = (
    "plugin-config",
    "prompt-context",
    "tool",
    "exposure",
    "proposal",
    "pull",
    "push",
    "skill-used",
    "space",
    "mcp-write",
    "ping",
)
WORKERS = 4
_ENCODE_NICENESS = 10  # the background encoding yields the CPU to everything else


def client_of(chain: list[agentproc.Proc]) -> agentproc.Proc | None:
    """The process that started the gate: its parent, past a ``sudo`` in between."""
    return next((p for p in chain if p.comm != "sudo"), None)


def admission(
    paths: Paths, me: agentproc.Proc, chain: list[agentproc.Proc], env: Mapping[str, str]
) -> agentproc.Proc:
    """The OpenCode process this gate may serve, or Refused saying why it may not."""
    fix = "seul le plugin ocmem démarre la passerelle, au chargement d'OpenCode"
    if env.get(agentproc.AGENT_ENV):
        raise Refused("passerelle refusée : lancée depuis un shell du modèle", fix=fix)
    client = client_of(chain)
    if client is None:
        raise Refused("passerelle refusée : processus parent introuvable", fix=fix)
    known = agentproc.registered(paths)
    current = agentproc.gate_of(paths, client) if client.key in known else None
    if current is not None and current != me.key and agentproc.alive(current):
        raise Refused(
            f"passerelle refusée : OpenCode (processus {client.pid}) en a déjà une", fix=fix
        )
    outer = agentproc.first_registered(chain[chain.index(client) + 1 :], known)
    if outer is not None:
        raise Refused(
            f"passerelle refusée : lancée depuis un OpenCode déjà servi (processus {outer.pid})",
            fix=fix,
        )
    return client


class Gate:
    def __init__(self, home: Path | None, env: Mapping[str, str], clock: Clock | None = None):
        self.home = home
        self.env = env
        self.clock = clock if clock is not None else Clock()
        # Settings are read per request: a broken ocmem.yaml fails those requests, with the
        # file and the fix, and the gate stays open for when it is repaired.
        self.paths = Paths(home if home is not None else resolve_home(env))
        register_home(self.paths.home)  # no link below it is followed (ocmem.home.atomic)
        self.hardened = self.paths.hardened_file.exists()
        self.client: agentproc.Proc | None = None
        self._write_lock = threading.Lock()
        self._encoding: threading.Thread | None = None
        self._encode_again = False
        self._encoding_lock = threading.Lock()

    def workspace(self, wait: float = 0.0) -> Workspace:
        return open_workspace(self.paths.home, wait_seconds=wait, env=self.env, clock=self.clock)

    def admit(self) -> None:
        me = agentproc.read_proc(os.getpid())
        if me is None:
            raise OcmemError("/proc illisible : la passerelle ne peut pas vérifier son parent")
        self.client = admission(self.paths, me, agentproc.ancestors(me.pid), self.env)
        # A read-only or full home: the gate still serves what can be read (the memory for the
        # prompt); the agent's shells are still known by their environment variable.
        with contextlib.suppress(OSError):
            agentproc.register(self.paths, self.client, me)

    def serve(self, stdin: IO[bytes] | IO[str], stdout: IO[str]) -> None:
        self.admit()
        _undumpable()
        os.umask(0o022)  # what the gate writes in the home stays readable by OpenCode
        hello = {"version": __version__, "pid": os.getpid(), "hardened": self.hardened}
        self._send(stdout, {"hello": hello})
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            for raw in stdin:
                if raw.strip():
                    pool.submit(self._answer, stdout, raw)
        if self.client is not None:
            with contextlib.suppress(OSError):
                remove_state(self.paths, self.paths.agents_dir / f"{self.client.key}.json")

    def _send(self, stdout: IO[str], message: Mapping[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False) + "\n"
        with self._write_lock:
            stdout.write(line)
            stdout.flush()

    def _answer(self, stdout: IO[str], raw: bytes | str) -> None:
        request: Any = None
        with contextlib.suppress(ValueError):
            request = json.loads(raw)
        ident = request.get("id") if isinstance(request, dict) else None
        started = time.perf_counter()
        code, out, err = execute(lambda: self.handle(request))
        self._send(stdout, {"id": ident, "code": code, "out": out, "err": err})
        op = request.get("op") if isinstance(request, dict) else None
        if op in ("plugin-config", "prompt-context", "pull", "push"):  # tools log themselves
            elapsed = round((time.perf_counter() - started) * 1000, 1)
            with contextlib.suppress(OSError):
                log_event(self.paths, self.clock, "gate", op=op, code=code, ms=elapsed)

    def handle(self, request: Any) -> Outcome:
        if not isinstance(request, dict) or request.get("op") not in OPS:
            raise InputError("requête invalide", fix=f"op parmi : {', '.join(OPS)}")
        op = request["op"]
        if op == "ping":
            return Outcome(["pong"])
        if op == "plugin-config":
            return self.plugin_config(request.get("environment"))
        if op == "prompt-context":
            from ocmem.bridge.tools import prompt_context

            session = _string(request, "session")
            return Outcome(
                [json.dumps(prompt_context(self.workspace(), session), ensure_ascii=False)]
            )
        if op == "tool":
            from ocmem.bridge.tools import PLUGIN, run_tool

            envelope = request.get("envelope")
            if not isinstance(envelope, dict):
                raise InputError(
                    "« envelope » doit être un objet", fix="voir ocmem.bridge.contract"
                )
            return run_tool(
                self.workspace(10),
                _string(request, "name"),
                envelope,
                origin=PLUGIN,
                allow_accept=not self.hardened,
                encode_later=self.encode_later,
            )
        if op == "exposure":
            from ocmem.bridge.contract import problems
            from ocmem.bridge.tools import record_exposure

            found = request.get("exposures")
            if not isinstance(found, list) or any(problems(e, "Exposure") for e in found):
                raise InputError(
                    "« exposures » doit être une liste de {kind, source}",
                    fix='"exposures": [{"kind": "untrusted_tool", "source": "webfetch …"}]',
                )
            pairs = [(str(e["kind"]), str(e["source"])) for e in found]
            open_turn = request.get("open", True)
            if not isinstance(open_turn, bool):
                raise InputError("« open » doit valoir true ou false", fix='"open": true')
            record_exposure(
                self.workspace(10),
                _string(request, "session"),
                pairs,
                report=True,
                open_turn=open_turn,
            )
            return Outcome()
        if op == "proposal":
            from ocmem.services.proposals import Proposals

            summary = Proposals(self.workspace()).summary(_string(request, "proposal"))
            return Outcome([json.dumps(summary, ensure_ascii=False)])
        if op == "space":
            return self.space(
                _string(request, "name"), _string(request, "session"), request.get("args")
            )
        if op == "mcp-write":
            return self.mcp_write(
                _string(request, "server"), _string(request, "tool"), request.get("pages")
            )
        if op == "skill-used":
            return self.skill_used(_string(request, "skill"), _string(request, "session"))
        return self.sync(op, _number(request, "wait", 5), _number(request, "timeout", 60))

    def encode_later(self) -> None:
        """Encodes the journal's entries that have no sentence vector, in a background thread
        of low priority (after an append this gate served, or a search that met some): the
        searches use what is encoded and the words for the rest, so nothing waits for it. The
        encoder stays loaded for the gate's life: its next searches are warm. Without the
        meaning installed (or with it turned off), there is nothing to encode: no thread."""
        from ocmem.text import meaning

        if not meaning.available():
            return
        with self._encoding_lock:
            if self._encoding is not None and self._encoding.is_alive():
                self._encode_again = True  # new entries may have come after its last look
                return
            self._encoding = threading.Thread(
                target=self._encode_journal, name="ocmem-encode", daemon=True
            )
            self._encoding.start()

    def _encode_journal(self) -> None:
        from ocmem.services.journalsearch import JournalSearch

        with contextlib.suppress(OSError, AttributeError):  # a nice value only (Linux: per thread)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _ENCODE_NICENESS)
        while True:
            try:
                JournalSearch(self.workspace()).encode_journal()
            except Exception as exc:  # a background cache: logged, never raised
                with contextlib.suppress(OSError):
                    log_event(self.paths, self.clock, "encode", error=str(exc)[:200])
            with self._encoding_lock:
                if not self._encode_again:
                    self._encoding = None
                    return
                self._encode_again = False

    def plugin_config(self, reported: object = None) -> Outcome:
        """The plugin's settings; ``reported``: the OCMEM_SILVERBULLET_* variables OpenCode has
        (the token masked), for what this gate does not see (ocmem.home.gateenv)."""
        from ocmem.bridge.tools import plugin_config
        from ocmem.home import gateenv
        from ocmem.home.space import sync_section

        settings = self.workspace().settings
        config = plugin_config(settings, self.env)
        unseen = gateenv.unseen(reported if isinstance(reported, dict) else {}, self.env)
        config["environment_warnings"] = [
            f"{d.why} ; {d.fix}"
            for d in gateenv.decide(unseen, sync_section(settings), self.paths)
            if d.action != gateenv.SAME
        ]
        seen = {
            "ts": self.clock.stamp("seconds"),
            "version": __version__,
            "opencode_pid": self.client.pid if self.client else None,
        }
        write_state(self.paths, self.paths.plugin_seen, json.dumps(seen) + "\n")
        return Outcome([json.dumps(config, ensure_ascii=False)])

    def space(self, name: str, session: str, args: Any) -> Outcome:
        """A space tool (``ocmem.bridge.spaceanswers``): the gate alone reads the token, in both
        modes (in the hardened mode it is the owner's, unreadable by the agent's user)."""
        from ocmem.bridge.spaceanswers import Space

        if not isinstance(args, dict):
            raise InputError("« args » doit être un objet", fix='"args": {"page": "…"}')
        ws = self.workspace()
        ws.log("space", tool=name, session=session)
        space = Space(lambda: ws, None)
        try:
            return Outcome([json.dumps(space.answer(name, args), ensure_ascii=False)])
        finally:
            space.close()

    def mcp_write(self, server: str, tool: str, pages: Any) -> Outcome:
        """Whether a SilverBullet MCP server's write call may run: its pages read and judged as
        space_write's (the plugin's containment holds no page rule of its own)."""
        from ocmem.bridge.contract import McpWriteVerdict
        from ocmem.bridge.spacetools import mcp_write_refusal

        if not isinstance(pages, list) or not all(isinstance(p, str) for p in pages):
            raise InputError("« pages » doit être une liste de noms", fix='"pages": ["…"]')
        verdict = McpWriteVerdict(refusal=mcp_write_refusal(self.workspace(), server, tool, pages))
        return Outcome([json.dumps(verdict, ensure_ascii=False)])

    def skill_used(self, skill: str, session: str) -> Outcome:
        line = json.dumps(
            {"ts": self.clock.stamp(), "skill": skill, "session": session},
            ensure_ascii=False,
        )
        append_state(self.paths, self.paths.skill_usage, line + "\n")
        return Outcome()

    def sync(self, op: str, wait: float, timeout: float) -> Outcome:
        """``ocmem pull`` or ``push`` as a child command, killed after ``timeout`` seconds."""
        command = [sys.executable, "-m", "ocmem", "--home", str(self.paths.home)]
        command += ["--wait", str(wait), op]
        env = {k: v for k, v in self.env.items() if k != agentproc.AGENT_ENV}
        try:
            done = subprocess.run(
                command, env=env, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            raise OcmemError(
                f"{op} arrêté après {timeout:g} s", fix="vérifie que SilverBullet répond"
            ) from None
        if done.returncode != 0:
            # The same exit code and text as the command's own (the plugin tells a conflict
            # waiting for the human, 3, from a failure).
            kind = {2: InputError, 3: Refused, 75: Busy}.get(done.returncode, OcmemError)
            text = done.stderr.strip().removeprefix("ocmem : ") or done.stdout.strip()
            raise kind(text or f"{op} : code {done.returncode}")
        return Outcome([done.stdout.rstrip("\n")] if done.stdout.strip() else [])


def _string(request: Mapping[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str):
        raise InputError(f"« {key} » doit être une chaîne", fix=f'"{key}": "…"')
    return value


def _number(request: Mapping[str, Any], key: str, default: float) -> float:
    value = request.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise InputError(f"« {key} » doit être un nombre positif", fix=f'"{key}": {default:g}')
    return float(value)


def _undumpable() -> None:
    """No core dumps, no ptrace and no /proc/<pid>/fd for other processes of the same user: a
    model's shell cannot write into the gate's pipes in the default mode."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def serve(
    home: Path | None, env: Mapping[str, str] | None = None, *, clock: Clock | None = None
) -> Outcome:
    """Run the gate on this process's standard input and output until the input closes."""
    stdin = getattr(sys.stdin, "buffer", sys.stdin)  # bytes: no decoding error in the loop
    Gate(home, os.environ if env is None else env, clock).serve(stdin, sys.stdout)
    return Outcome()
