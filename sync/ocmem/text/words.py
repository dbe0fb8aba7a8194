"""Words as ocmem compares them, defined once: folded text, its words, and the stop-words that no
comparison counts. Similarity (``ocmem.text.similarity``), search (``ocmem.text.searchterms``)
and the plugin (its ``fold``, generated into its contract) all use these.

``fold``: NFKD, every combining mark dropped (Unicode category M), lowercase, and the letters NFKD
keeps whole spread out as French and German write them without their ligatures (« œ » → oe,
« æ » → ae, « ß » → ss…). So « Cœur », « COEUR » and « cœur » are the same word.
"""

# No `from __future__ import annotations`: on the hot path (see ocmem.home.settings).

import re
import unicodedata

# Letters NFKD does not decompose, as their base letters (generated into the plugin's fold).
LIGATURES = {"œ": "oe", "æ": "ae", "ß": "ss", "ø": "o", "ł": "l", "đ": "d", "ı": "i"}
_LIGATURES = str.maketrans(LIGATURES)
# The combining marks of Latin, Greek and Cyrillic text: one substitution for nearly every text.
_COMMON_MARKS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
# Anything else beyond Latin-1: checked one by one (rare), so that the rule is Unicode's own.
_BEYOND = re.compile("[^\x00-\u02ff]")
WORD = re.compile(r"[a-z0-9]+")

STOPWORDS = frozenset(
    """
    a ai as au aux avec c ca ce ceci cela ces cet cette chez d dans de des donc dont du elle elles
    en est et etait ete etre eu il ils j je l la le les leur leurs lui m ma mais me mes moi mon n
    ne ni nos notre nous on ont ou par pas peu peut peux plus pour qu que quel quelle quelles
    quels qui quoi s sa sans se ses si son sont sur t ta te tes toi ton tu un une vos votre vous
    y comment pourquoi quand combien faut faire fait fais doit dois veux voudrais svp alors aussi
    encore deja tres bien tout tous toute toutes avoir utiliser
    an and are at be been but by can could did do does don for from had has have how i if in into
    is it its me my no not of on or our please should so than that the their them then there these
    they this to was we were what when where which who why will with would you your use
    after before during since avant apres pendant depuis
    """.split()
)


def _unless_mark(match: "re.Match[str]") -> str:
    char = match.group()
    return "" if unicodedata.category(char).startswith("M") else char


def fold(text: str) -> str:
    """Lowercase, without accents or ligatures: the form every comparison and search works on."""
    if text.isascii():
        return text.lower()
    decomposed = _COMMON_MARKS.sub("", unicodedata.normalize("NFKD", text))
    if not decomposed.isascii():
        decomposed = _BEYOND.sub(_unless_mark, decomposed)
    return decomposed.lower().translate(_LIGATURES)


def words(text: str) -> list[str]:
    """The folded words of ``text`` (runs of ASCII letters and digits), stop-words included."""
    return WORD.findall(fold(text))
