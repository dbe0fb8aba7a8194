"""Real OpenCode runs for the benchmarks, on top of the e2e harness (``tests/e2e``).

Not a benchmark itself: ``plugin_run`` and ``session_start`` use it. Each ``Scene`` is one
hermetic OpenCode environment (temp HOME, scripted fake model on loopback, refusing proxy)
with ocmem installed by ``ocmem --home <config dir> init`` — with or without its plugin file.
The harness is test code typed for pytest; what is used here is wrapped in typed methods.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bench._paths import fake_llm, harness, netguard
from bench.common import init_home, progress
from bench.plugin_hook import opencode_binary, write_wrapper


def install(quick: bool) -> Any | None:
    """The harness's ``OpenCodeInstall``; in quick mode only if already cached (no npm)."""
    try:
        h = harness()
    except ImportError as exc:
        progress(f"e2e harness not importable: {exc}")
        return None
    if quick and opencode_binary() is None:
        return None
    try:
        return h.ensure_install()
    except h.E2EUnavailable as exc:
        progress(f"OpenCode unavailable: {exc}")
        return None


@dataclass(frozen=True)
class Spawn:
    """One ocmem process the plugin started, as logged by the wrapper."""

    at: float  # start, seconds since the epoch
    end: float | None  # None when not logged (``pull`` is exec-ed)
    args: str

    @property
    def seconds(self) -> float | None:
        return None if self.end is None else self.end - self.at

    @property
    def command(self) -> str:
        """The subcommand: ``--wait 5 pull`` → ``pull``."""
        words = self.args.split()
        while words and words[0].startswith("--"):
            words = words[2:] if words[0] in ("--wait", "--home") else words[1:]
        return words[0] if words else "?"


def parse_spawns(text: str) -> list[Spawn]:
    """Wrapper log lines, ordered by start (a child logs its line when it ends)."""
    spawns = []
    for line in text.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3:
            start, end, args = parts
            spawns.append(Spawn(float(start), None if end == "-" else float(end), args))
    return sorted(spawns, key=lambda s: s.at)


@dataclass
class RunTiming:
    total: float  # launch → exit (s)
    first_model_call: float  # launch → first main request reaches the fake model (s)
    spawns: list[Spawn]  # ocmem processes the plugin started during the run
    tool_calls: int
    # What the plugin asked its gate during the run: (operation, seconds, end), from ocmem's log.
    gate: list[tuple[str, float, float]] = dataclasses.field(default_factory=list)

    def blocked_by(self, command: str) -> float | None:
        """How long ``command`` (``pull``) held the session start (s): what the session start's
        prompt-context waited for it (:meth:`waited_for`). The plugin once awaited the pull
        before asking for its memory blocks (held = the pull's duration); it now runs the pull in
        the background (held ≈ 0)."""
        return self.waited_for(command)

    def seconds_of(self, command: str) -> float | None:
        """Duration of the first ``command`` the gate ran (s)."""
        return next((seconds for op, seconds, _ in self.gate if op == command), None)

    def waited_for(self, command: str, by: str = "prompt-context") -> float | None:
        """How long the first ``by`` (the session start's memory blocks) waited for the first
        ``command`` (``pull``), in s: from the pull's start to ``by``'s start, or to the pull's end
        if that came first; 0 when ``by`` started first. From the gate's log (ms precision)."""
        pull = next(((end - took, end) for op, took, end in self.gate if op == command), None)
        then = next((end - took for op, took, end in self.gate if op == by), None)
        if pull is None or then is None:
            return None
        return max(0.0, min(then, pull[1]) - pull[0])


def gate_events(log: Path, since: float) -> list[tuple[str, float, float]]:
    """The gate's timed operations logged after ``since`` (seconds since the epoch): operation,
    duration (s), and when it ended (the log's time stamp, seconds since the epoch)."""
    found: list[tuple[str, float, float]] = []
    if not log.exists():
        return found
    for line in log.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("action") != "gate":
            continue
        when = datetime.fromisoformat(str(event["ts"])).timestamp()
        if when >= since:
            found.append((str(event["op"]), float(event["ms"]) / 1000, when))
    return found


