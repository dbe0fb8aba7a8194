"""How another memory system reads: the signals that a skill or an AGENTS.md section runs a
memory, and what the lines it kept are (a fact, a note, an instruction). Pure text: where such
systems live and how ocmem replaces them is ``ocmem.setup.oldmemory``.

Detection scores signals, and where a word appears says more than the word: a skill *named*
"memory-bank" runs a memory, a "docker" skill that talks about memory limits does not. The
phrases of technical memory (limits, in-memory, leaks, GPU memory…) are removed before anything
is counted. A skill is flagged at ``THRESHOLD`` points, one of them saying what it does (its
name, a memory file, a mem_ tool, an instruction to write into a memory, memory layers, keeping
things across sessions): a skill about LangChain's chat memory talks about memory without running
one. An AGENTS.md section must have a memory heading and more (a list of facts, a memory file…).
ocmem's own skill (``skills/retrospective``), the skills it promoted and its own section (between
its markers) are never flagged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from ocmem.home.shipped import BEGIN_MARKER, END_MARKER
from ocmem.text.similarity import fold

THRESHOLD = 4
NAME, DESCRIPTION, HEADING, BODY = 3, 2, 2, 1
SECTION_HEADING = 3
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


def quoted(text: str, limit: int = 40) -> str:
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
            found.append(Signal(f"titre {quoted(memory_heads[0])}", HEADING))
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
        found.append(Signal(quoted(_as_written(_PERSIST, body)), BODY, True))
    if _REMEMBER.search(clean):
        found.append(Signal(quoted(_as_written(_REMEMBER, body)), BODY))
    if _MEMORY.search(_MEMORY_FILE.sub(" ", clean)):
        word = _as_written(_MEMORY_WORD, body) or _as_written(_MEMORY, body)
        found.append(Signal(f"mot {quoted(word)}", BODY))
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
        found.append(Signal(f"nom {quoted(name)}", NAME, True))
    if _memory_term(description):
        term = next(w for p in (_MEMORY, _REMEMBER, _PERSIST) if (w := _as_written(p, description)))
        persists = bool(_PERSIST.search(cleaned(description)))
        found.append(Signal(f"description ({quoted(term)})", DESCRIPTION, persists))
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
    found = [Signal(f"titre {quoted(title)}", weight)]
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
