"""What ocmem remembers about one OpenCode root session: its journal entry, and what it was
exposed to.

``<state>/sessions/<id>.json``::

    {"journal": ["journal 2026-11-29 10:00"],
     "exposure": [{"kind": "untrusted_tool", "source": "webfetch http://…",
                   "first": "2026-11-29T10:02:11+00:00", "count": 1},
                  {"kind": "direct_call", "source": "", "first": "…", "count": 1}],
     "last": "2026-11-29T10:40:00.120+00:00", "open": false,
     "saved": "2026-11-29T10:41:02.005+00:00"}

Exposure only accumulates: a later envelope that carries no exposure, or a call that says
nothing, never removes an item already recorded. An item is a kind (``ocmem.guards.exposure``) and its
source (the tool and URL, the command, the path); ``last`` is when the plugin last reported on
an exposed session, ``saved`` when ocmem last wrote the record (a memory call). From its first
exposure on, the session has a *window*, during which a file changed in the project may come
from outside (``ocmem.exposure.TAINTED_FILE``): ``open`` while a turn of the session runs (the
plugin reports it so before any exposing call runs), and closed at the later of ``last`` and
``saved`` once the plugin reported the turn's end. A session whose OpenCode died in a turn keeps
an open window: what it may have left behind is never trusted. Every time is ocmem's clock's
(``ocmem.clock``), in milliseconds, written in the record: none is read from file timestamps.

Every save of a record also updates ``<state>/windows.json`` (``WindowIndex``), the windows of
all exposed sessions in one small file: the plugin reads it again whenever a file it is about to
trust changed after its last reading, so a window another OpenCode opened meanwhile is never
missed.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocmem.clock import Clock, parse_stamp
from ocmem.errors import InputError, OcmemError, Refused
from ocmem.guards.exposure import DIRECT_CALL as DIRECT_CALL
from ocmem.guards.exposure import UNTRUSTED_OUTPUT as UNTRUSTED_OUTPUT
from ocmem.guards.exposure import describe
from ocmem.home.atomic import read_bytes
from ocmem.home.paths import Paths
from ocmem.home.statefiles import remove_state

if TYPE_CHECKING:
    from ocmem.home.workspace import Transaction

RETENTION_DAYS = 30
# Distinct items kept per session: enough to show where it has been, bounded in size.
MAX_ITEMS = 50
SOURCE_CHARS = 300


def session_file(paths: Paths, session: str) -> Path:
    if not session or not all(c.isascii() and (c.isalnum() or c in "_-") for c in session):
        raise InputError(
            f"identifiant de session invalide : {session!r}",
            fix="le plugin passe l'identifiant OpenCode",
        )
    return paths.sessions_dir / f"{session}.json"


def load(paths: Paths, session: str) -> dict[str, Any]:
    path = session_file(paths, session)
    data = read_bytes(path)
    if data is None:
        return {"journal": [], "exposure": []}
    try:
        record = json.loads(data.decode("utf-8"))
        if not isinstance(record, dict) or not isinstance(record.get("journal"), list):
            raise ValueError("pas un objet {journal: [...]}")
        if not isinstance(record.setdefault("exposure", []), list):
            raise ValueError("« exposure » n'est pas une liste")
    except (ValueError, UnicodeDecodeError) as exc:
        raise OcmemError(
            f"état de session illisible : {path} ({exc})",
            fix=f"supprime {path} (ocmem le refait ; la session pourra écrire une entrée de journal)",
        ) from exc
    return record


def render(record: dict[str, Any], clock: Clock) -> str:
    """The record as saved now (its ``saved`` time set by ``clock``)."""
    record["saved"] = stamp(clock)
    return json.dumps(record, ensure_ascii=False) + "\n"


def _latest(record: Any) -> float | None:
    """The last time a record says it was written or reported on (None: it says nothing)."""
    if not isinstance(record, dict):
        return None
    times = [parse_stamp(record.get("saved")), parse_stamp(record.get("last"))]
    items = record.get("exposure")
    if isinstance(items, list):
        times += [parse_stamp(i.get("first")) for i in items if isinstance(i, dict)]
    found = [t for t in times if t is not None]
    return max(found) if found else None


def forget_old(paths: Paths, clock: Clock) -> None:
    """Session records live RETENTION_DAYS days after their last write (best effort: a refused
    unlink changes nothing). A record an older ocmem wrote without a time is judged by its
    file's age."""
    cutoff = clock.timestamp() - RETENTION_DAYS * 86400
    for old in paths.sessions_dir.glob("*.json"):
        # best effort; a linked record stays (refused where it is read, named by doctor)
        with contextlib.suppress(OSError, ValueError, UnicodeDecodeError, Refused):
            when = _latest(json.loads(read_bytes(old) or b""))
            if (old.stat().st_mtime if when is None else when) < cutoff:
                remove_state(paths, old)


def stamp(clock: Clock) -> str:
    """A record's time: milliseconds (a window must hold the file a session wrote just before
    its last report; seconds would cut up to one off its end)."""
    return clock.stamp("milliseconds")


