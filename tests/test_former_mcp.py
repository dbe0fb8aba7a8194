"""``ocmem mcp`` is gone (issue 35): what is left of it. The entry ``ocmem mcp --installer``
wrote in the home's opencode.json is removed by ``init --mettre-a-jour`` and ``doctor
--reparer`` — that entry only —, doctor reports it while it stays, and the command itself says
where the space went (ocmem.setup.formermcp)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import CliResult
from ocmem.bridge import mcpdiscovery
from ocmem.home.settings import load_settings

GITHUB = {"type": "local", "command": ["npx", "github-mcp"], "enabled": True}


def installed_entry(home: Path) -> dict[str, Any]:
    """What ``ocmem mcp --installer`` wrote (the plugin's way of running ocmem, then
    ``--home <home> mcp``)."""
    program = json.loads((home / ".ocmem/plugin.json").read_text())["command"]
    return {"type": "local", "command": [*program, "--home", str(home), "mcp"], "enabled": True}


def write_config(home: Path, servers: dict[str, Any]) -> Path:
    config = home / "opencode.json"
    config.write_text(
        json.dumps({"$schema": "https://opencode.ai/config.json", "mcp": servers, "theme": "x"})
    )
    return config


@pytest.mark.parametrize(
    ("command", "former"),
    [
        (["/opt/ocmem/bin/ocmem", "--home", "{home}", "mcp"], True),  # hardened: no sudo
        ([sys.executable, "-m", "ocmem", "--home", "{home}", "mcp"], True),
        (["/moved/venv/bin/ocmem", "--home", "{home}", "mcp"], True),  # a moved virtualenv
        (["/opt/ocmem/bin/ocmem", "--home", "/another/home", "mcp"], False),
        (["/opt/ocmem/bin/ocmem", "--home", "{home}", "gate"], False),
        (["npx", "ocmem-mcp", "--home", "{home}", "mcp"], False),  # a server of the user's own
        (["--home", "{home}", "mcp"], False),
        ("ocmem --home {home} mcp", False),
    ],
)
def test_the_former_server_is_told_by_its_command(
    tmp_path: Path, command: list[str] | str, former: bool
) -> None:
    home = tmp_path / "h"
    filled = (
        [part.format(home=home) for part in command]
        if isinstance(command, list)
        else command.format(home=home)
    )
    assert mcpdiscovery.former_server({"type": "local", "command": filled}, home) is former


def test_the_command_says_where_the_space_went_and_changes_nothing(
    home: Path,
    run_cli: Callable[..., CliResult],
    files_snapshot: Callable[[], dict[str, bytes]],
) -> None:
    before = files_snapshot()
    for args in (["mcp"], ["mcp", "--installer"], ["mcp", "--retirer"]):
        done = run_cli("--home", str(home), *args)
        assert done.code == 3, done
        assert "ocmem mcp n'existe plus" in done.err and "space_read" in done.err, done.err
        assert "ocmem init --mettre-a-jour" in done.err
    assert files_snapshot() == before
    assert "mcp" not in run_cli("--help").out.split()


def test_init_names_the_entry_and_the_upgrade_removes_it_alone(
    home: Path, run_cli: Callable[..., CliResult]
) -> None:
    config = write_config(home, {"github": GITHUB, "ocmem": installed_entry(home)})
    servers, _ = mcpdiscovery.find(load_settings(home), dict(os.environ))
    assert servers == []  # ocmem's leftover, not a SilverBullet server of the user's

    plain = run_cli("--home", str(home), "init")
    assert plain.code == 0, plain
    assert "« mcp.ocmem »" in plain.out and "ocmem init --mettre-a-jour" in plain.out, plain.out
    assert "ocmem" in json.loads(config.read_text())["mcp"]
    doctor = run_cli("--home", str(home), "doctor")
    assert "« mcp.ocmem »" in doctor.out and "ocmem mcp, qui n'existe plus" in doctor.out

    upgraded = run_cli("--home", str(home), "init", "--mettre-a-jour")
    assert upgraded.code == 0, upgraded
    assert "entrée « mcp.ocmem » retirée" in upgraded.out, upgraded.out
    left = json.loads(config.read_text())
    assert left == {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {"github": GITHUB},
        "theme": "x",
    }
    assert list(left) == ["$schema", "mcp", "theme"]  # the file keeps its order
    undo = next(
        line.strip()
        for line in upgraded.out.splitlines()
        if "opencode.json" in line and line.strip().startswith("cp ")
    )
    backup = Path(undo.split()[1])
    assert "ocmem" in json.loads(backup.read_text())["mcp"]
    again = run_cli("--home", str(home), "doctor")
    assert "mcp.ocmem" not in again.out


def test_doctor_repairs_it_and_the_last_server_takes_the_section_with_it(
    home: Path, run_cli: Callable[..., CliResult]
) -> None:
    config = write_config(home, {"ocmem": installed_entry(home)})
    repaired = run_cli("--home", str(home), "doctor", "--reparer")
    assert "✓ réparé : entrée « mcp.ocmem » retirée" in repaired.out, repaired.out
    assert json.loads(config.read_text()) == {
        "$schema": "https://opencode.ai/config.json",
        "theme": "x",
    }


def test_a_server_of_the_users_own_named_ocmem_stays(
    home: Path, run_cli: Callable[..., CliResult]
) -> None:
    mine = {"type": "local", "command": ["npx", "mon-serveur"], "enabled": True}
    config = write_config(home, {"ocmem": mine})
    text = config.read_text()
    done = run_cli("--home", str(home), "init", "--mettre-a-jour")
    assert done.code == 0 and "mcp.ocmem" not in done.out, done
    assert config.read_text() == text
    assert "mcp.ocmem" not in run_cli("--home", str(home), "doctor").out


def test_an_entry_ocmem_did_not_write_is_left_to_the_human_with_the_file_to_edit(
    home: Path, run_cli: Callable[..., CliResult], isolated_env: Path
) -> None:
    """A home opencode.json with comments (the installer refused those: a person pasted it),
    and the global configuration of another folder: named, never rewritten."""
    entry = json.dumps(installed_entry(home))
    commented = home / "opencode.json"
    commented.write_text(f'{{\n  // mes serveurs\n  "mcp": {{"ocmem": {entry}}}\n}}\n')
    global_dir = isolated_env / "xdg_config_home/opencode"
    global_dir.mkdir(parents=True)
    (global_dir / "config.json").write_text(json.dumps({"mcp": {"ocmem": installed_entry(home)}}))
    before = commented.read_text(), (global_dir / "config.json").read_text()
    done = run_cli("--home", str(home), "init", "--mettre-a-jour")
    assert done.code == 0, done
    assert (commented.read_text(), (global_dir / "config.json").read_text()) == before
    doctor = run_cli("--home", str(home), "doctor", "--reparer")
    assert (commented.read_text(), (global_dir / "config.json").read_text()) == before
    for where in (commented, global_dir / "config.json"):
        assert f"retire « ocmem » de « mcp » dans {where}" in doctor.out, doctor.out
