from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ocmem.config import Paths
from ocmem.errors import Busy
from ocmem.execution import exit_code
from ocmem.fsio import TEMP_SUFFIX, Backups, atomic_write, run_lock
from ocmem.memory import Memory


def test_atomic_write_keeps_the_old_bytes_when_the_rename_crashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "d").mkdir()
    target = tmp_path / "d/f.md"
    target.write_text("ancien contenu\n")

    def crash(src: object, dst: object) -> None:
        raise OSError("crash simulé")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        atomic_write(target, "nouveau contenu\n")
    assert target.read_text() == "ancien contenu\n"
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["f.md"]  # no temp file left


def test_atomic_write_keeps_permissions(tmp_path: Path) -> None:
    target = tmp_path / "f.md"
    target.write_text("x")
    target.chmod(0o640)
    atomic_write(target, "y")
    assert target.stat().st_mode & 0o777 == 0o640


def test_a_crash_during_an_engine_write_leaves_memory_intact(memory: Memory, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory.add_note("première note")
    before = (home / "memory/SHORT_TERM.md").read_bytes()
    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:
        raise OSError("disque retiré")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        memory.add_note("seconde note")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert (home / "memory/SHORT_TERM.md").read_bytes() == before
    assert not list((home / "memory").glob(f"*{TEMP_SUFFIX}"))


def test_backups_are_byte_identical_and_first_copy_wins(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    target = tmp_path / "memory/MEMORY.md"
    target.parent.mkdir()
    target.write_bytes(b"v1\xc3\xa9\n")
    backups = Backups(paths, stamp="s")
    first = backups.save(target)
    target.write_bytes(b"v2\n")
    assert backups.save(target) == first
    assert first is not None and first.read_bytes() == b"v1\xc3\xa9\n"
    assert first == tmp_path / ".ocmem/backups/s/memory/MEMORY.md"


def test_the_lock_is_exclusive_and_waits(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys,time;from ocmem.config import Paths;from ocmem.fsio import run_lock\n"
         "with run_lock(Paths(__import__('pathlib').Path(sys.argv[1]))):\n print('held', flush=True); time.sleep(1.5)", str(tmp_path)],
        stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(Busy) as busy, run_lock(paths):
        pass
    assert exit_code(busy.value) == 75 and "--wait" in busy.value.render()
    started = time.monotonic()
    with run_lock(paths, wait_seconds=10):
        assert time.monotonic() - started < 9
    holder.wait(5)


def test_cli_exits_75_when_busy(home: Path, tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys,time;from ocmem.config import Paths;from ocmem.fsio import run_lock\n"
         "with run_lock(Paths(__import__('pathlib').Path(sys.argv[1]))):\n print('held', flush=True); time.sleep(3)", str(home)],
        stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    env = {**os.environ, "OCMEM_HOME": str(home)}
    busy = subprocess.run([sys.executable, "-m", "ocmem", "note", "x"], env=env, capture_output=True, text=True)
    assert busy.returncode == 75, busy.stderr
    assert "--wait" in busy.stderr
    waited = subprocess.run([sys.executable, "-m", "ocmem", "--wait", "10", "note", "x"], env=env, capture_output=True, text=True)
    assert waited.returncode == 0, waited.stderr
    holder.wait(5)
