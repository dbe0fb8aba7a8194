"""The run lock (ocmem.home.runlock): one run at a time, exit 75 past the wait."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Clock, journal_fields
from ocmem.errors import Busy
from ocmem.execution import exit_code
from ocmem.home.paths import Paths
from ocmem.home.runlock import run_lock

# Holds the lock until its standard input closes: the test decides when it is released, never a
# sleep that a loaded machine could outlast.
HOLDER = (
    "import sys\n"
    "from pathlib import Path\n"
    "from ocmem.clock import Clock\n"
    "from ocmem.home.paths import Paths\n"
    "from ocmem.home.runlock import run_lock\n"
    "with run_lock(Paths(Path(sys.argv[1])), Clock()):\n"
    "    print('held', flush=True)\n"
    "    sys.stdin.read()\n"
)


@contextlib.contextmanager
def lock_held_by_another_process(home: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holds the home's lock for as long as the block runs (then releases it)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        release(holder)


def release(holder: subprocess.Popen[str]) -> None:
    if holder.stdin is not None and not holder.stdin.closed:
        holder.stdin.close()
    holder.wait(30)


@pytest.mark.real_clock
def test_the_lock_is_exclusive_and_waits(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    with lock_held_by_another_process(tmp_path) as holder:
        with pytest.raises(Busy) as busy, run_lock(paths, Clock()):
            pass
        assert exit_code(busy.value) == 75 and "--wait" in busy.value.render()
        # A waiting run gets the lock once it is released (and not before).
        released = threading.Event()

        def release_soon() -> None:
            released.set()
            release(holder)

        releaser = threading.Timer(0.3, release_soon)
        releaser.start()
        try:
            with run_lock(paths, Clock(), wait_seconds=600):
                assert released.is_set()
        finally:
            releaser.join()


@pytest.mark.real_clock
def test_cli_exits_75_when_busy(home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "OCMEM_HOME": str(home)}
    with lock_held_by_another_process(home) as holder:
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
        # Without --wait, a direct run waits (up to 10 s), says so after a second, and succeeds
        # once the lock is released: released when it has said so, not after a guessed delay.
        waiting = subprocess.Popen(
            [sys.executable, "-m", "ocmem", "note", "x"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert waiting.stderr is not None
        said = waiting.stderr.readline()
        assert "j'attends (jusqu'à 10 s)" in said, said
        release(holder)
        _, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, said + err
    assert "x" in (home / "memory/SHORT_TERM.md").read_text()


@pytest.mark.real_clock
def test_twenty_parallel_notes_each_wait_their_turn_and_all_are_kept(home: Path) -> None:
    # A wait long enough for any machine: how many runs the default 10 s absorbs depends on the
    # machine's load, not on the lock.
    env = {**os.environ, "OCMEM_HOME": str(home)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "ocmem", "--wait", "600", "note", f"note parallèle {i}"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(20)
    ]
    results = [(p.wait(600), p.stderr.read() if p.stderr else "") for p in procs]
    assert [code for code, _ in results] == [0] * 20, results
    notes = (home / "memory/SHORT_TERM.md").read_text()
    assert all(f"note parallèle {i}\n" in notes for i in range(20))
