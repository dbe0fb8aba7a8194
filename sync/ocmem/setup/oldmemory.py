"""Another memory system next to ocmem: find it, and prepare its replacement.

Two memory systems instructing the agent at once contradict each other (where to write, what to
trust, what to forget). OpenCode loads skills from its config dir (the ocmem home: ``skill/`` and
``skills/``), from ``~/.claude/skills`` and ``~/.agents/skills``, and from ``skills.paths`` in
opencode.json; the home's AGENTS.md is in every prompt. This module finds, there, the skills and
the AGENTS.md sections that run another memory (``ocmem.setup.memorysignals`` reads them), and
what they knew; ``ocmem.setup.install`` replaces them (``ocmem init``) and ``ocmem.setup.doctor``
reports them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ocmem.errors import InputError, OcmemError, StorageError
from ocmem.home.atomic import read_text
from ocmem.home.paths import Paths, resolve_home
from ocmem.setup.memorysignals import (
    OWN_SKILL,
    OldLine,
    Section,
    Signal,
    memory_sections,
    old_lines,
    quoted,
    runs_a_memory,
    skill_signals,
    split_skill,
)
from ocmem.text.similarity import fold

# What a scan visits at most under one root (a skills.paths entry could name a huge tree).
MAX_DIRS_PER_ROOT = 2000
MAX_DEPTH = 8
# What a replacement reads: memory files are small; a bigger folder is not a skill.
MAX_FOLDER_FILES = 500
MAX_FOLDER_BYTES = 20 << 20
MAX_MEMORY_FILE_BYTES = 256 << 10

# --- where OpenCode loads skills from (I/O) ----------------------------------------------------


class Root(NamedTuple):
    path: Path
    label: str  # short name for folders made from it (old-memory, backups)
    from_silverbullet: bool  # the home's skills/ when sync pulls it


def user_home(env: Mapping[str, str]) -> Path:
    """The user's HOME as the environment gives it (tests point it at a temp dir)."""
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def shown(path: Path, paths: Paths, env: Mapping[str, str]) -> str:
    """A path as messages show it: relative to the ocmem home, else ``~/…``, else absolute."""
    if path == paths.home or paths.home in path.parents:
        return paths.rel(path)
    home = user_home(env)
    if home in path.parents:
        return "~/" + path.relative_to(home).as_posix()
    return str(path)


def roots(paths: Paths, env: Mapping[str, str], *, sync_mode: bool) -> tuple[list[Root], list[str]]:
    """Every folder OpenCode loads skills from, for this home, and notes on what was skipped."""
    home = user_home(env)
    found = [
        Root(paths.home / "skill", "opencode-skill", False),
        Root(paths.skills_dir, "opencode", sync_mode),
        Root(home / ".claude" / "skills", "claude", False),
        Root(home / ".agents" / "skills", "agents", False),
    ]
    notes: list[str] = []
    configured, problem = configured_skill_paths(paths.home)
    if problem:
        notes.append(problem)
    for number, raw in enumerate(configured, start=1):
        if raw.startswith("~/") or raw == "~":
            path = home / raw[2:]
        elif os.path.isabs(raw):
            path = Path(raw)
        else:
            notes.append(
                f"chemin de skills relatif {raw!r} (opencode.json) non examiné : OpenCode le "
                "résout depuis le dossier où il démarre ; vérifie à la main qu'il ne contient pas "
                "d'autre mémoire"
            )
            continue
        found.append(Root(path, f"config{number}", False))
    unique: list[Root] = []
    seen: set[Path] = set()
    for root in found:
        key = _resolved(root.path)
        if key not in seen:
            seen.add(key)
            unique.append(root)
    return unique, notes


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


def configured_skill_paths(home: Path) -> tuple[list[str], str | None]:
    """``skills.paths`` of the home's opencode.json (or .jsonc), and why it could not be read."""
    for name in ("opencode.json", "opencode.jsonc"):
        path = home / name
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            return [], f"{name} illisible ({exc}) : ses chemins de skills n'ont pas été examinés"
        try:
            config = json.loads(strip_jsonc(text))
        except ValueError as exc:
            return (
                [],
                f"{name} n'est pas du JSON valide ({exc}) : ses chemins de skills n'ont pas été examinés",
            )
        skills = config.get("skills") if isinstance(config, dict) else None
        listed = skills.get("paths") if isinstance(skills, dict) else None
        if isinstance(listed, list):
            return [p for p in listed if isinstance(p, str) and p.strip()], None
    return [], None


