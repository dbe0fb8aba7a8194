"""What memory costs in every prompt: sizes of what OpenCode loads, and fill levels of capped files.

OpenCode puts AGENTS.md and (through the ocmem plugin) MEMORY.md and SHORT_TERM.md in the system
prompt of every turn, plus one ``<skill>`` entry (name, description, location) per skill.
Tokens are estimated at 4 characters per token, the usual rule of thumb: good enough for a budget.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from ocmem.formats import skills
from ocmem.formats.fill import Fill
from ocmem.home.atomic import read_text
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


@dataclass(frozen=True)
class ContextReport:
    items: list[Item]
    alert_tokens: int
    warning_ratio: float

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
        found = []
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
    items = [
        Item("AGENTS.md", len(read_text(paths.agents_md)), None),
        Item("memory/MEMORY.md", len(read_text(paths.memory_md)), limits.memory_chars),
        Item("memory/SHORT_TERM.md", len(read_text(paths.short_term)), limits.short_term_chars),
    ]
    installed = [
        s for s in skills.list_skills(paths.skills_dir, limits.skill_lines) if s.description
    ]
    items.append(
        Item(
            f"skills ({len(installed)} descriptions)",
            sum(len(skill_index_entry(s)) for s in installed),
            None,
        )
    )
    return ContextReport(items, limits.context_alert_tokens, limits.fill_warning_ratio)
