"""`ocmem harden`: what it refuses before changing anything, and (as root, with the test users)
the set-up it makes and undoes. The hardened mode against a model is in tests/e2e/."""

from __future__ import annotations

import errno
import itertools
import os
import pwd
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import CliResult, Clock
from ocmem.errors import OcmemError, Refused
from ocmem.home import gateenv
from ocmem.home.paths import Paths
from ocmem.setup import harden
from ocmem.setup.harden import carried_config, replaceable, sudoers_rule, writable_by
from ocmem.setup.hardrecord import sudoers_file
from support.sharedusers import SHARED_USERS

pytestmark = SHARED_USERS

OWNER = os.environ.get("OCMEM_E2E_OWNER", "ocmem-e2e")
AGENT = os.environ.get("OCMEM_E2E_AGENT", "ocmem-e2e-agent")
URL = "https://notes.example.org"


def info(uid: int, gid: int, mode: int) -> os.stat_result:
    return os.stat_result((mode, 0, 0, 0, uid, gid, 0, 0, 0, 0))


@pytest.mark.parametrize(
    ("uid", "gid", "mode", "expected"),
    [
        (1000, 1000, 0o40755, True),  # its own
        (1000, 1000, 0o40555, False),  # its own, read-only (it could chmod: see replaceable)
        (0, 1000, 0o40775, True),  # its group may write
        (0, 0, 0o40775, False),
        (0, 0, 0o40777, True),  # anyone may write
        (0, 0, 0o41777, True),  # sticky, still writable (replaceable decides)
    ],
)
def test_writable_by(uid: int, gid: int, mode: int, expected: bool) -> None:
    assert writable_by(info(uid, gid, mode), 1000, {1000}) is expected


def test_what_the_agent_could_swap(tmp_path: Path) -> None:
    me = os.getuid()
    top = tmp_path / "top"
    (top / "a" / "b").mkdir(parents=True)
    other = me + 12345  # a user that owns nothing here
    assert replaceable(top / "a" / "b", me, set()) is not None  # it owns the tree
    assert replaceable(top / "a" / "b", other, set()) is None
    (top / "a").chmod(0o777)
    assert replaceable(top / "a" / "b", other, set()) == top / "a" / "b"
    (top / "a").chmod(0o1777)  # sticky: it may not swap what it does not own
    assert replaceable(top / "a" / "b", other, set()) is None


def test_the_sudoers_rule_allows_only_the_gate() -> None:
    rule = sudoers_rule(
        "agent", "ocmem", Path("/opt/ocmem/bin/ocmem"), Path("/home/agent/.config/opencode")
    )
    lines = [line for line in rule.splitlines() if not line.startswith("#")]
    assert lines == [
        "agent ALL=(ocmem) NOPASSWD: /opt/ocmem/bin/ocmem --home /home/agent/.config/opencode gate"
    ]


def test_the_carried_settings_are_written_in_one_text_or_refused() -> None:
    """Decided before anything changes (``check``): every carried setting, or a refusal."""
    paths = Paths(Path("/home/agent/.config/opencode"))
    env = {
        "OCMEM_SILVERBULLET_URL": URL,
        "OCMEM_SILVERBULLET_TOKEN_FILE": str(paths.state_dir / "sb.token"),
    }
    carried = gateenv.decide(env, {}, paths)
    assert [d.action for d in carried] == [gateenv.CARRY, gateenv.CARRY]
    text = "# mes réglages\nsilverbullet:\n  inbox: Boite/\n"
    assert carried_config(text, carried, paths.config_file) == (
        f'# mes réglages\nsilverbullet:\n  token_file: ".ocmem/sb.token"\n  url: "{URL}"\n'
        "  inbox: Boite/\n"
    )
    assert carried_config(text, [], paths.config_file) == text
    with pytest.raises(Refused) as refused:
        carried_config("silverbullet: {inbox: Boite/}\n", carried, paths.config_file)
    said = refused.value.render()
    assert "rien n'a été modifié" in said and f"`url: {URL}`" in said


