"""One language, one register (issue 36): every text a user reads names options by their French
names (the English ones are hidden aliases) and says « tu ». The docs, every command's help, the
texts of ocmem's sources (error messages and their fixes, init's « Ce qu'il te reste à faire »,
doctor's findings) and init's and doctor's output are scanned here; the output of every
command-line scenario of the suite is scanned by the ``run_cli`` fixture (tests/conftest.py)."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import CliResult
from ocmem.cli import audience, docs
from ocmem.cli.commands import cli
from support.frenchtext import english_names, english_options, help_texts, register_slips

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "sync" / "ocmem"

# What a user (or the agent, which speaks to the user) reads, in French. docs/architecture.md,
# robustness.md, security.md, sync.md, silverbullet.md and benchmarks.md are the contributors'
# (English).
USER_DOCS = [
    "README.md",
    "docs/guide.md",
    "docs/opencode.md",
    "AGENTS.md",
    "skills/retrospective/SKILL.md",
    "prompts/curation-hebdomadaire.md",
    "silverbullet/Library/ocmem.md",
]

# Source strings that are not shown to anyone: the option declarations themselves (their
# English names are the aliases) and the agent's refused command lines, which list each alias
# so that it is refused too (ocmem.formats.operations).
_DECLARING = {"option", "Option", "click.option", "click.Option"}
_NOT_SHOWN = {"doctor --fix", "pending undo", "uninstall"}
# A pattern of the shell commands that fetch (`node --print …`).
_NAMES_AND_PATTERNS = {"guards/exposure.py": "--print"}


def _called(node: ast.Call) -> str:
    return ast.unparse(node.func)


def source_texts(path: Path) -> Iterator[tuple[int, str]]:
    """The string constants of a source file, except docstrings and option declarations."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skipped.add(id(first.value))
        if isinstance(node, ast.Call) and _called(node) in _DECLARING:
            skipped.update(id(arg) for arg in node.args)
        if isinstance(node, ast.keyword) and node.arg == "aliases":
            skipped.update(id(n) for n in ast.walk(node.value))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skipped
            and node.value not in _NOT_SHOWN
        ):
            yield node.lineno, node.value


def test_the_scan_knows_the_english_names() -> None:
    # The list comes from the command line: an alias added there is scanned for at once.
    assert {"--job", "--owner", "--undo", "--reason", "--days", "--show-section"} <= (
        english_options()
    )
    assert english_names("`ocmem harden --undo`, --job curation, --name-status") == [
        "--undo",
        "--job",
    ]
    assert register_slips("Collez-la dans votre espace, chez toi, assez vite") == [
        "Collez",
        "votre",
    ]


@pytest.mark.parametrize("name", USER_DOCS)
def test_user_docs_name_options_in_french_and_say_tu(name: str) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    assert english_names(text) == []
    assert register_slips(text) == []


def test_every_help_names_options_in_french_and_says_tu() -> None:
    texts = help_texts()
    assert len(texts) > 30
    found = {path: english_names(t) + register_slips(t) for path, t in texts.items()}
    assert {path: words for path, words in found.items() if words} == {}


def test_the_sources_texts_name_options_in_french_and_say_tu() -> None:
    """Error messages and their fixes, init's and doctor's lines: every string of the sources
    (docstrings and option declarations aside). The register is checked outside the guards and
    the word lists, whose patterns match what a user writes."""
    wrong = []
    for path in sorted(SOURCES.rglob("*.py")):
        relative = path.relative_to(SOURCES).as_posix()
        patterns = relative.startswith(("guards/", "text/"))
        for line, text in source_texts(path):
            slips = english_names(text) + ([] if patterns else register_slips(text))
            wrong += [
                f"{relative}:{line}: {slip}"
                for slip in slips
                if _NAMES_AND_PATTERNS.get(relative) != slip
            ]
    assert wrong == []


def test_init_and_doctor_output_name_options_in_french(
    run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    # run_cli scans what they print (tests/conftest.py); this test makes sure they run.
    home = str(tmp_path / "neuf")
    assert run_cli("--home", home, "init").code == 0
    assert run_cli("--home", home, "doctor").code in (0, 1, 3)


def test_every_command_has_one_audience() -> None:
    """ocmem --help and the README list each command once, under whom it is for."""
    listed = [path for _, rows in audience.SECTIONS for path, _ in rows]
    every = {path.removeprefix("ocmem ") for path, _ in docs.commands(cli, "ocmem", hidden=True)}
    aliases = {"pending undo", "uninstall", "mcp"}
    assert sorted(listed) == sorted(every - aliases)
    daily = [path for path, _ in audience.SECTIONS[0][1]]
    assert daily[:3] == ["init", "status", "doctor"]
    assert all(caller for path, caller in audience.SECTIONS[2][1])


PORT = {"type": "fait", "titre": "Port SSH", "contenu": "Le port SSH du VPS est 2222"}


def test_a_person_at_a_terminal_is_told_options_and_the_agent_its_fields(
    home: Path, run_cli: Callable[..., CliResult]
) -> None:
    """propose's refusals are written in the tool's fields; given options, they name options
    (ocmem.cli.memorycommands.told_in_options), in one place for every such command."""
    options = ["--type", "fait", "--titre", "Port SSH", "--contenu", PORT["contenu"]]
    undeclared = run_cli("propose", *options, "--source", "journal 2026-11-28 10:00")
    assert undeclared.code == 3
    assert 'ajoute --contradiction "aucune"' in undeclared.err
    assert '--remplace "rien"' in undeclared.err and '"contradiction":' not in undeclared.err
    unsourced = run_cli(
        "propose", *options, "--contradiction", "aucune", "--remplace", "rien", "--retiens-ca"
    )
    assert "cite-le avec --source" in unsourced.err
    # JSON on stdin, and the agent's tool: the fields it wrote.
    as_json = run_cli("propose", stdin=json.dumps({**PORT, "sources": []}))
    assert 'ajoute "contradiction": "aucune"' in as_json.err
    envelope: dict[str, Any] = {"session": "s", "user_messages": [], "exposures": []}
    envelope["args"] = {**PORT, "sources": ["journal 2026-11-28 10:00"]}
    by_tool = run_cli("tool", "memory_propose", stdin=json.dumps(envelope))
    assert "« contradiction » manquant" in by_tool.err and "--contradiction" not in by_tool.err
