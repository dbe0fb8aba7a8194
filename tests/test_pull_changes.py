"""What a pull shows of the memory it installs (ocmem.text.linediff, ocmem.silverbullet.changes):
a bounded unified diff that is inert on a terminal, and, applied to the old text, gives the new
one whenever nothing was cut."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocmem.outcome import terminal_safe
from ocmem.silverbullet import changes
from ocmem.silverbullet.changes import Change
from ocmem.text import linediff
from ocmem.text.linediff import NO_NEWLINE

MEMORY = "# Mémoire\n\n- Le VPS tourne sous Debian 12.\n- Les sauvegardes partent à 3 h.\n"

Line = tuple[str, bool]  # a line as shown, and whether it ends in a newline


def shown_lines(text: str) -> list[Line]:
    return [
        (linediff.visible(line.removesuffix("\n")), line.endswith("\n"))
        for line in linediff.split(text)
    ]


def apply(old: str, diff: list[str]) -> list[Line]:
    """The lines a shown diff gives when applied to ``old`` (as shown), checking every context
    and removed line against ``old``."""
    source, out, at, i = shown_lines(old), [], 0, 0
    while i < len(diff):
        header = re.fullmatch(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", diff[i])
        assert header, diff[i]
        start, count = int(header[1]), 1 if header[2] is None else int(header[2])
        first = start - 1 if count else start
        out += source[at:first]
        at, i = first, i + 1
        while i < len(diff) and not diff[i].startswith("@@"):
            marker, body = diff[i][0], diff[i][1:]
            newline = not (i + 1 < len(diff) and diff[i + 1] == NO_NEWLINE)
            if marker in " -":
                assert source[at] == (body, newline)
                at += 1
            if marker in " +":
                out.append((body, newline))
            assert marker in " -+", diff[i]
            i += 1 if newline else 2
    return out + source[at:]


# --- the diff -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("", "", []),
        (MEMORY, MEMORY, []),
        ("", "a\n", ["@@ -0,0 +1 @@", "+a"]),
        ("a\n", "", ["@@ -1 +0,0 @@", "-a"]),
        ("a\nb\n", "a\nc\n", ["@@ -1,2 +1,2 @@", " a", "-b", "+c"]),
        ("a\nb", "a\nb\n", ["@@ -1,2 +1,2 @@", " a", "-b", NO_NEWLINE, "+b"]),
        (
            MEMORY,
            MEMORY.replace("Debian 12", "Debian 13"),
            [
                "@@ -1,4 +1,4 @@",
                " # Mémoire",
                " ",
                "-- Le VPS tourne sous Debian 12.",
                "+- Le VPS tourne sous Debian 13.",
                " - Les sauvegardes partent à 3 h.",
            ],
        ),
        # Far apart changes: two hunks, two lines of context each.
        (
            "".join(f"{n}\n" for n in range(1, 11)),
            "".join(f"{n}\n" for n in range(1, 11)).replace("1\n", "un\n", 1).replace("10", "dix"),
            [
                "@@ -1,3 +1,3 @@",
                "-1",
                "+un",
                " 2",
                " 3",
                "@@ -8,3 +8,3 @@",
                " 8",
                " 9",
                "-10",
                "+dix",
            ],
        ),
    ],
)
def test_the_diff_is_unified_with_two_lines_of_context(
    old: str, new: str, expected: list[str]
) -> None:
    assert linediff.diff(old, new).lines == expected


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("- fait ordinaire, accentué : été", "- fait ordinaire, accentué : été"),
        ("tab\tgardé", "tab\tgardé"),
        ("\x1b]0;titre\x07\x1b[2J", "\\u001b]0;titre\\u0007\\u001b[2J"),
        ("retour\rchariot", "retour\\u000dchariot"),
        ("\u202eesrever\u202c", "\\u202eesrever\\u202c"),
        ("zéro\u200blargeur\ufeff", "zéro\\u200blargeur\\ufeff"),
        ("sep\u2028aration", "sep\\u2028aration"),
        ("\x85\x9b31m", "\\u0085\\u009b31m"),
        ("caché\U000e0041\U000e0042", "caché\\U000e0041\\U000e0042"),  # tag characters
    ],
)
def test_what_could_hide_or_move_text_is_written_out(line: str, shown: str) -> None:
    assert linediff.visible(line) == shown
    assert linediff.diff("", line + "\n").lines == ["@@ -0,0 +1 @@", "+" + shown]


def test_the_diff_is_bounded_and_counts_the_rest() -> None:
    old = "".join(f"ligne {n}\n" for n in range(100))
    new = "".join(f"ligne {n} modifiée\n" for n in range(100))
    found = linediff.diff(old, new)
    assert len(found.lines) == linediff.LIMIT and found.truncated
    assert (found.added, found.removed) == (100, 100)
    assert found.hidden == 201 - linediff.LIMIT  # the header, 100 removed, 100 added


def test_a_long_line_is_cut_and_said_so() -> None:
    found = linediff.diff("", "x" * 1000 + "\n")
    assert found.lines == ["@@ -0,0 +1 @@", "+" + "x" * (linediff.WIDTH - 1) + "…"]
    assert found.cut and found.truncated


def test_texts_too_long_to_diff_are_only_counted() -> None:
    many = "x\n" * (linediff.MAX_LINES + 1)
    found = linediff.diff("", many)
    assert found.lines == [] and found.cut and found.added == linediff.MAX_LINES + 1


def test_preview_shows_the_first_lines() -> None:
    assert linediff.preview("a\nb\nc", 2) == linediff.Preview(["a", "b"], 3, 1, False)
    assert linediff.preview("a", 5) == linediff.Preview(["a", NO_NEWLINE], 1, 0, False)


# --- properties -----------------------------------------------------------------------------

PIECES = ["a", "b", "- fait", "", " ", "\t", "\r", "\x1b[31m", "\u202e", "é", "@@ -1 +1 @@", "\\"]
lines_of = st.lists(st.lists(st.sampled_from(PIECES), max_size=3).map("".join), max_size=12).map(
    "\n".join
)
texts = st.one_of(lines_of, lines_of.map(lambda t: t + "\n"), st.text(max_size=60))


def safe(line: str) -> bool:
    return terminal_safe(line) == line and not any(
        unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp", "Cs", "Co"} and c != "\t" for c in line
    )


@given(texts, texts)
def test_applying_a_whole_diff_gives_the_new_text(old: str, new: str) -> None:
    found = linediff.diff(old, new, limit=10**6)
    assert not found.truncated
    assert apply(old, found.lines) == shown_lines(new)
    assert found.added == sum(1 for line in found.lines if line.startswith("+"))
    assert found.removed == sum(1 for line in found.lines if line.startswith("-"))


@given(texts, texts)
def test_a_bounded_diff_is_the_whole_one_cut_and_inert(old: str, new: str) -> None:
    found = linediff.diff(old, new, limit=5)
    whole = linediff.diff(old, new, limit=10**6)
    assert found.lines == whole.lines[:5] and found.hidden == len(whole.lines) - len(found.lines)
    if not found.truncated:
        assert apply(old, found.lines) == shown_lines(new)
    assert all(safe(line) for line in found.lines)


@given(texts)
def test_nothing_is_shown_when_equal(text: str) -> None:
    assert linediff.diff(text, text) == linediff.LineDiff([], 0, 0, 0, False)


@given(
    st.lists(st.tuples(st.sampled_from(["skills/a/SKILL.md", "AGENTS.md", "x\x1b"]), texts, texts))
)
def test_every_rendered_change_is_inert_and_bounded(items: list[tuple[str, str, str]]) -> None:
    rendered = changes.render(
        [Change(local, old.encode(), new.encode()) for local, old, new in items if old != new]
    )
    assert all(safe(line) for line in rendered)
    heads = sum(1 for line in rendered if not line.startswith(changes.INDENT))
    assert len(rendered) - heads <= changes.BUDGET + changes.PER_FILE + len(items)


# --- the pull's wording ---------------------------------------------------------------------


def test_a_changed_file_is_shown_as_a_diff() -> None:
    change = Change("memory/MEMORY.md", MEMORY.encode(), MEMORY.replace("12", "13").encode())
    assert changes.render([change]) == [
        "Mémoire validée changée depuis le pull précédent (quel qu'en soit l'auteur) :",
        "  modifié : memory/MEMORY.md (+1 / -1)",
        "      @@ -1,4 +1,4 @@",
        "       # Mémoire",
        "       ",
        "      -- Le VPS tourne sous Debian 12.",
        "      +- Le VPS tourne sous Debian 13.",
        "       - Les sauvegardes partent à 3 h.",
    ]


def test_a_new_skill_shows_its_first_lines_and_a_removed_one_is_named() -> None:
    skill = "".join(f"ligne {n}\n" for n in range(1, 13))
    rendered = changes.render(
        [
            Change("skills/old/SKILL.md", b"---\nname: old\n---\n", None),
            Change("skills/new/SKILL.md", None, skill.encode()),
        ]
    )
    assert rendered == [
        "Mémoire validée changée depuis le pull précédent (quel qu'en soit l'auteur) :",
        "  nouveau : skills/new/SKILL.md (12 lignes)",
        *(f"      +ligne {n}" for n in range(1, changes.PREVIEW + 1)),
        "      … 4 ligne(s) de plus (`ocmem history skills/new/SKILL.md`)",
        "  supprimé : skills/old/SKILL.md (3 lignes)",
        "      ----",
        "      -name: old",
        "      ----",
    ]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            Change("skills/x/y.bin", b"\xff\x00", b"\xfe"),
            ["  modifié : skills/x/y.bin (binaire ou non UTF-8 : 2 → 1 octets)"],
        ),
        (
            Change("skills/x/y.bin", None, b"\xff"),
            ["  nouveau : skills/x/y.bin (binaire ou non UTF-8, 1 octets)"],
        ),
        (Change("skills/x/SKILL.md", None, b""), ["  nouveau : skills/x/SKILL.md (vide)"]),
        (Change("skills/x/SKILL.md", None, None), ["  supprimé : skills/x/SKILL.md"]),
        (
            Change("memory/MEMORY.md", b"a\n", b"b\n", against_local=True),
            [
                "  modifié : memory/MEMORY.md (+1 / -1, par rapport à la copie locale)",
                "      @@ -1 +1 @@",
                "      -a",
                "      +b",
            ],
        ),
        (
            Change("memory/MEMORY.md", b"", b"x\n" * (linediff.MAX_LINES + 1)),
            [
                f"  modifié : memory/MEMORY.md (0 → {linediff.MAX_LINES + 1} lignes) : trop long "
                "pour un diff (`ocmem history memory/MEMORY.md`)"
            ],
        ),
    ],
)
def test_what_cannot_be_diffed_is_described(change: Change, expected: list[str]) -> None:
    assert changes.describe(change) == expected


def test_one_pull_shows_a_bounded_total() -> None:
    many = [Change(f"skills/s{n:02}/SKILL.md", b"a\n" * 30, b"b\n" * 30) for n in range(15)]
    rendered = changes.render(many)
    content = [line for line in rendered if line.startswith(changes.INDENT)]
    assert len(content) <= changes.BUDGET + 15  # plus one « … de plus » per file
    assert sum(1 for line in rendered if line.startswith("  modifié : ")) == 15  # each named
    assert rendered[-1] == "      … 61 ligne(s) de plus (`ocmem history skills/s14/SKILL.md`)"


def test_the_first_pull_is_a_summary() -> None:
    installed = [
        ("memory/MEMORY.md", MEMORY.encode()),
        ("AGENTS.md", b"# R\n\nx\n"),
        ("skills/a/b", b"\xff"),
    ]
    assert changes.summary(installed, "https://notes.example.org") == [
        "Premier pull depuis https://notes.example.org : 3 fichier(s) installé(s) comme mémoire "
        "validée (contenu : `ocmem history FICHIER --voir VERSION`)",
        "  AGENTS.md (3 lignes)",
        "  memory/MEMORY.md (4 lignes)",
        "  skills/a/b (binaire)",
    ]
    many = [(f"skills/s{n:02}/SKILL.md", b"x\n") for n in range(25)]
    summary = changes.summary(many, "u")
    assert len(summary) == 1 + changes.SUMMARY_FILES + 1 and summary[-1] == "  … et 5 autre(s)"
    assert changes.summary([], "u") == [] and changes.render([]) == []


def test_the_plugin_reads_the_changes_header_and_the_file_lines_it_prints() -> None:
    """The session-start pull's output is read by the plugin's core (plugin/ocmem/core.ts) to
    tell the user what became memory: the header and the `  modifié : FILE` lines must be what it
    looks for."""
    from pathlib import Path

    plugin = (Path(__file__).resolve().parents[1] / "plugin" / "ocmem" / "core.ts").read_text()
    assert f'PULL_CHANGES_HEADER = "{changes.HEADER}"' in plugin
    lines = changes.render([changes.Change("memory/MEMORY.md", b"a\n", b"b\n")])
    assert lines[0].startswith(changes.HEADER)
    assert lines[1].startswith("  modifié : memory/MEMORY.md")
    assert "(?:modifié|nouveau|supprimé) : " in plugin
