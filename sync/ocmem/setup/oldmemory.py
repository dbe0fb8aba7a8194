"""Another memory system next to ocmem: find it, and prepare its replacement.

Two memory systems instructing the agent at once contradict each other (where to write, what to
trust, what to forget). OpenCode loads skills from its config dir (the ocmem home: ``skill/`` and
``skills/``), from ``~/.claude/skills`` and ``~/.agents/skills``, and from ``skills.paths`` in
opencode.json; the home's AGENTS.md is in every prompt. This module finds, there, the skills and
the AGENTS.md sections that run another memory, and reads what they knew; ``ocmem.setup.install``
replaces them (``ocmem init``) and ``ocmem.setup.doctor`` reports them.

Detection scores signals, and where a word appears says more than the word: a skill *named*
"memory-bank" runs a memory, a "docker" skill that talks about memory limits does not. The
phrases of technical memory (limits, in-memory, leaks, GPU memory…) are removed before anything
is counted. A skill is flagged at ``THRESHOLD`` points, one of them saying what it does (its
name, a memory file, a mem_ tool, an instruction to write into a memory, memory layers, keeping
things across sessions): a skill about LangChain's chat memory talks about memory without running
one. An AGENTS.md section must have a memory heading and more (a list of facts, a memory file…). ocmem's own skill (``skills/retrospective``), the skills it
promoted and its own section (between its markers) are never flagged.
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
from ocmem.home.paths import Paths, resolve_home
from ocmem.text.similarity import fold

THRESHOLD = 4
NAME, DESCRIPTION, HEADING, BODY = 3, 2, 2, 1
SECTION_HEADING = 3
# What a scan visits at most under one root (a skills.paths entry could name a huge tree).
MAX_DIRS_PER_ROOT = 2000
MAX_DEPTH = 8
# What a replacement reads: memory files are small; a bigger folder is not a skill.
MAX_FOLDER_FILES = 500
MAX_FOLDER_BYTES = 20 << 20
MAX_MEMORY_FILE_BYTES = 256 << 10

BEGIN_MARKER = "<!-- ocmem:begin -->"
END_MARKER = "<!-- ocmem:end -->"
OWN_SKILL = "retrospective"

# --- signals (pure) --------------------------------------------------------------------------

# Technical memory, removed from the folded text before anything is counted.
_TECHNICAL = re.compile(
    r"""(?x)
    \bin[\s-]memory\b(?![./])
    | \bmemory[\s_-]?(?:limits?|usage|leaks?|footprint|pressure|requests?|reservations?
        |allocat\w*|alloc|profil\w*|mapped|map|management|safe\w*|errors?|consumption|bandwidth
        |barriers?|model|order\w*|cache\w*|store|hog\w*|bound|intensive|swap|overcommit
        |fragmentation|address\w*|layout|pool|dump|corruption|efficien\w*|constraints?
        |utili[sz]ation|metrics?|stats?|mb|gb|mib|gib|units?|sticks?|modules?|slots?|controller
        |optimi[sz]\w*|issues?|problems?|hungry|heavy|budget|size|access|ordering)\b
    | \b(?:out[\s-]of|low|shared|virtual|gpu|video|heap|stack|physical|available|free|system
        |container|process|swap|flash|non[\s-]volatile|random[\s-]access|main|unified
        |device|host|pinned|total|used|max|more|less|enough|high|peak|resident|kernel|cuda|ram
        |volatile|persistent[\s-]volume|instance|node|pod|vm|jvm|buffer)[\s-]memory\b(?![./])
    | --?memory\S*
    | \bmem_(?:limit|reservation|swappiness|swap)\w* | \w*_mem\b | \bmemoiz\w* | \bmemo\b
    | \bmemoire\s+(?:vive|ram|disponible|utilisee|libre|partagee|virtuelle|cache|tampon
        |physique|graphique|du\s+conteneur|du\s+serveur|insuffisante|technique|de\s+fin
        |de\s+master|de\s+these)\b
    | \b(?:fuites?|consommation|manque|saturation|limites?|limitation)\s+(?:de\s+)?memoire\b
    | \b(?:stocke\w*|charge\w*|tient|tenir|tiennent)\s+en\s+memoire\b
    | \b(?:answer|respond|reply|quote|cite|write|writing|work|working|guess|recite|code|coding
        |draw|drawing|play|playing|speak|speaking)\w*\s+(?:\w+\s+){0,2}from\s+memory\b
    | \b(?:repond|cit|ecri|travaill|jou|dessin|recit)\w*\s+(?:\w+\s+){0,2}de\s+memoire\b
    | \bremember\s+the\s+milk\b
    | \blong[\s-]term\s+support\b
    """
)
_MEMORY = re.compile(
    r"\b(?:memory|memories|memoire|memoires|souvenirs?|notes?\s+persistantes?"
    r"|persistent\s+notes?|long[\s-]term\s+(?:context|facts|knowledge|notes))\b"
)
# A memory word that is not part of a file name (memory.md, memory-bank/…).
_MEMORY_WORD = re.compile(r"(?<![\w./-])(?:memory|memories|memoire|memoires|souvenirs?)(?![\w./-])")
_REMEMBER = re.compile(r"\b(?:remember\w*|souviens|rappelle-toi|retiens|a\s+retenir)\b")
_PERSIST = re.compile(
    r"\b(?:across\s+sessions|between\s+sessions|cross[\s-]sessions?|future\s+sessions"
    r"|next\s+sessions?|(?:previous|earlier|past)\s+sessions|sessions\s+precedentes"
    r"|entre\s+(?:les|deux)\s+sessions|d'une\s+session\s+a\s+l'autre"
    r"|prochaines?\s+sessions?|persist\w*\s+(?:facts|context|knowledge|notes|preferences"
    r"|information)|persistent\s+(?:context|knowledge))\b"
)
_MEMORY_FILE = re.compile(
    r"(?:\b(?:memory|memoire|souvenirs|memories)\.md\b|\bmemor(?:y|ies)/|\.memory/"
    r"|\bmemory[-_]bank\b|\bactivecontext\.md\b|\bproductcontext\.md\b)"
)
_CONTEXT_FILE = re.compile(r"\bcontext\.md\b")
_HISTORY_FILE = re.compile(r"\bhistory\.md\b")
_MEM_TOOL = re.compile(
    r"\bmem_[a-z]\w*|\bmemory_(?:search|save|store|add|write|read|recall|get|list|update"
    r"|delete|forget|remember)\b"
)
_WRITE = re.compile(
    r"(?:write|writes|append|add|update|save|store|record|persist|ecris"
    r"|ecrire|ajoute|ajouter|note|noter|enregistre|enregistrer|consigne|consigner|sauvegarde"
    r"|sauvegarder|mets|mettre)"  # « mets à jour »: its first word
)
_LAYER = re.compile(r"^(?:\W*\s*)?(hot|warm|cold|chaud|tiede|froid)\b")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_PROMOTED = re.compile(r"^\s*proposition:\s*['\"]?(?:[a-z0-9-]+/)?P-\d{4,}", re.MULTILINE)


class Signal(NamedTuple):
    label: str
    weight: int
    # What a memory system *does* (its name says so, it writes to a memory file, has mem_
    # tools, memory layers, keeps things across sessions), as opposed to a topic: a skill on
    # LangChain's chat memory talks about memory without running one.
    behaviour: bool = False


def cleaned(text: str) -> str:
    """The folded text (lowercase, no accents) without its technical-memory phrases."""
    folded = fold(text).replace("\u2019", "'")
    return _TECHNICAL.sub(" ", folded)


def _quoted(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return f"« {text[: limit - 1]}… »" if len(text) > limit else f"« {text} »"


def _memory_term(text: str) -> bool:
    clean = cleaned(text)
    return bool(_MEMORY.search(clean) or _REMEMBER.search(clean) or _PERSIST.search(clean))


def body_signals(body: str, *, headings: bool) -> list[Signal]:
    """What a skill's body or a section's body says about memory (each signal once)."""
    found: list[Signal] = []
    lines = list(_outside_fences(body.splitlines()))
    heads = [m.group(2) for line in lines if (m := _HEADING.match(line))]
    if headings:
        memory_heads = [h for h in heads if _memory_term(h)]
        if memory_heads:
            found.append(Signal(f"titre {_quoted(memory_heads[0])}", HEADING))
    layers = {_LAYER_WORDS[m.group(1)] for h in heads if (m := _LAYER.match(cleaned(h).strip()))}
    if len(layers) >= 2:
        found.append(Signal("couches Hot/Warm/Cold (façon Kessho)", 3, True))
    clean = cleaned(body)
    if _MEMORY_FILE.search(clean):
        found.append(Signal(f"fichier {_as_written(_MEMORY_FILE, body)}", 2, True))
    elif _CONTEXT_FILE.search(clean) and _HISTORY_FILE.search(clean):
        found.append(Signal("fichiers context.md et history.md", 2, True))
    if _MEM_TOOL.search(clean):
        found.append(Signal(f"outil {_as_written(_MEM_TOOL, body)}", 2, True))
    if any(is_memory_instruction(line) for line in lines):
        found.append(Signal("consigne d'écrire dans la mémoire", 2, True))
    if _PERSIST.search(clean):
        found.append(Signal(_quoted(_as_written(_PERSIST, body)), BODY, True))
    if _REMEMBER.search(clean):
        found.append(Signal(_quoted(_as_written(_REMEMBER, body)), BODY))
    if _MEMORY.search(_MEMORY_FILE.sub(" ", clean)):
        word = _as_written(_MEMORY_WORD, body) or _as_written(_MEMORY, body)
        found.append(Signal(f"mot {_quoted(word)}", BODY))
    return found


def _as_written(pattern: re.Pattern[str], text: str) -> str:
    """What ``pattern`` (written for folded text) matches in ``text``, as the user wrote it."""
    folded = fold(text).replace("\u2019", "'")
    clean = _TECHNICAL.sub(lambda m: " " * len(m.group(0)), folded)
    match = pattern.search(clean)
    if match is None:
        return ""
    if len(folded) == len(text):  # folding kept every offset (no ligature): show the original
        return text[match.start() : match.end()]
    return match.group(0)


_LAYER_WORDS = {"hot": 1, "chaud": 1, "warm": 2, "tiede": 2, "cold": 3, "froid": 3}


_WORD = re.compile(r"[\w'/-]+(?:\.[\w'/-]+)*|[;!?]|\.(?=\s|$)")
INSTRUCTION_WINDOW = 8  # words between the verb and what it writes to


def is_memory_instruction(line: str) -> bool:
    """A sentence telling the agent to write into a memory (« append facts to MEMORY.md »):
    a writing verb and a memory (word or file) at most INSTRUCTION_WINDOW words apart, in the
    same sentence (a long line that lists « write » and, further on, « memory » is not one)."""
    clean = cleaned(line)
    verbs: list[int] = []
    targets: list[int] = []
    sentence = 0
    sentences: list[int] = []
    for index, match in enumerate(_WORD.finditer(clean)):
        word = match.group(0)
        sentences.append(sentence)
        if word in (".", ";", "!", "?"):
            sentence += 1
        elif _WRITE.fullmatch(word):
            verbs.append(index)
        elif _MEMORY_FILE.search(word) or _MEMORY.fullmatch(word):
            targets.append(index)
    return any(
        abs(v - t) <= INSTRUCTION_WINDOW and sentences[v] == sentences[t]
        for v in verbs
        for t in targets
    )


def skill_signals(name: str, description: str, body: str) -> list[Signal]:
    found: list[Signal] = []
    words = name.replace("-", " ").replace("_", " ")
    if _memory_term(words) or re.search(r"\bmem\b", fold(words)):
        found.append(Signal(f"nom {_quoted(name)}", NAME, True))
    if _memory_term(description):
        term = next(w for p in (_MEMORY, _REMEMBER, _PERSIST) if (w := _as_written(p, description)))
        persists = bool(_PERSIST.search(cleaned(description)))
        found.append(Signal(f"description ({_quoted(term)})", DESCRIPTION, persists))
    return found + body_signals(body, headings=True)


def score(signals: list[Signal]) -> int:
    return sum(s.weight for s in signals)


def runs_a_memory(signals: list[Signal]) -> bool:
    """Whether a skill's signals say it runs a memory: enough of them, and one that says what
    it does (not only that it talks about memory)."""
    return score(signals) >= THRESHOLD and any(s.behaviour for s in signals)


# --- SKILL.md frontmatter (pure) --------------------------------------------------------------


class SkillText(NamedTuple):
    name: str
    description: str
    body: str
    promoted: bool  # written by an ocmem promotion (metadata: proposition P-…)


def split_skill(folder_name: str, text: str) -> SkillText:
    """Name, description and body of a SKILL.md, tolerant of a broken frontmatter."""
    name, description, body, front = folder_name, "", text, ""
    if text.startswith("---"):
        end = re.search(r"^---[ \t]*$", text[3:], re.MULTILINE)
        if end:
            front = text[3 : 3 + end.start()]
            body = text[3 + end.end() :]
    if front:
        meta = _frontmatter(front)
        name = str(meta.get("name") or folder_name)
        description = str(meta.get("description") or "")
    return SkillText(name, description, body, bool(_PROMOTED.search(front)))


def _frontmatter(front: str) -> dict[str, object]:
    import yaml  # lazy: only when a skill is read

    try:
        meta = yaml.safe_load(front)
    except yaml.YAMLError:
        meta = None
    if isinstance(meta, dict):
        return {str(k): v for k, v in meta.items()}
    found: dict[str, object] = {}  # a broken frontmatter: its plain `key: value` lines
    for line in front.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("name", "description"):
            found[key.strip()] = value.strip().strip("'\"")
    return found


# --- AGENTS.md sections (pure) ----------------------------------------------------------------


class Section(NamedTuple):
    level: int
    title: str
    start: int  # offset of the heading line
    end: int  # offset after the section (next heading of the same or a higher level)
    first_line: int  # 1-based line of the heading
    last_line: int


def _outside_fences(lines: list[str]) -> Iterator[str]:
    """The lines that are not in a fenced code block (nor its fences)."""
    fence: str | None = None
    for line in lines:
        stripped = line.strip()
        if fence is not None:
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            continue
        yield line


def sections(text: str) -> list[Section]:
    """Every heading's section: the heading and its body, subsections included, up to the next
    heading of the same or a higher level, or ocmem's begin marker. Headings in code blocks and
    between ocmem's markers are not headings here."""
    heads: list[tuple[int, str, int, int]] = []  # level, title, offset, line number
    stops: list[int] = []  # offsets where every section ends (ocmem's begin marker)
    offset, fence, inside = 0, None, False
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        bare = line.rstrip("\r\n")
        opening = _FENCE.match(bare)
        if BEGIN_MARKER in bare and fence is None:
            inside = True
            stops.append(offset)
        if fence is not None:
            if bare.strip() and set(bare.strip()) == {fence[0]} and len(bare.strip()) >= len(fence):
                fence = None
        elif opening:
            fence = opening.group(1)
        elif not inside:
            match = _HEADING.match(bare)
            if match:
                heads.append((len(match.group(1)), match.group(2), offset, number))
        if END_MARKER in bare and inside:
            inside = False
        offset += len(line)
    found = []
    for i, (level, title, start, number) in enumerate(heads):
        end = len(text)
        for other_level, _, other_start, _ in heads[i + 1 :]:
            if other_level <= level:
                end = other_start
                break
        end = min([end, *(s for s in stops if s > start)])
        last = number + text.count("\n", start, end) - (1 if text[start:end].endswith("\n") else 0)
        found.append(Section(level, title, start, end, number, max(number, last)))
    return found


