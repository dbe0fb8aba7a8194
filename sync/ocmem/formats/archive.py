"""memory/ARCHIVE.md: the validated facts and skills a promotion replaced or the human retired,
with their dates and the reason: never loaded in a prompt, kept for the human to read and
restore (with SilverBullet, the page ``Agents/Memory/ARCHIVE``, pulled like MEMORY.md).

Each entry is a section::

    ## 2026-12-01 · fait remplacé · P-0004
    - Ancien : Le port SSH du VPS est 2222. (2026-11-20, Source : journal 2026-11-19 10:00 ; P-0001)
    - Nouveau : Le port SSH du VPS est 2200.
    - Raison : valeur changée : 2222 → 2200

    ## 2026-12-02 · skill retiré · deploy-vps
    - Raison : remplacé par le playbook Ansible
    - Ancien :

    ~~~markdown
    ---
    name: deploy-vps
    …
    ~~~

The old fact keeps its line as MEMORY.md had it (its date and source inside); a skill keeps its
whole SKILL.md, fenced. Agent-written values (the reason a promotion gives) are inert.
"""

from __future__ import annotations

import re
from datetime import date
from typing import NamedTuple

from ocmem.formats.pending import SEPARATOR
from ocmem.text import inert

ARCHIVE_HEADER = (
    "# Archive de la mémoire\n\n"
    "Faits et skills remplacés ou retirés par l'humain : ocmem ne les charge plus. Pour en "
    "rétablir un, recopie-le (un fait dans MEMORY.md, un skill dans son dossier de "
    "Agents/Skills/) ou "
    "laisse l'agent le proposer à nouveau.\n"
)
FACT, SKILL = "fait", "skill"
REPLACED, RETIRED = "remplacé", "retiré"
_HEADING = re.compile(
    rf"^## (\d{{4}}-\d{{2}}-\d{{2}}){SEPARATOR}(fait|skill) (remplacé|retiré){SEPARATOR}(.+?)\s*$"
)
_FIELD = re.compile(r"^- (Ancien|Nouveau|Raison) : ?(.*)$")


class Entry(NamedTuple):
    when: date
    kind: str  # FACT or SKILL
    action: str  # REPLACED or RETIRED
    about: str  # the proposal that replaced it, or the skill's name
    old: str  # the fact's line as MEMORY.md had it, or the skill's SKILL.md
    new: str  # the fact that replaced it ("" when retired)
    reason: str

    def statement(self) -> str:
        """What the archived item said (a fact's line; a skill's name and old text)."""
        return self.old if self.kind == FACT else f"{self.about} {self.old}"

    def render(self) -> str:
        lines = [
            f"## {SEPARATOR.join((self.when.isoformat(), f'{self.kind} {self.action}', self.about))}"
        ]
        if self.kind == FACT:
            lines.append(f"- Ancien : {self.old}")
            if self.new:
                lines.append(f"- Nouveau : {inert.inline(self.new)}")
            lines.append(f"- Raison : {inert.inline(self.reason)}")
            return "\n".join(lines) + "\n"
        lines += [f"- Raison : {inert.inline(self.reason)}", "- Ancien :", ""]
        lines.append(inert.fence(self.old.rstrip("\n"), "markdown"))
        return "\n".join(lines) + "\n"


def with_entry(text: str, entry: Entry) -> str:
    """The archive with ``entry`` appended (made from its header when empty)."""
    base = text.rstrip("\n") if text.strip() else ARCHIVE_HEADER.rstrip("\n")
    return base + "\n\n" + entry.render()


def entries(text: str) -> list[Entry]:
    """The archive's entries, oldest first; sections it cannot read are skipped (the human's
    own notes may sit between them)."""
    return [entry for _, _, entry in _sections(text.splitlines())]


def without_entry(text: str, entry: Entry) -> str:
    """The archive without ``entry``'s section (the first that reads as it), every other byte
    kept; "" when nothing but the header is left (the archive that entry made)."""
    lines = text.split("\n")
    start, end = next((a, b) for a, b, found in _sections(lines) if found == entry)
    before = "\n".join(lines[:start]).rstrip("\n")
    after = "\n".join(lines[end:]).strip("\n")
    rest = f"{before}\n\n{after}\n" if after else f"{before}\n"
    return "" if rest.strip() == ARCHIVE_HEADER.strip() else rest


def _sections(lines: list[str]) -> list[tuple[int, int, Entry]]:
    """Each readable section: its first line, the line after its last, its entry."""
    found: list[tuple[int, int, Entry]] = []
    i = 0
    while i < len(lines):
        heading = _HEADING.match(lines[i])
        start = i
        i += 1
        if not heading:
            continue
        fields: dict[str, str] = {}
        body: list[str] = []
        while i < len(lines) and not lines[i].startswith("## "):
            field = _FIELD.match(lines[i])
            if field:
                fields[field.group(1)] = field.group(2)
            else:
                body.append(lines[i])
            i += 1
        when, kind, action, about = heading.groups()
        old = fields.get("Ancien", "") if kind == FACT else _fenced(body)
        entry = Entry(
            date.fromisoformat(when),
            kind,
            action,
            about,
            old,
            inert.unescape(fields.get("Nouveau", "")),
            inert.unescape(fields.get("Raison", "")),
        )
        found.append((start, i, entry))
    return found


def _fenced(body: list[str]) -> str:
    """The text of the first fence in ``body`` (a skill's SKILL.md)."""
    start = next((n for n, line in enumerate(body) if line.startswith(("~~~", "```"))), None)
    if start is None:
        return ""
    marker = re.match(r"^(~+|`+)", body[start])
    assert marker is not None
    end = next(
        (n for n in range(start + 1, len(body)) if body[n].startswith(marker.group(1))),
        len(body),
    )
    return "\n".join(body[start + 1 : end]) + "\n"
