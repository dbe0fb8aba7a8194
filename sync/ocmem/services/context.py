"""What memory costs in every prompt: sizes of what OpenCode loads, and fill levels of capped files.

OpenCode puts AGENTS.md and (through the ocmem plugin) MEMORY.md and SHORT_TERM.md in the system
prompt of every turn, plus one ``<skill>`` entry (name, description, location) per skill.
Tokens are estimated at 4 characters per token, the usual rule of thumb: good enough for a budget.

MEMORY.md's budget in the prompt is its cap (``limits.memory_chars``): a MEMORY.md the human made
longer (or a space that inflated it) is loaded line by line up to it, the rest is not, and the
session start says so (:func:`memory_for_prompt`): a space cannot put megabytes in every prompt.
"""

from __future__ import annotations

import codecs
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

from ocmem.formats import skills
from ocmem.formats.fill import Fill
from ocmem.home.atomic import open_file, read_text
from ocmem.home.settings import Settings

CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Item:
    name: str
    chars: int
    cap: int | None

    @property
    def tokens(self) -> int:
        return -(-self.chars // CHARS_PER_TOKEN)


class Loaded(NamedTuple):
    """What the prompt carries of a file, and what it leaves out (None: nothing)."""

    text: str
    left_out: str | None


def memory_for_prompt(path: Path, budget: int) -> Loaded:
    """MEMORY.md as every prompt carries it: its lines in order, as many whole lines as fit in
    ``budget`` characters; what does not fit is not loaded, and said. Only the head of the file
    is read (a character is 4 UTF-8 bytes at most)."""
    try:
        with os.fdopen(open_file(path, os.O_RDONLY), "rb") as handle:  # never through a link
            head = handle.read(budget * 4 + 1)
            whole = len(head) <= budget * 4
            size = handle.seek(0, 2)
    except FileNotFoundError:
        return Loaded("", None)
    try:  # a character cut at the end of the head is left out, a wrong byte is refused
        text = codecs.getincrementaldecoder("utf-8")().decode(head[: budget * 4], final=whole)
    except UnicodeDecodeError:
        read_text(path)  # says which byte, and the fix
        raise
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # as read_text reads it
    if whole and len(text) <= budget:
        return Loaded(text, None)
    kept: list[str] = []
    used = 0
    pieces = text.split("\n")
    for line in [p + "\n" for p in pieces[:-1]] + [pieces[-1]]:
        if used + len(line) > budget:
            break
        kept.append(line)
        used += len(line)
    facts = sum(line.startswith("- ") for line in kept)
    return Loaded(
        "".join(kept),
        f"memory/MEMORY.md dépasse son budget dans le prompt ({budget} caractères ; le fichier "
        f"fait {size} octets) : ses {len(kept)} premières lignes ({facts} fait(s)) sont "
        "chargées, la suite non chargée — consolide MEMORY.md (dans SilverBullet s'il y est "
        "tiré), ou relève `limits.memory_chars`",
    )


@dataclass(frozen=True)
class ContextReport:
    items: list[Item]
    alert_tokens: int
    warning_ratio: float
    notes: list[str] = field(default_factory=list)  # what the prompt leaves out

    @property
    def chars(self) -> int:
        return sum(i.chars for i in self.items)

    @property
    def tokens(self) -> int:
        return sum(i.tokens for i in self.items)

    @property
    def over(self) -> bool:
        return self.tokens > self.alert_tokens

    def warnings(self) -> list[str]:
        found = list(self.notes)
        for item in self.items:
            if item.cap:
                fill = Fill(item.chars, item.cap)
                if fill.over:
                    found.append(f"{item.name} au-dessus de son plafond : {fill}")
                elif fill.warns(self.warning_ratio):
                    found.append(f"{item.name} bientôt plein : {fill}")
        if self.over:
            found.append(
                f"contexte mémoire de ~{self.tokens} tokens, au-dessus du seuil de {self.alert_tokens}"
            )
        return found

    def render(self) -> str:
        lines = []
        for item in self.items:
            level = f"  {Fill(item.chars, item.cap)}" if item.cap else ""
            lines.append(f"{item.name:<28} {item.chars:>6} car. ~{item.tokens:>5} tokens{level}")
        lines.append(
            f"{'total':<28} {self.chars:>6} car. ~{self.tokens:>5} tokens (seuil {self.alert_tokens})"
        )
        lines += [f"⚠ {w}" for w in self.warnings()]
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps(
            {
                "items": [asdict(i) | {"tokens": i.tokens} for i in self.items],
                "chars": self.chars,
                "tokens": self.tokens,
                "alert_tokens": self.alert_tokens,
                "over": self.over,
                "warnings": self.warnings(),
            },
            ensure_ascii=False,
            indent=2,
        )


def skill_index_entry(skill: skills.Skill) -> str:
    """The entry OpenCode writes into the system prompt for one skill."""
    return (
        f"<skill><name>{skill.name}</name><description>{skill.description or ''}</description>"
        f"<location>{skill.path}</location></skill>"
    )


def context_report(settings: Settings) -> ContextReport:
    paths, limits = settings.paths, settings.limits
    memory = memory_for_prompt(paths.memory_md, limits.memory_chars)
    items = [
        Item("AGENTS.md", len(read_text(paths.agents_md)), None),
        Item("memory/MEMORY.md", len(memory.text), limits.memory_chars),
        Item("memory/SHORT_TERM.md", len(read_text(paths.short_term)), limits.short_term_chars),
    ]
    installed = [
        s
        for s in skills.list_skills(
            paths.skills_dir, limits.skill_lines, lambda p: read_text(p, errors="replace")
        )
        if s.description
    ]
    items.append(
        Item(
            f"skills ({len(installed)} descriptions)",
            sum(len(skill_index_entry(s)) for s in installed),
            None,
        )
    )
    notes = [memory.left_out] if memory.left_out else []
    return ContextReport(items, limits.context_alert_tokens, limits.fill_warning_ratio, notes)