_JSONC_COMMENT = re.compile(r'("(?:[^"\\]|\\.)*")|//[^\n]*|/\*.*?\*/', re.DOTALL)
_JSONC_COMMA = re.compile(r'("(?:[^"\\]|\\.)*")|,(\s*[}\]])')


def strip_jsonc(text: str) -> str:
    """JSON from JSONC: comments, then trailing commas, removed; strings untouched."""
    text = _JSONC_COMMENT.sub(lambda m: m.group(1) or "", text)
    return _JSONC_COMMA.sub(lambda m: m.group(1) or m.group(2), text)


def skill_files(root: Path, excluded: Path) -> Iterator[Path]:
    """Every ``SKILL.md`` under ``root`` (symlinks followed once, ``excluded`` skipped)."""
    if not root.is_dir():
        return
    seen: set[tuple[int, int]] = set()
    visited = 0
    base_depth = len(root.parts)
    for folder, dirs, files in os.walk(root, followlinks=True):
        current = Path(folder)
        try:
            info = current.stat()
        except OSError:
            dirs.clear()
            continue
        key = (info.st_dev, info.st_ino)
        visited += 1
        if key in seen or visited > MAX_DIRS_PER_ROOT or _resolved(current) == excluded:
            dirs.clear()
            continue
        seen.add(key)
        if len(current.parts) - base_depth >= MAX_DEPTH:
            dirs.clear()
        dirs.sort()
        if "SKILL.md" in files:
            yield current / "SKILL.md"


# --- findings (I/O) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    kind: str  # "skill" or "section"
    path: Path  # the skill's folder (or its SKILL.md when it lies at a root), or AGENTS.md
    title: str  # the skill's name, or the section's heading
    signals: tuple[Signal, ...]
    root: Root | None = None  # where OpenCode found the skill
    section: Section | None = None
    from_silverbullet: bool = False  # sync pulls it: it is removed in SilverBullet

    def why(self) -> str:
        return ", ".join(s.label for s in self.signals)

    def describe(self, paths: Paths, env: Mapping[str, str]) -> str:
        if self.section is not None:
            return (
                f"section {quoted(self.title, 60)} de {shown(self.path, paths, env)} "
                f"(lignes {self.section.first_line} à {self.section.last_line}) : {self.why()}"
            )
        return f"skill {quoted(self.title, 60)} ({shown(self.path, paths, env)}) : {self.why()}"

    def silverbullet_fix(self) -> str:
        if self.section is not None:
            return (
                f"retire la section {quoted(self.title, 60)} de la page AGENTS.md dans "
                "SilverBullet (Agents/AGENTS.md par défaut), puis `ocmem pull`"
            )
        return (
            f"supprime le skill {self.path.name} dans SilverBullet (Agents/Skills/{self.path.name}/ "
            f"par défaut), puis `ocmem pull` ; s'il n'y est pas, déplace {self.path} hors de "
            "skills/"
        )


class Scan(NamedTuple):
    findings: list[Finding]
    roots: list[Root]
    notes: list[str]


def detect(paths: Paths, env: Mapping[str, str], *, sync_mode: bool = False) -> Scan:
    """Every other memory system OpenCode would load next to ocmem (reads only)."""
    found_roots, notes = roots(paths, env, sync_mode=sync_mode)
    findings: list[Finding] = []
    excluded = _resolved(paths.state_dir)
    own = _resolved(paths.skills_dir / OWN_SKILL)
    seen: set[Path] = set()
    for root in found_roots:
        root_key = _resolved(root.path)
        for skill_file in skill_files(root.path, excluded):
            unit = skill_file if _resolved(skill_file.parent) == root_key else skill_file.parent
            key = _resolved(unit)
            if key in seen or key == own or any(covers(f.path, unit) for f in findings):
                continue
            seen.add(key)
            try:
                text = skill_file.read_bytes().decode("utf-8", errors="replace")
            except OSError:
                continue  # OpenCode cannot load what this user cannot read
            skill = split_skill(skill_file.parent.name, text)
            if skill.promoted:
                continue
            signals = skill_signals(skill.name, skill.description, skill.body)
            if runs_a_memory(signals):
                findings.append(
                    Finding(
                        "skill",
                        unit,
                        skill.name,
                        tuple(signals),
                        root,
                        None,
                        root.from_silverbullet,
                    )
                )
    agents = paths.agents_md
    try:
        agents_text = read_text(agents)
    except (OSError, OcmemError):
        agents_text = ""  # missing, or reported by the checks that need it
    for section, signals in memory_sections(agents_text):
        findings.append(
            Finding("section", agents, section.title, tuple(signals), None, section, sync_mode)
        )
    return Scan(findings, found_roots, notes)


