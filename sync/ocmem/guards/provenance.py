"""What the user asked: « retiens ça » in their own messages, never in a tool's output.

Until issue 12 this module also refused memory writes that copied or restated recent untrusted
output (text similarity). That guard guessed from what a text looks like, needed the plugin to
ship up to 200 000 characters of tool output with every memory call, and missed paraphrases,
translations and splits; it is replaced by session taint (``ocmem.guards.exposure``): every write of a
session that has seen outside content is quarantined, whatever it says.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ocmem.text.similarity import fold

# What a user says to ask for a lesson to be kept (folded: lowercase, no accents).
RETIENS_PATTERNS = (
    r"\bretiens\b",
    r"\bretenir\b",
    r"\bsouviens[- ]toi\b",
    r"\bmemorise\b",
    r"\bn'oublie pas\b",
    r"\bremember (?:this|that)\b",
    r"\bkeep in mind\b",
)
_RETIENS = re.compile("|".join(RETIENS_PATTERNS))


@dataclass(frozen=True)
class Provenance:
    """The user's own messages of the session (the plugin's ``chat.message`` hook), oldest
    first: the last one is the current turn."""

    user_messages: Sequence[str] = ()

    def user_said_retiens(self) -> bool:
        """« retiens ça » anywhere in the session (a proposal's ``retiens_ca`` claim)."""
        return any(_RETIENS.search(fold(m)) for m in self.user_messages)

    def user_asks_now(self) -> bool:
        """« retiens ça » in the current turn: it lifts the quarantine of that turn's writes."""
        return (
            bool(self.user_messages) and _RETIENS.search(fold(self.user_messages[-1])) is not None
        )
