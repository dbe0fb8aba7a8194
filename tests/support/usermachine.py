"""A user's machine for ``ocmem essai`` (tests/test_essai.py, tests/e2e/test_essai_e2e.py): a
HOME with OpenCode's configuration in it, ``crontab`` and ``systemctl`` that log any call, a
PATH without OpenCode unless one is given; and the command run there as the user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def user_machine(tmp_path: Path, opencode: Path | None = None) -> tuple[dict[str, str], Path]:
    """A user's environment: HOME with OpenCode's configuration and a shell file in it, a
    ``crontab`` and a ``systemctl`` that log any call, a PATH with ``opencode`` only when one is
    given (as an install puts it on the PATH)."""
    home = tmp_path / "maison"
    (home / ".config" / "opencode").mkdir(parents=True)
    (home / ".config" / "opencode" / "opencode.json").write_text('{"model": "le-mien"}\n')
    (home / ".config" / "opencode" / "AGENTS.md").write_text("# Mes consignes\n")
    (home / ".bashrc").write_text("export EDITOR=vi\n")
    tools = tmp_path / "outils"
    tools.mkdir()
    for name in ("crontab", "systemctl"):
        program = tools / name
        program.write_text(f'#!/bin/sh\necho "{name} $*" >> {tmp_path}/appels.log\n')
        program.chmod(0o755)
    if opencode is not None:
        (tools / "opencode").symlink_to(opencode)
    path = [str(tools)] + [
        d for d in os.environ["PATH"].split(os.pathsep) if d and not (Path(d) / "opencode").exists()
    ]
    (tmp_path / "tmp").mkdir()
    env = {
        "PATH": os.pathsep.join(path),
        "HOME": str(home),
        "TMPDIR": str(tmp_path / "tmp"),
        "LANG": "C.UTF-8",
    }
    return env, home


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"", p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


def essai(
    env: dict[str, str], *args: str, home: Path | None = None, timeout: float = 120
) -> tuple[int, dict[str, Any]]:
    where = ["--home", str(home)] if home else []
    done = subprocess.run(
        [sys.executable, "-m", "ocmem", *where, "essai", "--json", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout)


def results(document: dict[str, Any]) -> dict[int, str]:
    return {t["numero"]: t["resultat"] for t in document["tests"]}


def broken(tmp_path: Path, source: str) -> dict[str, str]:
    """The environment's addition that runs ``source`` at the start of every Python process of
    the run (a ``sitecustomize`` on PYTHONPATH): ocmem broken on purpose."""
    folder = tmp_path / "casse"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(source)
    return {"PYTHONPATH": str(folder)}
