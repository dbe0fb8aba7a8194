"""What ocmem remembers about one OpenCode root session: its journal entry, and what it was
exposed to.

``<state>/sessions/<id>.json``::

    {"journal": ["journal 2026-11-29 10:00"],
     "exposure": [{"kind": "untrusted_tool", "source": "webfetch http://…",
                   "first": "2026-11-29T10:02:11+00:00", "count": 1},
                  {"kind": "direct_call", "source": "", "first": "…", "count": 1}],
     "last": "2026-11-29T10:40:00+00:00", "saved": "2026-11-29T10:41:02+00:00"}

Exposure only accumulates: a later envelope that carries no exposure, or a call that says
nothing, never removes an item already recorded. An item is a kind (``ocmem.exposure``) and its
source (the tool and URL, the command, the path); ``last`` is when the plugin last reported on
an exposed session, ``saved`` when ocmem last wrote the record (a memory call): from its first
exposure to the later of the two, the session's *window*, a file changed in the project may come
from outside (``ocmem.exposure.TAINTED_FILE``). Every time is ocmem's clock's (``ocmem.clock``),
written in the record: none is read from the file's own timestamps.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ocmem.clock import Clock, parse_stamp
from ocmem.config import Paths
from ocmem.errors import InputError, OcmemError
from ocmem.exposure import DIRECT_CALL as DIRECT_CALL
from ocmem.exposure import UNTRUSTED_OUTPUT as UNTRUSTED_OUTPUT
from ocmem.exposure import describe

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
    if not path.exists():
        return {"journal": [], "exposure": []}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
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
    record["saved"] = clock.stamp("seconds")
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
        with contextlib.suppress(OSError, ValueError, UnicodeDecodeError):
            when = _latest(json.loads(old.read_text(encoding="utf-8")))
            if (old.stat().st_mtime if when is None else when) < cutoff:
                old.unlink()


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
    items.append({"kind": kind, "source": source, "first": clock.stamp("seconds"), "count": count})
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
    None when it is clean. Not yet cleaned for a file: see ``ocmem.exposure.clean_source``."""
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


def windows(paths: Paths) -> list[tuple[str, float, float]]:
    """``(session, start, end)`` in seconds since the epoch for every recorded exposed session:
    from its first exposure to the later of the plugin's last report on it and ocmem's last
    write of its record (a memory call)."""
    found = []
    for path in sorted(paths.sessions_dir.glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            continue  # an unreadable record is reported by the session's own calls
        if not isinstance(record, dict) or not isinstance(record.get("exposure"), list):
            continue
        starts = [
            t
            for item in record["exposure"]
            if isinstance(item, dict) and (t := parse_stamp(item.get("first"))) is not None
        ]
        if not starts:
            continue
        found.append((path.stem, min(starts), max(_latest(record) or 0.0, *starts)))
    return found


def touch(record: dict[str, Any], clock: Clock) -> None:
    """The plugin reported on this session now: its window reaches this moment."""
    record["last"] = clock.stamp("seconds")
