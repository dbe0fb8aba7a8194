"""The SilverBullet library page the human installs once: review, promote and refuse proposals.

The page is two ``space-lua`` blocks: the logic (``silverbullet/ocmem.lua``, plain Lua 5.4 that
CI runs in a real Lua) and the SilverBullet glue (``silverbullet/glue.lua``). ocmem never writes
it into the space (pushed pages stay inert): ``ocmem init --show-library`` prints it, and the
repository keeps a copy (``silverbullet/Library/ocmem.md``) that ``--write`` regenerates and
``tests/test_sb_review.py`` checks.

    python -m ocmem.silverbullet.library --write silverbullet/Library/ocmem.md
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

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


def _block(code: str) -> str:
    return "```space-lua\n" + code.rstrip("\n") + "\n```\n"


def library_page() -> str:
    return _INTRO + _block(logic_source()) + _GLUE + _block(glue_source())


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--write":
        Path(argv[1]).write_text(library_page(), encoding="utf-8")
        return 0
    if not argv:
        sys.stdout.write(library_page())
        return 0
    sys.stderr.write("usage: python -m ocmem.silverbullet.library [--write PATH]\n")
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
