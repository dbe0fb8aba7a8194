"""Backups (ocmem.home.backups): byte-identical copies, their folder stamps, their retention."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from conftest import Clock
from ocmem.home.backups import _STAMP_FORMAT, Backups, stamp_time
from ocmem.home.paths import Paths


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


def test_prune_keeps_recent_runs_and_the_newest_copy_of_every_file(tmp_path: Path) -> None:
    from datetime import datetime, timedelta

    from ocmem.home.backups import BACKUP_KEEP_RUNS, prune

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
