"""`ocmem harden` stopped at any step, and the record it writes first: as root, with the test
users. Wherever a run stops (an error, a full disk, or a kill: a BaseException nothing catches,
or a child process ended as SIGKILL would), `harden --annuler` puts every owner and mode back,
and a new `harden` finishes the run; a record the agent could have made is refused."""

from __future__ import annotations

import errno
import itertools
import json
import os
import pwd
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Clock
from ocmem.errors import OcmemError, Refused
from ocmem.home.paths import Paths
from ocmem.home.workspace import open_workspace
from ocmem.setup import handover, harden
from ocmem.setup.doctor import Doctor
from ocmem.setup.hardrecord import sudoers_file
from support.hardenhome import agent_home, owners_modes, owners_modes_bytes, users
from support.sharedusers import SHARED_USERS

pytestmark = SHARED_USERS


# -- a run stopped at any step ----------------------------------------------------------------
# The record is written before the first change: wherever a run stops (an error, or a kill: a
# BaseException nothing catches), `harden --annuler` puts every owner and mode back, and a new
# `harden` finishes the run (then `--annuler` still finds the owners from before the first one).


def _raise(kind: str, where: str) -> None:
    if kind == "erreur":
        raise OcmemError(f"panne injectée : {where}")
    if kind == "disque":
        raise OSError(errno.ENOSPC, f"No space left on device (injecté : {where})")
    raise SystemExit(f"tué : {where}")  # neither an error nor Ctrl-C: nothing is undone


def _after_nth_call(
    monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, n: int, kind: str
) -> None:
    """``owner.name`` stops the run right after its ``n``th call."""
    real = getattr(owner, name)
    calls = [0]

    def stopping(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        calls[0] += 1
        if calls[0] == n:
            _raise(kind, f"après {name} n°{n}")
        return result

    monkeypatch.setattr(owner, name, stopping)


def _stop_at(point: str, kind: str, monkeypatch: pytest.MonkeyPatch, top: Path) -> None:
    from ocmem.home.atomic import atomic_write
    from ocmem.setup.install import Installer

    paths = Paths(top / ".config" / "opencode")
    if point == "first parent locked":
        _after_nth_call(monkeypatch, harden.Hardener, "_lock", 1, kind)
    elif point == "second parent locked":
        _after_nth_call(monkeypatch, harden.Hardener, "_lock", 2, kind)
    elif point == "a parent chowned, not yet chmod-ed":
        real_chmod = Path.chmod

        def chmod(path: Path, mode: int, **kwargs: Any) -> None:
            if path == top:
                _raise(kind, f"chmod {path}")
            real_chmod(path, mode, **kwargs)

        monkeypatch.setattr(Path, "chmod", chmod)
    elif point == "in the installer":

        def failing(self: Installer) -> None:
            _raise(kind, "Installer.run")

        monkeypatch.setattr(Installer, "run", failing)
    elif point == "writing the gate's command":

        def write(path: Path, data: bytes, *, mode: int | None = None) -> None:
            if path == paths.plugin_command:
                _raise(kind, "plugin.json")
            atomic_write(path, data, mode=mode)

        monkeypatch.setattr("ocmem.home.workspace.atomic_write", write)
    elif point == "half the home given":
        real_walk = handover.walk
        walks = [0]

        def walk(root: Path) -> Any:
            walks[0] += 1  # the first walk notes the modes, before the record: the second gives
            for i, path in enumerate(real_walk(root)):
                if walks[0] == 2 and i == 5:
                    _raise(kind, f"chown {path}")
                yield path

        monkeypatch.setattr(handover, "walk", walk)
    elif point == "the sudoers rule":
        _after_nth_call(monkeypatch, handover, "give", 1, kind)
    else:
        raise AssertionError(point)


def _unusual_modes(home: Path) -> None:
    """Modes and an owner that giving the home changes: `--annuler` puts them back too."""
    (home / "AGENTS.md").chmod(0o664)
    (home / "skills").chmod(0o2770)
    (home / "memory").chmod(0o700)
    os.chown(home / "package-lock.json", 0, 0)


STOPS = [
    "first parent locked",
    "a parent chowned, not yet chmod-ed",
    "second parent locked",
    "in the installer",
    "writing the gate's command",
    "half the home given",
    "the sudoers rule",
]


@pytest.mark.parametrize("kind", ["erreur", "disque", "tué"])
@pytest.mark.parametrize("point", STOPS)
def test_a_run_stopped_at_any_step_is_undone_by_annuler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock, point: str, kind: str
) -> None:
    owner, agent = users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = agent_home(tmp_path, agent, clock)
    (top / ".config").chmod(0o700)  # modes the lock changes, to be put back exactly
    top.chmod(0o751)
    _unusual_modes(home)
    before = owners_modes(top)
    paths = Paths(home)
    try:
        with monkeypatch.context() as stopped:
            _stop_at(point, kind, stopped, top)
            with pytest.raises((OcmemError, SystemExit)) as raised:
                harden.harden(home, agent.pw_name, owner.pw_name, clock)
        if kind != "tué":
            said = raised.value.render() if isinstance(raised.value, OcmemError) else ""
            assert "s'est arrêté en cours de route (" in said, said
            assert "n'est durci qu'à moitié" in said and "hardened.json" in said
            assert "harden --annuler` pour tout remettre comme avant" in said
        assert paths.hardened_file.stat().st_uid == 0  # the record was there first
        undone = harden.harden(home, None, "ocmem", clock, undo=True)
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)
    assert any("droits d'avant rétablis" in line for line in undone.lines)
    after = owners_modes(top)
    assert {rel: after[rel] for rel in before} == before
    for rel in set(after) - set(before):  # what the run made (.local/, the installer's files)
        assert after[rel][:2] == (agent.pw_uid, agent.pw_gid), rel
    assert not paths.hardened_file.exists()


