"""What ocmem ships and installs into a home: the AGENTS.md section that teaches the agent the
learning loop, ocmem's own skills, the plugin, the prompts. The loop runs only while the home
holds the section and the retrospective skill: ``ocmem init`` installs them, a pull never takes
them away (``ocmem.silverbullet.pull``), ``ocmem doctor`` and the plugin say when they are gone.
"""

from __future__ import annotations

import re
from pathlib import Path

from ocmem.errors import OcmemError
from ocmem.home.atomic import read_text
from ocmem.home.paths import Paths

BEGIN_MARKER = "<!-- ocmem:begin -->"
END_MARKER = "<!-- ocmem:end -->"
SECTION = re.compile(re.escape(BEGIN_MARKER) + r".*?" + re.escape(END_MARKER), re.DOTALL)
# ocmem's own skills: the loop needs them, so no pull removes them.
OWN_SKILLS = ("retrospective",)


def data_root() -> Path:
    """Where the shipped files are: inside the wheel, or the repo top level in a checkout."""
    packaged = Path(__file__).parents[1] / "_data"
    if (packaged / "AGENTS.md").is_file():
        return packaged
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "skills" / "retrospective" / "SKILL.md").is_file():
        return checkout
    raise OcmemError(
        "fichiers livrés avec ocmem introuvables", fix="réinstalle ocmem (pip install …)"
    )


def shipped_section() -> str:
    """ocmem's section of AGENTS.md, markers included."""
    match = SECTION.search(read_text(data_root() / "AGENTS.md"))
    if not match:
        raise OcmemError("section ocmem absente de l'AGENTS.md livré", fix="réinstalle ocmem")
    return match.group(0)


def has_section(text: str) -> bool:
    return SECTION.search(text) is not None


def with_section(text: str) -> str:
    """``text`` (the human's rules) with ocmem's section added at its end when missing."""
    if has_section(text):
        return text
    body = text.rstrip("\n")
    return (body + "\n\n" if body else "") + shipped_section() + "\n"


def loop_problems(paths: Paths) -> list[str]:
    """Why the learning loop cannot run in this home (empty: it can): what the agent needs to
    journal and propose, said by ``ocmem doctor`` and by the plugin at every session start."""
    found = []
    if not has_section(read_text(paths.agents_md)):
        found.append(
            "boucle d'apprentissage coupée : AGENTS.md n'a pas la section « Mémoire et "
            "apprentissage » d'ocmem (l'agent ne tient plus ni journal ni propositions) ; "
            "`ocmem doctor` dit comment la rétablir"
        )
    for name in OWN_SKILLS:
        if not (paths.skills_dir / name / "SKILL.md").is_file():
            found.append(
                f"boucle d'apprentissage coupée : le skill {name} manque (skills/{name}/SKILL.md) ; "
                "`ocmem doctor` dit comment le rétablir"
            )
    return found


def own_skill_of(rel: str) -> str | None:
    """The ocmem skill a home-relative path belongs to (``skills/retrospective/…``), if any."""
    parts = Path(rel).parts
    if len(parts) >= 2 and parts[0] == "skills" and parts[1] in OWN_SKILLS:
        return parts[1]
    return None


def own_skill_file(name: str) -> Path:
    return data_root() / "skills" / name / "SKILL.md"


def plugin_files(root: Path, paths: Paths) -> list[tuple[Path, Path]]:
    """The plugin as shipped (its entry, then its parts) and where each goes in the home: OpenCode
    loads the entry from plugin/, which imports its parts from plugin/ocmem/."""
    entry = root / "plugin" / "ocmem.ts"
    parts = sorted((root / "plugin" / "ocmem").glob("*.ts"))
    return [(entry, paths.plugin_file)] + [(p, paths.plugin_parts_dir / p.name) for p in parts]
