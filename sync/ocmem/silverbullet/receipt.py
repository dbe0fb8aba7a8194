"""The receipt line ocmem keeps on each page it pushes: ``Envoi ocmem n° N (home-id, date, clé
KEY) — ligne tenue par ocmem.``

Its number tells, without any help from the server, whether a PUT whose answer was lost landed
and whether the page went back to an older version; its key is the claim of the home that writes
the page (a second home is refused before anything is merged). docs/sync.md, « The receipt line ».
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import NamedTuple

from ocmem.home import identity

RECEIPT = re.compile(r"^Envoi ocmem n° (\d+) \(([a-z0-9-]+), [^)]*\)[^\n]*$", re.MULTILINE)
# The claim of the home that writes the page, inside its receipt line (older lines have none).
CLAIM = re.compile(r"^Envoi ocmem n° \d+ \(([a-z0-9-]+), [^)]*clé ([0-9a-f]{8})\)", re.MULTILINE)


def receipt_of(text: str | None) -> int | None:
    """The number of ocmem's last write that the page shows (None: no receipt line)."""
    found = RECEIPT.search(text or "")
    return int(found.group(1)) if found else None


class Claim(NamedTuple):
    """The home whose receipt a page shows: its id and its key."""

    home_id: str
    key: str


def claim_of(text: str | None) -> Claim | None:
    """The home whose receipt the page shows (None: no receipt, or an older one)."""
    found = CLAIM.search(text or "")
    return Claim(found.group(1), found.group(2)) if found else None


def held_by_another(name: str, holder: Claim, home: identity.HomeId) -> str:
    """Whose page ``name`` is, said as the page shows it: two homes under one id, or another
    home on the spec's shared page (two ids, one page)."""
    if holder.home_id == home.id:
        return (
            f"{name} est tenue par un autre dossier ocmem (clé {holder.key}) qui a le même "
            f"identifiant « {home.id} » que celui-ci (clé {home.key})"
        )
    return (
        f"{name} est tenue par un autre dossier ocmem, « {holder.home_id} » (clé {holder.key}), "
        f"qui l'a prise le premier ; celui-ci est « {home.id} » (clé {home.key})"
    )


def with_receipt(
    text: str,
    number: int,
    home_id: str,
    when: datetime,
    pattern: re.Pattern[str],
    key: str | None = None,
) -> str:
    """``text`` whose receipt line says write ``number`` (by the home ``key`` claims it for):
    replaced where it is, else added at the end of the text before the first block."""
    claim = f", clé {key}" if key else ""
    line = f"Envoi ocmem n° {number} ({home_id}, {when:%Y-%m-%d %H:%M}{claim}) — ligne tenue par ocmem."
    if RECEIPT.search(text):
        return RECEIPT.sub(lambda _: line, text, count=1)
    first = pattern.search(text)
    head = (text[: first.start()] if first else text).rstrip("\n")
    rest = text[first.start() :] if first else ""
    return (f"{head}\n\n{line}\n" if head else f"{line}\n") + ("\n" + rest if rest else "")
