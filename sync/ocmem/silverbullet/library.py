"""The SilverBullet library page the human installs once: review, promote and refuse proposals.

The page is two ``space-lua`` blocks: the logic (``silverbullet/ocmem.lua``, plain Lua 5.4 that
CI runs in a real Lua: it performs the gestures ocmem computed, ``ocmem.formats.gestures``) and
the SilverBullet glue (``silverbullet/glue.lua``). ocmem never writes
it into the space (pushed pages stay inert): ``ocmem init --show-library`` prints it, and the
repository keeps a copy (``silverbullet/Library/ocmem.md``) that ``scripts/generate.py``
regenerates (and, with ``--check``, checks).
"""

from __future__ import annotations

import json
from datetime import date
from importlib import resources

from ocmem.formats import archive, gestures
from ocmem.text import inert

PAGE_NAME = "Library/ocmem"

_INTRO = """\
# ocmem : revue des propositions de l'agent

Cette page ajoute à SilverBullet la revue des propositions qu'ocmem pousse dans `Agents/Inbox/` : une page de revue et trois commandes. Elle ne décide rien : pour chaque proposition en attente, ocmem calcule à l'envoi ce que chaque geste écrira (la ligne du fait, le SKILL.md, l'ancienne ligne remplacée et l'archive, la ligne de décision, les plafonds) ; la page vérifie que les pages qu'elle modifie sont toujours telles qu'ocmem les a vues, écrit, et note la décision dans `Agents/Inbox/<dossier>/decisions`.

- **ocmem: Revue des propositions** ouvre la page `ocmem:Revue` : chaque proposition en attente telle que la montre sa page, ce que la promotion écrira, et deux boutons.
- **ocmem: Promouvoir une proposition** : un fait va dans `Agents/Memory/MEMORY` (à la place du fait qu'il remplace, gardé dans `Agents/Memory/ARCHIVE`) ; un skill devient `Agents/Skills/<nom>/SKILL`. Refusé, sans rien écrire, si un plafond serait dépassé ou si la page a changé depuis le dernier envoi d'ocmem (lance alors `ocmem sync`).
- **ocmem: Refuser une proposition** demande une raison et note « refusé (date) : raison ».
- **ocmem: Retirer un fait ou un skill** le retire de la mémoire validée et le garde dans l'archive, avec la raison.

Le texte des propositions est traité comme une donnée : rien n'y est évalué.

Installation : colle cette page telle quelle dans `Library/ocmem`, puis lance « System: Reload ».

Page générée par ocmem : ne la modifie pas, réinstalle-la (`ocmem init --voir-bibliotheque`).

## Logique (Lua standard, testée par ocmem)

"""

_GLUE = """
## Intégration à SilverBullet

"""


def _source(name: str) -> str:
    return (resources.files("ocmem") / "silverbullet" / name).read_text(encoding="utf-8")


def logic_source() -> str:
    return _source("ocmem.lua")


def glue_source() -> str:
    return _source("glue.lua")


LUA_BEGIN = "-- generated: begin (scripts/generate.py, from ocmem's code: do not edit)\n"
LUA_END = "-- generated: end\n"


def _lua(value: object) -> str:
    """A Lua literal for a string, an int, a text (pieces: strings and slots) or a flat table
    of them (keys as identifiers)."""
    if isinstance(value, gestures.Slot):
        return "{ " + _lua(value.name) + " }"
    if isinstance(value, str):
        # JSON's escapes are Lua's for these; not \uXXXX (Lua writes \u{XXXX}), so no control
        # character but the newline.
        assert all(c == "\n" or c >= " " for c in value), value
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, tuple):
        return "{ " + ", ".join(_lua(piece) for piece in value) + " }"
    assert isinstance(value, dict)
    return "{\n" + "".join(f"  {k} = {_lua(v)},\n" for k, v in value.items()) + "}"


# What a retirement writes in the archive, rendered by ocmem.formats.archive from sentinels that
# become the page's slots (no agent text goes through it: only the human's choice and reason).
_OLD, _REASON, _NAME = "\ue000ancien\ue000", "\ue000raison\ue000", "\ue000nom\ue000"
# A skill's old SKILL.md is fenced by a run of tildes longer than any it holds (inert.fence): the
# page does not count them, so its template fences with twelve and refuses a skill holding twelve.
_SKILL_OLD = "~" * 11 + "\n" + _OLD


def _retirement(kind: str, about: str, old: str) -> gestures.Text:
    def render(day: date) -> str:
        return "\n" + archive.Entry(day, kind, archive.RETIRED, about, old, "", _REASON).render()

    slots = {old: "ancien", _REASON: "raison", _NAME: "nom"}
    return gestures.split_at(gestures.slotted(render), slots)


def lua_constants() -> str:
    """What ocmem.lua takes from ocmem: the pages it looks in, the fence of the gestures ocmem
    pushes, the decisions page's header, and the retirements' templates."""
    from ocmem.formats import decisionspage, memorymd
    from ocmem.home import space

    pulled = dict(space.DEFAULT_PULL)
    memory_page = next(k for k, v in pulled.items() if v == "memory/MEMORY.md")
    archive_page = next(k for k, v in pulled.items() if v == "memory/ARCHIVE.md")
    skills_page = next(k for k, v in pulled.items() if v == "skills/")
    pending_page = next(r for loc, r in space.DEFAULT_PUSH if loc == "memory/pending.md")
    lines = [
        "M.pages = M.pages or "
        + _lua(
            {
                "inbox": space.DEFAULT_INBOX,
                "pending": pending_page.rpartition("/")[2].removesuffix(".md"),
                "memory": memory_page.removesuffix(".md"),
                "archive": archive_page.removesuffix(".md"),
                "skills": skills_page,
                "skill": "/SKILL",
            }
        ),
        f"M.FENCE, M.FENCE_CLOSE = {_lua(gestures.OPEN)}, {_lua(gestures.CLOSE)}",
        f"M.DECISIONS_HEADER = {_lua(decisionspage.HEADER)}",
        f"M.FACT_PREFIX = {_lua(memorymd.FACT_PREFIX)}",
        f"M.ARCHIVE_EMPTY = {_lua((archive.ARCHIVE_HEADER.rstrip(chr(10)) + chr(10),))}",
        f"M.RETIRE_FACT = {_lua(_retirement(archive.FACT, 'à la main', _OLD))}",
        f"M.RETIRE_SKILL = {_lua(_retirement(archive.SKILL, _NAME, _SKILL_OLD))}",
        f"M.RETIRE_SKILL_FENCE = {_lua(inert.fence_for(_SKILL_OLD))}",
    ]
    return "".join(line + "\n" for line in lines)


def with_lua_constants(source: str) -> str:
    """``source`` (ocmem.lua) with its generated block rewritten from ocmem's values."""
    head, begin, rest = source.partition(LUA_BEGIN)
    _, end, tail = rest.partition(LUA_END)
    if not begin or not end:
        raise ValueError("ocmem.lua has lost its generated block's markers")
    return head + LUA_BEGIN + lua_constants() + LUA_END + tail


def _block(code: str) -> str:
    return "```space-lua\n" + code.rstrip("\n") + "\n```\n"


def library_page() -> str:
    return _INTRO + _block(logic_source()) + _GLUE + _block(glue_source())
