"""``latin_skeleton``: look-alikes folded to Latin, checked against Unicode's confusables list
(UTS #39 ``confusables.txt``, as the confusable-homoglyphs package ships it)."""

from __future__ import annotations

import unicodedata

import pytest
from confusable_homoglyphs import utils
from hypothesis import given
from hypothesis import strategies as st

from ocmem.guards import homoglyphs
from ocmem.guards.homoglyphs import latin_skeleton

CONFUSABLES: dict[str, list[dict[str, str]]] = utils.load("confusables.json")
SCRIPTS = ("CYRILLIC", "GREEK", "ARMENIAN", "LATIN")


def ascii_letters_like(char: str) -> set[str]:
    """The ASCII letters Unicode lists ``char`` as confusable with (I for its prototype l), and
    its compatibility form (NFKC: « ſ » is an « s » before it looks like an « f »)."""
    letters = {
        h["c"]
        for h in CONFUSABLES.get(char, [])
        if len(h["c"]) == 1 and h["c"].isascii() and h["c"].isalpha()
    }
    compatible = unicodedata.normalize("NFKC", char)
    if letters and compatible.isascii() and compatible.isalpha():
        letters.add(compatible)
    return letters | ({"I"} if "l" in letters else set())


def test_every_pair_of_the_table_is_a_unicode_confusable() -> None:
    pairs = homoglyphs._LOOKALIKES.split()
    assert len(pairs) == len({p[0] for p in pairs})
    for pair in pairs:
        assert pair[1] in ascii_letters_like(pair[0]), pair


def test_every_confusable_letter_of_the_folded_scripts_becomes_its_ascii_letter() -> None:
    checked = 0
    for char in CONFUSABLES:
        if len(char) != 1 or char.isascii():
            continue
        name = unicodedata.name(char, "")
        if name.split(" ")[0] not in SCRIPTS or "NOTATION" in name:
            continue
        letters = ascii_letters_like(char)
        if letters:
            checked += 1
            assert latin_skeleton(char) in letters, (char, name, letters)
    assert checked > 100


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("le mot de pass\u0435 root", "le mot de passe root"),  # Cyrillic е
        ("\u0440\u0430ssword", "password"),  # Cyrillic р, а
        ("\u03c1assw\u03bfrd", "password"),  # Greek ρ, ο
        ("ｇｈｐ＿ａｂｃ１２３", "ghp_abc123"),  # fullwidth
        ("gh\u200bp_\u200dabc\u2060", "ghp_abc"),  # zero-width space, joiner, word joiner
        ("pas\u00adse", "passe"),  # soft hyphen
        ("\U0001d429\U0001d41a\U0001d42c\U0001d42c", "pass"),  # mathematical bold
        ("sk\u2010proj\u2011x", "sk-proj-x"),  # Unicode hyphens
        ("ﬁchier", "fichier"),  # ligature
        ("\u0399\u039d", "IN"),  # Greek capitals Ι Ν
    ],
)
def test_look_alikes_are_folded(text: str, folded: str) -> None:
    assert latin_skeleton(text) == folded


@pytest.mark.parametrize(
    "text",
    [
        "le déploiement a échoué à 3 h, « relancé » à l'aube — ça marche",
        "œuvre, cœur, Noël, naïve, où, ç",
        "plain ASCII text\nwith two lines",
    ],
)
def test_french_and_ascii_are_kept(text: str) -> None:
    assert latin_skeleton(text) == text


@given(st.text())
def test_folding_keeps_the_lines_and_is_stable(text: str) -> None:
    folded = latin_skeleton(text)
    assert folded.count("\n") == text.count("\n")
    assert latin_skeleton(folded) == folded