def section_signals(title: str, body: str) -> list[Signal]:
    """Signals of an AGENTS.md section; empty unless its heading is about memory."""
    if not _memory_term(title):
        return []
    clean = cleaned(title)
    # « Remember » alone is also how prompts title their closing reminders: weaker than
    # « Mémoire » or « between sessions », it needs more than a list to be a memory.
    remember_only = not (_MEMORY.search(clean) or _PERSIST.search(clean))
    weight = SECTION_HEADING - 1 if remember_only else SECTION_HEADING
    found = [Signal(f"titre {_quoted(title)}", weight)]
    bullets = sum(1 for line in _outside_fences(body.splitlines()) if _BULLET.match(line))
    if bullets:
        found.append(Signal(f"{bullets} ligne(s) en liste", BODY))
    return found + body_signals(body, headings=False)


def memory_sections(text: str) -> list[tuple[Section, list[Signal]]]:
    """The sections of an AGENTS.md that run a memory, outermost only, outside ocmem's markers.

    A lone level-1 heading is the document's title, not a section of it: flagging it would
    flag the whole file.
    """
    found: list[tuple[Section, list[Signal]]] = []
    every = sections(text)
    titles = sum(1 for s in every if s.level == 1)
    for section in every:
        if section.level == 1 and titles == 1:
            continue
        if any(s.start <= section.start < s.end for s, _ in found):
            continue  # inside a section already flagged: it goes with it
        body = text[section.start : section.end].split("\n", 1)[1:]
        signals = section_signals(section.title, body[0] if body else "")
        if score(signals) >= THRESHOLD:
            found.append((section, signals))
    return found


