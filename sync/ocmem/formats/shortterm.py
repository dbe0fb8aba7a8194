"""memory/SHORT_TERM.md: the agent's own short notes, one dated line each, that expire; and
memory/QUARANTINE.md, the notes an exposed session wrote, set apart in the same format.

Line format: ``[AAAA-MM-JJ → expire AAAA-MM-JJ] texte``. A note is expired on its expiry date.
A note written by an exposed session (``ocmem.guards.exposure``) carries its mark inside the brackets::

    [2026-11-29 → expire 2026-12-06 · quarantaine : webfetch http://…] texte
    [2026-11-29 → expire 2026-12-06 · exposée, demandée par l'utilisateur : curl …] texte
    [2026-11-29 → expire 2026-12-06 · exposée, levée par l'humain : webfetch http://…] texte

A quarantined note never takes working memory: it lives in QUARANTINE.md (its own cap, its own
expiry), is never put in a session's prompt (``ocmem.bridge.tools.prompt_context``) and is not
counted in SHORT_TERM.md's cap, until the human lifts it (``ocmem note --lever-quarantaine N``),
which moves it to SHORT_TERM.md. Quarantined lines an older ocmem wrote in SHORT_TERM.md are read
as set apart (``hold``) and move out at the next write. Both files hold nothing but such lines,
so a file's size is exactly what its cap measures.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import NamedTuple

from ocmem.errors import InputError, OcmemError
from ocmem.formats import marks
from ocmem.text import inert

_LINE = re.compile(
    r"^\[(\d{4}-\d{2}-\d{2}) (?:→|->) expire (\d{4}-\d{2}-\d{2})"
    r"(?: · ((?:" + "|".join(re.escape(s) for s in marks.STATES) + r") : [^\]]*))?\] (\S.*)$"
)


class Note(NamedTuple):
    created: date
    expires: date
    text: str
    mark: str = ""  # an exposed session's write: "quarantaine : source" (ocmem.guards.exposure)

    def _dates(self, mark: str | None = None) -> str:
        mark = self.mark if mark is None else mark
        shown = f" · {mark}" if mark else ""
        return f"[{self.created.isoformat()} → expire {self.expires.isoformat()}{shown}]"

    def render(self) -> str:
        return f"{self._dates()} {self.text}"

    def shown(self) -> str:
        """The line as a person reads it (the text is stored escaped, see ocmem.text.inert; the
        mark is read back on its own, so a token span ending it is seen as ocmem's)."""
        return f"{self._dates(inert.unescape(self.mark))} {inert.unescape(self.text)}"

    def expired(self, today: date) -> bool:
        return self.expires <= today

    @property
    def quarantined(self) -> bool:
        return marks.quarantined(self.mark)


class ShortTermFormatError(OcmemError):
    def __init__(self, line_no: int, line: str, file: str = "memory/SHORT_TERM.md"):
        super().__init__(
            f"{file}, ligne {line_no}, n'est pas au format "
            f"« [AAAA-MM-JJ → expire AAAA-MM-JJ] texte » : {line[:80]!r}",
            fix=(
                "corrige ou supprime cette ligne à la main (ou `ocmem doctor` pour le détail) ; "
                "une sauvegarde est faite avant toute écriture d'ocmem"
            ),
        )
        self.line_no = line_no


def parse(text: str, file: str = "memory/SHORT_TERM.md") -> list[Note]:
    notes = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _LINE.match(line.rstrip())
        if not match:
            raise ShortTermFormatError(line_no, line, file)
        try:
            created, expires = (
                date.fromisoformat(match.group(1)),
                date.fromisoformat(match.group(2)),
            )
        except ValueError as exc:
            raise ShortTermFormatError(line_no, line, file) from exc
        notes.append(Note(created, expires, match.group(4), match.group(3) or ""))
    return notes


def render(notes: list[Note]) -> str:
    return "".join(note.render() + "\n" for note in notes)


def shown(notes: list[Note]) -> str:
    return "".join(note.shown() + "\n" for note in notes)


def split_expired(notes: list[Note], today: date) -> tuple[list[Note], list[Note]]:
    kept = [n for n in notes if not n.expired(today)]
    dropped = [n for n in notes if n.expired(today)]
    return kept, dropped


QUARANTINE_FILE = "memory/QUARANTINE.md"


class Held(NamedTuple):
    """The notes of both files as one list the human numbers: the working notes (SHORT_TERM.md)
    first, then those set apart (QUARANTINE.md)."""

    working: list[Note]
    apart: list[Note]
    expired: int  # SHORT_TERM.md's notes past their expiry, dropped at the next write
    expired_apart: int  # the same in QUARANTINE.md (quarantined lines of SHORT_TERM.md included)
    moved: int  # quarantined lines found in SHORT_TERM.md, that the next write moves out

    @property
    def numbered(self) -> list[Note]:
        return [*self.working, *self.apart]


def hold(short_term: str, quarantine: str, today: date) -> Held:
    """What the two files hold today (``ShortTermFormatError`` names a line neither can read)."""
    working, dropped = split_expired(parse(short_term), today)
    apart, dropped_apart = split_expired(parse(quarantine, QUARANTINE_FILE), today)
    left = [n for n in working if n.quarantined]
    gone = sum(n.quarantined for n in dropped)
    return Held(
        [n for n in working if not n.quarantined],
        [*apart, *left],
        len(dropped) - gone,
        len(dropped_apart) + gone,
        len(left),
    )


def marked(state: str, source: str) -> str:
    """The mark a note keeps: its source escaped like the text and holding no ``]``
    (``exposure.clean_source`` turned brackets into parentheses)."""
    return marks.mark(state, inert.inline(source.replace("]", ")")))


def make_note(text: str, today: date, days: int, max_days: int) -> Note:
    """Validate a new note's shape (not its content: see textsafety) and date it."""
    clean = inert.clean(text).strip()
    if not clean:
        raise InputError("la note est vide", fix="donne le texte de la note")
    if "\n" in clean:
        raise InputError(
            "une note tient sur une seule ligne",
            fix="résume-la en une ligne, ou fais-en plusieurs notes",
        )
    if not 1 <= days <= max_days:
        raise InputError(
            f"durée de {days} jour(s) hors limites (1 à {max_days})",
            fix=f"choisis --jours entre 1 et {max_days} (limite `note_max_days` d'ocmem.yaml)",
        )
    return Note(today, today + timedelta(days=days), clean)
