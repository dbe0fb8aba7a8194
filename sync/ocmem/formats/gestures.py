"""The review page's data: what each gesture on a waiting proposal writes, computed by ocmem.

The SilverBullet review page (``silverbullet/ocmem.lua``) decides nothing. For each waiting
proposal ocmem pushes, inside the proposal's block of the pending page, a fence that says what
*Promouvoir* and *Refuser* write: the exact fact line or SKILL.md, the line it replaces, the
archive entry, the decision line, the caps to hold. The page reads it line by line (one key per
line, no format of ocmem's to parse), checks that the pages it edits still hold what ocmem saw,
performs the edits and records the decision::

    ## P-0003 · fait · Le VPS tourne sous Debian 12
    - Statut : en attente
    …
    - Contradiction : aucune

    ~~~ocmem-geste
    proposition vps-prod/P-0003
    titre fait · Le VPS tourne sous Debian 12
    empreinte 8 5 1234567890 412
    decisions Agents/Inbox/vps-prod/decisions
    decidee - P-0003 : promu
    …
    geste promouvoir
    message vps-prod/P-0003 promue : MEMORY.md 1 540/2 000 (77 %)
    ajoute Agents/Memory/MEMORY
    plafond 2000
    correction consolide MEMORY.md (…), puis relance la promotion
    texte
    > - Le VPS tourne sous Debian 12. (|
    @date
    | , Source : vps-prod journal 2026-11-20 10:12 ; vps-prod/P-0003)|
    …
    ~~~

    - Contenu proposé :
    …

Texts are pieces: ``| text|`` is a line (the ``|`` at the end keeps trailing spaces through
the push, which strips them), ``> text|`` a piece of a line, ``@date`` and ``@raison`` what the
page fills in: the day of the click and the human's reason. Nothing else is left to the page.
No data line starts with a tilde or ``- ``, so none can close the fence or be read as a field.

``empreinte`` holds how many lines of the block come before and after the fence and the digest
of those lines: the page refuses to promote a block the human edited since ocmem rendered it
(ocmem must read it again first). The digest counts code points, so that the page computes it
the same way on SilverBullet's UTF-16 strings and on a real Lua's UTF-8 bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import NamedTuple, Protocol

OPEN = "~~~ocmem-geste"
CLOSE = "~~~"
DATE = "date"
REASON = "raison"
# The page's gestures, by the names its buttons and commands use.
PROMOTE, REFUSE = "promouvoir", "refuser"
# What an edit does to its page.
APPEND = "ajoute"  # the text at the end (the page's start first, when the page is blank)
REPLACE = "remplace"  # one exact line, wherever it is, by the text (or removed)
CREATE = "cree"  # a page that does not exist
OVERWRITE = "ecrase"  # a page still exactly as ocmem last pulled it (its digest)


class Slot(NamedTuple):
    """What the page fills in: the day of the click, the human's reason…"""

    name: str


Piece = str | Slot
Text = tuple[Piece, ...]

# Two days that differ in every digit: rendering a text on each tells its date slots apart.
_DAYS = (date(1111, 11, 11), date(2222, 2, 22))


def slotted(render: Callable[[date], str]) -> Text:
    """``render``'s text with every place the day appears as a date slot (found by rendering
    on two days: only the day's own characters differ, whatever the rest holds)."""
    first, second = (render(day) for day in _DAYS)
    if len(first) != len(second):
        raise ValueError("the day changes the text's length")
    pieces: list[Piece] = []
    literal, i = 0, 0
    while i < len(first):
        if first[i] != second[i]:
            if first[i : i + 10] != _DAYS[0].isoformat():
                raise ValueError("the text differs by more than its day")
            pieces += [first[literal:i], Slot(DATE)] if i > literal else [Slot(DATE)]
            i += 10
            literal = i
        else:
            i += 1
    if literal < len(first):
        pieces.append(first[literal:])
    text = tuple(pieces)
    assert fill(text, {DATE: _DAYS[1].isoformat()}) == second
    return text


def split_at(text: str | Text, slots: dict[str, str]) -> Text:
    """``text`` cut at each sentinel of ``slots`` (sentinel → slot name): for a text ocmem
    renders from sentinels only (no agent text), such as a decision line or a template."""
    pieces: list[Piece] = [text] if isinstance(text, str) else list(text)
    for sentinel, name in slots.items():
        cut: list[Piece] = []
        for piece in pieces:
            if isinstance(piece, Slot):
                cut.append(piece)
                continue
            parts = piece.split(sentinel)
            for n, part in enumerate(parts):
                if n:
                    cut.append(Slot(name))
                if part:
                    cut.append(part)
        pieces = cut
    return tuple(pieces)


def fill(text: Text, slots: dict[str, str]) -> str:
    """The text with its slots filled in, as the page writes it."""
    return "".join(p if isinstance(p, str) else slots[p.name] for p in text)


def lines_of(text: Text) -> list[str]:
    """The data lines holding ``text``."""
    out: list[str] = []
    for piece in text:
        if isinstance(piece, Slot):
            out.append(f"@{piece.name}")
            continue
        *whole, last = piece.split("\n")
        out += [f"| {line}|" for line in whole]
        if last:
            out.append(f"> {last}|")
    return out


