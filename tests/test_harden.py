"""`ocmem harden`: what it refuses before changing anything, and (as root, with the test users)
the set-up it makes and undoes. The hardened mode against a model is in tests/e2e/."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import CliResult, Clock
from ocmem.errors import Refused
from ocmem.home import gateenv
from ocmem.home.paths import Paths
from ocmem.setup import harden
from ocmem.setup.harden import carried_config, replaceable, sudoers_rule, writable_by
from ocmem.setup.hardrecord import sudoers_file
from support.hardenhome import agent_home, owners_modes_bytes, users
from support.sharedusers import SHARED_USERS

pytestmark = SHARED_USERS

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


def test_harden_then_undo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    owner, agent = users()
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


def test_a_setting_it_cannot_carry_is_refused_before_any_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """Refused after the parents were given to root and the home installed, it said « rien n'a
    été modifié »: now decided by ``check``, before the first change."""
    owner, agent = users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = agent_home(tmp_path, agent, clock)
    (home / "ocmem.yaml").write_text("silverbullet: {inbox: Boite/}\n")  # flow style
    os.chown(home / "ocmem.yaml", agent.pw_uid, agent.pw_gid)
    before = owners_modes_bytes(top)
    try:
        with pytest.raises(Refused) as refused:
            harden.harden(
                home, agent.pw_name, owner.pw_name, clock, env={"OCMEM_SILVERBULLET_URL": URL}
            )
    finally:
        sudoers_file(agent.pw_name).unlink(missing_ok=True)  # had it gone through
    said = refused.value.render()
    assert "ne sait pas y ajouter `url`" in said and "rien n'a été modifié" in said
    assert owners_modes_bytes(top) == before


def test_a_crash_while_hardening_leaves_the_home_before_or_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """The carried setting, the record and the plugin's command land as a whole: a run killed
    between them leaves an intent record the next ocmem run completes."""
    from ocmem.home.atomic import atomic_write
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace

    owner, agent = users()
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top, home = agent_home(tmp_path, agent, clock)
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
