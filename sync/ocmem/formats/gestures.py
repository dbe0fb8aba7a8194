"""The review page's data: what each gesture on a proposal writes, computed by ocmem.

The SilverBullet review page (``silverbullet/ocmem.lua``) decides nothing. With the pending page,
ocmem pushes one fence, at the end of the page, that says for each waiting proposal what
*Promouvoir* and *Refuser* write: the exact fact line or SKILL.md, the line it replaces, the
archive entry, the decision line, the caps to hold; and for each promotion ocmem can still take
back, what *Annuler* writes: the lines to take out or put back, the decision « annulé ». The page reads it line by line (one key per
line, no format of ocmem's to parse), checks that the pages it edits still hold what ocmem saw,
performs the edits and records the decision::

    ## P-0003 · fait · Le VPS tourne sous Debian 12
    - Statut : en attente
    …
    ~~~

    ~~~ocmem-gestes
    proposition vps-prod/P-0003
    bloc 987654321 44
    empreinte 13 1234567890 412
    titre fait · Le VPS tourne sous Debian 12
    decisions Agents/Inbox/vps-prod/decisions
    decidee - P-0003 : promu
    …
    rouvre - P-0003 : annulé
    geste promouvoir
    message vps-prod/P-0003 promue : MEMORY.md 1 540/2 000 (77 %)
    decision
    > - P-0003 : promu (|
    @date
    | )|
    ajoute Agents/Memory/MEMORY
    plafond 2000
    …
    texte
    > - Le VPS tourne sous Debian 12. (|
    @date
    | , Source : vps-prod journal 2026-11-20 10:12 ; vps-prod/P-0003)|
    …
    ~~~

The fence is ocmem's, like the receipt line: each push writes it anew at the end of the page (a
human's line after it stays, and moves above it). Only a fence outside every other fence counts,
here and in the page: a line of a proposal's content (the agent's text, inside its own fence)
can never pass for it.

Texts are pieces: ``| text|`` is a line (the ``|`` at the end keeps trailing spaces through the
push, which strips them), ``> text|`` a piece of a line, ``@date`` and ``@raison`` what the page
fills in: the day of the click and the human's reason. Nothing else is left to the page. No
data line starts with a tilde, so none can close the fence.

``decidee`` and ``rouvre`` say when the decisions page shows the gesture made: the last of its
lines that starts with one of them counts (« annulé » after « promu » offers the promotion again,
as ``ocmem.formats.decisionspage`` reads it).

``bloc`` is the digest of the proposal's header line (the page finds the block by it) and
``empreinte`` how many lines the block has and their digest: the page refuses to promote a block
the human edited since ocmem rendered it (ocmem must read it again first). Lines are counted
without trailing spaces, tabs or CR (as the push normalises them), and the digest counts code
points, so that the page computes it the same way on SilverBullet's UTF-16 strings and on a
real Lua's UTF-8 bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import NamedTuple, Protocol

OPEN = "~~~ocmem-gestes"
CLOSE = "~~~"
DATE = "date"
REASON = "raison"
# The page's gestures, by the names its buttons and commands use.
PROMOTE, REFUSE, UNDO = "promouvoir", "refuser", "annuler"
# What an edit does to its page.
APPEND = "ajoute"  # the text at the end (the page's start first, when the page is blank)
REPLACE = "remplace"  # exact lines, wherever they are, by the text (or removed)
CREATE = "cree"  # a page that does not exist
OVERWRITE = "ecrase"  # a page still exactly as ocmem last pulled it (its digest)
DELETE = "supprime"  # a page still exactly as ocmem last pulled it (``before``), or gone


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
    kind: str  # APPEND, REPLACE, CREATE, OVERWRITE or DELETE
    page: str  # SilverBullet's page name (no .md)
    text: Text | None  # None: REPLACE removes the line
    empty: Text | None = None  # APPEND: the page's start when it is blank
    old: str | None = None  # REPLACE: the exact lines replaced
    done: Text | None = None  # a line that shows the edit already made (an interrupted gesture)
    before: str | None = None  # OVERWRITE, DELETE: the page's digest when ocmem last pulled it
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
    name: str  # PROMOTE, REFUSE or UNDO
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
    """One proposal as the review page shows and decides it (waiting, or promoted: undone)."""

    gid: str  # its id across homes (vps-prod/P-0003), as promotions write it
    title: str  # « fait · … », plain text (the page shows it as text)
    decisions: str  # the decisions page
    decided: tuple[str, ...]  # line starts that show it decided there
    gestures: tuple[Gesture, ...]
    alert: str | None = None  # plain text, shown first
    notes: tuple[str, ...] = field(default=())  # plain text: what a promotion does
    reopened: tuple[str, ...] = ()  # line starts that, after ``decided``'s, offer it again

    def lines(self, block: str) -> list[str]:
        """Its data, for its ``block`` as the page holds it."""
        bare = [line.rstrip(" \t\r") for line in block.rstrip("\n").split("\n")]
        head = [
            f"proposition {self.gid}",
            f"bloc {digest(bare[0])}",
            f"empreinte {len(bare)} {digest(chr(10).join(bare))}",
            f"titre {self.title}",
        ]
        if self.alert:
            head.append(f"alerte {self.alert}")
        head += [f"note {note}" for note in self.notes]
        head += [f"decisions {self.decisions}", *(f"decidee {d}" for d in self.decided)]
        head += [f"rouvre {r}" for r in self.reopened]
        for gesture in self.gestures:
            head += gesture.lines()
        return [one_line(line) for line in head]


def one_line(text: str) -> str:
    """A data line as the push keeps it (no line break inside, no trailing space cut)."""
    if "\n" in text or "\r" in text:
        raise ValueError(f"a data line holds a line break: {text!r}")
    return text


def fence(data: list[list[str]]) -> str | None:
    """The fence holding every proposal's data (None: none to show)."""
    if not data:
        return None
    return "\n".join([OPEN, *(line for lines in data for line in lines), CLOSE])


def with_fence(page: str, held: str | None) -> str:
    """``page`` with ocmem's fence (and the blank line before it) taken out, then ``held`` at
    its end. Only a fence outside every other fence is ocmem's."""
    lines = page.split("\n")
    kept: list[str] = []
    other: str | None = None
    inside = found = False
    for line in lines:
        if inside:
            inside = not is_close(line, CLOSE)
            continue
        if other is not None:
            other = None if is_close(line, other) else other
        elif line == OPEN:
            inside = found = True
            while kept and not kept[-1].strip():
                kept.pop()
            kept.append("")
            continue
        else:
            other = fence_run(line)
        kept.append(line)
    if held is None and not found:
        return page  # no fence, none to add: the page as it is
    text = "\n".join(kept).rstrip("\n") + "\n"
    return text if held is None else f"{text}\n{held}\n"


def fence_run(line: str) -> str | None:
    """The run of three or more backticks or tildes a Markdown fence line opens with."""
    found = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
    return found.group(1) if found else None


def is_close(line: str, marker: str) -> bool:
    run = fence_run(line)
    return (
        run is not None
        and run[0] == marker[0]
        and len(run) >= len(marker)
        and not line.strip().strip(run[0])
    )


class Decorate(Protocol):
    """The fence of a pending page's proposals (ocmem.services.gestureplans.Decorator)."""

    def __call__(self, blocks: Sequence[tuple[str, str]]) -> str | None:
        """``blocks``: (id, text) of the page's blocks as the push sends them."""
        ...

    def inputs(self) -> str:
        """A digest of what the gestures are computed from (the pulled pages, the caps)."""
        ...
