"""What a search shows from its rankings (ocmem.text.relevance): the fusion of the words' and the
meaning's lists, « rien de pertinent », weak matches. Pure: table and property tests."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ocmem.text.relevance import (
    HALF,
    Phrasing,
    fused,
    missing_names,
    nothing_relevant,
    weak,
    words_weight,
)


def phrasing(
    words: list[int],
    meaning: list[int] = (),  # type: ignore[assignment]
    cover: float = 1.0,
    names: tuple[str, ...] = (),
) -> Phrasing:
    return Phrasing(words, dict.fromkeys(words[:1], cover), names, list(meaning))


def test_words_carrying_half_the_question_weigh_as_much_as_meaning() -> None:
    assert words_weight(phrasing([1], cover=HALF)) == 1.0
    assert words_weight(phrasing([1], cover=1.0)) == 1.0
    assert words_weight(phrasing([1], cover=0.25)) == 0.25
    assert words_weight(phrasing([], cover=0.0)) == 0.0


def test_neither_list_buries_the_other() -> None:
    """Both lists' best entries lead the fused one, whichever list is longer."""
    strong = fused([phrasing([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])])
    assert set(strong[:2]) == {1, 6}
    assert fused([phrasing([1, 2, 3], [3, 4, 5])])[0] == 3  # in both lists: first


def test_weak_words_leave_the_order_to_meaning() -> None:
    """A question whose words only brush the journal (a tenth of its weight carried): the
    meaning's entries go first."""
    order = fused([phrasing([1, 2, 3], [7, 8, 9], cover=0.1)])
    assert order[:3] == [7, 8, 9]


def test_other_phrasings_add_their_lists() -> None:
    order = fused([phrasing([1, 2], [3]), phrasing([4, 5], [6])])
    assert set(order) == {1, 2, 3, 4, 5, 6} and set(order[:4]) == {1, 3, 4, 6}


def test_nothing_relevant_needs_a_missing_name_and_little_carried() -> None:
    assert phrasing([1], [2], cover=0.3, names=("kubernetes",)).nothing
    assert not phrasing([1], [2], cover=0.3).nothing  # other words: shown, weak
    assert not phrasing([1], [2], cover=HALF, names=("P2028",)).nothing  # half carried
    assert not phrasing([1], [1], cover=0.3, names=("dockerized",)).nothing  # both agree
    assert phrasing([], [], cover=0.0, names=("wireguard",)).nothing
    # a rare name the journal does mention (« ECONNRESET ») is evidence, whatever else is absent
    shared = phrasing([1], [2], cover=0.1, names=("Kubernetes",))._replace(shared=("ECONNRESET",))
    assert not shared.nothing


def test_one_phrasing_with_evidence_is_enough() -> None:
    missing = phrasing([1], [2], cover=0.2, names=("kubernetes",))
    found = phrasing([3], [3], cover=0.9)
    assert nothing_relevant([missing, missing])
    assert not nothing_relevant([missing, found])
    assert not nothing_relevant([])
    assert missing_names([missing, phrasing([1], names=("k3s", "kubernetes"))]) == [
        "kubernetes",
        "k3s",
    ]


def test_a_weak_match_carries_less_than_half_of_every_phrasing() -> None:
    assert weak([0.1, 0.49])
    assert not weak([0.1, 0.5])
    assert weak([])  # found by meaning alone


@given(
    words=st.lists(st.integers(0, 30), unique=True, max_size=10),
    meaning=st.lists(st.integers(0, 30), unique=True, max_size=10),
    cover=st.floats(0, 1),
)
def test_the_fused_list_holds_each_entry_once_and_both_bests(
    words: list[int], meaning: list[int], cover: float
) -> None:
    """Each list's best is preceded only by entries both lists hold (or the other's best): a
    list can be outranked by agreement, never by the other list alone."""
    order = fused([phrasing(words, meaning, cover)])
    assert sorted(order) == sorted(set(words) | set(meaning))
    both = set(words) & set(meaning)
    if meaning:
        before = order[: order.index(meaning[0])]
        assert set(before) <= both | set(words[:1])
    if words and cover >= HALF:
        before = order[: order.index(words[0])]
        assert set(before) <= both | set(meaning[:1])
