"""What the status lines say of a promoted proposal whose fact or skill validated memory no
longer holds (a pull installed a MEMORY.md without it, the human retired it): « promu (…),
absent de MEMORY.md depuis le pull du … », never « promu » alone (issue 33)."""

from __future__ import annotations

from ocmem.errors import OcmemError
from ocmem.formats import pending
from ocmem.home import identity
from ocmem.home.workspace import Workspace
from ocmem.silverbullet.state import gone_since


def shown_statuses(ws: Workspace, proposals: list[pending.Proposal]) -> dict[str, str]:
    """Proposal id → its status as shown, for the promoted ones validated memory lacks."""
    promoted = [p for p in proposals if p.state == pending.STATE_PROMOTED]
    if not promoted:
        return {}
    try:
        home = identity.read(ws.paths)
    except OcmemError:  # an illegible identity is doctor's to say; here, no home id
        home = None
    memory = ws.memory_text()
    names = {skill.name for skill in ws.skills()}
    since = gone_since(ws.paths)
    shown = {}
    for proposal in promoted:
        left = pending.left_memory(proposal, memory, names, home.id if home else None)
        if left is not None:
            shown[proposal.id] = pending.shown_status(proposal, left, since.get(proposal.id))
    return shown