@pytest.mark.parametrize("point", ["second parent locked", "in the installer", "the sudoers rule"])
def test_a_run_stopped_is_finished_by_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock, point: str
) -> None:
    """The next `harden` keeps the owners the stopped one recorded (not the root it left)."""
    owner, agent = users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = agent_home(tmp_path, agent, clock)
    (top / ".config").chmod(0o700)
    before = owners_modes(top)
    try:
        with monkeypatch.context() as stopped:
            _stop_at(point, "tué", stopped, top)
            with pytest.raises(SystemExit):
                harden.harden(home, agent.pw_name, owner.pw_name, clock)
        doctor = Doctor(open_workspace(home, clock=clock), {})
        doctor.hardened()  # the home not the owner's yet, or the rule missing
        assert doctor.found
        assert all("harden --annuler" in problem.fix for problem in doctor.found)
        done = harden.harden(home, agent.pw_name, owner.pw_name, clock)
        assert any("pending accept" in line for line in done.lines)
        assert top.stat().st_uid == 0 and home.stat().st_uid == owner.pw_uid
        harden.harden(home, None, "ocmem", clock, undo=True)
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)
    after = owners_modes(top)
    assert {rel: after[rel] for rel in before} == before


def test_an_undo_stopped_half_way_can_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    owner, agent = users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = agent_home(tmp_path, agent, clock)
    before = owners_modes(top)
    try:
        harden.harden(home, agent.pw_name, owner.pw_name, clock)
        with monkeypatch.context() as stopped:
            _after_nth_call(stopped, os, "chown", 3, "tué")
            with pytest.raises(SystemExit):
                harden.harden(home, None, "ocmem", clock, undo=True)
        assert Paths(home).hardened_file.exists()  # it goes last
        harden.harden(home, None, "ocmem", clock, undo=True)
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)
    after = owners_modes(top)
    assert {rel: after[rel] for rel in before} == before


def test_a_record_that_cannot_be_written_stops_the_run_before_any_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    owner, agent = users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = agent_home(tmp_path, agent, clock)
    before = owners_modes_bytes(top)

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(harden, "write_record", full)
    try:
        with pytest.raises(OcmemError) as raised:
            harden.harden(home, agent.pw_name, owner.pw_name, clock)
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)
    assert "avant de changer le moindre propriétaire" in raised.value.render()
    assert owners_modes_bytes(top) == before


# -- a record the agent could have made -------------------------------------------------------
# Until the home is the owner's, .ocmem/ is the agent's: whatever record is found there must be
# root's and name only what harden changes, or root would chown (or remove) what the agent chose.