def with_exposure(
    record: dict[str, Any], clock: Clock, kind: str, count: int = 1, source: str = ""
) -> bool:
    """Add the item ``(kind, source)`` to the record's exposure (or raise its count); True if the
    record changed. Nothing is ever removed; past MAX_ITEMS distinct items, new ones only raise
    the ``more`` counter (the session is exposed already)."""
    source = source[:SOURCE_CHARS]
    items = record["exposure"]
    for item in items:
        if isinstance(item, dict) and item.get("kind") == kind and item.get("source", "") == source:
            if count > int(item.get("count", 0)):
                item["count"] = count
                return True
            return False
    if len(items) >= MAX_ITEMS:
        record["more"] = int(record.get("more", 0)) + 1
        return True
    items.append({"kind": kind, "source": source, "first": stamp(clock), "count": count})
    return True


def with_exposures(record: dict[str, Any], clock: Clock, found: Iterable[tuple[str, str]]) -> bool:
    grew = False
    for kind, source in found:
        grew |= with_exposure(record, clock, kind, source=source)
    return grew


def items(record: dict[str, Any]) -> list[tuple[str, str]]:
    """The record's exposure as ``(kind, source)``, oldest first."""
    return [
        (str(item["kind"]), str(item.get("source", "")))
        for item in record.get("exposure", [])
        if isinstance(item, dict) and item.get("kind")
    ]


def summary(record: dict[str, Any]) -> str | None:
    """Where the session has been, in one line (its first exposure, and how many others), or
    None when it is clean. Not yet cleaned for a file: see ``ocmem.guards.exposure.clean_source``."""
    found = items(record)
    if not found:
        return None
    first = describe(*found[0])
    others = len(found) - 1 + int(record.get("more", 0))
    return f"{first} (+{others} autre{'s' if others > 1 else ''})" if others else first


def exposure(paths: Paths, session: str) -> list[str]:
    """The kinds of untrusted exposure recorded for ``session`` (empty when none), each once."""
    kinds: list[str] = []
    for kind, _ in items(load(paths, session)):
        if kind not in kinds:
            kinds.append(kind)
    return kinds


def window(record: Any) -> dict[str, Any] | None:
    """The record's window (``contract.Window``, times in ms), None for a clean session."""
    if not isinstance(record, dict) or not isinstance(record.get("exposure"), list):
        return None
    starts = [
        t
        for item in record["exposure"]
        if isinstance(item, dict) and (t := parse_stamp(item.get("first"))) is not None
    ]
    if not starts:
        return None
    end = max(_latest(record) or 0.0, *starts)
    return {"start": min(starts) * 1000, "end": end * 1000, "open": record.get("open") is True}


def windows(paths: Paths) -> list[tuple[str, float, float, bool]]:
    """``(session, start, end, open)``, times in seconds since the epoch, for every recorded
    exposed session (read from the records themselves; the index is ``WindowIndex``)."""
    found = []
    for path in sorted(paths.sessions_dir.glob("*.json")):
        try:
            found_window = window(json.loads(read_bytes(path) or b""))
        except (OSError, ValueError, UnicodeDecodeError):
            continue  # an unreadable record is reported by the session's own calls
        if found_window is not None:
            start, end = found_window["start"] / 1000, found_window["end"] / 1000
            found.append((path.stem, start, end, bool(found_window["open"])))
    return found


def reported(record: dict[str, Any], clock: Clock, *, open_turn: bool) -> None:
    """The plugin reported on this session now: its window reaches this moment, and stays open
    while ``open_turn`` (a turn runs)."""
    record["last"] = stamp(clock)
    record["open"] = open_turn


# --- the window index (<state>/windows.json) ---------------------------------------------------


def read_index(paths: Paths) -> dict[str, dict[str, Any]]:
    """session → window (``contract.Window`` without its ``session``), as last saved; rebuilt
    from the records when the index is missing or unreadable (an older ocmem, a crash)."""
    try:
        raw = json.loads(read_bytes(paths.windows_index) or b"")
        found = {str(w["session"]): w for w in raw["windows"] if isinstance(w, dict)}
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return {
            session: {"start": start * 1000, "end": end * 1000, "open": is_open}
            for session, start, end, is_open in windows(paths)
        }
    return {s: {k: w[k] for k in ("start", "end", "open") if k in w} for s, w in found.items()}


def render_index(index: dict[str, dict[str, Any]], clock: Clock) -> str:
    """The index as saved: windows of the last RETENTION_DAYS days (a record lives as long)."""
    cutoff = (clock.timestamp() - RETENTION_DAYS * 86400) * 1000
    kept = [
        {"session": session, **w}
        for session, w in sorted(index.items())
        if float(w.get("end", 0)) >= cutoff or w.get("open")
    ]
    return json.dumps({"windows": kept}, ensure_ascii=False) + "\n"


def save(run: Transaction, paths: Paths, session: str, record: dict[str, Any]) -> None:
    """Write ``record`` (stamped ``saved``) and, when the session is exposed, its window in the
    index, in ``run``: both land or neither."""
    run.write(session_file(paths, session), render(record, run.clock), mode=0o600, backup=False)
    found = window(record)
    if found is None:
        return
    index = read_index(paths)  # rebuilt from the records (this one included) when missing
    if index.get(session) != found or not paths.windows_index.exists():
        index[session] = found
        # readable by the plugin (the agent's user in the hardened mode): times, no content
        run.write(paths.windows_index, render_index(index, run.clock), mode=0o644, backup=False)
