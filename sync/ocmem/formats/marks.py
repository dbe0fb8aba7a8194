"""How a memory file marks what an exposed session wrote (``ocmem.guards.exposure`` decides when):
``quarantaine : webfetch http://…``, in a note's brackets, on an entry's « Exposition » line, in a
proposal's « Exposition » field.

A mark is a state and the source of the session's exposure: quarantined (kept for the human,
loaded in no prompt), asked for by the user in that turn (« retiens ça »), or lifted by the human.
"""

# No `from __future__ import annotations`: on the hot path (see ocmem.home.settings).

QUARANTINE = "quarantaine"
USER_ASKED = "exposée, demandée par l'utilisateur"
LIFTED = "exposée, levée par l'humain"
STATES = (QUARANTINE, USER_ASKED, LIFTED)


def mark(state: str, source: str) -> str:
    """``quarantaine : webfetch http://…``: the text a memory file keeps for an exposed write."""
    return f"{state} : {source}"


def split_mark(text: str) -> tuple[str, str] | None:
    """``(state, source)`` of a mark, or None when ``text`` is not one."""
    for state in STATES:
        if text.startswith(state + " : "):
            return state, text[len(state) + 3 :]
    return None


def quarantined(text: str | None) -> bool:
    """Whether a mark says the write is quarantined (not lifted, not asked by the user)."""
    found = split_mark(text or "")
    return found is not None and found[0] == QUARANTINE
