"""memory/journal.md: append-only episodes, searched (never loaded whole).

Entry format (the user's spec), 10 lines at most::

    ## AAAA-MM-JJ HH:MM · titre court · #tag1 #tag2
    - Demande : …
    - Fait : …
    - Piège : …
    - Leçon : …
    - Résultat : réussi | partiel | échec

An entry written by an exposed session (``ocmem.guards.exposure``) has one more line, right after its
header, that says so and where the session had been::

    - Exposition : quarantaine : webfetch http://…

It comes first so that an append cut short can never leave an entry without it (``torn_end``).
A quarantined entry is searched and shown, marked, but never counts as one of the two episodes a
proposal needs (``ocmem.services.proposals``). A value may continue on following lines indented by two
spaces; every line counts towards the
limit, and each value and the whole entry have a size cap (``Limits``). The header carries the
minute the entry was written, never a later one, and is always the spec's, even when entries
share a minute.

References: ``journal AAAA-MM-JJ HH:MM``, ``~N`` for the Nth entry of a minute, never written in
the header (``ocmem.formats.journalrefs``); an older ocmem's ``## … 10:00~2 · …`` still reads.

Appends are O(1) and crash-safe (``ocmem.services.memory``): one ``write`` of ``"\n"`` + the entry, then
fsync. A run killed half-way can only leave a prefix of that at the end of the file, which
``torn_end`` recognises so that the next append sets it aside first.

The title and the values are the agent's words, rendered by ``ocmem.text.inert`` (escaped so that
SilverBullet can only display them); ``Entry`` holds them as written, ``parse_entry`` reads
them back.
"""

# No `from __future__ import annotations`: see ocmem.home.settings (NamedTuples on the hot path).

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ocmem.errors import InputError
from ocmem.formats import marks
from ocmem.formats.journalrefs import Ranks as Ranks
from ocmem.formats.journalrefs import Ref as Ref
from ocmem.formats.journalrefs import parse_ref as parse_ref
from ocmem.formats.journalrefs import ref_of as ref_of
from ocmem.text import inert
from ocmem.text.similarity import fold

if TYPE_CHECKING:
    from mmap import mmap

JOURNAL_HEADER = "# Journal\n\nÉpisodes consignés par l'agent (ajout seul). Recherche : `ocmem journal search`.\n"

FIELDS: tuple[tuple[str, str], ...] = (
    ("demande", "Demande"),
    ("fait", "Fait"),
    ("piege", "Piège"),
    ("lecon", "Leçon"),
    ("resultat", "Résultat"),
)
RESULTS = {"reussi": "réussi", "partiel": "partiel", "echec": "échec"}
EXPOSURE_LABEL = "Exposition"
MAX_TITLE = 80
# Size caps (also under ``limits:`` in ocmem.yaml): an episode is a few lines, and a search
# returns whole entries, so one oversized entry would flood every answer that finds it.
FIELD_CHARS = 500
ENTRY_CHARS = 2000
MAX_TAGS = 8

_HEADER = re.compile(
    r"^## (\d{4}-\d{2}-\d{2}) (\d{2}):(\d{2})(?:~(\d+))? · (.+?) · (#[^\s#]+(?: +#[^\s#]+)*)[ \t]*$",
    re.MULTILINE,
)
# Compiled at first use (re caches them): a journal add needs none of them.
_HEADER_START = r"## \d{4}-\d{2}-\d{2} \d{2}:\d{2}(?:~\d+)? · "
_HEADER_AFTER_NEWLINE = r"\n## \d{4}-\d{2}-\d{2} \d{2}:\d{2}(?:~\d+)? · "
_ARCHIVE = r"^journal-(\d{4})-(\d{2})\.md$"


