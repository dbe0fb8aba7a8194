"""What hides a journal entry (``ocmem.formats.journal.damage``: a « ## » line that is not an
entry's header, bytes that are not UTF-8), said by every reader that meets it — which line, what
to do — and remembered in ``.ocmem/journal-damage.json``, so that ``journal add``, which reads
only the journal's end, can say it too without reading the rest.

A remembered finding holds while its line's bytes are still where they were found (appends
move nothing; a repair changes them). Best effort: a home that cannot be written keeps saying
what the readers find, only ``journal add`` stays silent about older damage.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

from ocmem.errors import Refused
from ocmem.formats.journal import Damaged
from ocmem.home.atomic import open_file, read_bytes
from ocmem.home.paths import Paths
from ocmem.home.statefiles import remove_state, write_state

Found = list[Damaged]  # (line, what, fix, offset of the line, its bytes)
SHOWN = 5  # damaged lines named in one answer; doctor names them all


def lines(paths: Paths, path: Path, found: Found, *, masked: bool = False) -> list[str]:
    """What a reader says about ``found`` in ``path``: each line (SHOWN at most), then the
    fixes. ``masked``: the agent reads it, so a damaged line's own text is not quoted (it may
    head a quarantined entry)."""
    rel = paths.rel(path)
    said = [
        f"⚠ {rel} ligne {line} : {re.sub('^« .* » ', 'une ligne « ## » ', what) if masked else what}"
        for line, what, *_ in found[:SHOWN]
    ]
    if len(found) > SHOWN:
        said.append(f"⚠ {rel} : {len(found) - SHOWN} autre(s) ligne(s) abîmée(s) (`ocmem doctor`)")
    fixes = list(dict.fromkeys(fix for _, _, fix, *_ in found))
    return said + [f"Correction : {fix}" for fix in fixes]


def _record(paths: Paths) -> dict[str, list[list[object]]]:
    try:
        raw = json.loads(read_bytes(paths.journal_damage) or b"{}")
    except (OSError, ValueError, Refused):
        return {}
    return raw if isinstance(raw, dict) else {}


def remember(paths: Paths, path: Path, found: Found) -> None:
    """``found`` is now all the damage of ``path`` (a reader read it whole)."""
    record = _record(paths)
    rel = paths.rel(path)
    kept = [[line, what, fix, at, raw.hex()] for line, what, fix, at, raw in found]
    if record.get(rel, []) == kept:
        return
    if kept:
        record[rel] = kept
    else:
        record.pop(rel, None)
    with contextlib.suppress(OSError, Refused):
        if record:
            write_state(paths, paths.journal_damage, json.dumps(record, ensure_ascii=False))
        else:
            remove_state(paths, paths.journal_damage)


def add(paths: Paths, path: Path, found: Found) -> None:
    """``found`` is more damage of ``path`` (a reader read part of it)."""
    remember(paths, path, sorted({*remembered(paths, path), *found}))


def remembered(paths: Paths, path: Path) -> Found:
    """The damage last found in ``path`` that is still there: each damaged line is read again
    where it was (a few bytes each), so a line repaired since is no longer said."""
    if not os.path.lexists(paths.journal_damage):
        return []
    found: Found = []
    try:
        fd = open_file(path, os.O_RDONLY)
    except (OSError, Refused):
        return []
    try:
        for item in _record(paths).get(paths.rel(path), []):
            line, what, fix, at, raw = item
            data = bytes.fromhex(str(raw))
            if os.pread(fd, len(data), int(str(at))) == data:
                found.append((int(str(line)), str(what), str(fix), int(str(at)), data))
    except (ValueError, TypeError):
        return found
    finally:
        os.close(fd)
    return found
