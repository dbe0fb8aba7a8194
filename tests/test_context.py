from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ocmem.home.settings import load_settings
from ocmem.services.context import context_report


def test_sizes_per_file_and_total(home: Path) -> None:
    (home / "memory/MEMORY.md").write_text("x" * 400)
    report = context_report(load_settings(home))
    by_name = {i.name: i for i in report.items}
    assert by_name["memory/MEMORY.md"].chars == 400 and by_name["memory/MEMORY.md"].tokens == 100
    assert by_name["skills (1 descriptions)"].chars > len("retrospective")
    assert report.chars == sum(i.chars for i in report.items)
    assert "memory/MEMORY.md" in report.render() and "400/2 000 (20 %)" in report.render()


def test_warnings_from_90_percent_and_over_the_threshold(home: Path) -> None:
    (home / "memory/MEMORY.md").write_text("x" * 1850)
    (home / "AGENTS.md").write_text("y" * 30000)
    report = context_report(load_settings(home))
    warnings = report.warnings()
    assert "memory/MEMORY.md bientôt plein : 1 850/2 000 (92 %)" in warnings
    assert any("au-dessus du seuil de 5000" in w for w in warnings)


def test_threshold_is_configurable_and_json_is_complete(home: Path, run_cli: Any) -> None:
    (home / "ocmem.yaml").write_text("limits:\n  context_alert_tokens: 10\n")
    data = json.loads(run_cli("context-size", "--json").out)
    assert data["alert_tokens"] == 10 and data["over"] is True
    assert {"items", "chars", "tokens", "warnings"} <= set(data)
