"""What a command did: the lines to show and how it ended.

Every command returns one ``Outcome``; ``ocmem.cli.entry.main`` alone turns it (or an error, see
``ocmem.errors``) into an exit code. A plain class rather than a dataclass: it is on the path of
every ``ocmem`` call, where importing ``dataclasses`` costs as much as Python's start-up.
"""

from __future__ import annotations

import enum
import re

# C0 controls but tab and newline, DEL, C1 controls: what can move a terminal's cursor, set its
# title (OSC), or hide text (ESC, CSI), if a file ocmem reads holds one.
_TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """``text`` with every control character but tab and newline written as ``\\uXXXX``."""
    return _TERMINAL_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class Status(enum.Enum):
    OK = "ok"
    NEEDS_HUMAN = "needs-human"  # done what could be done; a person must act (exit 3)
    FAILED = "failed"  # ran to the end, found errors (e.g. doctor) (exit 1)


class Outcome:
    __slots__ = ("lines", "status")

    def __init__(self, lines: list[str] | None = None, status: Status = Status.OK):
        self.lines = lines if lines is not None else []
        self.status = status

    def render(self) -> str:
        return "\n".join(self.lines)

    @property
    def needs_human(self) -> bool:
        return self.status is Status.NEEDS_HUMAN

    def ask_human(self) -> None:
        """Mark that a person must act (unless the run already failed)."""
        if self.status is Status.OK:
            self.status = Status.NEEDS_HUMAN

    def then(self, other: Outcome) -> Outcome:
        """This outcome followed by ``other`` (the worse status wins)."""
        order = [Status.OK, Status.NEEDS_HUMAN, Status.FAILED]
        worst = max(self.status, other.status, key=order.index)
        return Outcome([*self.lines, *other.lines], worst)