class Entry(NamedTuple):
    when: datetime
    title: str
    tags: tuple[str, ...]
    demande: str
    fait: str
    piege: str
    lecon: str
    resultat: str
    rank: int = 1  # its order within the minute: in its reference, never in its header
    exposure: str = ""  # an exposed session's mark (ocmem.guards.exposure), "" for a clean one

    @property
    def key(self) -> Ref:
        return Ref(self.when, self.rank)

    @property
    def ref(self) -> str:
        return str(self.key)

    def render(self) -> str:
        header = f"## {self.when:%Y-%m-%d %H:%M} · {inert.inline(self.title)} · " + " ".join(
            f"#{t}" for t in self.tags
        )
        lines = [header]
        if self.exposure:
            lines.append(f"- {EXPOSURE_LABEL} : {inert.inline(self.exposure)}")
        for key, label in FIELDS:
            lines.append(f"- {label} : {inert.lines(getattr(self, key))}")
        return "\n".join(lines) + "\n"


def entry_from_fields(
    data: Mapping[str, Any],
    when: datetime,
    max_lines: int,
    max_field: int = FIELD_CHARS,
    max_entry: int = ENTRY_CHARS,
) -> Entry:
    """Validate a JSON-like mapping (keys with or without accents) and build the entry.

    Caps: ``max_lines`` lines, ``max_field`` characters per value, ``max_entry`` for the
    rendered entry; above them the entry is refused with the fix (never cut silently)."""
    if not isinstance(data, Mapping):
        raise InputError("l'entrée doit être un objet JSON", fix=_EXPECTED_KEYS_HINT)
    values = {fold(str(k)).strip(): v for k, v in data.items()}
    allowed = {"titre", "tags"} | {key for key, _ in FIELDS}
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise InputError(f"clé(s) inconnue(s) : {', '.join(unknown)}", fix=_EXPECTED_KEYS_HINT)
    missing = [k for k in ("titre", "tags", *(key for key, _ in FIELDS)) if not values.get(k)]
    if missing:
        raise InputError(
            f"champ(s) manquant(s) ou vide(s) : {', '.join(missing)}", fix=_EXPECTED_KEYS_HINT
        )

    title = _single_line("titre", values["titre"])
    if len(title) > MAX_TITLE or "·" in title:
        raise InputError(
            f"titre trop long ({len(title)} > {MAX_TITLE}) ou contenant « · »",
            fix="un titre court, sans le séparateur « · »",
        )
    tags = _tags(values["tags"])
    fields = {key: _text(key, values[key]) for key, _ in FIELDS}
    for key, label in FIELDS:
        if len(fields[key]) > max_field:
            raise InputError(
                f"« {label} » fait {len(fields[key])} caractères (maximum {max_field})",
                fix=f"résume « {label} » en une ou deux phrases ; les sorties de commandes et "
                "les fichiers n'ont pas leur place dans le journal",
            )
    result = RESULTS.get(fold(fields["resultat"]).strip())
    if result is None:
        raise InputError(
            f"résultat {fields['resultat'][:40]!r} inconnu",
            fix="« réussi », « partiel » ou « échec »",
        )
    fields["resultat"] = result
    entry = _entry(when.replace(second=0, microsecond=0), title, tags, fields)
    rendered = entry.render()
    if len(rendered) > max_entry:
        raise InputError(
            f"l'entrée fait {len(rendered)} caractères (maximum {max_entry})",
            fix="resserre Demande/Fait/Piège/Leçon : une ligne chacun suffit le plus souvent",
        )
    lines = rendered.count("\n")
    if lines > max_lines:
        raise InputError(
            f"l'entrée fait {lines} lignes (maximum {max_lines})",
            fix="resserre Demande/Fait/Piège/Leçon : une ligne chacun suffit le plus souvent",
        )
    return entry


def _entry(
    when: datetime,
    title: str,
    tags: tuple[str, ...],
    fields: Mapping[str, str],
    rank: int = 1,
    exposure: str = "",
) -> Entry:
    return Entry(
        when,
        title,
        tags,
        fields["demande"],
        fields["fait"],
        fields["piege"],
        fields["lecon"],
        fields["resultat"],
        rank,
        exposure,
    )


