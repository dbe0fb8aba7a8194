"""`ocmem harden`: what it refuses before changing anything, and (as root, with the test users)
the set-up it makes and undoes. The hardened mode against a model is in tests/e2e/."""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import CliResult, Clock
from ocmem.setup import harden
from ocmem.setup.harden import replaceable, sudoers_rule, writable_by
from support.sharedusers import SHARED_USERS

pytestmark = SHARED_USERS

OWNER = os.environ.get("OCMEM_E2E_OWNER", "ocmem-e2e")
AGENT = os.environ.get("OCMEM_E2E_AGENT", "ocmem-e2e-agent")


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
    rule = harden.sudoers_file(agent.pw_name)
    try:
        done = harden.harden(home, agent.pw_name, owner.pw_name, Clock())
        assert any("pending accept" in line for line in done.lines)
        assert top.stat().st_uid == 0 and not top.stat().st_mode & 0o022
        assert (top / ".config").stat().st_uid == 0
        assert (top / ".local" / "share").stat().st_uid == agent.pw_uid  # OpenCode's data stays its
        for path in [home, *home.rglob("*")]:
            assert path.lstat().st_uid == owner.pw_uid, path
            assert not path.lstat().st_mode & 0o022 or path.is_symlink(), path
        assert stat.S_IMODE((home / ".ocmem").stat().st_mode) == 0o711
        assert stat.S_IMODE((home / ".ocmem/plugin.json").stat().st_mode) == 0o644
        assert stat.S_IMODE((home / ".ocmem/hardened.json").stat().st_mode) == 0o600
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
