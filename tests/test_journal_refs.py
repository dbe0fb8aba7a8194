"""Journal references (issue 36): every header written is the spec's
(``## AAAA-MM-JJ HH:MM · titre · #tags``); an entry's reference is ``journal AAAA-MM-JJ HH:MM``
plus ``~N`` for the Nth entry of its minute, its order there (``journal.Ranks``), read from the
month's archive then the journal. Headers an older ocmem wrote with ``~N`` still read, their rank
kept. By tables, and by properties over random journals: the references are unique, an append
never changes one, archiving keeps them, and every reader (the blocks, the append's byte scan,
the push's block ids, the search index) gives each entry the same one."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import journal_fields
from ocmem.formats import journal
from ocmem.home import journalindex
from ocmem.home.atomic import atomic_write
from ocmem.services.journalsearch import JournalSearch
from ocmem.services.memory import Memory
from ocmem.silverbullet import merge

DAY = datetime(2026, 12, 3, 7, 34)


def entry(minute: int, title: str) -> journal.Entry:
    return journal.entry_from_fields(
        journal_fields(titre=title), DAY.replace(minute=minute), max_lines=10
    )


def header(minute: int, title: str, written: int = 0) -> str:
    """One entry's text; ``written``: the rank an older ocmem put in its header."""
    text = entry(minute, title).render()
    if written:
        text = text.replace(f"07:{minute:02d} · ", f"07:{minute:02d}~{written} · ", 1)
    return text


def page(*entries: str) -> str:
    return journal.JOURNAL_HEADER + "".join("\n" + e for e in entries)


def refs(text: str) -> list[str]:
    return [b.key.stamp for b in journal.blocks(text)]


def test_a_second_entry_of_a_minute_has_the_specs_header() -> None:
    second = entry(34, "Deuxième")._replace(rank=2)
    assert second.render().splitlines()[0] == "## 2026-12-03 07:34 · Deuxième · #docker #vps"
    assert second.ref == "journal 2026-12-03 07:34~2"


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([header(34, "a")], ["2026-12-03 07:34"]),
        (
            [header(34, "a"), header(34, "b"), header(35, "c"), header(34, "d")],
            ["2026-12-03 07:34", "2026-12-03 07:34~2", "2026-12-03 07:35", "2026-12-03 07:34~3"],
        ),
        # an older ocmem's headers: their written rank is their reference
        ([header(34, "a"), header(34, "b", 2)], ["2026-12-03 07:34", "2026-12-03 07:34~2"]),
        # ... and an entry after them comes after them
        (
            [header(34, "a"), header(34, "b", 2), header(34, "c")],
            ["2026-12-03 07:34", "2026-12-03 07:34~2", "2026-12-03 07:34~3"],
        ),
        # the first one removed by hand: the others keep theirs, a new one comes after
        (
            [header(34, "b", 2), header(34, "c")],
            ["2026-12-03 07:34~2", "2026-12-03 07:34~3"],
        ),
        # a written rank already taken (an old header after new ones): the next free one
        (
            [header(34, "a"), header(34, "b"), header(34, "c", 2)],
            ["2026-12-03 07:34", "2026-12-03 07:34~2", "2026-12-03 07:34~3"],
        ),
        # two identical entries of one minute are two entries
        ([header(34, "a"), header(34, "a")], ["2026-12-03 07:34", "2026-12-03 07:34~2"]),
    ],
)
def test_references_by_order_within_the_minute(entries: list[str], expected: list[str]) -> None:
    text = page(*entries)
    assert refs(text) == expected
    assert [i for i, _ in merge.blocks_of(text, merge.JOURNAL_BLOCK)] == expected
    found = journal.find_entries([text], [journal.parse_ref(r) for r in expected])
    assert [found[journal.parse_ref(r)].text for r in expected] == [
        b.text for b in journal.blocks(text)
    ]


def test_rerender_keeps_an_older_header_s_rank_and_writes_none_itself() -> None:
    old = header(34, "b", 2)
    assert journal.rerender(old) == old
    assert journal.rerender(header(34, "a")) == header(34, "a")


def test_a_conflict_copy_is_its_own_block_and_takes_no_rank() -> None:
    copy_id, copy = merge.agent_copy("2026-12-03 07:34~2", header(34, "b"))
    assert copy_id.startswith("2026-12-03 07:34~agent-")
    assert copy.startswith(f"## {copy_id} · b · ")
    text = page(header(34, "a"), header(34, "b"), copy, header(34, "c"))
    assert [i for i, _ in merge.blocks_of(text, merge.JOURNAL_BLOCK)] == [
        "2026-12-03 07:34",
        "2026-12-03 07:34~2",
        copy_id,
        "2026-12-03 07:34~3",
    ]