_EXPECTED_KEYS_HINT = (
    'attendu : {"titre": "…", "tags": ["tag1", "tag2"], "demande": "…", "fait": "…", '
    '"piege": "…", "lecon": "…", "resultat": "réussi|partiel|échec"}'
)


def _single_line(name: str, value: Any) -> str:
    text = _text(name, value)
    if "\n" in text:
        raise InputError(f"« {name} » doit tenir sur une ligne", fix=f"raccourcis « {name} »")
    return text


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InputError(f"« {name} » doit être une chaîne", fix=_EXPECTED_KEYS_HINT)
    text = "\n".join(inert.clean_lines(value))
    if not text:
        raise InputError(f"« {name} » est vide", fix=f"renseigne « {name} »")
    return text


def _tags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    if not isinstance(value, (list, tuple)) or not value:
        raise InputError(
            "« tags » doit être une liste non vide", fix='par ex. "tags": ["docker", "vps"]'
        )
    if len(value) > MAX_TAGS:
        raise InputError(
            f"{len(value)} tags (maximum {MAX_TAGS})", fix="garde les tags les plus parlants"
        )
    tags = []
    for raw in value:
        tag = inert.clean(str(raw)).strip().lstrip("#")
        problem = inert.tag_problem(tag)
        if problem:
            raise InputError(
                f"tag invalide : {str(raw)[:40]!r} ({problem})", fix="choisis un autre mot"
            )
        if tag not in tags:
            tags.append(tag)
    return tuple(tags)


# --- reading ------------------------------------------------------------------------------


class Block(NamedTuple):
    """One entry as stored: its header fields and its exact text (header included); ``rank`` is
    its order within the minute (``Ranks``), 0 until ranked when read alone (``_block_at``)."""

    when: datetime
    title: str
    tags: tuple[str, ...]
    text: str
    rank: int = 1

    @property
    def key(self) -> Ref:
        return Ref(self.when, self.rank)

    @property
    def ref(self) -> str:
        return str(self.key)


def blocks(text: str, ranks: Ranks | None = None) -> list[Block]:
    """Every entry of a journal text, in file order, ranked (``ranks``: those taken by the files
    read before, ``journal_blocks``). Text before the first entry is skipped."""
    ranks = Ranks() if ranks is None else ranks
    found = []
    for start, end in _spans(text):
        block = _block_at(text[start:end])
        if block is not None:
            found.append(block._replace(rank=ranks.take(block.when, block.rank)))
    return found


def journal_blocks(texts: Sequence[str]) -> list[Block]:
    """Every entry of the journal and its archives, ranked as references name them: ``texts``
    are the journal, then its archives newest first (``Workspace.journal_texts``); they are
    read oldest first, the journal last, as the entries were written."""
    ranks = Ranks()
    return [b for text in reversed(texts) for b in blocks(text, ranks)]


def _spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each entry: from its header to the next header or the end."""
    # "\n## …" has a literal prefix the regex engine can jump to: 4× faster than "^## …" on a
    # 10 000-entry journal. A header on the file's very first line is checked on its own.
    starts = [m.start() + 1 for m in re.compile(_HEADER_AFTER_NEWLINE).finditer(text)]
    if re.compile(_HEADER_START).match(text):
        starts.insert(0, 0)
    return list(zip(starts, [*starts[1:], len(text)][: len(starts)], strict=True))


def _block_at(chunk: str) -> Block | None:
    if (found := header(chunk)) is None:
        return None
    when, rank, title, tags = found
    return Block(when, inert.unescape(title), tags, chunk.rstrip("\n") + "\n", rank)


def header(line: str) -> tuple[datetime, int, str, tuple[str, ...]] | None:
    """An entry's header at the start of ``line`` (minute, the rank it writes, 0 if none (an
    older ocmem's ``~N``: ``Ranks.take``), title as stored, tags), or None."""
    if (match := _HEADER.match(line)) is None:
        return None
    day, hour, minute, rank, title, tags = match.groups()
    try:
        when = datetime.fromisoformat(f"{day} {hour}:{minute}")
    except ValueError:
        return None
    if rank is not None and int(rank) < 2:
        return None
    return when, int(rank or 0), title, tuple(t.lstrip("#") for t in tags.split())


