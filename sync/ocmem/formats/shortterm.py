"""memory/SHORT_TERM.md: the agent's own short notes, one dated line each, that expire.

Line format: ``[AAAA-MM-JJ → expire AAAA-MM-JJ] texte``. A note is expired on its expiry date.
A note written by an exposed session (``ocmem.guards.exposure``) carries its mark inside the brackets::

    [2026-11-29 → expire 2026-12-06 · quarantaine : webfetch http://…] texte
    [2026-11-29 → expire 2026-12-06 · exposée, demandée par l'utilisateur : curl …] texte
    [2026-11-29 → expire 2026-12-06 · exposée, levée par l'humain : webfetch http://…] texte

A quarantined note is kept, counted in the cap and listed, but never put in a session's prompt
(``ocmem.bridge.tools.prompt_context``) until the human lifts it (``ocmem note --trust N``). The file
holds nothing but such lines, so its size is exactly what the cap measures.
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
    def __init__(self, line_no: int, line: str):
        super().__init__(
            f"memory/SHORT_TERM.md, ligne {line_no}, n'est pas au format "
            f"« [AAAA-MM-JJ → expire AAAA-MM-JJ] texte » : {line[:80]!r}",
            fix=(
                "corrige ou supprime cette ligne à la main (ou `ocmem doctor` pour le détail) ; "
                "une sauvegarde est faite avant toute écriture d'ocmem"
            ),
        )
        self.line_no = line_no


def parse(text: str) -> list[Note]:
    notes = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _LINE.match(line.rstrip())
        if not match:
            raise ShortTermFormatError(line_no, line)
        try:
            created, expires = (
                date.fromisoformat(match.group(1)),
                date.fromisoformat(match.group(2)),
            )
        except ValueError as exc:
            raise ShortTermFormatError(line_no, line) from exc
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
            fix=f"choisis --days entre 1 et {max_days} (limite `note_max_days` d'ocmem.yaml)",
        )
    return Note(today, today + timedelta(days=days), clean)
