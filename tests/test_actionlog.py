"""The action log (ocmem.home.actionlog) and its rotation."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Clock
from ocmem.home.paths import Paths


def test_the_action_log_rotates_and_keeps_three_generations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ocmem.home import actionlog

    monkeypatch.setattr(actionlog, "LOG_MAX_BYTES", 1000)
    paths = Paths(tmp_path)
    for i in range(200):
        assert actionlog.log_event(paths, Clock(), "write", n=i, filler="x" * 50)
    logs = sorted(p.name for p in paths.state_dir.glob("log.jsonl*"))
    assert (
        set(logs) <= {"log.jsonl", "log.jsonl.1", "log.jsonl.2", "log.jsonl.3"}
        and "log.jsonl.3" in logs
    )
    assert all(p.stat().st_size <= 1100 for p in paths.state_dir.glob("log.jsonl*"))
    newest = (paths.state_dir / logs[0]).read_text().splitlines()[-1]
    assert '"n": 199' in newest