def _forged(kind: str, record: dict[str, Any], victim: Path, agent: pwd.struct_passwd) -> None:
    if kind == "a parent that is not the home's":
        record["locked"].append([str(victim), agent.pw_uid, agent.pw_gid, 0o777])
    elif kind == "another sudoers file":
        record["sudoers"] = str(victim)
    elif kind == "a mode out of range":
        record["locked"][0][3] = 0o17777
    elif kind == "a path out of the home":
        record["inside"] = {"../../../root-only": [agent.pw_uid, agent.pw_gid, 0o777]}
    elif kind == "an owner that is not a number":
        record["home_owner"] = ["0", 0]
    elif kind != "the agent's own file":
        raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind",
    [
        "the agent's own file",
        "a parent that is not the home's",
        "another sudoers file",
        "a mode out of range",
        "a path out of the home",
        "an owner that is not a number",
    ],
)
def test_a_forged_record_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock, kind: str
) -> None:
    owner, agent = users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = agent_home(tmp_path, agent, clock)
    victim = tmp_path / "victim"
    victim.write_text("root's\n")
    victim.chmod(0o600)
    record = {
        "owner": owner.pw_name,
        "agent": agent.pw_name,
        "program": "/opt/ocmem/bin/ocmem",
        "sudoers": str(sudoers_file(agent.pw_name)),
        "ts": "2026-11-29T10:00:00",
        "locked": [[str(top), agent.pw_uid, agent.pw_gid, 0o755]],
        "home_owner": [agent.pw_uid, agent.pw_gid],
    }
    _forged(kind, record, victim, agent)
    planted = Paths(home).hardened_file
    planted.write_text(json.dumps(record))
    if kind == "the agent's own file":
        os.chown(planted, agent.pw_uid, agent.pw_gid)
    before = owners_modes_bytes(top)
    try:
        for undo in (True, False):
            with pytest.raises(OcmemError) as refused:
                harden.harden(home, agent.pw_name, owner.pw_name, clock, undo=undo)
            assert "rien n'a été modifié" in refused.value.render()
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)
    assert owners_modes_bytes(top) == before
    assert victim.exists() and victim.stat().st_uid == 0
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600


def test_a_record_with_another_name_elsewhere_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """A hard link to a root's file is not a record harden wrote there."""
    owner, agent = users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    _, home = agent_home(tmp_path, agent, clock)
    rule = sudoers_file(agent.pw_name)
    try:
        harden.harden(home, agent.pw_name, owner.pw_name, clock)
        elsewhere = tmp_path / "copie.json"
        os.link(Paths(home).hardened_file, elsewhere)
        with pytest.raises(Refused) as refused:
            harden.harden(home, None, "ocmem", clock, undo=True)
        assert "n'appartient pas à root (ou a un autre nom ailleurs)" in refused.value.render()
        elsewhere.unlink()
        harden.harden(home, None, "ocmem", clock, undo=True)
    finally:
        rule.unlink(missing_ok=True)


