"""References to journal entries (issue 36): ``journal AAAA-MM-JJ HH:MM`` names the first entry of
that minute, ``…HH:MM~2`` the second, ``~3`` the third: their order within the minute, read from
the month's archive then the journal (``Ranks``), never written in the header, which stays the
spec's ``## AAAA-MM-JJ HH:MM · titre · #tags``. The journal is append-only and archiving moves
whole minutes in their order, so a reference, once given, keeps naming the same entry, and no two
entries share one. An older ocmem wrote the rank in the header (``## … 10:00~2 · …``): such a
header still reads, its rank kept.

Every reader ranks alike: the blocks of a text (``ocmem.formats.journal.blocks``), the append's
byte scan (``journal.minute_headers``), the push's block ids (``ocmem.silverbullet.merge``), the
search index (``ocmem.home.journalindex``).
"""

# No `from __future__ import annotations`: see ocmem.home.settings (NamedTuples on the hot path).

import re
from datetime import datetime
from typing import NamedTuple

from ocmem.errors import InputError

_REF = r"^(?:journal\s+)?(\d{4}-\d{2}-\d{2})[ T](\d{2}):(\d{2})(?:~(\d+))?$"


class Ref(NamedTuple):
    """Which entry: the minute it was written and its rank among that minute's entries."""

    when: datetime
    rank: int = 1

    @property
    def stamp(self) -> str:
        """``AAAA-MM-JJ HH:MM``, or ``AAAA-MM-JJ HH:MM~N`` for the Nth entry of a minute."""
        minute = f"{self.when:%Y-%m-%d %H:%M}"
        return minute if self.rank == 1 else f"{minute}~{self.rank}"

    def __str__(self) -> str:
        return f"journal {self.stamp}"


def ref_of(ref: Ref | datetime) -> str:
    return str(ref if isinstance(ref, Ref) else Ref(ref))


def parse_ref(text: str) -> Ref:
    """``journal 2026-11-29 14:32`` (or just the date and time, or ``…14:32~2``) → that entry."""
    match = re.compile(_REF).match(text.strip())
    if not match:
        raise InputError(
            f"référence de journal invalide : {text!r}",
            fix="écris-la « journal AAAA-MM-JJ HH:MM » comme la recherche du journal la donne "
            "(avec son ~N pour la 2e, la 3e… entrée d'une minute)",
        )
    day, hour, minute, rank = match.groups()
    try:
        when = datetime.fromisoformat(f"{day} {hour}:{minute}")
    except ValueError as exc:
        raise InputError(
            f"date invalide dans la référence {text!r}", fix="vérifie la date"
        ) from exc
    if rank is not None and int(rank) < 2:
        raise InputError(
            f"rang invalide dans la référence {text!r}",
            fix="la première entrée d'une minute n'a pas de ~N ; les suivantes ont ~2, ~3…",
        )
    return Ref(when, int(rank or 1))


class Ranks:
    """The ranks taken at each minute, entries read in order: an entry comes after every entry
    of its minute read before it; one whose header carries a rank (an older ocmem's ``~N``)
    keeps it while no entry read before holds it. So reading more never changes a rank given."""

    def __init__(self) -> None:
        self._taken: dict[datetime, set[int]] = {}

    def take(self, when: datetime, written: int = 0) -> int:
        """The rank of the next entry read at ``when``; ``written``: its header's, 0 if none."""
        taken = self._taken.setdefault(when, set())
        rank = written if written and written not in taken else max(taken, default=0) + 1
        taken.add(rank)
        return rank


def with_reference(text: str, ref: Ref) -> str:
    """An entry's text as a search shows it: when its header does not say its reference (an
    entry after the first of its minute), the header line says it after itself, to be cited."""
    header, newline, rest = text.partition("\n")
    if ref.rank == 1 or header.startswith(f"## {ref.stamp} · "):
        return text
    return f"{header} (référence : {ref}){newline}{rest}"
