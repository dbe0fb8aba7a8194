"""OpenCode 2 said plainly (issue 37): it does not load ocmem's plugin (an OpenCode 1 plugin), so
``ocmem init`` says so and ``ocmem doctor`` fails, each naming what is lost and how to stay on or
go back to OpenCode 1.x; with 1.18.33 nothing changes. A stand-in ``opencode`` on the PATH prints
the version (no OpenCode 2 can be installed here)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import CliResult
from ocmem.bridge.mcpdiscovery import Source
from ocmem.setup.opencodedir import CHECKED_OPENCODE
from ocmem.setup.opencodeversion import (
    OpenCodeSeen,
    inspect,
    major_of,
    parse_version,
    v2_configs,
)

FIX = f"npm install -g opencode-ai@{CHECKED_OPENCODE}"


@pytest.mark.parametrize(
    ("printed", "version", "major"),
    [
        ("opencode v2.2.7\n", "2.2.7", 2),
        ("2.2.7", "2.2.7", 2),
        ("v2.0.0-beta.3", "2.0.0", 2),
        ("1.18.33\n", "1.18.33", 1),
        ("opencode 10.1", "10.1", 10),
        ("OpenCode (build 2026-11-02) 2.2.7", "2.2.7", 2),
        ("", None, None),
        ("usage: opencode [options]", None, None),
    ],
)
def test_the_version_is_read_from_what_opencode_prints(
    printed: str, version: str | None, major: int | None
) -> None:
    assert parse_version(printed) == version
    assert major_of(parse_version(printed)) == major


def test_a_configuration_is_opencode_2s_by_its_plugins_key() -> None:
    sources = [
        Source("/a/opencode.json", '{"plugins": ["./x"]}'),
        Source("/b/opencode.jsonc", '// mine\n{"plugin": ["./x"], "mcp": {}}'),
        Source("/c/opencode.json", "{pas du json"),
        Source("OPENCODE_CONFIG_CONTENT", '{"mcp": {"plugins": {}}}'),  # a server's name
    ]
    assert v2_configs(sources) == ["/a/opencode.json"]


def test_opencode_2_is_blocking_and_says_what_is_lost_and_the_way_back() -> None:
    found = OpenCodeSeen(Path("/usr/bin/opencode"), "opencode v2.2.7").opencode2()
    assert found is not None and found.blocking
    assert found.what.startswith("OpenCode 2.2.7 (/usr/bin/opencode) : le plugin d'ocmem tourne")
    assert "OpenCode 2 ne charge pas les plugins V1" in found.what
    assert "la rétrospective" in found.lost and "outils memory_*" in found.lost
    assert FIX in found.fix and "opencode upgrade --major" in found.fix
    assert OpenCodeSeen(Path("/usr/bin/opencode"), "3.0.0").opencode2() is not None


def test_opencode_1_is_not_opencode_2() -> None:
    for printed in (CHECKED_OPENCODE, "1.19.3", "0.15.0", ""):
        assert OpenCodeSeen(Path("/usr/bin/opencode"), printed).opencode2() is None
    assert OpenCodeSeen().opencode2() is None


def test_a_homebrew_opencode_is_uninstalled_there_first(tmp_path: Path) -> None:
    cellar = tmp_path / "Cellar/opencode/2.2.7/bin"
    cellar.mkdir(parents=True)
    (cellar / "opencode").write_text("")
    (tmp_path / "opencode").symlink_to(cellar / "opencode")
    found = OpenCodeSeen(tmp_path / "opencode", "2.2.7").opencode2()
    assert found is not None and found.fix.startswith("`brew uninstall opencode`")


def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, printed: str) -> Path:
    """An ``opencode`` first on the PATH that prints ``printed`` for ``--version``."""
    folder = tmp_path / "opencode2-bin"
    folder.mkdir()
    program = folder / "opencode"
    program.write_text(f"#!/bin/sh\n[ \"$1\" = --version ] && echo '{printed}' && exit 0\nexit 2\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return program


@pytest.mark.parametrize("printed", ["opencode v2.2.7", "2.2.7"])
def test_doctor_fails_on_opencode_2_and_names_the_fix(
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: Any,
    printed: str,
) -> None:
    monkeypatch.setenv("OPENCODE_CONFIG_DIR", str(home))
    healthy: CliResult = run_cli("doctor")
    assert healthy.code == 0 and "OpenCode 2" not in healthy.out, healthy.out
    program = stand_in(tmp_path, monkeypatch, printed)
    done: CliResult = run_cli("doctor")
    assert done.code == 1, done.out
    assert f"✗ erreur : OpenCode 2.2.7 ({program}) : le plugin d'ocmem tourne sur OpenCode 1.x" in (
        done.out
    )
    assert FIX in done.out and "Bilan : 1 erreur(s)" in done.out
    assert "une autre version peut ne pas charger" not in done.out  # said once, plainly


def test_init_says_it_and_installs_all_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Any
) -> None:
    stand_in(tmp_path, monkeypatch, "opencode v2.2.7")
    fresh = tmp_path / "fresh"
    done: CliResult = run_cli("--home", str(fresh), "init")
    assert done.code == 0, done.err
    note = done.out.split("\n\n")[1]
    assert note.startswith("✗ OpenCode 2.2.7"), done.out
    assert "Sans le plugin :" in note and FIX in note
    assert (fresh / "plugin/ocmem.ts").is_file()  # ready for the day OpenCode 1.x runs it


def test_init_with_the_checked_opencode_says_nothing_of_it(tmp_path: Path, run_cli: Any) -> None:
    done: CliResult = run_cli("--home", str(tmp_path / "fresh"), "init")
    assert done.code == 0 and "OpenCode 2" not in done.out and "OpenCode 1" not in done.out


def test_a_configuration_for_opencode_2_is_a_warning_with_opencode_1(
    home: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Any
) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "opencode/opencode.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"plugins": ["./ocmem"]}))
    monkeypatch.setenv("OPENCODE_CONFIG_DIR", str(home))
    done: CliResult = run_cli("doctor")
    assert done.code == 0, done.out
    assert f"⚠ avertissement : {config} utilise la clé « plugins » d'OpenCode 2" in done.out
    assert inspect(dict(os.environ), home).v2_configs == (str(config),)
