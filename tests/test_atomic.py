"""Atomic writes (ocmem.home.atomic): a crash or a refusing disk leaves the old bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ocmem.errors import Refused, StorageError
from ocmem.home.atomic import (
    TEMP_SUFFIX,
    atomic_write,
    open_file,
    read_text,
    refuse_link,
    register_home,
)
from ocmem.services.memory import Memory


def test_atomic_write_keeps_the_old_bytes_when_the_rename_crashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "d").mkdir()
    target = tmp_path / "d/f.md"
    target.write_text("ancien contenu\n")

    def crash(src: object, dst: object, **where: object) -> None:
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


def test_the_door_refuses_a_link_at_every_depth(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "a/b").mkdir(parents=True)
    register_home(home)
    (tmp_path / "out").mkdir()
    (tmp_path / "out/f").write_text("dehors")
    (home / "a/b/f").symlink_to(tmp_path / "out/f")
    (home / "a/c").symlink_to(tmp_path / "out")
    for path in (home / "a/b/f", home / "a/c/f"):
        with pytest.raises(Refused, match="lien symbolique"):
            read_text(path)
        with pytest.raises(Refused, match="lien symbolique"):
            atomic_write(path, "x")
        with pytest.raises(Refused, match="lien symbolique"):
            os.close(open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT))
        with pytest.raises(Refused, match="lien symbolique"):
            refuse_link(path)
    assert (tmp_path / "out/f").read_text() == "dehors"
    assert (home / "a/b/f").is_symlink()


def test_outside_every_home_a_link_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("paquet")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    assert read_text(tmp_path / "link.txt") == "paquet"


def test_read_text_reads_line_ends_as_python_reads_a_text_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "memory").mkdir(parents=True)
    register_home(home)
    (home / "memory/MEMORY.md").write_bytes("# Mémoire\r\n\r\n- fait\rautre\n".encode())
    assert read_text(home / "memory/MEMORY.md") == "# Mémoire\n\n- fait\nautre\n"