def test_not_root_is_refused_with_the_command(
    home: Path, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch, unchanged: None
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    result = run_cli("harden", "--agent", "nobody")
    assert (
        result.code == 3
        and "il faut être root" in result.err
        and "Correction : sudo " in result.err
    )


def test_unknown_users_are_refused_with_the_fix(
    home: Path, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch, unchanged: None
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    result = run_cli("harden", "--agent", "nobody", "--owner", "ocmem-no-such-user")
    assert result.code == 3 and "n'existe pas" in result.err and "useradd --system" in result.err
    result = run_cli("harden", "--agent", "nobody", "--owner", "nobody")
    assert result.code == 3 and "deux utilisateurs distincts" in result.err
    result = run_cli("harden", "--undo")
    assert result.code == 3 and "n'est pas en mode durci" in result.err


def _users() -> tuple[pwd.struct_passwd, pwd.struct_passwd]:
    if os.geteuid() != 0:
        pytest.skip("changes owners and /etc/sudoers.d: root only (CI)")
    try:
        return pwd.getpwnam(OWNER), pwd.getpwnam(AGENT)
    except KeyError:
        pytest.skip(f"users {OWNER} and {AGENT} missing (.ci/run creates them)")


def test_harden_then_undo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    owner, agent = _users()
    # This interpreter may live where the owner cannot go (the e2e suite checks the real run).
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top = tmp_path / "agent-home"
    home = top / ".config" / "opencode"
    home.mkdir(parents=True)
    tmp_path.chmod(0o755)
    for path in (top, top / ".config", home):
        os.chown(path, agent.pw_uid, agent.pw_gid)
    rule = sudoers_file(agent.pw_name)
    try:
        done = harden.harden(home, agent.pw_name, owner.pw_name, Clock())
        assert any("pending accept" in line for line in done.lines)
        assert top.stat().st_uid == 0 and not top.stat().st_mode & 0o022
        assert (top / ".config").stat().st_uid == 0
        assert (top / ".local" / "share").stat().st_uid == agent.pw_uid  # OpenCode's data stays its
        record = home / ".ocmem/hardened.json"
        for path in [home, *home.rglob("*")]:
            assert path.lstat().st_uid == (0 if path == record else owner.pw_uid), path
            assert not path.lstat().st_mode & 0o022 or path.is_symlink(), path
        assert stat.S_IMODE((home / ".ocmem").stat().st_mode) == 0o711
        assert stat.S_IMODE((home / ".ocmem/plugin.json").stat().st_mode) == 0o644
        assert stat.S_IMODE(record.stat().st_mode) == 0o644  # root's: the agent cannot forge it
        assert '"sudo", "-n", "-u", "' + owner.pw_name in (home / ".ocmem/plugin.json").read_text()
        assert subprocess.run(["visudo", "-cf", str(rule)], capture_output=True).returncode == 0
        again = harden.harden(home, agent.pw_name, owner.pw_name, Clock())  # idempotent
        assert again.lines
        harden.harden(home, None, "ocmem", Clock(), undo=True)
        assert not rule.exists()
        for path in [top, top / ".config", home, *home.rglob("*")]:
            assert path.lstat().st_uid == agent.pw_uid, path
        assert '"sudo"' not in (home / ".ocmem/plugin.json").read_text()
        assert not (home / ".ocmem/hardened.json").exists()
    finally:
        rule.unlink(missing_ok=True)


def _agent_home(tmp_path: Path, agent: pwd.struct_passwd, clock: Clock) -> tuple[Path, Path]:
    """An installed home under a home folder of the agent's, all the agent's."""
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace
    from ocmem.setup.install import Installer

    top = tmp_path / "agent-home"
    home = top / ".config" / "opencode"
    home.mkdir(parents=True)
    tmp_path.chmod(0o755)
    Installer(Workspace(load_settings(home), clock=clock), home_id="durci").run()
    for path in [top, *top.rglob("*")]:
        os.chown(path, agent.pw_uid, agent.pw_gid, follow_symlinks=False)
    return top, home


def _owners_modes_bytes(top: Path) -> dict[str, tuple[int, int, int, bytes | None]]:
    return {
        path.relative_to(top.parent).as_posix(): (
            path.lstat().st_uid,
            path.lstat().st_gid,
            path.lstat().st_mode,
            path.read_bytes() if path.is_file() and not path.is_symlink() else None,
        )
        for path in [top, *top.rglob("*")]
    }


def test_a_setting_it_cannot_carry_is_refused_before_any_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """Refused after the parents were given to root and the home installed, it said « rien n'a
    été modifié »: now decided by ``check``, before the first change."""
    owner, agent = _users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = _agent_home(tmp_path, agent, clock)
    (home / "ocmem.yaml").write_text("silverbullet: {inbox: Boite/}\n")  # flow style
    os.chown(home / "ocmem.yaml", agent.pw_uid, agent.pw_gid)
    before = _owners_modes_bytes(top)
    try:
        with pytest.raises(Refused) as refused:
            harden.harden(
                home, agent.pw_name, owner.pw_name, clock, env={"OCMEM_SILVERBULLET_URL": URL}
            )
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)  # had it gone through
    said = refused.value.render()
    assert "ne sait pas y ajouter `url`" in said and "rien n'a été modifié" in said
    assert _owners_modes_bytes(top) == before


def test_a_crash_while_hardening_leaves_the_home_before_or_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """The carried setting, the record and the plugin's command land as a whole: a run killed
    between them leaves an intent record the next ocmem run completes."""
    from ocmem.home.atomic import atomic_write
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace

    owner, agent = _users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = _agent_home(tmp_path, agent, clock)
    paths = Paths(home)

    def killed_at_the_gate_command(path: Path, data: bytes, *, mode: int | None = None) -> None:
        if path == paths.plugin_command and b'"sudo"' in data:
            raise SystemExit("killed")  # neither an error nor Ctrl-C: nothing is undone
        atomic_write(path, data, mode=mode)

    monkeypatch.setattr("ocmem.home.workspace.atomic_write", killed_at_the_gate_command)
    rule = sudoers_file(agent.pw_name)
    try:
        with pytest.raises(SystemExit):
            harden.harden(
                home, agent.pw_name, owner.pw_name, clock, env={"OCMEM_SILVERBULLET_URL": URL}
            )
        monkeypatch.setattr("ocmem.home.workspace.atomic_write", atomic_write)
        assert paths.intent_file.exists() and paths.hardened_file.exists()
        assert b'"sudo"' not in paths.plugin_command.read_bytes()
        ws = Workspace(load_settings(home), clock=clock)
        with ws.transaction("reprise"):
            pass
        assert not paths.intent_file.exists()
        assert '"sudo", "-n", "-u", "' + owner.pw_name in paths.plugin_command.read_text()
        assert f'url: "{URL}"' in paths.config_file.read_text()
    finally:
        if paths.hardened_file.exists():
            harden.harden(home, None, "ocmem", clock, undo=True)
        rule.unlink(missing_ok=True)
    assert top.lstat().st_uid == agent.pw_uid  # the undo found the record it needs


# -- a run stopped at any step ----------------------------------------------------------------
# The record is written before the first change: wherever a run stops (an error, or a kill: a
# BaseException nothing catches), `harden --annuler` puts every owner and mode back, and a new
# `harden` finishes the run (then `--annuler` still finds the owners from before the first one).


def _owners_modes(top: Path) -> dict[str, tuple[int, int, int]]:
    """Every owner under ``top``; the modes of the parents harden locks and of the home itself
    (inside the home, `--annuler` gives the owner back, not the modes: docs/security.md)."""
    outside = {"agent-home", "agent-home/.config", "agent-home/.config/opencode"}
    return {
        rel: (uid, gid, mode if rel in outside else -1)
        for rel, (uid, gid, mode, _) in _owners_modes_bytes(top).items()
    }


class Stop(Exception):
    """Where the table stops a run: raised as an error of ocmem's, of the disk's, or a kill."""


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
        real_walk = harden._walk

        def walk(root: Path) -> Any:
            for i, path in enumerate(real_walk(root)):
                if i == 5:
                    _raise(kind, f"chown {path}")
                yield path

        monkeypatch.setattr(harden, "_walk", walk)
    elif point == "the sudoers rule":
        _after_nth_call(monkeypatch, harden.Hardener, "_give_home", 1, kind)
    else:
        raise AssertionError(point)


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
    owner, agent = _users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = _agent_home(tmp_path, agent, clock)
    (top / ".config").chmod(0o700)  # modes the lock changes, to be put back exactly
    top.chmod(0o751)
    before = _owners_modes(top)
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
    after = _owners_modes(top)
    assert {rel: after[rel] for rel in before} == before
    for rel in set(after) - set(before):  # what the run made (.local/, the installer's files)
        assert after[rel][:2] == (agent.pw_uid, agent.pw_gid), rel
    assert not paths.hardened_file.exists()


@pytest.mark.parametrize("point", ["second parent locked", "in the installer", "the sudoers rule"])
def test_a_run_stopped_is_finished_by_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock, point: str
) -> None:
    """The next `harden` keeps the owners the stopped one recorded (not the root it left)."""
    owner, agent = _users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = _agent_home(tmp_path, agent, clock)
    (top / ".config").chmod(0o700)
    before = _owners_modes(top)
    try:
        with monkeypatch.context() as stopped:
            _stop_at(point, "tué", stopped, top)
            with pytest.raises(SystemExit):
                harden.harden(home, agent.pw_name, owner.pw_name, clock)
        done = harden.harden(home, agent.pw_name, owner.pw_name, clock)
        assert any("pending accept" in line for line in done.lines)
        assert top.stat().st_uid == 0 and home.stat().st_uid == owner.pw_uid
        harden.harden(home, None, "ocmem", clock, undo=True)
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)
    after = _owners_modes(top)
    assert {rel: after[rel] for rel in before} == before