def digest(text: str) -> str:
    """« hash length » over the code points of ``text`` (the page's ``ocmem.digest``)."""
    value = 0
    for char in text:
        value = (value * 131 + ord(char)) % 2147483647
    return f"{value} {len(text)}"


@dataclass(frozen=True)
class Edit:
    kind: str  # APPEND, REPLACE, CREATE or OVERWRITE
    page: str  # SilverBullet's page name (no .md)
    text: Text | None  # None: REPLACE removes the line
    empty: Text | None = None  # APPEND: the page's start when it is blank
    old: str | None = None  # REPLACE: the exact line replaced
    done: Text | None = None  # a line that shows the edit already made (an interrupted gesture)
    before: str | None = None  # OVERWRITE: the page's digest when ocmem last pulled it
    max_chars: int | None = None  # the page after the edit, in characters
    max_pages: tuple[int, str] | None = None  # pages like this one under the prefix, at most
    fix: str | None = None  # what to do when a cap would be passed

    def lines(self) -> list[str]:
        out = [f"{self.kind} {self.page}"]
        if self.max_chars is not None:
            out.append(f"plafond {self.max_chars}")
        if self.max_pages is not None:
            out.append(f"compte {self.max_pages[0]} {self.max_pages[1]}")
        if self.fix:
            out.append(f"correction {self.fix}")
        if self.before is not None:
            out.append(f"avant {self.before}")
        if self.old is not None:
            out += ["ancien", *lines_of((self.old,))]
        for key, text in (("vide", self.empty), ("deja", self.done), ("texte", self.text)):
            if text is not None:
                out += [key, *lines_of(text)]
        return out


@dataclass(frozen=True)
class Gesture:
    name: str  # PROMOTE or REFUSE
    message: str  # what the page says once it is done
    decision: Text  # the decision line (with its newline)
    edits: tuple[Edit, ...] = ()
    impossible: str | None = None  # why ocmem refuses it (the page says so, writes nothing)

    def lines(self) -> list[str]:
        out = [f"geste {self.name}", f"message {self.message}"]
        if self.impossible is not None:
            return [*out, f"impossible {self.impossible}"]
        out += ["decision", *lines_of(self.decision)]
        for edit in self.edits:
            out += edit.lines()
        return out


@dataclass(frozen=True)
class Review:
    """One waiting proposal as the review page shows and decides it."""

    gid: str  # its id across homes (vps-prod/P-0003), as promotions write it
    title: str  # « fait · … », plain text (the page shows it as text)
    decisions: str  # the decisions page
    decided: tuple[str, ...]  # line starts that show it decided there
    gestures: tuple[Gesture, ...]
    alert: str | None = None  # plain text, shown first
    notes: tuple[str, ...] = field(default=())  # plain text: what a promotion does

    def fence(self, before: str, after: str) -> str:
        head = [OPEN, f"proposition {self.gid}", f"titre {self.title}"]
        if self.alert:
            head.append(f"alerte {self.alert}")
        head += [f"note {note}" for note in self.notes]
        head.append(
            f"empreinte {before.count(chr(10)) + 1} {after.count(chr(10)) + 1} "
            + digest(f"{before}\n{after}")
        )
        head += [f"decisions {self.decisions}", *(f"decidee {d}" for d in self.decided)]
        for gesture in self.gestures:
            head += gesture.lines()
        return "\n".join(one_line(line) for line in [*head, CLOSE])


def one_line(text: str) -> str:
    """A data line as the push keeps it (no line break inside, no trailing space cut)."""
    if "\n" in text or "\r" in text:
        raise ValueError(f"a data line holds a line break: {text!r}")
    return text


def decorate(block: str, review: Review, content_label: str) -> str:
    """``block`` (a proposal as ocmem renders it) with ``review``'s fence before its content."""
    head, label, tail = block.partition(f"\n- {content_label} :")
    if not label:
        raise ValueError("a proposal's block without its content")
    before, after = head.rstrip("\n"), (label.lstrip("\n") + tail).rstrip("\n")
    return f"{before}\n\n{review.fence(before, after)}\n\n{after}\n"


def strip(block: str) -> str:
    """``block`` without its fence (as ocmem rendered it before :func:`decorate`)."""
    lines = block.split("\n")
    if OPEN not in lines:
        return block
    start = lines.index(OPEN)
    end = next(
        (n for n in range(start + 1, len(lines)) if is_close(lines[n])),
        len(lines) - 1,
    )
    before, after = lines[:start], lines[end + 1 :]
    while before and not before[-1].strip():
        before.pop()
    while after and not after[0].strip():
        after.pop(0)
    return "\n".join([*before, *after])


def is_close(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(CLOSE) and set(stripped) == {"~"}


def skip_fences(lines: Sequence[str]) -> list[str]:
    """``lines`` without the review page's fences (what ocmem's parser reads of a block)."""
    kept: list[str] = []
    inside = False
    for line in lines:
        if inside:
            inside = not is_close(line)
        elif line == OPEN:
            inside = True
        else:
            kept.append(line)
    return kept


class Decorate(Protocol):
    """Gives a waiting proposal's block its gestures (ocmem.services.gestureplans.Decorator)."""

    def __call__(self, block: str) -> str: ...

    def inputs(self) -> str:
        """A digest of what the gestures are computed from (the pulled pages, the caps)."""
        ...
