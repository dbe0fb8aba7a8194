"""What Python and the plugin must agree on, asked of both: the same fold of text, the same
verdict on a document's shape, the same watched paths, the same refused shell commands. One Bun
run answers a whole batch (tests/support/plugin_oracle.ts)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from ocmem.bridge import contract
from ocmem.formats import operations
from ocmem.home.announce import monitored
from ocmem.home.paths import Paths
from ocmem.text.words import LIGATURES, fold
from support.plugin_runtime import BUN_ENV, REPO, bun

pytestmark = pytest.mark.real_clock  # nothing here reads a date; Bun is a child process

ORACLE = REPO / "tests/support/plugin_oracle.ts"


def texts() -> list[str]:
    """Every letter of Latin-1 and Latin Extended, the ligatures, marks alone and stacked, other
    scripts, and random mixtures of them: where two folds would part."""
    rng = random.Random(20)
    alphabet = [chr(c) for c in range(0x20, 0x250) if unicodedata.category(chr(c)) != "Cs"]
    alphabet += [*LIGATURES, "\u0301", "\u0327", "\u1dc0", "\ufe20", "ǅ", "ﬁ", "Ⅻ", "㎏"]
    alphabet += list("ΑΒΓάέήЁёЙй日本語한국어עבריתالعربية🙂İıẞ")
    mixes = ["".join(rng.choices(alphabet, k=rng.randint(1, 24))) for _ in range(3000)]
    return [*alphabet, "Cœur COEUR cœur", "Ærø straße", "e\u0301\u0301", *mixes]


def documents() -> list[tuple[Any, str]]:
    """Each shape's conforming example, then every field removed, and given each wrong type."""
    wrong: list[Any] = [None, 1, 1.5, True, "s", [], [1], ["s"], {}, {"a": 1}]
    found: list[tuple[Any, str]] = []
    for name, fields in contract.shapes().items():
        good = {field: example(kind) for field, kind in fields.items()}
        found.append((good, name))
        for field in fields:
            found.append(({k: v for k, v in good.items() if k != field}, name))
            found += [({**good, field: value}, name) for value in wrong]
    return [*found, ([], "Exposure"), ("x", "Exposure")]


def example(kind: str) -> Any:
    shapes = contract.shapes()
    if kind.endswith("[]"):
        item = kind[:-2]
        return (
            [{f: example(k) for f, k in shapes[item].items()}]
            if item in shapes
            else [example(item)]
        )
    if kind.startswith("Record<"):
        return {"k": "v"}
    return {"string": "s", "number": 2, "boolean": False}[kind]


def refused_commands() -> list[str]:
    commands = [f"ocmem {c}" for c in operations.AGENT_REFUSED]
    commands += [f"/x/.venv/bin/ocmem --home /h {c} arg" for c in operations.AGENT_REFUSED]
    return commands + [f"python3 -m ocmem {c}" for c in operations.AGENT_REFUSED]


def allowed_commands() -> list[str]:
    return [
        "ocmem status",
        "ocmem journal search note",
        "ocmem pending reject P-0001 --reason non",
        "ocmem cron print",
        "ocmem doctor",
        "ocmem noted",
        "ocmem journal added",
        "echo tool",
    ]


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("oracle")
    home = tmp / "home"
    request = {
        "fold": texts(),
        "conforms": documents(),
        "watched": {"home": str(home), "rels": watched_paths()},
        "refused": refused_commands() + allowed_commands(),
    }
    (tmp / "request.json").write_text(json.dumps(request, ensure_ascii=False))
    done = subprocess.run(
        [*bun(), str(ORACLE), str(tmp / "request.json"), str(tmp / "answers.json")],
        env={**os.environ, **BUN_ENV},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads((tmp / "answers.json").read_text())
    found["request"] = request
    return found


def watched_paths() -> list[str]:
    return [
        "AGENTS.md",
        "memory/MEMORY.md",
        "skills/x/SKILL.md",
        "plugin/ocmem.ts",
        "plugin/ocmem/guards.ts",
        ".ocmem",
        ".ocmem/plugin.json",
        ".ocmem/log.jsonl",
        ".ocmem/sessions/ses_1.json",
        ".ocmemx/file",
        "opencode.json",
        "node_modules/x/index.js",
    ]


def test_the_plugin_folds_text_as_ocmem_does(answers: dict[str, Any]) -> None:
    sent = answers["request"]["fold"]
    parted = [(t, fold(t), a) for t, a in zip(sent, answers["fold"], strict=True) if fold(t) != a]
    assert parted == [], parted[:10]


def test_the_plugin_judges_a_documents_shape_as_ocmem_does(answers: dict[str, Any]) -> None:
    sent = answers["request"]["conforms"]
    verdicts = [not contract.problems(value, name) for value, name in sent]
    parted = [
        sent[i]
        for i, (p, t) in enumerate(zip(verdicts, answers["conforms"], strict=True))
        if p != t
    ]
    assert parted == []
    assert any(verdicts) and not all(verdicts)


def test_the_monitor_watches_the_files_ocmem_announces(answers: dict[str, Any]) -> None:
    paths = Paths(Path(answers["home"]))
    rels = answers["request"]["watched"]["rels"]
    expected = [monitored(paths, paths.home / rel) for rel in rels]
    assert dict(zip(rels, answers["watched"], strict=True)) == dict(
        zip(rels, expected, strict=True)
    )


def test_the_plugin_refuses_in_the_shell_exactly_the_commands_the_agent_may_not_run(
    answers: dict[str, Any],
) -> None:
    commands = answers["request"]["refused"]
    refused = {c for c, r in zip(commands, answers["refused"], strict=True) if r}
    assert refused == set(refused_commands())
