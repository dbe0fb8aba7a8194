"""Pure three-way merge of pushed Markdown pages, block by block.

A pushed page (``Agents/Inbox/journal.md``, ``…/pending.md``) is a preamble followed by blocks,
each starting with a ``## <id> · …`` header and running to the next one. Humans may annotate,
edit or delete blocks and add text anywhere. The merge edits the remote text in place:

- a block never pushed is appended (or adopted when an identical one is already there, which is
  how a rerun after a crash converges without a duplicate);
- a block changed only locally replaces the remote one; changed only remotely, it is kept;
  changed on both sides, the human's stays and the agent's version is inserted right after it
  under a distinct id (``<id>~agent-<hash>``), to be reconciled by a human;
- a block pushed before and now absent remotely is never re-added: it is reported as missing,
  and the caller decides whether the human deleted it or a conflict copy took it.

Every byte of the remote text outside replaced blocks is kept, so human lines are never lost.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ocmem.home.digest import sha256

JOURNAL_BLOCK = re.compile(r"^## (\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?:~[\w-]+)?) · ", re.MULTILINE)
PENDING_BLOCK = re.compile(r"^## (P-\d{4,}(?:~[\w-]+)?) · ", re.MULTILINE)

CONFLICT_NOTE = (
    "- Conflit : version de l'agent ; l'humain a aussi modifié {id} dans SilverBullet. "
    "Fusionne à la main, puis supprime ce bloc."
)


@dataclass(frozen=True)
class Segment:
    id: str | None  # None: text before the first block
    text: str


def split(text: str, pattern: re.Pattern[str]) -> list[Segment]:
    """The page as segments: text that belongs to no block (id None), and blocks.

    A journal block runs from its header to the next one. A proposal's block ends with its
    content fence (``pending.block_ends``): a header-like line inside the proposed content is not
    a header, and a person's notes after a block are text of their own, not part of the block.
    """
    if pattern is not PENDING_BLOCK:
        starts = [(m.start(), m.group(1)) for m in pattern.finditer(text)]
        if pattern is JOURNAL_BLOCK:
            starts = _ranked(starts)
        segments = [Segment(None, text[: starts[0][0]] if starts else text)]
        for i, (start, block_id) in enumerate(starts):
            end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
            segments.append(Segment(block_id, text[start:end]))
        return segments
    from ocmem.formats.pending import block_ends

    lines = text.splitlines(keepends=True)
    bare = [line.rstrip("\r\n") for line in lines]
    found: list[Segment] = []
    free: list[str] = []
    i = 0
    while i < len(lines):
        header = pattern.match(lines[i])
        if header is None:
            free.append(lines[i])
            i += 1
            continue
        found.append(Segment(None, "".join(free)))
        free = []
        end = block_ends(bare, i)
        found.append(Segment(header.group(1), "".join(lines[i:end])))
        i = end
    found.append(Segment(None, "".join(free)))
    # The first segment is always the (possibly empty) text before any block.
    return [found[0], *(s for s in found[1:] if s.id is not None or s.text)]


def _ranked(starts: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Journal blocks under their references (``ocmem.formats.journalrefs``): a header holds
    the minute alone, the rank is the block's order within it on the page, as in the journal.
    A conflict copy (``…~agent-<hash>``) keeps its own id and takes no rank."""
    from ocmem.formats.journalrefs import Ranks, Ref

    ranks = Ranks()
    found = []
    for start, header in starts:
        minute, _, suffix = header.partition("~")
        if suffix and not (suffix.isascii() and suffix.isdigit()):
            found.append((start, header))
            continue
        try:
            when = datetime.strptime(minute, "%Y-%m-%d %H:%M")
        except ValueError:  # no date: not an entry of ocmem's, its header is its id
            found.append((start, header))
            continue
        found.append((start, Ref(when, ranks.take(when, int(suffix or 0))).stamp))
    return found