# A real kill: `ocmem harden` in a child process, ended (os._exit, as SIGKILL would) right after
# its Nth rename (tests/test_intent.py's kill table), or its Nth chown (a parent locked, a
# folder made for the agent, the home given), for N = 1, 2, … until it runs through.
EXIT_AFTER_CHOWN = "OCMEM_TEST_EXIT_AFTER_CHOWN"
HARDEN_IN_A_CHILD = f"""
import os, runpy, sys
from ocmem.home.atomic import KILLED_EXIT
from ocmem.setup import harden
harden.Hardener._check_owner_runs_it = lambda self: None  # see test_harden_then_undo
chowns, real_chown, last = [0], os.chown, int(os.environ.get("{EXIT_AFTER_CHOWN}", "0"))
def chown(*args, **kwargs):
    real_chown(*args, **kwargs)
    chowns[0] += 1
    if chowns[0] == last:
        os._exit(KILLED_EXIT)
os.chown = chown
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _kill_points() -> Iterator[int]:
    """1 to 8, then every 7th: every step of the run, without a child per file of the home."""
    yield from range(1, 9)
    yield from itertools.count(9, 7)


@pytest.mark.parametrize("after", ["rename", "chown"])
def test_a_harden_killed_at_any_point_is_undone_by_annuler(
    tmp_path: Path, clock: Clock, after: str
) -> None:
    from ocmem.home.atomic import EXIT_AFTER_RENAME_VARIABLE, KILLED_EXIT

    owner, agent = users()
    top, home = agent_home(tmp_path, agent, clock)
    (top / ".config").chmod(0o700)
    before = owners_modes(top)
    driver = Path(__file__).parent / "support" / "fixedclock.py"
    child = tmp_path / "harden_child.py"  # the driver, on the test's clock, as root may run it
    child.write_text(HARDEN_IN_A_CHILD)
    variable = EXIT_AFTER_RENAME_VARIABLE if after == "rename" else EXIT_AFTER_CHOWN
    points = 0
    try:
        for n in _kill_points():
            killed = subprocess.run(
                [
                    sys.executable,
                    str(child),
                    str(driver),
                    "harden",
                    "--agent",
                    agent.pw_name,
                    "--owner",
                    owner.pw_name,
                ],
                env={
                    **os.environ,
                    "OCMEM_HOME": str(home),
                    "OCMEM_TEST_NOW": clock.value.isoformat(),
                    variable: str(n),
                },
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if killed.returncode == 0:
                break
            assert killed.returncode == KILLED_EXIT, killed.stderr
            assert n < 200, "harden never ran through"
            points += 1
            assert Paths(home).hardened_file.exists(), f"killed after {after} {n}: no record"
            harden.harden(home, None, "ocmem", clock, undo=True)
            now = owners_modes(top)
            assert {rel: now[rel] for rel in before} == before, f"killed after {after} {n}"
        harden.harden(home, None, "ocmem", clock, undo=True)  # the run that went through
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)
    now = owners_modes(top)
    assert {rel: now[rel] for rel in before} == before
    assert points >= 2, f"only {points} {after}(s) seen: the kill was never injected"
    print(f"\nharden kill table ({after}): {points} kill points, each undone exactly")


def test_a_folder_swapped_for_a_link_during_annuler_leads_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """The agent gets files back while --annuler still walks the home: memory/ swapped for a
    link to root's files, half-way through it, must not make root give those away (a walk by
    path names did: the rest of memory/ was reached through the link)."""
    owner, agent = users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    _, home = agent_home(tmp_path, agent, clock)
    memory = home / "memory"
    victim = tmp_path / "root-only"
    victim.mkdir()
    for entry in memory.iterdir():  # root's files by the same names
        (victim / entry.name).write_text("root's\n")
    assert len(list(victim.iterdir())) >= 2
    real_chown = os.chown
    swapped: list[bool] = []

    def chown(path: Any, uid: int, gid: int, **where: Any) -> None:
        real_chown(path, uid, gid, **where)
        folder = where.get("dir_fd")
        full = Path(path) if folder is None else Path(os.readlink(f"/proc/self/fd/{folder}"), path)
        if full.parent == memory and not swapped:  # the agent, once memory/ is half given back
            os.rename(memory, tmp_path / "memory-moved")
            os.symlink(victim, memory)
            swapped.append(True)

    try:
        harden.harden(home, agent.pw_name, owner.pw_name, clock)
        with monkeypatch.context() as racing:
            racing.setattr(os, "chown", chown)
            harden.harden(home, None, "ocmem", clock, undo=True)
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)
    assert swapped
    assert {p.name: p.stat().st_uid for p in victim.iterdir()} == {
        p.name: 0 for p in victim.iterdir()
    }


@pytest.mark.parametrize("stop", ["the record cannot be written", "killed before the record"])
def test_a_home_harden_makes_is_the_agents_from_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock, stop: str
) -> None:
    """A home that did not exist: a run stopped before its record leaves no home of root's (the
    next run would have taken root for its owner before, and --annuler given it to root)."""
    owner, agent = users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top = tmp_path / "agent-home"
    (top / ".config").mkdir(parents=True)
    tmp_path.chmod(0o755)
    for path in (top, top / ".config"):
        os.chown(path, agent.pw_uid, agent.pw_gid)
    home = top / ".config" / "opencode"

    def failing(*args: Any, **kwargs: Any) -> None:
        if stop == "killed before the record":
            raise SystemExit("tué")
        raise OSError(errno.ENOSPC, "No space left on device")

    try:
        with monkeypatch.context() as stopped:
            stopped.setattr("ocmem.home.statefiles.atomic_write", failing)
            with pytest.raises((OcmemError, SystemExit)):
                harden.harden(home, agent.pw_name, owner.pw_name, clock)
        assert home.stat().st_uid == (home / ".ocmem").stat().st_uid == agent.pw_uid
        harden.harden(home, agent.pw_name, owner.pw_name, clock)
        harden.harden(home, None, "ocmem", clock, undo=True)
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)
    for path in [top, top / ".config", home, *home.rglob("*")]:
        assert path.lstat().st_uid == agent.pw_uid, path