class Scene:
    """One OpenCode environment: ``plugin`` says whether ocmem's plugin file stays installed."""

    def __init__(
        self,
        oc: Any,
        plugin: bool,
        *,
        yaml: str = "",
        token: str | None = None,
        log_spawns: bool = True,
    ) -> None:
        self.oc = oc
        self.plugin = plugin
        self.home: Path = Path(oc.config_dir)
        self.project: Path = Path(oc.project())
        self.spawn_log = Path(oc.root) / "spawns.log"
        init_home(self.home, yaml, token=None)
        if token is not None:
            token_file = self.home / ".ocmem" / "silverbullet.token"
            token_file.write_text(token + "\n")
            token_file.chmod(0o600)
        if log_spawns:
            wrapper = write_wrapper(Path(oc.root) / "ocmem-logged", self.spawn_log)
            (self.home / ".ocmem" / "plugin.json").write_text(
                json.dumps({"command": [str(wrapper)]}) + "\n"
            )
        if not plugin:
            (self.home / "plugin" / "ocmem.ts").unlink()

    def _spawned(self) -> list[Spawn]:
        if not self.spawn_log.exists():
            return []
        return parse_spawns(self.spawn_log.read_text())

    def run(self, tool_calls: int, *, timeout: float = 180.0) -> RunTiming:
        """One ``opencode run``: the model makes ``tool_calls`` bash calls, then answers."""
        llm = fake_llm()
        steps: list[Any] = [
            llm.ToolCalls.one("bash", command=f"echo étape-{i}", description=f"étape {i}")
            for i in range(tool_calls)
        ]
        self.oc.llm.set_script(*steps, llm.Text("fini"), final_text="fini")
        before_requests = len(self.oc.llm.requests)
        before_spawns = len(self._spawned())
        launch = time.time()
        result = self.oc.run(self.project, "lance les commandes", timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"opencode run failed:\n{self.oc.debug_report(result)}")
        main = [r for r in self.oc.llm.requests[before_requests:] if r.kind == "main"]
        uses = [u for u in result.tool_uses if u.get("tool") == "bash"]
        if len(uses) != tool_calls or not main:
            raise RuntimeError(
                f"expected {tool_calls} bash calls, got {len(uses)}\n{self.oc.debug_report(result)}"
            )
        return RunTiming(
            total=float(result.duration),
            first_model_call=float(main[0].time) - launch,
            spawns=self._spawned()[before_spawns:],
            tool_calls=len(uses),
            gate=gate_events(self.home / ".ocmem" / "log.jsonl", launch),
        )


@contextlib.contextmanager
def scene_env(install_: Any, root: Path) -> Iterator[Any]:
    """An ``OpenCode`` harness object with its own fake model and netguard."""
    h, llm_mod, guard_mod = harness(), fake_llm(), netguard()
    with llm_mod.FakeLLM() as llm, guard_mod.NetGuard() as guard:
        oc = h.OpenCode(install=install_, root=root, llm=llm, netguard=guard)
        yield oc
        guard.assert_no_attempts()


def with_strace(install_: Any, root: Path, trace: Path) -> Any | None:
    """A copy of the install whose binary runs under ``strace -f -e trace=execve``."""
    strace = shutil.which("strace")
    if strace is None:
        return None
    wrapper = root / "opencode-straced"
    wrapper.write_text(
        f'#!/bin/sh\nexec "{strace}" -ff -qq -e trace=execve -o "{trace}" "{install_.binary}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return dataclasses.replace(install_, binary=wrapper)


def count_execve(trace: Path) -> Counter[str]:
    """Programs started (successful ``execve``), by name, from ``strace -ff`` files.

    ``-ff`` writes one file per process (``<trace>.<pid>``), so no call is split across lines.
    """
    programs: Counter[str] = Counter()
    for path in trace.parent.glob(trace.name + ".*"):
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("execve(") and line.rstrip().endswith("= 0"):
                programs[line.split('"', 2)[1].rsplit("/", 1)[-1]] += 1
    return programs


def clear_trace(trace: Path) -> None:
    for path in trace.parent.glob(trace.name + ".*"):
        path.unlink()
