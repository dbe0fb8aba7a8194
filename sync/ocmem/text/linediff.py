"""A line diff a person reads in a terminal: bounded, and inert whatever the texts hold (pure).

``ocmem pull`` shows what changed in a pulled MEMORY.md or skill, so the human sees what became
memory whoever wrote it. The diff is the unified format (``@@ -a,b +c,d @@`` hunks, lines marked
``-``, ``+`` or a space), with two lines of context; a line without a final newline
is followed by ``\\ pas de fin de ligne``. Lines are split on ``\\n`` only, so every other
character is part of a line and is shown: control, format (bidirectional overrides, zero-width
characters) and separator characters are written as ``\\uXXXX`` (:func:`visible`), and a
shown line is cut at :data:`WIDTH` characters. At most ``limit`` lines are shown; the rest is
counted in ``hidden``. Shown lines, applied to the old text's shown lines, give the new text's
shown lines whenever nothing was cut (``tests/test_pull_changes.py``).
"""

from __future__ import annotations

import unicodedata
from typing import NamedTuple

CONTEXT = 2
LIMIT = 40
WIDTH = 300
# Beyond this many lines on one side the diff is not computed (quadratic at worst): counted only.
MAX_LINES = 5000
NO_NEWLINE = "\\ pas de fin de ligne"
# Control, format, line and paragraph separators, surrogates, private use: what can move a
# terminal's cursor, reorder or hide what a person reads.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co"})


class LineDiff(NamedTuple):
    lines: list[str]  # what is shown, without indentation
    added: int  # lines added, removed (all of them, shown or not)
    removed: int
    hidden: int  # diff lines not shown (beyond the limit)
    cut: bool  # some shown line was cut at WIDTH, or the texts were too long to diff

    @property
    def truncated(self) -> bool:
        return self.cut or self.hidden > 0


def visible(line: str) -> str:
    """``line`` with every character that could hide or move text written as ``\\uXXXX``
    (tabs kept)."""
    if line.isprintable():
        return line
    out = []
    for char in line:
        if char != "\t" and unicodedata.category(char) in _HIDDEN_CATEGORIES:
            code = ord(char)
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(char)
    return "".join(out)


def split(text: str) -> list[str]:
    """The lines of ``text`` with their ``\\n`` (the last one may lack it)."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def _shown(marker: str, line: str) -> list[tuple[str, bool]]:
    """A text line as shown: marked, visible, cut at WIDTH (and whether it was)."""
    body = visible(line[:-1] if line.endswith("\n") else line)
    cut = len(body) > WIDTH
    shown = [(marker + (body[: WIDTH - 1] + "…" if cut else body), cut)]
    return shown if line.endswith("\n") else [*shown, (NO_NEWLINE, False)]


def _range(start: int, count: int) -> str:
    # Unified diff: a range starts at 1; an empty range names the line before it.
    first = start + 1 if count else start
    return str(first) if count == 1 else f"{first},{count}"


def _bounded(every: list[tuple[str, bool]], limit: int) -> tuple[list[str], int, bool]:
    shown = every[:limit]
    return [line for line, _ in shown], len(every) - len(shown), any(cut for _, cut in shown)


def diff(old: str, new: str, *, context: int = CONTEXT, limit: int = LIMIT) -> LineDiff:
    """The unified diff of ``old`` to ``new``, at most ``limit`` lines shown (none when equal)."""
    a, b = split(old), split(new)
    if a == b:
        return LineDiff([], 0, 0, 0, False)
    if max(len(a), len(b)) > MAX_LINES:
        return LineDiff([], len(b), len(a), 0, True)
    import difflib  # only a pull that changed something pays for it

    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    every: list[tuple[str, bool]] = []
    added = removed = 0
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        old_range = _range(first[1], last[2] - first[1])
        every.append((f"@@ -{old_range} +{_range(first[3], last[4] - first[3])} @@", False))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                marked = [(" ", line) for line in a[i1:i2]]
            else:
                marked = [("-", line) for line in a[i1:i2]] + [("+", line) for line in b[j1:j2]]
                removed += i2 - i1
                added += j2 - j1
            for marker, line in marked:
                every += _shown(marker, line)
    lines, hidden, cut = _bounded(every, limit)
    return LineDiff(lines, added, removed, hidden, cut)


class Preview(NamedTuple):
    lines: list[str]  # the first lines, as shown
    total: int  # lines in the text
    hidden: int  # lines not shown
    cut: bool


def preview(text: str, limit: int) -> Preview:
    """The first ``limit`` lines of ``text`` as shown (a file added or removed)."""
    lines = split(text)
    every = [shown for line in lines[:limit] for shown in _shown("", line)]
    return Preview(
        [line for line, _ in every],
        len(lines),
        max(0, len(lines) - limit),
        any(cut for _, cut in every),
    )
