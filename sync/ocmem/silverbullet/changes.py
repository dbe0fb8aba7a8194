"""What a pull changed in the validated memory, as the human reads it (pure).

A pulled MEMORY.md, AGENTS.md or skill file becomes what every later session trusts, whoever
wrote it in SilverBullet (the human, the review page, an MCP server holding the token). So each
pull that installs a file whose content differs from what the previous pull installed shows the
change — a bounded line diff (``ocmem.text.linediff``), the first lines of a new file, a removed
one named — in its output and in the commit message of the local history (``ocmem history``).
The first pull from a space shows a summary instead: one line per installed file.

Everything shown is inert for a terminal (``linediff.visible``): the content is the space's, and
a page can hold escape sequences or bidirectional overrides meant to hide what it says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ocmem.text import linediff

PER_FILE = 40  # diff lines shown for one file
BUDGET = 160  # diff lines shown by one pull, all files together
PREVIEW = 8  # first lines shown of a new or removed file
SUMMARY_FILES = 20  # files named by the first pull's summary
INDENT = "      "
# The plugin reads it in the output of the pull it runs at session start (plugin/ocmem.ts).
HEADER = "Mémoire validée changée depuis le pull précédent"


@dataclass(frozen=True)
class Change:
    """One pulled file whose content changed: ``old`` is what the previous pull installed
    (None: the file is new), ``new`` what this pull installed (None: removed)."""

    local: str
    old: bytes | None
    new: bytes | None
    # The previous pull's version was not found (hand-edited copy, no history): ``old`` is the
    # local copy the pull replaced.
    against_local: bool = False


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _lines(count: int) -> str:
    return f"{count} ligne{'s' if count > 1 else ''}"


def _more(count: int, name: str) -> str:
    return f"{INDENT}… {count} ligne(s) de plus (`ocmem history {name}`)"


def _preview(change: Change, data: bytes, what: str, marker: str, budget: int) -> list[str]:
    name = linediff.visible(change.local)
    text = _text(data)
    if text is None:
        return [f"  {what} : {name} (binaire ou non UTF-8, {len(data)} octets)"]
    shown = linediff.preview(text, min(PREVIEW, budget))
    head = f"  {what} : {name} ({_lines(shown.total)})"
    if not shown.total:
        head = f"  {what} : {name} (vide)"
    lines = [head, *(f"{INDENT}{marker}{line}" for line in shown.lines)]
    return lines + ([_more(shown.hidden, name)] if shown.hidden else [])


def describe(change: Change, budget: int = PER_FILE) -> list[str]:
    """The lines showing one change, at most ``budget`` of them from the file itself."""
    name = linediff.visible(change.local)
    if change.new is None:
        if change.old is None:
            return [f"  supprimé : {name}"]
        return _preview(change, change.old, "supprimé", "-", budget)
    if change.old is None:
        return _preview(change, change.new, "nouveau", "+", budget)
    versus = ", par rapport à la copie locale" if change.against_local else ""
    old, new = _text(change.old), _text(change.new)
    if old is None or new is None:
        return [
            f"  modifié : {name} (binaire ou non UTF-8 : {len(change.old)} → "
            f"{len(change.new)} octets{versus})"
        ]
    found = linediff.diff(old, new, limit=min(PER_FILE, budget))
    if not found.lines and found.cut:
        return [
            f"  modifié : {name} ({found.removed} → {_lines(found.added)}{versus}) : trop long "
            f"pour un diff (`ocmem history {name}`)"
        ]
    head = f"  modifié : {name} (+{found.added} / -{found.removed}{versus})"
    lines = [head, *(INDENT + line for line in found.lines)]
    return lines + ([_more(found.hidden, name)] if found.hidden else [])


def render(changes: Sequence[Change]) -> list[str]:
    """Every change of one pull, in path order, within :data:`BUDGET` lines of content."""
    if not changes:
        return []
    out = [f"{HEADER} (quel qu'en soit l'auteur) :"]
    budget = BUDGET
    for change in sorted(changes, key=lambda c: c.local):
        lines = describe(change, max(budget, 0))
        budget -= len(lines) - 1
        out += lines
    return out


def summary(installed: Sequence[tuple[str, bytes]], space: str) -> list[str]:
    """The first pull from a space: what it installed, one line per file, no content."""
    if not installed:
        return []
    out = [
        f"Premier pull depuis {linediff.visible(space)} : {len(installed)} fichier(s) "
        "installé(s) comme mémoire validée (contenu : `ocmem history FICHIER --voir VERSION`)"
    ]
    for local, data in sorted(installed)[:SUMMARY_FILES]:
        text = _text(data)
        size = "binaire" if text is None else _lines(len(linediff.split(text)))
        out.append(f"  {linediff.visible(local)} ({size})")
    if len(installed) > SUMMARY_FILES:
        out.append(f"  … et {len(installed) - SUMMARY_FILES} autre(s)")
    return out
