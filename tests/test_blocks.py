"""Properties of the pure block merge behind push."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ocmem.silverbullet.merge import JOURNAL_BLOCK, PENDING_BLOCK, blocks_of, digest, merge, split

PREAMBLE = "# Journal\n"


def block(minute: int, body: str = "x") -> tuple[str, str]:
    block_id = f"2026-11-29 10:{minute:02d}"
    return block_id, f"## {block_id} · titre {minute} · #t\n- Fait : {body}\n"


human_line = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=20).map(
    lambda s: "humain " + s.strip()
)
minutes = st.lists(st.integers(0, 59), unique=True, max_size=8)


@given(minutes)
def test_a_new_page_gets_every_block_once(ids: list[int]) -> None:
    local = [block(m) for m in ids]
    result = merge(None, local, {}, JOURNAL_BLOCK, PREAMBLE)
    assert [i for i, _ in blocks_of(result.text, JOURNAL_BLOCK)] == [i for i, _ in local]
    assert result.appended == [i for i, _ in local]


@given(minutes, st.lists(human_line, max_size=5))
def test_merging_again_changes_nothing(ids: list[int], lines: list[str]) -> None:
    remote = PREAMBLE + "".join(f"\n{line}\n" for line in lines)
    local = [block(m) for m in ids]
    first = merge(remote, local, {}, JOURNAL_BLOCK, PREAMBLE)
    second = merge(first.text, local, first.base, JOURNAL_BLOCK, PREAMBLE)
    assert second.text == first.text
    assert not second.appended and not second.updated and not second.conflicts


@given(minutes, st.lists(human_line, min_size=1, max_size=5), st.data())
def test_human_lines_are_never_lost(ids: list[int], lines: list[str], data: st.DataObject) -> None:
    pushed = [block(m) for m in ids]
    first = merge(PREAMBLE, pushed, {}, JOURNAL_BLOCK, PREAMBLE)
    # The human inserts lines after random blocks and deletes some blocks.
    segments = split(first.text, JOURNAL_BLOCK)
    deleted = set(
        data.draw(st.lists(st.sampled_from([i for i, _ in pushed]), unique=True)) if pushed else []
    )
    edited = ""
    for index, segment in enumerate(segments):
        if segment.id in deleted:
            continue
        edited += segment.text
        if index < len(lines):
            edited = edited.rstrip("\n") + f"\n{lines[index]}\n\n"
    new_local = [*pushed, block(next(m for m in range(60) if m not in ids), "nouveau")]
    result = merge(edited, new_local, first.base, JOURNAL_BLOCK, PREAMBLE)
    for line in lines[: len(segments)]:
        if line in edited:
            assert line in result.text
    for block_id in deleted:
        assert f"## {block_id} ·" not in result.text
        assert block_id in result.missing
    assert result.text.startswith(edited.rstrip("\n"))


@given(minutes)
def test_a_crash_after_put_is_adopted_not_duplicated(ids: list[int]) -> None:
    local = [block(m) for m in ids]
    landed = merge(PREAMBLE, local, {}, JOURNAL_BLOCK, PREAMBLE)
    rerun = merge(landed.text, local, {}, JOURNAL_BLOCK, PREAMBLE)  # state was never saved
    assert rerun.text == landed.text
    assert sorted(rerun.adopted) == sorted(i for i, _ in local)


def test_three_way_cases_for_one_proposal() -> None:
    base_text = "## P-0001 · fait · T\n- Statut : en attente\n"
    local_text = "## P-0001 · fait · T\n- Statut : en attente\n- Sources : a ; b\n"
    human_text = "## P-0001 · fait · T\n- Statut : promu\n"
    page = f"# P\n\n{base_text}"
    base = {"P-0001": digest(base_text)}
    local_only = merge(page, [("P-0001", local_text)], base, PENDING_BLOCK, "# P\n")
    assert local_only.updated == ["P-0001"] and "Sources : a ; b" in local_only.text
    remote_only = merge(
        f"# P\n\n{human_text}", [("P-0001", base_text)], base, PENDING_BLOCK, "# P\n"
    )
    assert remote_only.text == f"# P\n\n{human_text}" and not remote_only.updated
    both = merge(
        f"# P\n\n{human_text}\nfin\n", [("P-0001", local_text)], base, PENDING_BLOCK, "# P\n"
    )
    assert both.conflicts == ["P-0001"]
    assert both.text.startswith(f"# P\n\n{human_text}\nfin\n\n## P-0001~agent-")
    again = merge(both.text, [("P-0001", local_text)], both.base, PENDING_BLOCK, "# P\n")
    assert again.text == both.text


def test_replacing_a_block_keeps_the_surrounding_bytes() -> None:
    page = "# P\n\navant\n\n## P-0001 · fait · T\n- Statut : en attente\n\n## P-0002 · fait · U\n- Statut : en attente\n\napres\n"
    base = {"P-0001": digest("## P-0001 · fait · T\n- Statut : en attente\n")}
    result = merge(
        page, [("P-0001", "## P-0001 · fait · T\n- Statut : promu\n")], base, PENDING_BLOCK, "# P\n"
    )
    assert result.text == page.replace(
        "- Statut : en attente\n\n## P-0002", "- Statut : promu\n\n## P-0002"
    )


def test_crlf_and_trailing_spaces_are_not_changes() -> None:
    text = "## P-0001 · fait · T\n- Statut : en attente\n"
    base = {"P-0001": digest(text)}
    remote = "# P\r\n\r\n## P-0001 · fait · T  \r\n- Statut : en attente\r\n"
    result = merge(remote, [("P-0001", text)], base, PENDING_BLOCK, "# P\n")
    assert result.text == remote


def test_a_conflict_copy_ends_with_a_blank_line_before_the_next_block() -> None:
    # Someone else's block under our id, followed by another block: our copy goes between them
    # and the next header must stay a header (issue 22: it ran into it).
    first_id, _ = block(1)
    theirs = f"## {first_id} · titre 1 · #t\n- Fait : le leur\n"
    _, second = block(2, "suivant")
    remote = PREAMBLE + "\n" + theirs + "\n" + second
    result = merge(remote, [block(1, "le mien")], {}, JOURNAL_BLOCK, PREAMBLE)
    assert result.conflicts == [first_id]
    copy = result.text.index("~agent-")
    assert "- Fait : le mien\n\n## 2026-11-29 10:02" in result.text[copy:]
    assert [i for i, _ in blocks_of(result.text, JOURNAL_BLOCK)][-1] == "2026-11-29 10:02"


def test_a_header_with_a_superscript_rank_is_kept_under_its_own_header() -> None:
    """« ~² » (a human's edit) is no rank: the block keeps its header as its id, no traceback."""
    page = "## 2026-01-01 10:00~² · Titre · #vps\n- Fait : x\n"
    assert [s.id for s in split(page, JOURNAL_BLOCK) if s.id] == ["2026-01-01 10:00~²"]
