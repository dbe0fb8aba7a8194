"""A home for the tests that set the hardened mode up as root, with the two shared users
(tests/support/sharedusers.py): an installed home under a home folder of the agent's, and what
`harden --annuler` must give back."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from ocmem.clock import Clock

OWNER = os.environ.get("OCMEM_E2E_OWNER", "ocmem-e2e")
AGENT = os.environ.get("OCMEM_E2E_AGENT", "ocmem-e2e-agent")


def users() -> tuple[pwd.struct_passwd, pwd.struct_passwd]:
    if os.geteuid() != 0:
        pytest.skip("changes owners and /etc/sudoers.d: root only (CI)")
    try:
        return pwd.getpwnam(OWNER), pwd.getpwnam(AGENT)
    except KeyError:
        pytest.skip(f"users {OWNER} and {AGENT} missing (.ci/run creates them)")


def agent_home(tmp_path: Path, agent: pwd.struct_passwd, clock: Clock) -> tuple[Path, Path]:
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


def owners_modes_bytes(top: Path) -> dict[str, tuple[int, int, int, bytes | None]]:
    return {
        path.relative_to(top.parent).as_posix(): (
            path.lstat().st_uid,
            path.lstat().st_gid,
            path.lstat().st_mode,
            path.read_bytes() if path.is_file() and not path.is_symlink() else None,
        )
        for path in [top, *top.rglob("*")]
    }


def owners_modes(top: Path) -> dict[str, tuple[int, int, int]]:
    """Every owner and mode under ``top`` (what `harden --annuler` must give back)."""
    return {rel: (uid, gid, mode) for rel, (uid, gid, mode, _) in owners_modes_bytes(top).items()}
