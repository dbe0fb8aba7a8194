"""Text as the secret and personal-data guards read it: look-alike characters folded to Latin.

« le mot de passе root est toor » written with a Cyrillic « е », ``ｇｈｐ＿…`` in fullwidth forms
or a token cut by a zero-width space reads the same to a person as its plain form, and must be
refused the same. ``latin_skeleton`` gives that plain form:

- characters that are invisible by default (zero-width spaces and joiners, bidirectional
  controls, the soft hyphen, variation selectors, tag characters) are dropped;
- NFKC folds compatibility forms: fullwidth and halfwidth letters, mathematical alphanumerics,
  ligatures (``ﬁ``), superscripts, no-break and narrow spaces;
- the letters of the Cyrillic, Greek, Armenian and Latin scripts that Unicode lists as
  confusable with an ASCII letter (its ``confusables.txt``, UTS #39) become that letter.
  ``tests/test_homoglyphs.py`` checks the table against that list, both ways, through the
  ``confusable-homoglyphs`` package (the list itself costs 45 ms to load: too much for every
  write, so the table holds only the part these guards need).

Accented letters are kept (« é » is not a look-alike of « e » in the list), and so is the
number of lines: findings keep their line numbers. ASCII text is returned as it is.

Not folded: letters of other scripts (Cherokee, Lisu, Canadian syllabics…), digits' look-alikes
(« З » for 3), and look-alikes that are several characters (« rn » for « m »).
"""

from __future__ import annotations

import unicodedata

# Each pair: a character, then the ASCII letter it is confusable with. Unicode maps the I-like
# capitals to « l » (its prototype for I, l and 1); they become « I » here, as a reader sees them.
_LOOKALIKES = (
    # Cyrillic
    "ЅS ІI ЈJ АA ВB ЕE КK МM НH ОO РP СC ТT УY ХX Ьb аa гr еe оo рp сc уy хx ѕs іi јj ѡw ѴV "
    "ѵv ҮY үy һh ҽe ӀI ӏi ԁd ԌG ԛq ԜW ԝw ꙇi "
    # Greek
    "ͺi ͿJ ΑA ΒB ΕE ΖZ ΗH ΙI ΚK ΜM ΝN ΟO ΡP ΤT ΥY ΧX αa γy ιi νv οo ρp σo υu ϒY ϜF ϱp ϲc ϳj "
    "ϹC ϺM ᴦr "
    # Armenian
    "ՍU ՏS ՕO աw գq զq հh ոn ռn սu ցg քf օo "
    # Latin letters that are not ASCII but look like it (IPA, small capitals, old forms)
    "ıi Ƅb ƍg ƖI ƦR ƽs ǀl ɑa ɡg ɣy ɩi ɪi ɯw ʋu ʏy ᴄc ᴏo ᴑo ᴜu ᴠv ᴡw ᴢz ᶃg ᶌy ẝf ỿy ꜱs ꞘF ꞙf "
    "ꞟu ꞲJ ꞳX ꞴB ꬲe ꬵf ꬽo ꭇr ꭈr ꭎu ꭒu ꭚy"
)
# Hyphens that tokens and options never use but a copy from a word processor may bring.
_HYPHENS = "\u2010\u2011\u2012\u2043\u2212"
# Default-ignorable characters (Unicode's DerivedCoreProperties), invisible wherever they are:
# ranges of code points, dropped.
_INVISIBLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE01EF),
)  # fmt: skip

# Built on first use (a translation table: str.translate, no regex to compile).
_table: dict[int, str | None] = {}


def _folding() -> dict[int, str | None]:
    if not _table:
        _table.update({ord(pair[0]): pair[1] for pair in _LOOKALIKES.split()})
        _table.update(dict.fromkeys(map(ord, _HYPHENS), "-"))
        for first, last in _INVISIBLE:
            _table.update(dict.fromkeys(range(first, last + 1)))
    return _table


def latin_skeleton(text: str) -> str:
    """``text`` with invisible characters dropped, NFKC applied and look-alikes made Latin."""
    if text.isascii():
        return text
    table = _folding()
    # Before NFKC too: it would turn some look-alikes (« ϲ ») into another script's letter.
    folded = text.translate(table)
    if not unicodedata.is_normalized("NFKC", folded):
        folded = unicodedata.normalize("NFKC", folded).translate(table)
    return folded
