"""OpenCode starts on the home without a registry (issue 22): `ocmem init` seeds what
OpenCode 1.18.33 checks before its start-up npm install (docs/opencode.md), leaves a user's own
package.json alone, and `doctor` says when a start would wait for the registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import Clock
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.setup.doctor import diagnose
from ocmem.setup.install import Installer
from ocmem.setup.opencodedir import PLUGIN_PACKAGE, registry_needed


def init(home: Path) -> Outcome:
    return Installer(Workspace(load_settings(home), clock=Clock())).run()


def doctor(home: Path) -> str:
    import os

    env = {**os.environ, "OPENCODE_CONFIG_DIR": str(home)}
    return diagnose(Workspace(load_settings(home), clock=Clock()), env=env).render()


def test_init_seeds_the_config_dir_so_opencode_needs_no_registry(tmp_path: Path) -> None:
    home = tmp_path / "h"
    report = init(home).render()
    assert (home / "node_modules").is_dir()
    lock = json.loads((home / "package-lock.json").read_text())
    assert PLUGIN_PACKAGE in lock["packages"][""]["dependencies"]
    assert not (home / "package.json").exists()
    assert registry_needed(home) is None
    assert f"rm -r {home / 'node_modules'}" in report
    assert "registre npm" not in doctor(home)


def test_a_users_package_json_is_left_alone_and_the_fix_named(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    package = json.dumps({"dependencies": {"left-pad": "1.3.0"}})
    (home / "package.json").write_text(package)
    report = init(home).render()
    assert (home / "package.json").read_text() == package
    assert not (home / "package-lock.json").exists() and not (home / "node_modules").exists()
    assert "npm install @opencode-ai/plugin@1.18.33" in report
    said = doctor(home)
    assert "OpenCode cherchera le registre npm" in said and "ton package.json" in said


@pytest.mark.parametrize(
    ("files", "why"),
    [
        ({}, "node_modules/ manque"),
        ({"node_modules/": ""}, "package-lock.json ne liste pas @opencode-ai/plugin"),
        (
            {
                "node_modules/": "",
                "package.json": '{"dependencies": {"x": "1"}}',
                "package-lock.json": '{"packages": {"": {"dependencies": {"@opencode-ai/plugin": "1"}}}}',
            },
            "package-lock.json ne liste pas x",
        ),
        (
            {"node_modules/": "", "package-lock.json": "{pas du json"},
            "package-lock.json est illisible",
        ),
        (
            {
                "node_modules/": "",
                "package-lock.json": '{"packages": {"": {"dependencies": {"@opencode-ai/plugin": "0.0.1"}}}}',
            },
            None,  # names only: OpenCode compares no version (Npm.checkDirty)
        ),
    ],
)
def test_when_opencode_would_try_the_registry(
    tmp_path: Path, files: dict[str, str], why: str | None
) -> None:
    for name, text in files.items():
        if name.endswith("/"):
            (tmp_path / name).mkdir()
        else:
            (tmp_path / name).write_text(text)
    assert registry_needed(tmp_path) == why


def test_doctor_says_when_the_seed_is_gone(tmp_path: Path) -> None:
    home = tmp_path / "h"
    init(home)
    (home / "package-lock.json").unlink()
    said = doctor(home)
    assert "✗ erreur : OpenCode cherchera le registre npm" in said and "ocmem init" in said
    init(home)
    assert "registre npm" not in doctor(home)