_FIELD_LINE = re.compile(r"^- (Demande|Fait|Piège|Leçon|Résultat) : ?(.*)$")
_EXPOSURE_LINE = re.compile(r"^- Exposition : (.*)$")


def exposure_of(block_text: str) -> str:
    """The exposure mark of an entry's text (its line right after the header), "" if none."""
    second = block_text.split("\n", 2)[1:2]
    found = _EXPOSURE_LINE.match(second[0]) if second else None
    return inert.unescape(found.group(1)) if found else ""


def is_quarantined(block_text: str) -> bool:
    """Whether an entry was written by an exposed session and not asked for by the user."""
    return marks.quarantined(exposure_of(block_text))


def parse_entry(block: Block) -> Entry | None:
    """The entry as the agent wrote it, or None when the block is not in ocmem's format."""
    labels = {label: key for key, label in FIELDS}
    values: dict[str, list[str]] = {}
    current: list[str] | None = None
    lines = block.text.rstrip("\n").split("\n")[1:]
    mark = _EXPOSURE_LINE.match(lines[0]) if lines else None
    if mark:
        lines = lines[1:]
    for line in lines:
        field = _FIELD_LINE.match(line)
        if field and labels[field.group(1)] not in values:
            current = values[labels[field.group(1)]] = [field.group(2)]
        elif current is not None and (line.startswith("  ") or not line):
            current.append(line)
        else:
            return None
    if set(values) != set(labels.values()):
        return None
    fields = {key: inert.unlines("\n".join(v)).strip() for key, v in values.items()}
    if any(inert.tag_problem(t) for t in block.tags) or fields["resultat"] not in RESULTS.values():
        return None
    exposure = inert.unescape(mark.group(1)) if mark else ""
    return _entry(block.when, block.title, block.tags, fields, block.rank, exposure)


def rerender(text: str) -> str | None:
    """One entry's block as ocmem writes it today (None if it is not an entry): entries written
    by an older ocmem, or edited by hand, are rendered again before they leave the machine. A
    rank its header carries (an older ocmem's ``~N``) stays: the page reads it as here."""
    block = _block_at(text)
    entry = parse_entry(block) if block else None
    if entry is None:
        return None
    rendered = entry.render()
    if block is not None and block.rank:
        minute = f"## {entry.when:%Y-%m-%d %H:%M}"
        rendered = rendered.replace(minute, f"{minute}~{block.rank}", 1)
    return rendered


def readable(text: str) -> str:
    """A journal text as a person reads it rendered: escapes undone, layout kept."""
    return "\n".join(inert.unescape(line) for line in text.split("\n"))


def rank_at(text: str, start: int, when: datetime) -> int:
    """The rank of the entry whose header, at ``when``, starts at ``start`` in ``text``, from
    the entries of its minute up to it in ``text`` alone (``minute_headers``, over a text)."""
    prefix = f"## {when:%Y-%m-%d %H:%M}"
    ranks = Ranks()
    rank = 0
    stop = start + len(prefix)  # the entry's own header is the last one found
    at = text.find(prefix, 0, stop)
    while at >= 0:
        if at == 0 or text[at - 1] == "\n":
            end = text.find("\n", at)
            block = _block_at(text[at : end if end >= 0 else len(text)] + "\n")
            if block is not None:
                rank = ranks.take(when, block.rank)
        at = text.find(prefix, at + 1, stop)
    return rank


