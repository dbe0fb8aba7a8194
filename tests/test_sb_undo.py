"""The review page's « Annuler », run in a real Lua 5.4 (lupa) on what ocmem pushes (issue 36).

ocmem computes the undo of a promotion by the code of a local undo (ocmem.services.unpromotion)
and pushes it with the promoted proposal; the page performs it only while the pages hold what the
promotion wrote, and records « - P-0003 : annulé (date) », which the next pull reads.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import lupa.lua54 as lupa

import test_sb_review as review
from ocmem.formats import archive, decisionspage, gestures, memorymd, pending, skills
from ocmem.services import promotion, unpromotion
from test_sb_review import (
    ARCHIVE,
    DESCRIPTION,
    HOME,
    HOME_DECISIONS,
    HOME_PAGE,
    MEMORY,
    PORTS,
    TODAY,
    ServerSpace,
    Space,
    _propose,
    _workspace,
    fact,
    promote,
    refused,
    run_command,
    skill,
    skill_page,
    walk,
    written,
)

# The review page's fixtures: a real Lua with the page loaded, the space, the stubbed glue.
lua, oc, space, sbui = review.lua, review.oc, review.space, review.sbui

PROMOTED = f"promu ({TODAY})"
UNDONE_ON = "2026-12-02"
OLD = "Le VPS tourne sous Debian 12. (2026-11-20, Source : journal 2026-11-19 10:00 ; P-0042)"
REPLACING = "MEMORY.md « Le VPS tourne sous Debian 12. » — valeur changée : 12 → 13"


def undo(oc: Any, space: Space, gid: str) -> Any:
    return oc.undo(space.store(), gid, UNDONE_ON)


def promoted_then_pulled(oc: Any, space: Space, *proposals: pending.Proposal) -> str:
    """Promoted on the page, then pushed again as a pull and a push leave them: « promu »
    (the first one's id)."""
    space.push(*proposals)
    for proposal in proposals:
        assert promote(oc, space, f"{HOME}/{proposal.id}").ok is True
    space.push(*(replace(p, status=PROMOTED) for p in proposals))
    return f"{HOME}/{proposals[0].id}"


def undoable(oc: Any, space: Space) -> list[str]:
    return [e.gid for e in oc.review(space.store()).promoted.values()]


def test_a_promoted_fact_is_taken_back_as_a_local_undo_takes_it(oc: Any, space: Space) -> None:
    space.pages[MEMORY] = memorymd.MEMORY_HEADER + "\n- Un fait d'avant.\n"
    before = space.pages[MEMORY]
    gid = promoted_then_pulled(oc, space, fact())
    (entry,) = oc.review(space.store()).promoted.values()
    assert (entry.gid, entry.intact) == (gid, True)
    assert list(oc.review(space.store()).entries.values()) == []
    promoted_memory = space.pages[MEMORY]
    local = unpromotion.reverse_fact(promoted_memory, "", written(fact(status=PROMOTED)))
    space.writes.clear()
    result = undo(oc, space, gid)
    assert result.ok is True, result.message
    assert result.message.startswith(f"Promotion de {gid} annulée : retire de {MEMORY}")
    assert space.pages[MEMORY] == local.target == before
    assert space.writes == [MEMORY, HOME_DECISIONS]
    assert decisionspage.parse(space.pages[HOME_DECISIONS]) == {"P-0001": f"annulé ({UNDONE_ON})"}
    # Done: no longer offered, and a second click writes nothing.
    assert undoable(oc, space) == []
    space.writes.clear()
    refused(undo(oc, space, gid), "déjà notée", "annulé")
    assert space.writes == []


def test_a_replacement_taken_back_puts_the_old_fact_in_its_place(oc: Any, space: Space) -> None:
    earlier = archive.Entry(
        date(2026, 11, 1), archive.FACT, archive.RETIRED, "à la main", "Un vieux fait.", "", "x"
    )
    space.pages[ARCHIVE] = archive.with_entry("", earlier)
    space.pages[MEMORY] = memorymd.MEMORY_HEADER + f"\n- {OLD}\n- Le port SSH est 2222.\n"
    memory, archived = space.pages[MEMORY], space.pages[ARCHIVE]
    gid = promoted_then_pulled(
        oc, space, fact(content="Le VPS tourne sous Debian 13.", replaces=REPLACING)
    )
    assert len(archive.entries(space.pages[ARCHIVE])) == 2
    (entry,) = oc.review(space.store()).promoted.values()
    assert [str(n) for n in entry.notes.values()][1:] == [
        f"y remet l'ancien fait « {OLD} »",
        f"retire son entrée de {ARCHIVE}",
    ]
    assert undo(oc, space, gid).ok is True
    assert space.pages[MEMORY] == memory
    assert space.pages[ARCHIVE] == archived  # the earlier entry kept, byte for byte


def test_the_only_archive_entry_leaves_the_archive_page_its_header(oc: Any, space: Space) -> None:
    space.pages[MEMORY] = memorymd.MEMORY_HEADER + f"\n- {OLD}\n"
    gid = promoted_then_pulled(
        oc, space, fact(content="Le VPS tourne sous Debian 13.", replaces=REPLACING)
    )
    assert undo(oc, space, gid).ok is True
    assert space.pages[ARCHIVE] == archive.ARCHIVE_HEADER
    assert memorymd.fact_lines(space.pages[MEMORY]) == [OLD]


def test_a_created_skill_is_deleted_and_a_replaced_one_put_back(oc: Any, space: Space) -> None:
    gid = promoted_then_pulled(oc, space, skill())
    assert skill_page() in space.pages
    (entry,) = oc.review(space.store()).promoted.values()
    assert [str(n) for n in entry.notes.values()] == [f"supprime {skill_page()}"]
    assert undo(oc, space, gid).ok is True
    assert skill_page() not in space.pages and ARCHIVE not in space.pages

    old = skills.render_skill("deploy-vps", DESCRIPTION, "Ancienne version.", {})
    space.pages = {skill_page(): old}
    gid = promoted_then_pulled(oc, space, skill("P-0003", replaces="skill deploy-vps"))
    assert space.pages[skill_page()] != old and len(archive.entries(space.pages[ARCHIVE])) == 1
    space.writes.clear()
    assert undo(oc, space, gid).ok is True
    assert space.pages[skill_page()] == old
    assert space.pages[ARCHIVE] == archive.ARCHIVE_HEADER
    assert space.writes == [skill_page(), ARCHIVE, HOME_DECISIONS]


def test_pages_changed_since_the_push_are_refused_and_nothing_is_written(
    oc: Any, space: Space
) -> None:
    gid = promoted_then_pulled(oc, space, fact(), skill())
    line = memorymd.fact_lines(space.pages[MEMORY])[0]
    space.pages[MEMORY] = space.pages[MEMORY].replace(line, line.replace("12", "13"))
    space.pages[skill_page()] += "\nAjout à la main.\n"
    space.writes.clear()
    refused(undo(oc, space, gid), "n'est plus dans", MEMORY, "ocmem sync")
    refused(undo(oc, space, f"{HOME}/P-0002"), "a changé depuis le dernier pull")
    space.pages[HOME_PAGE] = space.pages[HOME_PAGE].replace("Debian 12.", "Debian 14.", 1)
    refused(undo(oc, space, gid), "modifiée", "ocmem sync")
    assert space.writes == []


def test_a_promotion_ocmem_cannot_take_back_is_not_offered(oc: Any, space: Space) -> None:
    """What the promotion wrote was changed by hand before the push, or is gone; a proposal
    promoted by a copy ocmem did not write: the CLI spells out the gesture by hand."""
    by_hand = "Le VPS tourne sous Debian 12. (corrigé à la main)"
    space.pages[MEMORY] = memorymd.MEMORY_HEADER + f"\n- {by_hand}\n"
    space.push(fact(status=PROMOTED), skill(status=PROMOTED))
    assert undoable(oc, space) == []
    assert "geste annuler" not in space.pages[HOME_PAGE]


def test_an_undone_proposal_can_be_promoted_again_and_undone_again(oc: Any, space: Space) -> None:
    """The decisions page's last line for an id wins, in the page as in ocmem."""
    gid = promoted_then_pulled(oc, space, fact())
    assert undo(oc, space, gid).ok is True
    space.push(fact())  # the pull set it waiting: pushed waiting, with the page's two lines
    assert [e.gid for e in oc.review(space.store()).entries.values()] == [gid]
    assert promote(oc, space, gid).ok is True
    assert decisionspage.parse(space.pages[HOME_DECISIONS]) == {"P-0001": PROMOTED}
    assert [e.gid for e in oc.review(space.store()).entries.values()] == []
    space.push(fact(status=PROMOTED))
    assert undoable(oc, space) == [gid]
    assert undo(oc, space, gid).ok is True
    statuses = re.findall(r"^- P-0001 : (\S+)", space.pages[HOME_DECISIONS], re.M)
    assert statuses == ["promu", "annulé", "promu", "annulé"]


def test_the_pushed_undo_is_the_local_undo_line_for_line(space: Space) -> None:
    """What the fence says, read back: the line out, the decision « annulé » with its date."""
    space.pages[MEMORY] = memorymd.MEMORY_HEADER
    line = promotion.fact_line(written(fact()), date(2026, 12, 1))
    space.pages[MEMORY] += f"\n- {line}\n"
    space.push(fact(status=PROMOTED))
    fence = space.pages[HOME_PAGE].split(gestures.OPEN + "\n", 1)[1]
    assert fence.split("\n")[:1] == [f"proposition {HOME}/P-0001"]
    assert "rouvre - P-0001 : promu" in fence and "decidee - P-0001 : annulé" in fence
    assert "geste annuler\n" in fence and f"remplace {MEMORY}\nancien\n> - {line}|\n" in fence
    assert "decision\n> - P-0001 : annulé (|\n@date\n| )|\n" in fence


# --- the glue -------------------------------------------------------------------------------


def test_the_review_shows_promotions_to_undo_under_their_own_heading(
    sbui: Any, space: Space, oc: Any
) -> None:
    gid = promoted_then_pulled(oc, space, fact())
    space.push(replace(fact(), status=PROMOTED), skill())
    sbui.PAGES[HOME_PAGE], sbui.PAGES[MEMORY] = space.pages[HOME_PAGE], space.pages[MEMORY]
    markdown = sbui.VIRTUAL.run()
    assert markdown.startswith("# Propositions de l'agent\n\n1 proposition(s) en attente.\n")
    waiting, promoted = markdown.split("## Promotions que tu peux annuler\n")
    assert f'card("{HOME}/P-0002"' in waiting and f'card("{gid}"' in promoted
    card = sbui.ocmem.sb.card(gid)
    texts = [n.spec["__rawText"] for n in walk(card) if lupa.lua_type(n) == "table" and n.tag]
    assert next(t for t in texts if t).startswith(f"Annuler : retire de {MEMORY} «")
    buttons = [n for n in walk(card) if lupa.lua_type(n) == "table" and n.button]
    assert [b.button for b in buttons] == ["Annuler"]
    buttons[0].run()
    assert memorymd.fact_lines(sbui.PAGES[MEMORY]) == []
    assert "- P-0001 : annulé (" in sbui.PAGES[HOME_DECISIONS]
    (flash,) = [(f.message, f.kind) for f in sbui.FLASHES.values()]
    assert flash[1] == "info" and flash[0].startswith(f"Promotion de {gid} annulée")


def test_the_command_undoes_the_picked_promotion(sbui: Any, space: Space, oc: Any) -> None:
    gid = promoted_then_pulled(oc, space, fact())
    sbui.PAGES[HOME_PAGE], sbui.PAGES[MEMORY] = space.pages[HOME_PAGE], space.pages[MEMORY]
    sbui.PICK = 1
    run_command(sbui, "ocmem: Annuler une promotion")
    assert [o.name for o in sbui.OPTIONS.values()] == [f"{gid} · fait · Debian"]
    assert memorymd.fact_lines(sbui.PAGES[MEMORY]) == []
    run_command(sbui, "ocmem: Annuler une promotion")
    assert [f.message for f in sbui.FLASHES.values()][-1] == "Rien à annuler"


# --- round trip: push → promote → pull → push → Annuler → pull, on the test server ----------------


def test_round_trip_undone_in_the_page_the_pull_sets_it_waiting_again(
    synced: Path, sb: Any, memory: Any, proposals: Any, clock: Any, lua: Any, oc: Any
) -> None:
    from ocmem.services import sync
    from ocmem.services.proposals import Proposals

    _propose(memory, proposals, clock, PORTS)
    sync.push(_workspace(synced, clock))
    store = ServerSpace(lua, sb).store()
    (entry,) = oc.review(store).entries.values()
    assert oc.promote(store, entry.gid, TODAY).ok is True
    sync.pull(_workspace(synced, clock))
    assert len(memorymd.fact_lines((synced / "memory/MEMORY.md").read_text())) == 1
    sync.push(_workspace(synced, clock))
    assert [e.gid for e in oc.review(store).promoted.values()] == [entry.gid]
    assert oc.undo(store, entry.gid, UNDONE_ON).ok is True
    report = sync.pull(_workspace(synced, clock)).render()
    assert "promotion annulée dans SilverBullet" in report and "⚠" not in report, report
    assert memorymd.fact_lines((synced / "memory/MEMORY.md").read_text()) == []
    (local,) = _workspace(synced, clock).proposals()
    assert local.status == pending.STATE_PENDING
    # Waiting again: the next push offers Promouvoir, and the page promotes it again.
    sync.push(_workspace(synced, clock))
    assert [e.gid for e in oc.review(store).entries.values()] == [entry.gid]
    assert oc.promote(store, entry.gid, TODAY).ok is True
    sync.pull(_workspace(synced, clock))
    (local,) = _workspace(synced, clock).proposals()
    assert local.status.startswith(pending.STATE_PROMOTED)
    listed = Proposals(_workspace(synced, clock)).list_pending(show_all=True).render()
    assert "Ports — promu (" in listed


def test_a_replaced_line_with_trailing_blanks_is_found_as_the_page_compares_it(
    oc: Any, space: Space
) -> None:
    """The page compares lines without trailing blanks: ocmem sends them without."""
    space.pages[MEMORY] = memorymd.MEMORY_HEADER + f"\n- {OLD} \t\n- Le port SSH est 2222.\n"
    gid = promoted_then_pulled(
        oc, space, fact(content="Le VPS tourne sous Debian 13.", replaces=REPLACING)
    )
    assert undo(oc, space, gid).ok is True
    assert memorymd.fact_lines(space.pages[MEMORY]) == [OLD, "Le port SSH est 2222."]
