"""Which processes are the agent's: an OpenCode that runs the plugin, and everything it started.

The plugin's gate (``ocmem gate``, see ``ocmem.bridge.gate``) registers the OpenCode process it serves
in ``<state>/agents/`` (its pid and start time, so a reused pid never matches). A process is the
agent's when

- its environment carries ``OCMEM_AGENT_SESSION``, which the plugin puts in every shell the
  model runs (``shell.env`` hook), or
- one of its ancestors (the ``/proc`` parent chain) is a registered OpenCode.

Neither sign holds against a process that drops the variable (``env -u``) *and* detaches from
OpenCode (``setsid -f``, a double fork): it is re-parented to init and looks like the user's.
That is why, in the default single-user mode, ocmem only makes such moves harder and says so
(docs/security.md); the hardened mode does not rely on this module for its guarantees.
"""

# No `from __future__ import annotations`: a NamedTuple on every command's path (see
# ocmem.home.settings).

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from ocmem.errors import Refused
from ocmem.home.atomic import read_bytes, read_text
from ocmem.home.paths import Paths

AGENT_ENV = "OCMEM_AGENT_SESSION"
PROC = Path("/proc")
MAX_DEPTH = 64


class Proc(NamedTuple):
    pid: int
    ppid: int
    start: int  # clock ticks since boot: with the pid, names one process for good
    comm: str

    @property
    def key(self) -> str:
        return f"{self.pid}-{self.start}"


def parse_stat(text: str) -> Proc | None:
    """A ``/proc/<pid>/stat`` line. The name sits in parentheses and may hold spaces or
    parentheses itself, so the fields are split after the last ``)``."""
    left, right = text.find("("), text.rfind(")")
    if left < 0 or right < left:
        return None
    fields = text[right + 2 :].split()
    try:
        return Proc(int(text[:left]), int(fields[1]), int(fields[19]), text[left + 1 : right])
    except (IndexError, ValueError):
        return None


def read_proc(pid: int, proc_root: Path = PROC) -> Proc | None:
    try:
        return parse_stat(read_text(proc_root / str(pid) / "stat", errors="replace"))
    except OSError:
        return None


def ancestors(pid: int, proc_root: Path = PROC) -> list[Proc]:
    """``pid``'s parent, grand-parent, … up to (not including) pid 1 or the first unreadable."""
    chain: list[Proc] = []
    current = read_proc(pid, proc_root)
    while current is not None and current.ppid > 1 and len(chain) < MAX_DEPTH:
        parent = read_proc(current.ppid, proc_root)
        if parent is None:
            break
        chain.append(parent)
        current = parent
    return chain


def alive(key: str, proc_root: Path = PROC) -> bool:
    pid, _, start = key.partition("-")
    found = read_proc(int(pid), proc_root) if pid.isdigit() else None
    return found is not None and str(found.start) == start


def registered(paths: Paths) -> set[str]:
    """Keys (``pid-start``) of the OpenCode processes a gate serves or served."""
    try:
        return {p.stem for p in paths.agents_dir.glob("*.json")}
    except OSError:
        return set()


def register(paths: Paths, client: Proc, gate: Proc) -> None:
    """Record that ``gate`` serves ``client`` (the OpenCode process); drop dead records."""
    from ocmem.home.statefiles import remove_state, write_state

    for key in registered(paths):
        if not alive(key):
            remove_state(paths, paths.agents_dir / f"{key}.json")
    record = {"gate": gate.key, "comm": client.comm}
    write_state(paths, paths.agents_dir / f"{client.key}.json", json.dumps(record) + "\n")


def gate_of(paths: Paths, client: Proc) -> str | None:
    """The gate recorded for ``client``, if any."""
    try:
        record = json.loads(read_bytes(paths.agents_dir / f"{client.key}.json") or b"")
        return str(record["gate"])
    except (OSError, ValueError, KeyError, TypeError, Refused):  # a link: no gate recorded
        return None


def agent_reason(
    paths: Paths,
    env: Mapping[str, str] | None = None,
    pid: int | None = None,
    proc_root: Path = PROC,
) -> str | None:
    """Why this process is the agent's, or None when nothing says so."""
    env = os.environ if env is None else env
    if env.get(AGENT_ENV):
        return f"lancé depuis un shell du modèle ({AGENT_ENV} est défini)"
    known = registered(paths)
    if not known:
        return None
    found = first_registered(ancestors(os.getpid() if pid is None else pid, proc_root), known)
    if found is not None:
        return f"lancé par OpenCode (processus {found.pid}, {found.comm})"
    return None


def first_registered(chain: Iterable[Proc], known: set[str]) -> Proc | None:
    return next((p for p in chain if p.key in known), None)


def refuse_agent(paths: Paths, what: str, env: Mapping[str, str] | None = None) -> None:
    """Refused when the agent runs ``what`` itself (a write or a decision the plugin's tools or
    the human make): the model's shell must not bypass the plugin's provenance, nor promote."""
    from ocmem.errors import Refused

    reason = agent_reason(paths, env)
    if reason is not None:
        raise Refused(
            f"`ocmem {what}` refusé : {reason}",
            fix=(
                "l'agent passe par les outils memory_note, memory_journal et memory_propose ; "
                "promouvoir ou refuser une proposition revient à l'humain, dans son terminal"
            ),
        )