def replace_command(paths: Paths, env: Mapping[str, str]) -> str:
    """The command that replaces what was found, for this very home."""
    if _resolved(paths.home) == _resolved(resolve_home(env)):
        return "ocmem init --remplacer-ancienne"
    import shlex

    return f"ocmem --home {shlex.quote(str(paths.home))} init --remplacer-ancienne"


# --- preparing a replacement (reads only, refuses before anything is written) ------------------

_MEMORY_FILE_NAME = re.compile(
    r"^(?:memory|memories|memoire|souvenirs|facts?|faits|notes?|context|active-?context"
    r"|product-?context|progress|preferences|knowledge|long-?term|hot|warm|cold|todo)"
    r"\.(?:md|markdown|txt)$"
)
_MEMORY_DIR_NAME = re.compile(r"^\.?(?:memory|memories|memoire|memory-bank|souvenirs)$")


@dataclass(frozen=True)
class Prepared:
    finding: Finding
    files: tuple[tuple[str, bytes], ...]  # (path relative to the unit, bytes): the backup
    lines: tuple[tuple[str, OldLine], ...]  # (file shown, statement)
    read: tuple[str, ...]  # memory files whose statements were read
    left: tuple[str, ...]  # files kept as they are, not read (other formats)
    text: str = ""  # a section: the AGENTS.md it was found in (cut only from that very text)


def prepare(finding: Finding, paths: Paths, env: Mapping[str, str]) -> Prepared:
    """Everything a replacement needs, read now: it raises (nothing written yet) on a file that
    cannot be read, a memory file that is not UTF-8, or a folder ocmem could not move. A skill
    SilverBullet feeds is not moved here (the next pull would bring it back): only read."""
    if finding.section is not None:
        text = read_utf8(finding.path, paths)
        section = finding.section
        body_start = text.find("\n", section.start, section.end)
        body = text[body_start + 1 : section.end] if body_start >= 0 else ""
        statements = old_lines(body, first_line=section.first_line + 1, bullets_only=True)
        where = shown(finding.path, paths, env)
        return Prepared(finding, (), tuple((where, s) for s in statements), (where,), (), text)
    unit = finding.path
    if not finding.from_silverbullet:
        _check_movable(unit, paths)
    files = _unit_files(unit, paths)
    lines: list[tuple[str, OldLine]] = []
    read: list[str] = []
    left: list[str] = []
    for rel, data in files:
        target = unit / rel if unit.is_dir() else unit
        name = Path(rel).name
        is_memory = bool(_MEMORY_FILE_NAME.match(fold(name))) or any(
            _MEMORY_DIR_NAME.match(fold(part)) for part in Path(rel).parts[:-1]
        )
        if (
            name == "SKILL.md"
            or not is_memory
            or not name.lower().endswith((".md", ".markdown", ".txt"))
        ):
            if name != "SKILL.md":
                left.append(rel)
            continue
        if len(data) > MAX_MEMORY_FILE_BYTES:
            left.append(rel)
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{target} n'est pas de l'UTF-8 valide (octet {exc.start}) : ses faits ne peuvent "
                "pas être importés ; rien n'a été modifié",
                fix=f"réenregistre-le en UTF-8 (`iconv -f latin1 -t utf-8 …`), puis relance "
                f"`{replace_command(paths, env)}`",
            ) from None
        where = shown(target, paths, env)
        read.append(where)
        lines += [(where, line) for line in old_lines(text)]
    return Prepared(finding, tuple(files), tuple(lines), tuple(read), tuple(left))


