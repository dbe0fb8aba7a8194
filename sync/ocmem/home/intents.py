"""The intent record: an operation that changes several files of the home happens as a whole.

Before the first of its writes, ``Transaction.together`` writes ``.ocmem/intent.json``: the
operation, the run's backup folder, and for each file its digest before and its whole content
after (an append: where it lands and its bytes). Then the writes, then the record goes. A run
killed in between leaves the record; the next ocmem run that takes the lock (whichever command;
a reader takes it for that) settles it before anything else:

- every file is either as before or as after: the operation is **completed** (roll forward:
  each file still as before gets its content after; doing it twice changes nothing);
- a file is neither (changed since, by hand or by another program): completing would overwrite
  that change, so the operation is **undone** (roll back: each file already written gets its
  content before, from the run's backup or the record; the changed file is left as it is);

and says which, and why, on stderr, in the action log and in ``.ocmem/recovered.jsonl``, which
``ocmem doctor`` reports. The writes of a settlement go through a Transaction like any other
(backups, the plugin's monitor told first). Imported only when a record is written or found.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ocmem.errors import OcmemError
from ocmem.home.actionlog import log_event
from ocmem.home.atomic import open_file, read_bytes, status
from ocmem.home.digest import sha256
from ocmem.home.paths import Paths
from ocmem.home.statefiles import append_state, remove_state, write_state

if TYPE_CHECKING:
    from ocmem.clock import Clock
    from ocmem.home.backups import Backups


class Transaction(Protocol):
    """What this module needs of ``ocmem.home.workspace.Transaction`` (which imports it)."""

    paths: Paths
    command: str
    clock: Clock
    backups: Backups
    intent_open: bool
    current: Path | None

    def write(
        self, path: Path, data: str | bytes, *, mode: int | None = ..., backup: bool = ...
    ) -> bool: ...
    def remove(self, path: Path, *, up_to: Path | None = ...) -> Path | None: ...
    def append(self, path: Path, text: str) -> None: ...
    def set_aside(self, path: Path, start: int, name: str) -> Path: ...
    def rollback(self) -> list[str]: ...
    def error(self, exc: OSError, unrestored: list[str]) -> OcmemError: ...


class Workspace(Protocol):
    """What this module needs of ``ocmem.home.workspace.Workspace``."""

    paths: Paths
    wait_seconds: float
    notify: Callable[[str], None] | None
    settled: list[str]

    def transaction(self, command: str) -> contextlib.AbstractContextManager[Transaction]: ...


INTENT_VERSION = 1
FORWARD, BACK = "forward", "back"
SETTLE_WAIT_SECONDS = 2.0  # a reader waits this long, at least, to settle (a live run ends soon)


class Planned(NamedTuple):
    """One change of an operation made as a whole (``Transaction.together``)."""

    action: str  # "write", "remove" or "append"
    path: Path
    data: bytes = b""  # the content after (write), or the bytes appended (append)
    mode: int | None = None
    backup: bool = True
    up_to: Path | None = None  # remove: the folders it leaves empty go, up to this one


def record(
    paths: Paths,
    operation: str,
    backups: Path,
    changes: Sequence[Planned],
    befores: Sequence[bytes | None],
    ts: str,
) -> None:
    """Write the intent record, before the first change lands. ``befores``: each file's bytes
    now (None: absent)."""
    files = []
    for change, before in zip(changes, befores, strict=True):
        entry: dict[str, Any] = {
            "path": paths.rel(change.path),
            "action": change.action,
            "before": None if before is None else sha256(before),
            "backup": change.backup,
        }
        if change.action == "write":
            entry.update(_content("after", change.data), mode=change.mode)
        elif change.action == "append":
            entry.update(_content("bytes", change.data), at=len(before or b""))
        elif change.up_to is not None:
            entry["up_to"] = paths.rel(change.up_to)
        if before is not None and (not change.backup or not before):
            entry.update(_content("before_content", before))  # no backup copy holds it
        files.append(entry)
    body = {
        "version": INTENT_VERSION,
        "operation": operation,
        "ts": ts,
        "backups": paths.rel(backups),
        "direction": FORWARD,
        "files": files,
    }
    _save(paths, body)


def _save(paths: Paths, body: dict[str, Any]) -> None:
    write_state(paths, paths.intent_file, json.dumps(body, ensure_ascii=False, indent=1) + "\n")


def land(run: Transaction, planned: Sequence[Planned]) -> None:
    """Make ``planned`` happen in ``run``: with an intent record around them when they change
    more than one file (a single change is atomic by itself)."""
    several = len({change.path for change in planned}) > 1
    if several:
        befores = [read_bytes(change.path) for change in planned]
        run.current = run.paths.intent_file  # a refusing disk: « rien n'a été modifié »
        record(run.paths, run.command, run.backups.claim(), planned, befores, run.clock.stamp())
        run.current, run.intent_open = None, True
    for change in planned:
        if change.action == "write":
            run.write(change.path, change.data, mode=change.mode, backup=change.backup)
        elif change.action == "remove":
            run.remove(change.path, up_to=change.up_to)
        else:
            run.append(change.path, change.data.decode("utf-8"))
    if several:
        done(run.paths)
        run.intent_open = False


def closed_after_failure(paths: Paths, *, undone: bool) -> None:
    """A run failed while its changes were landing and undid what it could (``Transaction.
    rollback``): the record goes when everything was undone; else the next run must undo the
    rest, not complete the operation (best effort: without the mark, it completes it)."""
    if undone:
        done(paths)
        return
    try:
        body = json.loads(read_bytes(paths.intent_file) or b"")
        body["direction"] = BACK
        _save(paths, body)
    except (OSError, ValueError, TypeError):
        pass


def done(paths: Paths) -> None:
    """The operation landed whole (or was undone whole): its record goes."""
    remove_state(paths, paths.intent_file)


def _content(key: str, data: bytes) -> dict[str, str]:
    try:
        return {key: data.decode("utf-8")}
    except UnicodeDecodeError:
        return {f"{key}_b64": base64.b64encode(data).decode("ascii")}


def _bytes(entry: dict[str, Any], key: str) -> bytes | None:
    if key in entry:
        return str(entry[key]).encode("utf-8")
    if f"{key}_b64" in entry:
        return base64.b64decode(str(entry[f"{key}_b64"]))
    return None


class FileState(NamedTuple):
    rel: str
    path: Path
    entry: dict[str, Any]
    state: str  # "before", "after", "torn" (an append cut short: before, in effect), "changed"


def _state(paths: Paths, entry: dict[str, Any]) -> FileState:
    rel = str(entry["path"])
    path = paths.home / rel
    action = entry["action"]
    if action == "append":
        at = int(entry["at"])
        payload = _bytes(entry, "bytes") or b""
        found = status(path)
        size = found.st_size if found is not None else 0
        tail = _range(path, at, size - at) if found is not None and size > at else b""
        if size == at:
            state = "before"
        elif size == at + len(payload) and tail == payload:
            state = "after"
        elif size > at and payload.startswith(tail):
            state = "torn"
        else:
            state = "changed"
        return FileState(rel, path, entry, state)
    current = read_bytes(path)
    digest = None if current is None else sha256(current)
    if action == "write":
        after = _bytes(entry, "after")
        if after is not None and current == after:
            return FileState(rel, path, entry, "after")
    elif current is None:  # remove
        return FileState(rel, path, entry, "after")
    state = "before" if digest == entry["before"] else "changed"
    return FileState(rel, path, entry, state)


def _range(path: Path, start: int, length: int) -> bytes:
    """``length`` bytes of ``path`` from ``start`` (an append's, whatever the file's size)."""
    fd = open_file(path, os.O_RDONLY)
    try:
        return os.pread(fd, length, start)
    finally:
        os.close(fd)


def settle(run: Transaction, paths: Paths) -> list[str]:
    """Complete or undo the operation ``.ocmem/intent.json`` records, in ``run`` (under the
    lock); what to tell the user (nothing when there is no record)."""
    raw = read_bytes(paths.intent_file)
    if raw is None:
        return []
    try:
        body = json.loads(raw)
        operation, started = str(body["operation"]), str(body.get("ts", "?"))
        states = [_state(paths, dict(entry)) for entry in body["files"]]
        direction = body.get("direction", FORWARD)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        kept = run.backups.save_bytes("intent.json.illisible", raw)
        done(paths)
        line = (
            f"⚠ .ocmem/intent.json (une opération interrompue) est illisible ({exc}) : mis de "
            f"côté dans {paths.rel(kept)} ; rien n'a été terminé ni annulé — vérifie MEMORY.md, "
            "pending.md et skills/ (`ocmem doctor`, les sauvegardes de .ocmem/backups)"
        )
        _remember(paths, run, "illisible", "?", [], line)
        return [line]
    changed = [s.rel for s in states if s.state == "changed"]
    if direction == FORWARD and not changed:
        written = [s.rel for s in states if s.state == "after"]
        now = [
            s.rel + (" (sa fin coupée mise de côté)" if s.state == "torn" else "")
            for s in states
            if s.state in ("before", "torn")
        ]
        for found in states:
            if found.state in ("before", "torn"):
                _forward(run, paths, found)
        line = (
            f"opération interrompue terminée : « {operation} » (commencée {started}) : "
            + (f"déjà écrit(s) : {', '.join(written)}" if written else "rien n'était écrit")
            + (f" ; écrit(s) maintenant : {', '.join(now)}" if now else " ; rien d'autre à écrire")
        )
        _remember(paths, run, "terminée", operation, [s.rel for s in states], line)
        done(paths)
        return [line]
    backups = paths.home / str(body.get("backups", ""))
    undone: list[str] = []
    lost: list[str] = []
    for found in states:
        if found.state in ("after", "torn"):
            (undone if _back(run, paths, backups, found) else lost).append(found.rel)
    why = (
        f"{', '.join(changed)} a changé depuis (à la main ?) : la terminer aurait écrasé ce "
        "changement, gardé tel quel"
        if changed
        else "son écriture avait échoué"
    )
    line = (
        f"⚠ opération interrompue annulée : « {operation} » (commencée {started}) ; {why} ; "
        + (f"remis dans leur état d'avant : {', '.join(undone)}" if undone else "rien à remettre")
        + (
            f" ; sans version d'avant retrouvée, laissés tels quels : {', '.join(lost)}"
            if lost
            else ""
        )
        + " — relance la commande si elle doit encore se faire"
    )
    _remember(paths, run, "annulée", operation, [*undone, *lost], line)
    done(paths)
    return [line]


def _forward(run: Transaction, paths: Paths, found: FileState) -> None:
    entry = found.entry
    action = entry["action"]
    if action == "write":
        mode = entry.get("mode")
        run.write(
            found.path,
            _bytes(entry, "after") or b"",
            mode=None if mode is None else int(mode),
            backup=bool(entry.get("backup", True)),
        )
    elif action == "remove":
        up_to = entry.get("up_to")
        run.remove(found.path, up_to=None if up_to is None else paths.home / str(up_to))
    else:
        if found.state == "torn":  # the cut append set aside, then made whole
            run.set_aside(found.path, int(entry["at"]), f"{found.rel}.interrompue")
        run.append(found.path, (_bytes(entry, "bytes") or b"").decode("utf-8"))


def _back(run: Transaction, paths: Paths, backups: Path, found: FileState) -> bool:
    """Put ``found`` back as it was before the operation; False when that version is lost."""
    entry = found.entry
    if entry["action"] == "append":
        run.set_aside(found.path, int(entry["at"]), f"{found.rel}.annulee")
        return True
    if entry["before"] is None:  # created by the operation
        run.remove(found.path)
        return True
    before = _bytes(entry, "before_content")
    if before is None:
        copy = read_bytes(backups / found.rel) if backups != paths.home else None
        before = copy if copy is not None and sha256(copy) == entry["before"] else None
    if before is None:
        return False
    run.write(found.path, before, backup=bool(entry.get("backup", True)))
    return True


def _remember(
    paths: Paths, run: Transaction, outcome: str, operation: str, files: list[str], line: str
) -> None:
    """The settlement in the action log and in ``.ocmem/recovered.jsonl`` (``ocmem doctor``)."""
    fields = {"operation": operation, "outcome": outcome, "files": files}
    log_event(paths, run.clock, "reprise", command=run.command, **fields)
    append_state(
        paths,
        paths.recovered_log,
        json.dumps({"ts": run.clock.stamp(), **fields, "said": line}, ensure_ascii=False) + "\n",
    )


def recovered(paths: Paths) -> list[dict[str, Any]]:
    """The settlements recorded so far, oldest first (an unreadable line is skipped)."""
    found = []
    for line in (read_bytes(paths.recovered_log) or b"").decode("utf-8", "replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            found.append(item)
    return found


def settle_locked(ws: Workspace, run: Transaction) -> None:
    """Settle the record a killed run left (``settle``) in ``run``, a run of its own under the
    lock ``ws`` holds; what it says goes on the side (``ws.notify``) and into ``ws.settled``."""
    try:
        said = settle(run, ws.paths)
    except Exception as exc:
        unrestored = run.rollback()
        if isinstance(exc, OSError):
            raise run.error(exc, unrestored) from exc
        raise
    ws.settled += said
    for line in said:
        if ws.notify is not None:
            ws.notify(line)


def settle_before_reading(ws: Workspace) -> None:
    """What a killed run left half-done is settled before anything reads the home: a reader
    takes the lock for that; when it cannot, ``ws.settled`` (and ``ws.notify``) say so."""
    wait = ws.wait_seconds
    ws.wait_seconds = max(wait, SETTLE_WAIT_SECONDS)
    try:
        with ws.transaction("reprise"):
            pass
    except OcmemError as exc:
        line = (
            "⚠ une opération interrompue (.ocmem/intent.json) n'a pu être ni terminée ni "
            f"annulée ({exc.message}) : ce qui suit peut n'en montrer qu'une moitié ; relance "
            "une commande d'ocmem quand c'est possible (`ocmem doctor` la montre)"
        )
        ws.settled.append(line)
        if ws.notify is not None:
            ws.notify(line)
    finally:
        ws.wait_seconds = wait
