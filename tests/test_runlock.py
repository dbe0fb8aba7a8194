"""The run lock (ocmem.home.runlock): one run at a time, exit 75 past the wait."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import Clock, journal_fields
from ocmem.errors import Busy
from ocmem.execution import exit_code
from ocmem.home.paths import Paths
from ocmem.home.runlock import run_lock


@pytest.mark.real_clock
def test_the_lock_is_exclusive_and_waits(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys,time;from ocmem.home.paths import Paths;from ocmem.home.runlock import run_lock\n"
            "from ocmem.clock import Clock\n"
            "with run_lock(Paths(__import__('pathlib').Path(sys.argv[1])), Clock()):\n print('held', flush=True); time.sleep(1.5)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(Busy) as busy, run_lock(paths, Clock()):
        pass
    assert exit_code(busy.value) == 75 and "--wait" in busy.value.render()
    started = time.monotonic()
    with run_lock(paths, Clock(), wait_seconds=10):
        assert time.monotonic() - started < 9
    holder.wait(5)


@pytest.mark.real_clock
def test_cli_exits_75_when_busy(home: Path, tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys,time;from ocmem.home.paths import Paths;from ocmem.home.runlock import run_lock\n"
            "from ocmem.clock import Clock\n"
            "with run_lock(Paths(__import__('pathlib').Path(sys.argv[1])), Clock()):\n print('held', flush=True); time.sleep(3)",
            str(home),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    env = {**os.environ, "OCMEM_HOME": str(home)}
    for args in (
        ["--wait", "0", "note", "x"],
        ["note", "x", "--wait", "0"],
        ["journal", "add", "--wait", "0"],
    ):
        busy = subprocess.run(
            [sys.executable, "-m", "ocmem", *args],
            env=env,
            input=json.dumps(journal_fields()),
            capture_output=True,
            text=True,
        )
        assert busy.returncode == 75, (args, busy.stderr)
        assert "--wait" in busy.stderr and "rien n'a été modifié" in busy.stderr
    # Without --wait, a direct run waits (saying so after a second) and succeeds.
    waited = subprocess.run(
        [sys.executable, "-m", "ocmem", "note", "x"], env=env, capture_output=True, text=True
    )
    assert waited.returncode == 0, waited.stderr
    assert "j'attends" in waited.stderr
    holder.wait(5)


@pytest.mark.real_clock
def test_twenty_parallel_notes_all_succeed_with_the_default_wait(home: Path) -> None:
    env = {**os.environ, "OCMEM_HOME": str(home)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "ocmem", "note", f"note parallèle {i}"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(20)
    ]
    results = [(p.wait(60), p.stderr.read() if p.stderr else "") for p in procs]
    assert [code for code, _ in results] == [0] * 20, results
    notes = (home / "memory/SHORT_TERM.md").read_text()
    assert all(f"note parallèle {i}\n" in notes for i in range(20))