def blocks_of(text: str, pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    """(id, normalised text) of every block, in order."""
    return [(s.id, normalise(s.text)) for s in split(text, pattern) if s.id is not None]


def normalise(text: str) -> str:
    """Block text as compared and pushed: LF, no trailing spaces, one final newline."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return "\n".join(lines).strip("\n") + "\n"


def digest(text: str) -> str:
    return sha256(normalise(text).encode("utf-8"))


@dataclass
class MergeResult:
    text: str
    base: dict[str, str]
    appended: list[str] = field(default_factory=list)
    adopted: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    gone_but_changed: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)


def agent_copy(block_id: str, text: str) -> tuple[str, str]:
    """The agent's version of a block both sides changed, under its own stable id."""
    # on the minute (or the proposal's id) alone: a header reads one ``~`` suffix
    copy_id = f"{block_id.partition('~')[0]}~agent-{digest(text)[:8]}"
    header, _, rest = normalise(text).partition("\n")
    header = f"## {copy_id} · {header.partition(' · ')[2]}"
    return copy_id, f"{header}\n{CONFLICT_NOTE.format(id=block_id)}\n{rest}"


def merge(
    remote: str | None,
    local: Sequence[tuple[str, str]],
    base: Mapping[str, str],
    pattern: re.Pattern[str],
    new_page_preamble: str,
) -> MergeResult:
    """Merge ``local`` blocks (id, text) into the ``remote`` page text, given the pushed ``base``."""
    segments = split(remote if remote is not None else new_page_preamble, pattern)
    new_base = dict(base)
    result = MergeResult(text="", base=new_base)
    first_index: dict[str, int] = {}
    for index, segment in enumerate(segments):
        if segment.id is None:
            continue
        if segment.id in first_index:
            result.duplicates.append(segment.id)
        else:
            first_index[segment.id] = index
    replaced: dict[int, str] = {}
    inserted_after: dict[int, list[str]] = {}
    appended: list[str] = []

    for block_id, text in local:
        local_text = normalise(text)
        local_digest = digest(local_text)
        if block_id in first_index:
            index = first_index[block_id]
            remote_digest = digest(segments[index].text)
            pushed = base.get(block_id)
            if remote_digest == local_digest:
                # Identical content, never recorded (a crash after our PUT) or already known.
                new_base[block_id] = local_digest
                if pushed is None:
                    result.adopted.append(block_id)
            elif pushed is None:
                # Someone else's block under our id (written by hand, or by another home that
                # took our id): theirs stays, ours goes right after it under a distinct id.
                copy_id, copy_text = agent_copy(block_id, local_text)
                if copy_id not in first_index:
                    inserted_after.setdefault(index, []).append(copy_text)
                new_base[block_id] = local_digest
                result.conflicts.append(block_id)
            elif remote_digest == pushed:
                if local_digest != pushed:
                    replaced[index] = local_text
                    new_base[block_id] = local_digest
                    result.updated.append(block_id)
            elif local_digest != pushed:
                copy_id, copy_text = agent_copy(block_id, local_text)
                if copy_id not in first_index:
                    inserted_after.setdefault(index, []).append(copy_text)
                new_base[block_id] = local_digest
                result.conflicts.append(block_id)
        elif block_id in base:
            result.missing.append(block_id)
            if local_digest != base[block_id]:
                result.gone_but_changed.append(block_id)
        else:
            appended.append(local_text)
            new_base[block_id] = local_digest
            result.appended.append(block_id)

    pieces: list[str] = []
    for index, segment in enumerate(segments):
        text = replaced.get(index, segment.text)
        if index in replaced and segment.text.endswith("\n\n"):
            text += "\n"  # keep the blank line that separated it from the next block
        pieces.append(text)
        for extra in inserted_after.get(index, []):
            pieces[-1] = _ensure_blank_line(pieces[-1]) + extra
        if index in inserted_after and index + 1 < len(segments):
            pieces[-1] = _ensure_blank_line(pieces[-1])  # the next header stays a header
    body = "".join(pieces)
    for text in appended:
        body = _ensure_blank_line(body) + text
    result.text = body
    return result


def _ensure_blank_line(text: str) -> str:
    if not text.strip():
        return text
    return text.rstrip("\n") + "\n\n"
