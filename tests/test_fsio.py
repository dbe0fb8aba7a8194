from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import Clock, journal_fields
from ocmem.errors import Busy, StorageError
from ocmem.execution import exit_code
from ocmem.home.fsio import _STAMP_FORMAT, TEMP_SUFFIX, Backups, atomic_write, run_lock, stamp_time
from ocmem.home.paths import Paths
from ocmem.services.memory import Memory


def test_atomic_write_keeps_the_old_bytes_when_the_rename_crashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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


def test_a_crash_during_an_engine_write_leaves_memory_intact(
    memory: Memory, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.add_note("première note")
    before = (home / "memory/SHORT_TERM.md").read_bytes()
    backups = sorted((home / ".ocmem/backups").rglob("*"))
    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:
        raise OSError("disque retiré")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(StorageError, match="rien n'a été modifié"):
        memory.add_note("seconde note")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert (home / "memory/SHORT_TERM.md").read_bytes() == before
    assert not list((home / "memory").glob(f"*{TEMP_SUFFIX}"))
    assert sorted((home / ".ocmem/backups").rglob("*")) == backups  # the run's copy was discarded


def test_backups_are_byte_identical_and_first_copy_wins(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    target = tmp_path / "memory/MEMORY.md"
    target.parent.mkdir()
    target.write_bytes(b"v1\xc3\xa9\n")
    backups = Backups(paths, Clock(), stamp="s")
    first = backups.save(target)
    target.write_bytes(b"v2\n")
    assert backups.save(target) == first
    assert first is not None and first.read_bytes() == b"v1\xc3\xa9\n"
    assert first == tmp_path / ".ocmem/backups/s/memory/MEMORY.md"


@pytest.mark.real_clock
def test_the_lock_is_exclusive_and_waits(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys,time;from ocmem.home.paths import Paths;from ocmem.home.fsio import run_lock\n"
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
            "import sys,time;from ocmem.home.paths import Paths;from ocmem.home.fsio import run_lock\n"
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


def test_prune_keeps_recent_runs_and_the_newest_copy_of_every_file(tmp_path: Path) -> None:
    from datetime import datetime, timedelta

    from ocmem.home.fsio import BACKUP_KEEP_RUNS, prune

    paths = Paths(tmp_path)
    now = datetime(2026, 11, 29, 12, 0)

    def folder(days_ago: float, files: dict[str, str]) -> Path:
        stamp = (now - timedelta(days=days_ago)).strftime("%Y%m%d-%H%M%S-%f")
        for rel, text in files.items():
            (paths.backups_dir / stamp / rel).parent.mkdir(parents=True, exist_ok=True)
            (paths.backups_dir / stamp / rel).write_text(text)
        return paths.backups_dir / stamp

    gone_skill = folder(400, {"skills/vieux/SKILL.md": "seule copie", "memory/MEMORY.md": "v0"})
    old = [folder(300 - i, {"memory/MEMORY.md": f"v{i + 1}"}) for i in range(5)]
    recent = [
        folder(10 - i * 0.1, {"memory/pending.md": f"p{i}"}) for i in range(BACKUP_KEEP_RUNS + 3)
    ]
    foreign = paths.backups_dir / "à-garder"
    foreign.mkdir()
    removed = prune(paths, Clock(now), force=True)
    assert (gone_skill / "skills/vieux/SKILL.md").read_text() == "seule copie"  # only copy: kept
    assert not (gone_skill / "memory/MEMORY.md").exists()  # superseded by a newer copy
    assert [p.exists() for p in old] == [
        False,
        False,
        False,
        False,
        True,
    ]  # the newest MEMORY.md copy stays
    assert all(p.is_dir() for p in recent) and foreign.is_dir()  # young, or not ocmem's
    assert len(removed) == 5
    assert prune(paths, Clock(now + timedelta(hours=1))) == []  # at most once a day


def test_the_action_log_rotates_and_keeps_three_generations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ocmem.home import fsio

    monkeypatch.setattr(fsio, "LOG_MAX_BYTES", 1000)
    paths = Paths(tmp_path)
    for i in range(200):
        assert fsio.log_event(paths, Clock(), "write", n=i, filler="x" * 50)
    logs = sorted(p.name for p in paths.state_dir.glob("log.jsonl*"))
    assert (
        set(logs) <= {"log.jsonl", "log.jsonl.1", "log.jsonl.2", "log.jsonl.3"}
        and "log.jsonl.3" in logs
    )
    assert all(p.stat().st_size <= 1100 for p in paths.state_dir.glob("log.jsonl*"))
    newest = (paths.state_dir / logs[0]).read_text().splitlines()[-1]
    assert '"n": 199' in newest


@given(st.datetimes(min_value=datetime(1000, 1, 1)))
def test_a_backup_stamp_reads_back_as_its_time(moment: datetime) -> None:
    assert stamp_time(moment.strftime(_STAMP_FORMAT)) == moment
    assert stamp_time(moment.strftime(_STAMP_FORMAT) + ".2") == moment


@given(st.text(alphabet="0123456789-.٠x", max_size=26))
def test_a_stamp_is_read_as_strptime_reads_it(text: str) -> None:
    try:
        expected: datetime | None = datetime.strptime(text.split(".", 1)[0], _STAMP_FORMAT)
    except ValueError:
        expected = None
    if expected is not None and len(text.split(".", 1)[0]) != 22:
        expected = None  # strptime takes short fields (« 2026112… »); ocmem writes them whole
    assert stamp_time(text) == expected
