"""What a detector reports: a kind, a line and a masked hint, never the value itself.

Kept apart from ``textsafety`` so the detector modules (``credentials``, ``personal``) and the
guards that use them import it without a cycle; ``textsafety.Finding`` re-exports it.
"""

# No `from __future__ import annotations`: see ocmem.home.settings (NamedTuples on the hot path).

from typing import NamedTuple


class Finding(NamedTuple):
    kind: str
    line: int
    hint: str  # never the secret itself

    def describe(self) -> str:
        return f"ligne {self.line} : {self.kind} ({self.hint})"


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1