def cut(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` without the given spans; every other byte stays where it was, in order."""
    kept, position = [], 0
    for start, end in sorted(spans):
        kept.append(text[position:start])
        position = max(position, end)
    kept.append(text[position:])
    return "".join(kept)


# --- what an old memory knew (pure) ------------------------------------------------------------

FACT, NOTE, INSTRUCTION = "fait", "note", "consigne"
_SHORT_TERM = re.compile(
    r"\b(?:todo|fixme|wip|en\s+cours|in\s+progress|a\s+faire|aujourd'hui|today|demain|tomorrow"
    r"|cette\s+semaine|this\s+week|ce\s+matin|this\s+morning|ce\s+soir|tonight)\b"
)
_DATED = re.compile(r"^\[?(?:\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4})\b")
# « Remember: X » / « Retiens que X »: the fact is X.
_LEADING_REMEMBER = re.compile(
    r"^(?:remember|retiens|souviens-toi|n['’]oublie pas|don['’]t forget)(?:\s+(?:that|que|qu['’]))?"
    r"\s*[:,–-]?\s*",
    re.IGNORECASE,
)
_ABOUT_ITSELF = re.compile(r"\b(?:this|ce|cette)\s+(?:file|fichier|page|section|skill)\b")
_CHECKBOX = re.compile(r"^\[([ xX])\]\s*")


class OldLine(NamedTuple):
    line: int  # 1-based, in its file
    text: str
    kind: str  # FACT, NOTE or INSTRUCTION


def old_lines(text: str, *, first_line: int = 1, bullets_only: bool = False) -> list[OldLine]:
    """The statements of an old memory text, each classified: a durable fact, a short-term
    note (dated, « TODO », « en cours »…), or an instruction of the old system itself.
    Headings, code, tables, comments, frontmatter and intro lines (« …: ») are not statements;
    in an AGENTS.md section (``bullets_only``) the prose is the old system's instructions."""
    lines = text.splitlines()
    skip_until = 0
    if lines and lines[0].strip() == "---":
        closing = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        skip_until = closing + 1 if closing is not None else 0
    found: list[OldLine] = []
    fence: str | None = None
    for index, raw in enumerate(lines):
        if index < skip_until:
            continue
        opening = _FENCE.match(raw)
        if fence is not None:
            if raw.strip() and set(raw.strip()) == {fence[0]} and len(raw.strip()) >= len(fence):
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            continue
        stripped = raw.strip()
        bullet = _BULLET.match(raw)
        if not stripped or _HEADING.match(stripped) or stripped.startswith(("|", "<!--", ">")):
            continue
        if set(stripped) <= set("-*_= "):
            continue  # a rule or a setext underline
        if bullets_only and not bullet:
            continue
        statement = bullet.group(1).strip() if bullet else stripped
        box = _CHECKBOX.match(statement)
        if box and box.group(1) != " ":
            continue  # a task done: nothing left to know
        statement = _LEADING_REMEMBER.sub("", _CHECKBOX.sub("", statement)).strip()
        if not statement or statement.endswith(":") or len(statement.split()) < 2:
            continue
        found.append(OldLine(first_line + index, statement, classify(statement, bool(box))))
    return found


def classify(statement: str, open_task: bool = False) -> str:
    clean = cleaned(statement)
    if open_task or _DATED.match(statement) or _SHORT_TERM.search(clean):
        return NOTE
    if (
        is_memory_instruction(statement)
        or _MEMORY_FILE.search(clean)
        or _MEM_TOOL.search(clean)
        or _MEMORY.search(clean)
        or _REMEMBER.search(clean)
        or _ABOUT_ITSELF.search(clean)
    ):
        return INSTRUCTION  # about the old memory itself, not about the user's world
    return FACT


def is_yes(answer: str) -> bool:
    return fold(answer).strip() in {"o", "oui", "y", "yes"}


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
                f"section {_quoted(self.title, 60)} de {shown(self.path, paths, env)} "
                f"(lignes {self.section.first_line} à {self.section.last_line}) : {self.why()}"
            )
        return f"skill {_quoted(self.title, 60)} ({shown(self.path, paths, env)}) : {self.why()}"

    def silverbullet_fix(self) -> str:
        if self.section is not None:
            return (
                f"retire la section {_quoted(self.title, 60)} de la page AGENTS.md dans "
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
        agents_text = agents.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        agents_text = ""  # missing, or reported by the checks that need it
    for section, signals in memory_sections(agents_text):
        findings.append(
            Finding("section", agents, section.title, tuple(signals), None, section, sync_mode)
        )
    return Scan(findings, found_roots, notes)


def replace_command(paths: Paths, env: Mapping[str, str]) -> str:
    """The command that replaces what was found, for this very home."""
    if _resolved(paths.home) == _resolved(resolve_home(env)):
        return "ocmem init --replace-old"
    import shlex

    return f"ocmem --home {shlex.quote(str(paths.home))} init --replace-old"


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
