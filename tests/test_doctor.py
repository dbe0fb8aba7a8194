from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from conftest import SB_TOKEN, Clock, configure_sync
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace, open_workspace
from ocmem.outcome import Status
from ocmem.services import sync
from ocmem.setup.doctor import Doctor, diagnose, plugin_load_problems


def whats(home: Path) -> list[str]:
    env = {"OCMEM_HOME": str(home), "OPENCODE_CONFIG_DIR": str(home)}
    return [p.what for p in Doctor(open_workspace(home, env=env, clock=Clock()), env=env).run()]


def test_a_fresh_install_is_healthy(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = diagnose(
        Workspace(load_settings(home), clock=Clock()),
        env={
            "OPENCODE_CONFIG_DIR": str(home),
            "PATH": f"{os.environ['PATH'].split(os.pathsep)[0]}:/usr/bin:/bin",
        },
    )
    assert report.status is Status.OK, report.render()


def test_every_problem_names_its_fix(home: Path) -> None:
    (home / "memory/pending.md").unlink()
    (home / "memory/MEMORY.md").write_text("# M\n\n" + "- fait\n" * 400)
    (home / "memory/SHORT_TERM.md").write_text("[2020-01-01 → expire 2020-01-02] vieille\n")
    (home / "skills/bad").mkdir()
    (home / "skills/bad/SKILL.md").write_text("---\nname: autre\n---\n")
    (home / "memory/.journal.md.x.ocmem-tmp").write_text("reste")
    (home / "AGENTS.md").write_text("# Mes règles\n")
    report = diagnose(Workspace(load_settings(home), clock=Clock()), env={})
    text = report.render()
    for expected in [
        "memory/pending.md manque",
        "MEMORY.md dépasse son plafond",
        "1 note(s) expirée(s)",
        "skill bad : name 'autre'",
        "fichier temporaire",
        "section « Mémoire et apprentissage »",
        "n'est pas un dossier de configuration d'OpenCode",
    ]:
        assert expected in text, expected
    assert all(p.fix for p in Doctor(Workspace(load_settings(home), clock=Clock()), env={}).run())
    assert report.status is Status.FAILED


def test_fix_repairs_only_safe_things_with_a_backup(home: Path) -> None:
    (home / "memory/pending.md").unlink()
    (home / "memory/SHORT_TERM.md").write_text(
        "[2020-01-01 → expire 2020-01-02] vieille\n[2099-01-01 → expire 2099-01-02] future\n"
    )
    (home / "memory/MEMORY.md").write_text("# M\n\n" + "- fait\n" * 400)
    report = diagnose(
        Workspace(load_settings(home), clock=Clock()),
        env={"OPENCODE_CONFIG_DIR": str(home)},
        fix=True,
    )
    assert report.render().count("✓ réparé") == 2
    assert (home / "memory/pending.md").exists()
    assert (
        home / "memory/SHORT_TERM.md"
    ).read_text() == "[2099-01-01 → expire 2099-01-02] future\n"
    assert "vieille" in next((home / ".ocmem/backups").rglob("SHORT_TERM.md")).read_text()
    assert "MEMORY.md dépasse son plafond" in report.render()  # never "fixed" by deleting facts
    assert len((home / "memory/MEMORY.md").read_text().splitlines()) == 402


def test_sync_checks_token_permissions_and_drift(home: Path, sb: Any) -> None:
    configure_sync(home, sb.url)
    sb.write("Agents/Memory/MEMORY.md", "# Mémoire\n\n- fait\n")
    sync.pull(Workspace(load_settings(home), clock=Clock()))
    target = home / "memory/MEMORY.md"
    target.chmod(0o644)
    target.write_text("édité à la main\n")
    (home / ".ocmem/silverbullet.token").chmod(0o644)
    found = whats(home)
    assert any("modifié à la main depuis le pull" in w for w in found)
    assert any("lisible par d'autres" in w for w in found)
    env = {"OPENCODE_CONFIG_DIR": str(home)}
    report = diagnose(open_workspace(home, env=env, clock=Clock()), env=env, fix=True)
    assert (home / ".ocmem/silverbullet.token").stat().st_mode & 0o777 == 0o600
    assert "modifié à la main" in report.render()  # proposed, not forced
    assert (home / ".ocmem/silverbullet.token").read_text().strip() == SB_TOKEN


def test_plugin_checks(home: Path) -> None:
    plugin = home / "plugin/ocmem.ts"
    plugin.write_text("// ancienne version\n")
    assert any("diffère de celui de cette version" in w for w in whats(home))
    (home / ".ocmem/plugin.json").write_text(json.dumps({"command": ["/nulle/part/python"]}))
    assert any("qui n'existe plus" in w for w in whats(home))


def test_cli_exit_codes(home: Path, run_cli: Any, clock: Clock) -> None:
    (home / "memory/MEMORY.md").write_text("# M\n\n" + "- fait\n" * 400)
    result = run_cli("doctor")
    assert result.code == 1 and "→ consolide MEMORY.md" in result.out


# --- did OpenCode load the plugin? (OpenCode says so only in its log) -------------------------

START = "2026-11-30T10:00:00.000Z"


def opencode_log(home: Path, run: str = "r1", extra: str = "") -> str:
    lines = [
        f'timestamp={START} level=INFO run={run} message="creating instance" directory=/p',
        f"timestamp=2026-11-30T10:00:00.100Z level=INFO run={run} message=loading path={home}/opencode.json",
    ]
    if extra:
        lines.append(f'timestamp=2026-11-30T10:00:01.000Z level=ERROR run={run} message="{extra}"')
    return "\n".join(lines) + "\n"


LATER = datetime(2026, 11, 30, 10, 5, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("extra", "seen", "now", "expected"),
    [
        ("", "2026-11-30T10:00:02+00:00", LATER, None),  # the plugin announced itself
        ("", None, datetime(2026, 11, 30, 10, 0, 30, tzinfo=timezone.utc), None),  # still starting
        ("", None, LATER, "aucune erreur dans son journal"),
        ("", "2026-11-29T09:00:00+00:00", LATER, "aucune erreur"),  # seen, but by an older run
        (
            "passerelle ocmem fermée : spawn /gone/ocmem ENOENT",
            None,
            LATER,
            "spawn /gone/ocmem ENOENT",
        ),
        (
            "failed to load plugin path=file:///x/plugin/ocmem.ts",
            None,
            LATER,
            "failed to load plugin",
        ),
    ],
)
def test_a_plugin_opencode_did_not_load_is_reported(
    home: Path, extra: str, seen: str | None, now: datetime, expected: str | None
) -> None:
    found = plugin_load_problems(opencode_log(home, extra=extra), home, seen, now)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0] and str(home) in found[0]


def test_runs_with_another_config_dir_are_ignored(home: Path, tmp_path: Path) -> None:
    assert plugin_load_problems(opencode_log(tmp_path / "elsewhere"), home, None, LATER) == []


def test_doctor_reads_opencode_log_and_reports_the_cause(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = home.parent / "data"
    (data / "opencode/log").mkdir(parents=True)
    (data / "opencode/log/2026-11-30T100000.log").write_text(
        opencode_log(home, extra="passerelle ocmem fermée : code 127")
    )
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    five_minutes_after_the_start = Clock(LATER.astimezone().replace(tzinfo=None))
    report = diagnose(Workspace(load_settings(home), clock=five_minutes_after_the_start)).render()
    assert "sans charger le plugin ocmem : passerelle ocmem fermée : code 127" in report


def test_quarantined_files_are_reported(home: Path) -> None:
    aside = home / ".ocmem/quarantine/2026-11-30T10-00-00-000Z/memory/MEMORY.md"
    aside.parent.mkdir(parents=True)
    aside.write_text("- faux\n")
    report = diagnose(Workspace(load_settings(home), clock=Clock())).render()
    assert "1 fichier(s) modifiés hors d'ocmem" in report and "rm -r" in report
