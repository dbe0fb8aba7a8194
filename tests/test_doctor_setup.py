"""`ocmem doctor` sees the user's own set-up (issue 22): the home's identity, links out of the
home, the plugin's first call, OpenCode itself and the SilverBullet instance — each problem with
its fix, exit non-zero on errors."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import Clock, configure_sync
from ocmem.bridge import tools
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.outcome import Status
from ocmem.setup.doctor import diagnose


def doctor(home: Path, **env: str) -> tuple[Status, str]:
    full = {**os.environ, "OPENCODE_CONFIG_DIR": str(home), **env}
    report = diagnose(Workspace(load_settings(home), clock=Clock()), env=full)
    return report.status, report.render()


def test_a_healthy_synced_home_has_no_error(synced: Path) -> None:
    status, text = doctor(synced)
    assert status is Status.OK, text


def test_a_corrupt_identity_is_an_error(home: Path) -> None:
    (home / ".ocmem/home.json").write_text("{pas du json")
    status, text = doctor(home)
    assert status is Status.FAILED and "identité du dossier ocmem illisible" in text
    assert "ocmem init --id-dossier" in text


def test_an_identity_made_for_another_folder_is_an_error_with_sync(synced: Path) -> None:
    record = synced / ".ocmem/home.json"
    record.write_text(json.dumps({**json.loads(record.read_text()), "folder": "/ailleurs"}))
    status, text = doctor(synced)
    assert status is Status.FAILED and "créé ailleurs" in text


def test_a_memory_file_linked_outside_the_home_is_an_error(home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "ailleurs.md"
    outside.write_text("# Mémoire\n")
    memory = home / "memory/MEMORY.md"
    memory.unlink()
    memory.symlink_to(outside)
    status, text = doctor(home)
    assert status is Status.FAILED
    assert f"memory/MEMORY.md est un lien symbolique (vers {outside})" in text
    assert text.count("memory/MEMORY.md est un lien symbolique") == 1  # said once


def test_a_link_inside_the_home_is_named_too(home: Path) -> None:
    # ocmem follows no link below its home (ocmem.home.atomic), wherever it points
    (home / "skills/retrospective/notes.md").symlink_to(home / "memory/MEMORY.md")
    status, text = doctor(home)
    assert status is Status.FAILED
    assert "skills/retrospective/notes.md est un lien symbolique" in text, text


def test_a_plugin_config_call_that_fails_is_an_error(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any) -> None:
        raise ValueError("could not convert string to float: 'abc'")

    monkeypatch.setattr(tools, "plugin_config", broken)
    status, text = doctor(home)
    assert status is Status.FAILED and "le plugin ne peut pas lire ses réglages" in text


def test_a_damaged_window_index_does_not_break_the_plugins_call(home: Path) -> None:
    # It used to raise in plugin-config: OpenCode then ran on default settings.
    index = load_settings(home).paths.windows_index
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_text(json.dumps({"windows": [{"session": "s1", "start": "abc", "end": 1}]}))
    config = tools.plugin_config(load_settings(home), {})
    assert config["exposure_windows"] == []
    _, text = doctor(home)
    assert "réglages" not in text, text


def test_opencode_missing_is_an_error(home: Path) -> None:
    status, text = doctor(home, PATH="/nonexistent", HOME=str(home / "nobody"))
    assert status is Status.FAILED and "OpenCode est introuvable" in text
    assert "npm install -g opencode-ai@1.18.33" in text


def test_another_opencode_version_is_a_warning(home: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "other-bin"
    bin_dir.mkdir()
    program = bin_dir / "opencode"
    program.write_text("#!/bin/sh\necho 1.2.3\n")
    program.chmod(0o755)
    status, text = doctor(home, PATH=f"{bin_dir}:/usr/bin:/bin")
    assert status is Status.OK and "OpenCode 1.2.3" in text and "vérifié avec 1.18.33" in text


@pytest.fixture
def closed_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def test_silverbullet_unreachable_is_an_error(home: Path, closed_port: int) -> None:
    configure_sync(home, f"http://127.0.0.1:{closed_port}", timeout_seconds=2)
    status, text = doctor(home)
    assert status is Status.FAILED and "SilverBullet : SilverBullet injoignable" in text


def test_a_rejected_token_is_an_error(home: Path, sb: Any) -> None:
    configure_sync(home, sb.url, token="mauvais-jeton")
    status, text = doctor(home)
    assert status is Status.FAILED and "a refusé le jeton" in text


def test_an_unexpected_space_is_an_error(home: Path, sb: Any) -> None:
    configure_sync(home, sb.url, expect_space_path="Agents/Memory/MEMORY.md")
    status, text = doctor(home)
    assert status is Status.FAILED and "Agents/Memory/MEMORY.md" in text


def cron_installed(home: Path, run_cli: Any) -> None:
    done = run_cli("--home", str(home), "cron", "install")
    assert done.code == 0, done.err


def stamp(clock: Clock, minutes_ago: int) -> str:
    return f"{clock.utc() - timedelta(minutes=minutes_ago):%Y-%m-%dT%H:%M:%SZ}"


def test_a_scheduled_sync_failing_at_every_run_is_an_error(
    synced: Path, crontab: Path, run_cli: Any, clock: Clock
) -> None:
    cron_installed(synced, run_cli)
    (synced / ".ocmem/cron.log").write_text(
        f"Push : rien de nouveau\nocmem:fin sync 0 {stamp(clock, 50)}\n"
        f"ocmem : SilverBullet a refusé le jeton (401)\nocmem:fin sync 1 {stamp(clock, 35)}\n"
        f"ocmem : SilverBullet a refusé le jeton (401)\nocmem:fin sync 1 {stamp(clock, 20)}\n"
    )
    result = run_cli("doctor")
    assert result.code == 1
    assert "la synchronisation planifiée échoue : code 1" in result.out
    assert "2 échec(s) de suite — ocmem : SilverBullet a refusé le jeton (401)" in result.out
    assert "--wait 60 sync" in result.out  # the command to run by hand


def test_a_scheduled_sync_that_stopped_running_is_a_warning(
    synced: Path, crontab: Path, run_cli: Any, clock: Clock
) -> None:
    cron_installed(synced, run_cli)
    (synced / ".ocmem/cron.log").write_text(f"ocmem:fin sync 0 {stamp(clock, 24 * 60)}\n")
    result = run_cli("doctor")
    assert "cron ne la lance plus ?" in result.out, result.out
    (synced / ".ocmem/cron.log").write_text(f"ocmem:fin sync 0 {stamp(clock, 5)}\n")
    result = run_cli("doctor")
    assert "planifiée" not in result.out, result.out


def test_a_scheduled_sync_without_any_run_yet_is_a_warning(
    synced: Path, crontab: Path, run_cli: Any
) -> None:
    cron_installed(synced, run_cli)
    assert "n'a encore rien laissé" in run_cli("doctor").out
