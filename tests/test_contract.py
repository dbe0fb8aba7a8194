"""The Python ↔ TypeScript contract of the plugin cannot drift (sync/ocmem/bridge/contract.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import HOME_ID, CliResult
from ocmem.bridge import contract
from ocmem.bridge.tools import absolute, plugin_config
from ocmem.home.settings import load_settings

PLUGIN = Path(__file__).resolve().parents[1] / "plugin"
GENERATED = PLUGIN / "ocmem" / "contract.ts"


def test_the_plugin_carries_the_generated_contract() -> None:
    assert GENERATED.read_text(encoding="utf-8") == contract.typescript(), (
        "plugin/ocmem/contract.ts is out of date: run scripts/generate.py"
    )


def test_the_plugin_declares_no_second_copy_of_the_settings() -> None:
    sources = [PLUGIN / "ocmem.ts", *(p for p in (PLUGIN / "ocmem").glob("*.ts") if p != GENERATED)]
    for source in sources:
        text = source.read_text(encoding="utf-8")
        for field in set(contract.shapes()["Settings"]) - {"home"}:
            assert not re.search(rf"\b{field}:", text), f"{field} is set in {source.name}"


def test_the_cold_start_settings_are_what_ocmem_answers_for_a_plain_home(home: Path) -> None:
    answer: dict[str, Any] = dict(plugin_config(load_settings(home), env={}))
    # The home's own SilverBullet folder: nowhere until its id is known (ocmem.bridge.mcpdiscovery).
    inbox = answer.pop("silverbullet_inbox")
    cold: dict[str, Any] = dict(absolute(contract.cold_start_settings(), home))
    assert cold.pop("silverbullet_inbox") == ""
    assert answer == cold
    assert inbox == f"Agents/Inbox/{HOME_ID}/"


def test_absolute_resolves_exactly_the_path_fields(tmp_path: Path) -> None:
    cold = contract.cold_start_settings()
    done = absolute(cold, tmp_path)
    changed = {k for k in cold if k != "home" and cold[k] != done[k]}  # type: ignore[literal-required]
    assert changed == set(contract.PATH_FIELDS)


def test_every_answer_has_its_shape(home: Path, run_cli: object) -> None:
    assert callable(run_cli)
    config: CliResult = run_cli("plugin-config")
    assert contract.problems(json.loads(config.out), "Settings") == []
    context: CliResult = run_cli("prompt-context", "--session", "ses_1")
    assert contract.problems(json.loads(context.out), "PromptContext") == []


@pytest.mark.parametrize(
    ("envelope", "wrong"),
    [
        ({"session": "s", "user_messages": [], "exposures": [], "args": {}}, []),
        (
            {
                "session": "s",
                "user_messages": [],
                "exposures": [{"kind": "untrusted_tool", "source": "webfetch x"}],
                "args": {},
            },
            [],
        ),
        ({"session": "s", "user_messages": "x", "exposures": [], "args": {}}, ["user_messages"]),
        (
            {"session": 1, "user_messages": [], "exposures": [1], "args": []},
            ["session", "exposures", "args"],
        ),
        (
            {"session": "s", "user_messages": [], "exposures": [{"kind": "x"}], "args": {}},
            ["exposures"],
        ),
        ([], ["objet"]),
    ],
)
def test_envelopes_are_checked_field_by_field(envelope: object, wrong: list[str]) -> None:
    found = contract.problems(envelope, "ToolEnvelope")
    assert len(found) == len(wrong) and all(w in f for w, f in zip(wrong, found, strict=True))


def test_the_tool_refuses_a_malformed_envelope(home: Path, run_cli: object) -> None:
    assert callable(run_cli)
    result: CliResult = run_cli("tool", "memory_note", stdin='{"session": "s", "args": {}}')
    assert result.code == 2 and "enveloppe invalide" in result.err and "user_messages" in result.err