def _check_movable(unit: Path, paths: Paths) -> None:
    """Refuse now a skill that could not be moved: its folder's parent must be writable, and
    across disks (a copy, then a removal) every folder inside it too."""
    folders = [unit.parent]
    target = paths.state_dir if paths.state_dir.exists() else paths.home
    try:
        same_disk = not target.exists() or unit.lstat().st_dev == target.stat().st_dev
    except OSError:
        same_disk = True  # the read that follows names the problem
    if not same_disk and unit.is_dir() and not unit.is_symlink():
        folders += [Path(f) for f, _, _ in os.walk(unit)]
    for folder in folders:
        if not os.access(folder, os.W_OK | os.X_OK):
            raise StorageError(
                f"permission refusée : impossible de déplacer {unit} (écriture interdite dans "
                f"{folder}) ; rien n'a été modifié",
                fix=f"donne les droits d'écriture sur {folder} à cet utilisateur (`ls -ld "
                f"{folder}`), ou déplace {unit} toi-même hors de {unit.parent}, puis relance "
                "`ocmem init`",
            )


def _unit_files(unit: Path, paths: Paths) -> list[tuple[str, bytes]]:
    """Every file of a skill folder (or the lone SKILL.md), as bytes, for a byte-identical
    backup; refuses a file that cannot be read, or a folder too big to be a skill."""
    if not unit.is_dir():
        return [(unit.name, _read_bytes(unit, paths))]
    found: list[tuple[str, bytes]] = []
    total = 0
    for folder, dirs, files in os.walk(unit):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            if path.is_symlink() and not path.exists():
                continue  # a dangling link has no bytes; the move keeps the link itself
            data = _read_bytes(path, paths)
            total += len(data)
            found.append((path.relative_to(unit).as_posix(), data))
            if len(found) > MAX_FOLDER_FILES or total > MAX_FOLDER_BYTES:
                raise OcmemError(
                    f"{unit} contient plus de {MAX_FOLDER_FILES} fichiers ou "
                    f"{MAX_FOLDER_BYTES >> 20} Mio : ce n'est pas un skill qu'ocmem déplace seul ; "
                    "rien n'a été modifié",
                    fix=f"déplace-le toi-même hors de {unit.parent} (par exemple dans "
                    f"{paths.old_memory_dir}), puis relance `ocmem init`",
                )
    return found


def _read_bytes(path: Path, paths: Paths) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise StorageError(
            f"{path} est illisible ({reason}) : ocmem ne peut pas le sauvegarder ni le lire ; "
            "rien n'a été modifié",
            fix=f"rends-le lisible (`ls -l {path}`) ou retire-le de {path.parent}, puis relance "
            "`ocmem init`",
        ) from exc


def read_utf8(path: Path, paths: Paths) -> str:
    data = _read_bytes(path, paths)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path} n'est pas de l'UTF-8 valide (octet {exc.start}) ; rien n'a été modifié",
            fix=f"réenregistre {path} en UTF-8, puis relance `ocmem init`",
        ) from None


def aside_name(finding: Finding, taken: set[str]) -> str:
    """The folder name, under ``.ocmem/old-memory/<stamp>/``, for a skill set aside: made from
    where it was, never ``skill`` nor ``skills`` (OpenCode's folder names)."""
    label = finding.root.label if finding.root else "agents-md"
    slug = re.sub(r"[^a-z0-9]+", "-", fold(f"{label}-{finding.path.name}")).strip("-")
    slug = slug.removesuffix("-skill-md") or "skill"
    name, number = slug, 2
    while name in taken or name in ("skill", "skills"):
        name, number = f"{slug}-{number}", number + 1
    taken.add(name)
    return name


def backup_name(path: Path, paths: Paths, env: Mapping[str, str]) -> str:
    """Where, inside a run's backup folder, a copy of ``path`` goes: its place in the home,
    ``HOME/…`` for the user's files, ``ROOT/…`` for others (never an absolute path, which
    would escape the backup folder)."""
    if paths.home in path.parents:
        return paths.rel(path)
    home = user_home(env)
    if home in path.parents:
        return "HOME/" + path.relative_to(home).as_posix()
    return "ROOT/" + path.as_posix().lstrip("/")


def covers(root: Path, path: Path) -> bool:
    resolved_root, resolved = _resolved(root), _resolved(path)
    return resolved == resolved_root or resolved_root in resolved.parents
