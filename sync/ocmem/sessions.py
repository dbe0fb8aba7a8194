"""What ocmem remembers about one OpenCode root session: its journal entry, and what it was
exposed to.

``<state>/sessions/<id>.json``::

    {"journal": ["journal 2026-11-29 10:00"],
     "exposure": [{"kind": "untrusted_output", "first": "2026-11-29T10:02:11Z", "count": 2},
                  {"kind": "direct_call", "first": "…", "count": 1}]}

Exposure only accumulates: a later envelope that carries no untrusted output, or a call that
says nothing, never removes a kind already recorded. Kinds:

- ``untrusted_output``: the plugin's envelope carried outputs of untrusted tools (web, MCP);
- ``direct_call``: a memory tool ran for this session without coming through the plugin's gate
  (``ocmem tool`` started by some process, e.g. the model's shell), so its envelope is only what
  that process claimed.
"""

from __future__ import annotations

import contextlib
import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ocmem.config import Paths
from ocmem.errors import InputError, OcmemError
from ocmem.fsio import atomic_write

RETENTION_DAYS = 30
UNTRUSTED_OUTPUT = "untrusted_output"
DIRECT_CALL = "direct_call"


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


def render(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def save(paths: Paths, session: str, record: dict[str, Any]) -> None:
    atomic_write(session_file(paths, session), render(record), mode=0o600)
    forget_old(paths)


def forget_old(paths: Paths) -> None:
    """Session records live RETENTION_DAYS days (best effort: a refused unlink changes nothing)."""
    cutoff = time.time() - RETENTION_DAYS * 86400
    for old in paths.sessions_dir.glob("*.json"):
        with contextlib.suppress(OSError):
            if old.stat().st_mtime < cutoff:
                old.unlink()


def with_exposure(record: dict[str, Any], kind: str, count: int = 1) -> bool:
    """Add ``kind`` to the record's exposure (or raise its count); True if the record changed.
    Nothing is ever removed."""
    for item in record["exposure"]:
        if isinstance(item, dict) and item.get("kind") == kind:
            if count > int(item.get("count", 0)):
                item["count"] = count
                return True
            return False
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    record["exposure"].append({"kind": kind, "first": now, "count": count})
    return True


def exposure(paths: Paths, session: str) -> list[str]:
    """The kinds of untrusted exposure recorded for ``session`` (empty when none)."""
    return [
        str(item.get("kind"))
        for item in load(paths, session)["exposure"]
        if isinstance(item, dict) and item.get("kind")
    ]