def minute_headers(data: "bytes | mmap", when: datetime) -> list[int]:
    """The entries of a journal's bytes written at minute ``when``, in order: each one's written
    rank (0 when its header has none), for ``Ranks.take``.

    A byte search for that minute's header prefix (no decoding of the rest): the C-speed scan
    keeps the cost of an append flat whatever the journal's size. A line counts when ``blocks``
    reads it as a header.
    """
    prefix = f"## {when:%Y-%m-%d %H:%M}".encode()
    found: list[int] = []
    at = data.find(prefix)
    while at >= 0:
        if at == 0 or data[at - 1 : at] == b"\n":
            end = data.find(b"\n", at)
            line = bytes(data[at : end if end >= 0 else len(data)])
            block = _block_at(line.decode("utf-8", errors="replace") + "\n")
            if block is not None:
                found.append(block.rank)
        at = data.find(prefix, at + 1)
    return found


HEADER_FIX = (
    "écris-y l'en-tête « ## AAAA-MM-JJ HH:MM · titre · #tag » de l'épisode, ou retire « ## » "
    "si cette ligne n'en est pas un"
)
BYTES_FIX = (
    "réécris ces caractères dans un éditeur en UTF-8 (la sauvegarde est dans .ocmem/backups)"
)
Damaged = tuple[int, str, str, int, bytes]  # line, what, fix, offset of the line, its bytes


def damage(data: bytes, first_line: int = 1, limit: int = 20) -> list[Damaged]:
    """What in a journal's bytes hides an entry from every reader: a « ## » line that is not an
    entry's header (the entry under it reads as the end of the one before), bytes that are not
    UTF-8. ``first_line``: the number of ``data``'s first line."""
    found: list[Damaged] = []
    for match in re.finditer(rb"(?m)^## [^\n]*", data):
        line = match.group().decode("utf-8", errors="replace").rstrip("\r")
        if _block_at(line + "\n") is None and len(found) < limit:
            shown = line if len(line) <= 60 else line[:59] + "…"
            what = f"« {shown} » n'est pas un en-tête d'entrée : l'entrée qu'il ouvre est cachée"
            at = match.start()
            found.append(
                (first_line + data.count(b"\n", 0, at), what, HEADER_FIX, at, match.group())
            )
    at = 0
    while len(found) < limit:
        try:
            data[at:].decode("utf-8")
            break
        except UnicodeDecodeError as exc:
            start = data.rfind(b"\n", 0, at + exc.start) + 1
            at = data.find(b"\n", at + exc.start) + 1 or len(data)
            what = f"octets qui ne sont pas de l'UTF-8 ({exc.reason})"
            number = first_line + data.count(b"\n", 0, start)
            found.append((number, what, BYTES_FIX, start, data[start:at].rstrip(b"\n")))
    return sorted(found)


def separator(end: bytes) -> str:
    """What goes between a journal ending with ``end`` and the next entry: one blank line."""
    if end.endswith(b"\n\n"):
        return ""
    return "\n" if end.endswith(b"\n") else "\n\n"


def torn_end(tail: bytes) -> int | None:
    """Where the append that a killed run interrupted began, in ``tail`` (the journal's last
    bytes, from the line before its last header or more); None when the journal ends with a
    whole entry, or with text ocmem did not write (left alone).

    An append writes ``"\n"`` + an entry in one ``write``; interrupted, it leaves a prefix of
    that: a ``#`` or ``##`` line after a blank line, or a last block that is a header followed
    by the first fields in their order, its last line possibly cut. Cutting there gives back
    the journal as it was before that append.
    """
    complete = tail.endswith(b"\n")
    last_newline = tail.rfind(b"\n")
    if (
        not complete
        and last_newline > 0
        and tail[last_newline - 1 : last_newline] == b"\n"
        and tail[last_newline + 1 :] in (b"#", b"##")
    ):
        return last_newline
    start = tail.rfind(b"\n## ") + 1
    if start == 0 and not tail.startswith(b"## "):
        return None
    text = tail[start:].decode("utf-8", errors="replace")
    if complete:
        entry = _block_at(text)
        if entry is not None and parse_entry(entry) is not None:
            return None
    lines = text.split("\n")
    whole, cut = lines[:-1], lines[-1]
    if not whole and not _header_prefix(cut):
        return None
    return max(start - 1, 0) if _entry_prefix(whole) else None


