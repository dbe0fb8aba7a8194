"""skills/<name>/SKILL.md: OpenCode's frontmatter rules plus the user's caps, checked in code."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ocmem.errors import OcmemError

NAME_RULE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_SENTENCES = 2
# A sentence ends with . ! ? or … followed by a space and a capital (or the end of the text),
# unless the word before the point is an abbreviation: « p. ex. rsync », « v1.2.3 », « M. X ».
_SENTENCE_END = re.compile(r"(\S*?)[.!?…]+[»\"')\]]*\s+(?=[«\"'(\[]?[A-ZÀ-ÖØ-Þ0-9])")
_ABBREVIATIONS = frozenset(
    "p ex cf etc env resp min max approx fig vol chap art no n° m mme mlle dr pr st c.-à-d i.e e.g vs".split()
)


@dataclass(frozen=True)
class Skill:
    name: str  # the folder name
    path: Path
    description: str | None
    problems: tuple[str, ...]
    lines: int


def sentence_count(text: str) -> int:
    text = text.strip()
    if not text:
        return 0
    ends = [m for m in _SENTENCE_END.finditer(text) if m.group(1).lower() not in _ABBREVIATIONS]
    return len(ends) + 1


def name_problems(name: str) -> list[str]:
    if not 1 <= len(name) <= MAX_NAME or not NAME_RULE.match(name):
        return [
            f"nom {name!r} invalide : 1 à {MAX_NAME} caractères, minuscules, chiffres et tirets "
            "simples (^[a-z0-9]+(-[a-z0-9]+)*$)"
        ]
    return []


def description_problems(description: object) -> list[str]:
    if not isinstance(description, str) or not description.strip():
        return ["description absente : OpenCode n'annonce pas un skill sans description"]
    problems = []
    if len(description) > MAX_DESCRIPTION:
        problems.append(f"description de {len(description)} caractères (maximum {MAX_DESCRIPTION})")
    if sentence_count(description) > MAX_SENTENCES:
        problems.append(
            f"description de {sentence_count(description)} phrases (maximum {MAX_SENTENCES})"
        )
    return problems


def check_skill_text(folder_name: str, text: str, max_lines: int) -> tuple[str | None, list[str]]:
    """Problems of a SKILL.md text (empty list when valid) and its description."""
    import frontmatter  # lazy: pulls in yaml

    problems = name_problems(folder_name)
    line_count = len(text.splitlines())
    if line_count > max_lines:
        problems.append(
            f"{line_count} lignes (maximum {max_lines}) : mets les détails dans des fichiers "
            "annexes du même dossier"
        )
    try:
        metadata = frontmatter.loads(text).metadata
    except Exception as exc:  # the library raises yaml's errors, whose classes vary
        return None, [*problems, f"frontmatter YAML illisible : {exc}"]
    if not text.startswith("---"):
        problems.append("frontmatter absent (le fichier doit commencer par ---)")
    name = metadata.get("name")
    if name != folder_name:
        problems.append(f"name {name!r} différent du nom du dossier {folder_name!r}")
    description = metadata.get("description")
    problems += description_problems(description)
    return (description if isinstance(description, str) else None), problems


def split_skill(text: str) -> tuple[str, str]:
    """A SKILL.md's description and body, its front matter set aside ("" and the whole text
    when the front matter cannot be read)."""
    import frontmatter  # lazy: pulls in yaml

    try:
        post = frontmatter.loads(text)
    except Exception:  # the library raises yaml's errors, whose classes vary
        return "", text
    description = post.metadata.get("description")
    return (description if isinstance(description, str) else ""), post.content


def list_skills(skills_dir: Path, max_lines: int, read: Callable[[Path], str]) -> list[Skill]:
    """Every ``*/SKILL.md``, read by ``read`` (the home's door: a linked skill is refused, and
    listed with that refusal as its problem, its text unread)."""
    found = []
    for skill_file in sorted(skills_dir.glob("*/SKILL.md")):
        try:
            text = read(skill_file)
        except OcmemError as exc:
            problem = f"{exc.message} ; correction : {exc.fix}" if exc.fix else exc.message
            found.append(Skill(skill_file.parent.name, skill_file, None, (problem,), 0))
            continue
        description, problems = check_skill_text(skill_file.parent.name, text, max_lines)
        found.append(
            Skill(
                name=skill_file.parent.name,
                path=skill_file,
                description=description,
                problems=tuple(problems),
                lines=len(text.splitlines()),
            )
        )
    return found


def render_skill(name: str, description: str, body: str, metadata: dict[str, str]) -> str:
    """A SKILL.md with the frontmatter OpenCode reads (``metadata`` is a string map)."""
    import yaml

    header = {"name": name, "description": description, "metadata": metadata}
    front = yaml.safe_dump(header, allow_unicode=True, sort_keys=False, width=1000).strip()
    return f"---\n{front}\n---\n\n{body.strip()}\n"