# --- properties over random journals -----------------------------------------------------------

# (minute, written rank or 0): a few minutes, so that they are shared; old headers now and then
ENTRIES = st.lists(
    st.tuples(st.integers(30, 32), st.sampled_from([0, 0, 0, 0, 2, 3])), min_size=1, max_size=12
)


def journal_of(spec: list[tuple[int, int]]) -> str:
    return page(*(header(m, f"t{i}", w) for i, (m, w) in enumerate(spec)))


@given(ENTRIES, st.integers(30, 32))
def test_references_are_unique_and_an_append_changes_none(
    spec: list[tuple[int, int]], minute: int
) -> None:
    text = journal_of(spec)
    before = refs(text)
    assert len(set(before)) == len(before)
    assert all(journal.parse_ref(r).stamp == r for r in before)  # they read back
    # the append's byte scan gives the rank the readers then give the new entry
    ranks = journal.Ranks()
    when = DAY.replace(minute=minute)
    for written in journal.minute_headers(text.encode(), when):
        ranks.take(when, written)
    new = entry(minute, "nouvelle")._replace(rank=ranks.take(when))
    after = journal.append(text, new)
    assert refs(after) == [*before, new.key.stamp]
    assert [i for i, _ in merge.blocks_of(after, merge.JOURNAL_BLOCK)] == refs(after)
    (block,) = [b for b in journal.blocks(after) if b.key == new.key]
    assert journal.parse_entry(block) == new  # round trip, its rank from its place


@given(ENTRIES, ENTRIES)
def test_archiving_keeps_every_reference(
    old: list[tuple[int, int]], new: list[tuple[int, int]]
) -> None:
    """The month's archive holds entries of the minutes the journal holds too (the clock went
    back): the journal's come after them, and archiving them keeps each reference."""
    archive = journal_of(old)
    text = journal_of(new)
    before = {(b.key, b.text) for b in journal.journal_blocks([text, archive])}
    assert len({key for key, _ in before}) == len(before)
    kept, moved = journal.split_for_archive(text, datetime(2026, 12, 4))
    assert list(moved) == ["journal-2026-12.md"]
    merged = journal.merge_archive(archive, moved["journal-2026-12.md"], "2026-12")
    after = {(b.key, b.text) for b in journal.journal_blocks([kept, merged])}
    assert after == before


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ENTRIES, ENTRIES, st.integers(0, 3))
def test_the_search_index_gives_the_same_references(
    tmp_path: Path, old: list[tuple[int, int]], new: list[tuple[int, int]], appended: int
) -> None:
    """Built at once, then refreshed after appends (the tail only): the index's references are
    ``journal_blocks``'s, archive included."""
    folder = tmp_path / f"case-{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    path, archive, index = folder / "journal.md", folder / "journal-2026-12.md", folder / "i.db"
    atomic_write(archive, journal_of(old))
    text = journal_of(new)
    atomic_write(path, text)
    for step in range(appended + 1):
        files = [path, archive]
        found = journalindex.search(index, files, "", limit=1000)
        expected = {
            (str(b.key), b.text) for b in journal.journal_blocks([p.read_text() for p in files])
        }
        assert {(h.ref, h.text) for h in found.hits} == expected
        when = DAY.replace(minute=31)
        ranks = journal.Ranks()
        for written in (
            *journal.minute_headers(archive.read_bytes(), when),
            *journal.minute_headers(path.read_bytes(), when),
        ):
            ranks.take(when, written)
        text = journal.append(text, entry(31, f"ajout {step}")._replace(rank=ranks.take(when)))
        with path.open("a") as handle:  # an append, as journal add makes it
            handle.write(text[len(path.read_text()) :])


def test_search_and_recent_say_the_reference_a_header_does_not(memory: Memory) -> None:
    """What the agent cites comes from what it reads: the second entry of a minute."""
    for title in ("Première", "Seconde"):
        memory.add_journal(journal_fields(titre=title))
    cite = "(référence : journal 2026-11-29 10:00~2)"
    search = JournalSearch(memory.ws)
    recent = search.recent_journal(5).lines
    assert recent[0] == f"## 2026-11-29 10:00 · Seconde · #docker #vps {cite}"
    assert recent[1] == "## 2026-11-29 10:00 · Première · #docker #vps"
    shown = search.search_journal("seconde").render()
    assert shown.startswith(f"## 2026-11-29 10:00 · Seconde · #docker #vps {cite}\n- Demande")
