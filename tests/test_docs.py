"""The docs say what the command line does: generated table, and every quoted command exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocmem.cli import docs

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "AGENTS.md",
    ROOT / "skills/retrospective/SKILL.md",
    *sorted((ROOT / "prompts").glob("*.md")),
]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_quoted_command_and_option_exists(doc: Path) -> None:
    assert docs.unknown_mentions(doc.read_text(encoding="utf-8")) == []


def test_a_wrong_mention_is_caught() -> None:
    assert docs.unknown_mentions("`ocmem journal serch x` et `ocmem pull --forcer`") == [
        "ocmem journal serch x",
        "ocmem pull --forcer (--forcer)",
    ]