_HEADER_TEMPLATE = "## 0000-00-00 00:00"


def _header_prefix(line: str) -> bool:
    """Whether ``line`` could be the start of a header cut short."""
    head = line[: len(_HEADER_TEMPLATE)]
    if not all(
        c == t or (t == "0" and c.isdigit()) for c, t in zip(head, _HEADER_TEMPLATE, strict=False)
    ):
        return False
    return len(line) <= len(_HEADER_TEMPLATE) or line[len(_HEADER_TEMPLATE)] in " ~"


def _entry_prefix(lines: list[str]) -> bool:
    """Whether whole ``lines`` are an entry's header and its first fields, not all of them."""
    if not lines:
        return True  # cut inside the header line (the caller checked its start)
    if not _HEADER.match(lines[0]):
        return False
    labels = [label for _, label in FIELDS]
    seen = 0
    rest = lines[2:] if len(lines) > 1 and _EXPOSURE_LINE.match(lines[1]) else lines[1:]
    for line in rest:
        field = _FIELD_LINE.match(line)
        if field and seen < len(labels) and field.group(1) == labels[seen]:
            seen += 1
        elif not (seen and (line.startswith("  ") or not line)):
            return False
    return seen < len(labels)


def append(journal_text: str, entry: Entry) -> str:
    base = journal_text if journal_text.strip() else JOURNAL_HEADER
    return base.rstrip("\n") + "\n\n" + entry.render()


def archive_name(when: datetime) -> str:
    return f"journal-{when:%Y-%m}.md"


def split_for_archive(text: str, before: datetime) -> tuple[str, dict[str, list[Block]]]:
    """The journal without its entries older than ``before``, and those entries by archive file.

    Everything else (preamble, kept entries, their exact bytes) is left as it was.
    """
    spans = _spans(text)
    kept = [text[: spans[0][0]] if spans else text]
    moved: dict[str, list[Block]] = {}
    ranks = Ranks()
    for start, end in spans:
        block = _block_at(text[start:end])
        if block is not None:
            block = block._replace(rank=ranks.take(block.when, block.rank))
        if block is not None and block.when < before:
            moved.setdefault(archive_name(block.when), []).append(block)
        else:
            kept.append(text[start:end])
    remaining = "".join(kept)
    return (remaining.rstrip("\n") + "\n" if remaining.strip() else JOURNAL_HEADER), moved


def merge_archive(existing: str, incoming: list[Block], month: str) -> str:
    """An archive holding its current entries then ``incoming`` (moved from the journal, in its
    order), in time order; within a minute, in the order they were read: each keeps its rank."""
    preamble = existing[: _spans(existing)[0][0]] if _spans(existing) else existing
    if not preamble.strip():
        preamble = (
            f"# Journal — archive {month}\n\nEntrées archivées par `ocmem journal archive`.\n"
        )
    entries = sorted([*blocks(existing), *incoming], key=lambda b: b.when)  # stable
    body = "\n".join(b.text.rstrip("\n") + "\n" for b in entries)
    return preamble.rstrip("\n") + "\n\n" + body


def archive_files(memory_dir: Path) -> list[Path]:
    """``journal-AAAA-MM.md`` archives, newest month first."""
    found = [p for p in memory_dir.glob("journal-*.md") if re.compile(_ARCHIVE).match(p.name)]
    return sorted(found, key=lambda p: p.name, reverse=True)


def find_entries(texts: Sequence[str], refs: Sequence[Ref]) -> dict[Ref, Block]:
    """``texts``: the journal, then its archives newest first (``journal_blocks``)."""
    wanted = set(refs)
    return {block.key: block for block in journal_blocks(texts) if block.key in wanted}
