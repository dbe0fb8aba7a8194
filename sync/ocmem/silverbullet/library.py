"""The SilverBullet library page the human installs once: review, promote and refuse proposals.

The page is two ``space-lua`` blocks: the logic (``silverbullet/ocmem.lua``, plain Lua 5.4 that
CI runs in a real Lua) and the SilverBullet glue (``silverbullet/glue.lua``). ocmem never writes
it into the space (pushed pages stay inert): ``ocmem init --show-library`` prints it, and the
repository keeps a copy (``silverbullet/Library/ocmem.md``) that ``scripts/generate.py``
regenerates (and, with ``--check``, checks).
"""

from __future__ import annotations

import json
from importlib import resources

PAGE_NAME = "Library/ocmem"

_INTRO = """\
# ocmem : revue des propositions de l'agent

Cette page ajoute à SilverBullet la revue des propositions qu'ocmem pousse dans `Agents/Inbox/` : une page de revue et deux commandes, qui appliquent les mêmes règles qu'ocmem (plafond de MEMORY.md, règles des skills, source de chaque ajout).

- **ocmem: Revue des propositions** ouvre la page `ocmem:Revue` : les propositions en attente de tous les VPS, avec leurs champs, le remplissage de MEMORY.md et le nombre de skills, et deux boutons par proposition.
- **ocmem: Promouvoir une proposition** : un fait est ajouté à `Agents/Memory/MEMORY.md` avec sa date et sa source ; un skill devient `Agents/Skills/<nom>/SKILL.md`. Refusé, sans rien écrire, si un plafond ou une règle serait dépassé. La proposition est marquée « promu (date) ».
- **ocmem: Refuser une proposition** demande une raison et marque « refusé (date) : raison ».

Le texte des propositions est traité comme une donnée : rien n'y est évalué.

Installation : collez cette page telle quelle dans `Library/ocmem`, puis lancez « System: Reload ». Pour des plafonds autres que ceux d'ocmem par défaut, ajoutez par exemple `ocmem.limits.memoryChars = 3000` dans un bloc `space-lua` de votre configuration.

Page générée par ocmem : ne la modifiez pas, réinstallez-la (`ocmem init --show-library`).

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
    """A Lua literal for a string, an int or a flat table of them (keys as identifiers)."""
    if isinstance(value, str):
        # JSON's escapes are Lua's for these; not \uXXXX (Lua writes \u{XXXX}), so no control
        # character but the newline.
        assert all(c == "\n" or c >= " " for c in value), value
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    assert isinstance(value, dict)
    return "{\n" + "".join(f"  {k} = {_lua(v)},\n" for k, v in value.items()) + "}"


def lua_constants() -> str:
    """The constants ocmem.lua shares with ocmem (caps, pages, the MEMORY.md header, the
    proposals' states, labels and separator), written from ocmem's own values."""
    from ocmem.formats import archive, decisionspage, memorymd, pending, skills
    from ocmem.home import space
    from ocmem.home.settings import Limits

    limits, pulled = Limits(), dict(space.DEFAULT_PULL)
    memory_page = next(k for k, v in pulled.items() if v == "memory/MEMORY.md")
    archive_page = next(k for k, v in pulled.items() if v == "memory/ARCHIVE.md")
    skills_page = next(k for k, v in pulled.items() if v == "skills/")
    lines = [
        "M.limits = M.limits or "
        + _lua(
            {
                "memoryChars": limits.memory_chars,
                "skillsMax": limits.skills_max,
                "skillLines": limits.skill_lines,
                "descriptionChars": skills.MAX_DESCRIPTION,
                "descriptionSentences": skills.MAX_SENTENCES,
            }
        ),
        "M.pages = M.pages or "
        + _lua(
            {
                "inbox": space.DEFAULT_INBOX,
                "memory": memory_page.removesuffix(".md"),
                "archive": archive_page.removesuffix(".md"),
                "skills": skills_page,
            }
        ),
        f"M.MEMORY_HEADER = {_lua(memorymd.MEMORY_HEADER)}",
        f"M.ARCHIVE_HEADER = {_lua(archive.ARCHIVE_HEADER)}",
        f"M.DECISIONS_HEADER = {_lua(decisionspage.HEADER)}",
        f"local DECISIONS_PAGE = {_lua(decisionspage.PAGE_NAME.removesuffix('.md'))}",
        f"local SEP = {_lua(pending.SEPARATOR)}",
        f"local CONTENT_LABEL = {_lua(pending.CONTENT_LABEL)}",
        "local PENDING, PROMOTED, REFUSED, MERGED = " + ", ".join(_lua(s) for s in pending.STATES),
        "local LABELS = " + _lua(dict(pending.LABELS)),
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
