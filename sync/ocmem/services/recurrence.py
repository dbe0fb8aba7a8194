"""Short-term notes that keep coming back, so that they can go the durable way (pending.md).

SHORT_TERM.md forgets: a note expires, is removed, or is rewritten when it is renewed. What it
forgets is what this module remembers, in ``<home>/.ocmem/note-recurrence.json``: for each note
text (compared folded, or near-identical by word overlap), the distinct days on which it was
written — added, re-added after expiring or being removed, or renewed.

A note written on ``RECURRING_DAYS`` (3) distinct days is *recurring*. Why 3: one day is one
working session; a note rewritten the next day is a task that spans two sessions, which is what
short-term notes are for (the journal's rule for lessons, « seen twice », is about episodes, which
are rarer than notes). A third day means the note has outlived any one task: it is context the
agent keeps needing, and belongs in MEMORY.md — if the human agrees. Nothing here writes a
proposal: the note's result suggests one to the agent, ``ocmem review`` lists the note, and the
proposal still goes through ``ocmem propose`` and the human.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from ocmem.errors import OcmemError
from ocmem.home.atomic import read_text
from ocmem.home.paths import Paths
from ocmem.text import inert
from ocmem.text.similarity import fold, similarity

RECURRING_DAYS = 3
SAME_NOTE = 0.8  # word overlap above which two notes are one note reworded
KEPT_DAYS = 10  # days remembered per note: enough to show the pattern
FORGET_AFTER_DAYS = 120  # a note not written for this long starts again from zero
MAX_RECORDS = 300
COVERED = 0.5  # overlap with a proposal or a fact above which the note is already handled


@dataclass(frozen=True)
class NoteRecord:
    text: str  # the latest wording, escaped as in SHORT_TERM.md
    days: tuple[date, ...]  # distinct days on which it was written, oldest first

    @property
    def recurring(self) -> bool:
        return len(self.days) >= RECURRING_DAYS

    def describe(self) -> str:
        shown = ", ".join(d.isoformat() for d in self.days[-RECURRING_DAYS:])
        more = (
            f" (et {len(self.days) - RECURRING_DAYS} autre(s) jour(s))"
            if len(self.days) > RECURRING_DAYS
            else ""
        )
        return f"écrite {len(self.days)} jours différents : {shown}{more}"


NOTE_SOURCE = "notes SHORT_TERM.md"


def source_of(note: NoteRecord) -> str:
    """How a proposal cites a recurring note among its sources."""
    return f"{NOTE_SOURCE} du {', '.join(d.isoformat() for d in note.days)}"


def is_note_source(source: str) -> bool:
    return source.startswith(NOTE_SOURCE)


def _is_same(a: str, b: str) -> bool:
    return fold(a).strip() == fold(b).strip() or similarity(a, b) >= SAME_NOTE


def find(records: list[NoteRecord], text: str) -> NoteRecord | None:
    return next((r for r in records if _is_same(r.text, text)), None)


def find_close(records: list[NoteRecord], statement: str) -> NoteRecord | None:
    """The recorded note a proposed fact restates (the most written one, if several)."""
    close = [r for r in records if similarity(inert.unescape(r.text), statement) >= COVERED]
    return max(close, key=lambda r: len(r.days), default=None)


def record(
    records: list[NoteRecord], text: str, today: date
) -> tuple[list[NoteRecord], NoteRecord]:
    """``records`` after ``text`` was written today (pure), and the note's record."""
    cutoff = today - timedelta(days=FORGET_AFTER_DAYS)
    fresh = [r for r in records if r.days and r.days[-1] > cutoff]
    previous = find(fresh, text)
    days = tuple(sorted(set(previous.days if previous else ()) | {today}))[-KEPT_DAYS:]
    updated = NoteRecord(text, days)
    others = [r for r in fresh if r is not previous]
    kept = sorted(others, key=lambda r: r.days[-1])[-(MAX_RECORDS - 1) :]
    return [*kept, updated], updated


def recurring(records: list[NoteRecord]) -> list[NoteRecord]:
    return [r for r in records if r.recurring]


def render(records: list[NoteRecord]) -> str:
    data = [{"text": r.text, "days": [d.isoformat() for d in r.days]} for r in records]
    return json.dumps({"notes": data}, ensure_ascii=False, indent=1) + "\n"


def _parse(raw: Any) -> list[NoteRecord]:
    if not isinstance(raw, dict) or not isinstance(raw.get("notes"), list):
        raise ValueError("pas un objet {notes: [...]}")
    found = []
    for item in raw["notes"]:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise ValueError("une note sans texte")
        days = item.get("days")
        if not isinstance(days, list) or not days:
            raise ValueError("une note sans jours")
        found.append(
            NoteRecord(item["text"], tuple(sorted({date.fromisoformat(str(d)) for d in days})))
        )
    return found


def load(paths: Paths) -> list[NoteRecord]:
    text = read_text(paths.note_recurrence)
    if not text.strip():
        return []
    try:
        return _parse(json.loads(text))
    except (ValueError, TypeError) as exc:
        raise OcmemError(
            f"registre des notes récurrentes illisible : {paths.rel(paths.note_recurrence)} ({exc})",
            fix=(
                f"supprime {paths.note_recurrence} : ocmem le refait (seul le compte des jours "
                "où chaque note a été écrite est perdu ; aucune note)"
            ),
        ) from None


def covered_by(
    note: NoteRecord, proposals: list[tuple[str, str, str]], facts: list[str]
) -> str | None:
    """What already carries this note to the human, if anything: a proposal ``(id, state,
    text)`` or a MEMORY.md fact close to it (then no suggestion is made)."""
    text = inert.unescape(note.text)
    for pid, state, proposed in proposals:
        if similarity(text, proposed) >= COVERED:
            return f"déjà proposée : {pid} ({state})"
    for fact in facts:
        if similarity(text, fact) >= COVERED:
            return f"déjà dans MEMORY.md : « {fact} »"
    return None