def test_an_undo_stopped_half_way_can_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    owner, agent = _users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = _agent_home(tmp_path, agent, clock)
    before = _owners_modes(top)
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
    after = _owners_modes(top)
    assert {rel: after[rel] for rel in before} == before


def test_a_record_that_cannot_be_written_stops_the_run_before_any_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    owner, agent = _users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = _agent_home(tmp_path, agent, clock)
    before = _owners_modes_bytes(top)

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(harden, "write_record", full)
    try:
        with pytest.raises(OcmemError) as raised:
            harden.harden(home, agent.pw_name, owner.pw_name, clock)
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)
    assert "avant de changer le moindre propriétaire" in raised.value.render()
    assert _owners_modes_bytes(top) == before


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
        "an owner that is not a number",
    ],
)
def test_a_forged_record_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock, kind: str
) -> None:
    import json

    owner, agent = _users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = _agent_home(tmp_path, agent, clock)
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
    before = _owners_modes_bytes(top)
    try:
        for undo in (True, False):
            with pytest.raises(OcmemError) as refused:
                harden.harden(home, agent.pw_name, owner.pw_name, clock, undo=undo)
            assert "rien n'a été modifié" in refused.value.render()
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)
    assert _owners_modes_bytes(top) == before
    assert victim.exists() and victim.stat().st_uid == 0
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600


def test_a_record_with_another_name_elsewhere_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """A hard link to a root's file is not a record harden wrote there."""
    owner, agent = _users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    _, home = _agent_home(tmp_path, agent, clock)
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

    owner, agent = _users()
    top, home = _agent_home(tmp_path, agent, clock)
    (top / ".config").chmod(0o700)
    before = _owners_modes(top)
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
            now = _owners_modes(top)
            assert {rel: now[rel] for rel in before} == before, f"killed after {after} {n}"
        harden.harden(home, None, "ocmem", clock, undo=True)  # the run that went through
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)
    now = _owners_modes(top)
    assert {rel: now[rel] for rel in before} == before
    assert points >= 2, f"only {points} {after}(s) seen: the kill was never injected"
    print(f"\nharden kill table ({after}): {points} kill points, each undone exactly")
