"""`ocmem desinstaller` (issue 36): it shows what it will remove (the plugin, this home's cron
lines and systemd units, the OpenCode configuration entry ocmem added, the offline-start seed, the
AGENTS.md section, the retrospective skill, the hardened mode) and what it keeps (the memory,
copied into an archive folder it names), asks, does it, and a second run finds nothing to do.
What ocmem did not install — a user's own plugin, cron lines, units, opencode.json entries,
skills — stays. Run on a real home, with the test crontab and temporary folders, never the
user's."""

from __future__ import annotations

import io
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import CliResult, Clock, journal_fields
from ocmem.bridge import agentproc
from ocmem.home.paths import Paths
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from support.sharedusers import SHARED_USERS

pytestmark = SHARED_USERS

Run = Callable[..., CliResult]
USER_CRON = "0 3 * * * /usr/bin/backup # à l'utilisateur\n"
USER_PLUGIN = "export const Mine = async () => ({})\n"
USER_UNIT = "[Unit]\nDescription=le mien\n"
FAKE_SYSTEMCTL = """#!/bin/sh
echo "$@" >> "$SYSTEMCTL_CALLS"
"""


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (links as their target's name), byte for byte."""
    found: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            found[rel] = path.read_bytes()
    return found


@pytest.fixture
def systemctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A systemctl that records its calls (the user's own service manager is never asked)."""
    bin_dir = tmp_path / "systemctl-bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(FAKE_SYSTEMCTL)
    (bin_dir / "systemctl").chmod(0o755)
    calls = tmp_path / "systemctl-calls.txt"
    monkeypatch.setenv("SYSTEMCTL_CALLS", str(calls))
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return calls


@pytest.fixture
def installed(
    synced: Path,
    crontab: Path,
    systemctl: Path,
    memory: Memory,
    proposals: Proposals,
    clock: Clock,
    run_cli: Run,
) -> Path:
    """A home as a user has it after a few weeks: ocmem's pieces and the user's own, mixed."""
    home = synced
    refs = []
    for i in range(2):
        done = memory.add_journal(journal_fields(titre=f"Ports {i}", lecon="vérifier les ports"))
        refs.append(done.lines[0].removeprefix("Entrée ajoutée : "))
        clock.advance(hours=1)
    proposals.propose(
        {
            "type": "fait",
            "titre": "Ports",
            "contenu": "Vérifier les ports libres avant de déployer.",
            "sources": refs,
            "contradiction": "aucune",
            "remplace": "rien",
        }
    )
    proposals.accept("P-0001")
    memory.add_note("le service tourne sous Podman", None)
    (home / "skills/mon-skill").mkdir()
    (home / "skills/mon-skill/SKILL.md").write_text(
        "---\nname: mon-skill\ndescription: Le mien. Il reste.\n---\n\n# Le mien\n"
    )
    (home / "plugin/mine.ts").write_text(USER_PLUGIN)
    agents = home / "AGENTS.md"
    agents.write_text("# Mes règles\n\nToujours tester.\n\n" + agents.read_text())
    program = json.loads((home / ".ocmem/plugin.json").read_text())["command"]
    config = {
        "$schema": "https://opencode.ai/config.json",
        "theme": "tokyonight",
        "mcp": {
            "github": {"type": "local", "command": ["npx", "github-mcp"], "enabled": True},
            "ocmem": {
                "type": "local",
                "command": [*program, "--home", str(home), "mcp"],
                "enabled": True,
            },
        },
    }
    (home / "opencode.json").write_text(json.dumps(config, indent=2) + "\n")
    assert run_cli("cron", "install", "--tache", "sync", "--tache", "review").code == 0
    units = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user"
    units.mkdir(parents=True)
    printed = run_cli("cron", "print", "--systemd").out
    for name, body in re.findall(
        r"# ~/\.config/systemd/user/(\S+)\n(.*?)(?=\n# |\Z)", printed, re.S
    ):
        (units / name).write_text(body.strip() + "\n")
    (units / "timers.target.wants").mkdir()
    (units / "timers.target.wants/ocmem-sync.timer").symlink_to(units / "ocmem-sync.timer")
    (units / "mien.service").write_text(USER_UNIT)
    return home


def test_uninstall_removes_what_ocmem_installed_and_keeps_the_memory(
    installed: Path, crontab: Path, systemctl: Path, run_cli: Run, tmp_path: Path
) -> None:
    home = installed
    units = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user"
    memory_before = tree(home / "memory")
    skills_before = tree(home / "skills")
    state_before = tree(home / ".ocmem")
    config_before = json.loads((home / "opencode.json").read_text())
    assert "# ocmem:sync" in crontab.read_text() and "# ocmem:review" in crontab.read_text()

    done = run_cli("desinstaller", "--oui")
    assert done.code == 0, done.err
    said = done.out
    assert "Retiré :" in said and "Gardé" in said
    archive = next(
        Path(line.split(" : ", 1)[1]) for line in said.splitlines() if "dossier d'archive :" in line
    )
    assert archive.is_dir() and archive.parent == home.parent, said
    # Removed: exactly what ocmem installed.
    assert crontab.read_text() == USER_CRON
    assert not (home / "plugin/ocmem.ts").exists() and not (home / "plugin/ocmem").exists()
    assert (home / "plugin/mine.ts").read_text() == USER_PLUGIN
    assert not (home / "skills/retrospective").exists()
    agents = (home / "AGENTS.md").read_text()
    assert agents == "# Mes règles\n\nToujours tester.\n"
    config = json.loads((home / "opencode.json").read_text())
    assert (
        "ocmem" not in config["mcp"] and config["mcp"]["github"] == config_before["mcp"]["github"]
    )
    assert config["theme"] == "tokyonight"
    assert not (home / "node_modules").exists() and not (home / "package-lock.json").exists()
    assert not (units / "ocmem-sync.service").exists() and not (units / "ocmem-sync.timer").exists()
    assert not os.path.lexists(units / "timers.target.wants/ocmem-sync.timer")
    assert (units / "mien.service").read_text() == USER_UNIT
    calls = systemctl.read_text().splitlines()
    assert "--user disable --now ocmem-sync.timer" in calls and "--user daemon-reload" in calls
    assert not (home / ".ocmem").exists()
    # Kept: the memory where it was, and a copy in the archive, with ocmem's state.
    assert tree(home / "memory") == memory_before
    assert tree(home / "skills") == {
        k: v for k, v in skills_before.items() if "retrospective" not in k
    }
    assert tree(archive / "memory") == memory_before
    assert tree(archive / "skills") == skills_before
    state = tree(archive / "etat-ocmem")
    for name, data in state_before.items():  # all of it; the journals only grew
        assert state[name] == data or (name.endswith(".jsonl") and state[name].startswith(data))
    assert any(name.endswith("/plugin/ocmem.ts") for name in state)  # its backup, with the rest
    token = archive / "etat-ocmem/silverbullet.token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert (home / "ocmem.yaml").is_file()
    assert str(archive) in said and "pipx uninstall ocmem" in said

    # A second run finds nothing to do, and changes nothing (no state folder grows back).
    home_after, archives = tree(home), sorted(home.parent.glob("ocmem-archive-*"))
    calls_after = systemctl.read_text()
    again = run_cli("desinstaller", "--oui")
    assert again.code == 0, again.err
    assert "Rien à désinstaller" in again.out
    assert tree(home) == home_after and not (home / ".ocmem").exists()
    assert sorted(home.parent.glob("ocmem-archive-*")) == archives
    assert crontab.read_text() == USER_CRON and systemctl.read_text() == calls_after


def test_uninstall_shows_its_plan_and_asks(
    installed: Path,
    crontab: Path,
    run_cli: Run,
    monkeypatch: pytest.MonkeyPatch,
    clock: Clock,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from ocmem.cli.entry import main

    home = installed
    before, table = tree(home), crontab.read_text()
    refused = run_cli("desinstaller")  # no terminal, no --oui
    assert refused.code == 3 and "--oui" in refused.err
    assert "plugin/ocmem.ts" in refused.err and "crontab : 2 ligne(s)" in refused.err
    assert tree(home) == before and crontab.read_text() == table

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["desinstaller"], clock)
    shown = capsys.readouterr().out
    assert exit_info.value.code == 3 and "[o/N]" in shown and "memory/" in shown
    assert tree(home) == before and crontab.read_text() == table


def confirmed(
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    meanwhile: Callable[[], None],
) -> CliResult:
    """`ocmem desinstaller` in a terminal, the human answering « o » after ``meanwhile``
    happened while they read the plan."""
    import click

    from ocmem.cli.entry import main

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    def prompt(*args: object, **kwargs: object) -> str:
        meanwhile()
        return "o"

    monkeypatch.setattr(sys, "stdin", Terminal(""))
    monkeypatch.setattr(click, "prompt", prompt)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["desinstaller"], clock)
    said = capsys.readouterr()
    code = exit_info.value.code
    return CliResult(code if isinstance(code, int) else 1, said.out, said.err)


def archive_named(said: str) -> list[Path]:
    return [
        Path(line.split(" : ", 1)[1]) for line in said.splitlines() if "dossier d'archive" in line
    ]


def test_the_archive_folder_shown_is_the_one_used(
    installed: Path,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    done = confirmed(clock, monkeypatch, capsys, lambda: clock.advance(seconds=30))
    assert done.code == 0, done.err
    shown, used = archive_named(done.out)  # in the plan, then in what was done
    assert shown == used and sorted(installed.parent.glob("ocmem-archive-*")) == [used]


def test_a_home_changed_while_the_plan_is_read_is_refused_and_left_as_it_is(
    installed: Path,
    crontab: Path,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The plan shown would remove the shipped retrospective skill: edited by hand while the
    human reads, it is no longer ocmem's to remove, and nothing runs."""
    skill = installed / "skills/retrospective/SKILL.md"
    table = crontab.read_text()
    seen: dict[str, bytes] = {}

    def edited() -> None:
        skill.write_text(skill.read_text() + "\nMa règle à moi.\n")
        seen.update(tree(installed))

    refused = confirmed(clock, monkeypatch, capsys, edited)
    assert refused.code == 3 and "skills/retrospective/" in refused.out
    assert "a changé depuis que le plan t'a été montré" in refused.err
    assert "rien n'a été modifié" in refused.err and "relance `ocmem desinstaller`" in refused.err
    assert tree(installed) == seen and crontab.read_text() == table
    assert not list(installed.parent.glob("ocmem-archive-*"))


def test_an_archive_folder_taken_while_the_plan_is_read_is_refused(
    installed: Path,
    crontab: Path,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before, table = tree(installed), crontab.read_text()
    taken: list[Path] = []

    def taken_meanwhile() -> None:
        taken.extend(archive_named(capsys.readouterr().out))
        taken[0].mkdir()

    refused = confirmed(clock, monkeypatch, capsys, taken_meanwhile)
    assert refused.code == 3 and f"dossier d'archive {taken[0]} a été créé" in refused.err
    assert "rien n'a été modifié" in refused.err
    assert tree(installed) == before and crontab.read_text() == table
    assert sorted(installed.parent.glob("ocmem-archive-*")) == taken
    assert not list(taken[0].iterdir())


def test_a_home_without_its_state_folder_is_uninstalled_too(
    home: Path, crontab: Path, run_cli: Run
) -> None:
    """The run lock makes .ocmem/ again: not a change since the plan was shown."""
    assert run_cli("cron", "install", "--tache", "review").code == 0
    shutil.rmtree(home / ".ocmem")
    done = run_cli("desinstaller", "--oui")
    assert done.code == 0, done.err
    assert "# ocmem:review" not in crontab.read_text() and not (home / "plugin/ocmem.ts").exists()
    assert not (home / ".ocmem").exists()


def test_uninstall_is_refused_to_the_agent_and_while_opencode_runs(
    installed: Path, crontab: Path, run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = installed
    before, table = tree(home), crontab.read_text()
    monkeypatch.setenv(agentproc.AGENT_ENV, "ses_model")
    refused = run_cli("desinstaller", "--oui")
    assert refused.code == 3 and "shell du modèle" in refused.err
    monkeypatch.delenv(agentproc.AGENT_ENV)
    opencode = subprocess.Popen(["sleep", "30"])
    try:
        found = agentproc.read_proc(opencode.pid)
        assert found is not None
        agentproc.register(Paths(home), found, found)
        refused = run_cli("desinstaller", "--oui")
        assert refused.code == 3 and f"processus {opencode.pid}" in refused.err
        assert "ferme" in refused.err
    finally:
        opencode.kill()
        opencode.wait()
    assert {k: v for k, v in tree(home).items() if "/agents/" not in k} == {
        k: v for k, v in before.items() if "/agents/" not in k
    }
    assert crontab.read_text() == table


def test_a_hardened_home_needs_root_to_uninstall(
    home: Path, run_cli: Run, monkeypatch: pytest.MonkeyPatch, unchanged: None
) -> None:
    (home / ".ocmem/hardened.json").write_text('{"agent": "x", "owner": "y"}\n')
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    refused = run_cli("desinstaller", "--oui")
    assert refused.code == 3 and "mode durci" in refused.err and "sudo" in refused.err


def test_a_modified_retrospective_and_foreign_seed_are_kept(
    home: Path, crontab: Path, run_cli: Run
) -> None:
    skill = home / "skills/retrospective/SKILL.md"
    skill.write_text(skill.read_text() + "\nMa règle à moi.\n")
    (home / "package-lock.json").write_text('{"lockfileVersion": 3, "packages": {"": {}}}\n')
    done = run_cli("desinstaller", "--oui")
    assert done.code == 0, done.err
    assert skill.is_file() and "Ma règle à moi." in skill.read_text()
    assert (home / "package-lock.json").is_file()
    assert "skills/retrospective/SKILL.md" in done.out and "gardé" in done.out


OWNER = os.environ.get("OCMEM_E2E_OWNER", "ocmem-e2e")
AGENT = os.environ.get("OCMEM_E2E_AGENT", "ocmem-e2e-agent")


def test_uninstall_undoes_the_hardened_mode_as_root(
    tmp_path: Path, crontab: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock, run_cli: Run
) -> None:
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace
    from ocmem.setup import harden
    from ocmem.setup.hardrecord import sudoers_file
    from ocmem.setup.install import Installer

    if os.geteuid() != 0:
        pytest.skip("changes owners and /etc/sudoers.d: root only (CI)")
    try:
        owner, agent = pwd.getpwnam(OWNER), pwd.getpwnam(AGENT)
    except KeyError:
        pytest.skip(f"users {OWNER} and {AGENT} missing (.ci/run creates them)")
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    top = tmp_path / "agent-home"
    home = top / ".config" / "opencode"
    home.mkdir(parents=True)
    tmp_path.chmod(0o755)
    Installer(Workspace(load_settings(home), clock=clock), home_id="durci").run()
    for path in (top, top / ".config", *[home, *home.rglob("*")]):
        os.chown(path, agent.pw_uid, agent.pw_gid, follow_symlinks=False)
    rule = sudoers_file(agent.pw_name)
    monkeypatch.setenv("OCMEM_HOME", str(home))
    try:
        harden.harden(home, agent.pw_name, owner.pw_name, Clock())
        assert rule.exists()
        done = run_cli("desinstaller", "--oui")
        assert done.code == 0, done.err
        assert not rule.exists() and "sudoers" in done.out
        assert not (home / "plugin/ocmem.ts").exists() and not (home / ".ocmem").exists()
        for path in [top, top / ".config", home, *home.rglob("*")]:
            assert path.lstat().st_uid == agent.pw_uid, path
        archive = next(home.parent.glob("ocmem-archive-*"))
        for path in [archive, *archive.rglob("*")]:
            assert path.lstat().st_uid == agent.pw_uid, path
        again = run_cli("desinstaller", "--oui")
        assert again.code == 0 and "Rien à désinstaller" in again.out
    finally:
        rule.unlink(missing_ok=True)


def test_only_this_homes_units_are_ocmems(home: Path, tmp_path: Path, run_cli: Run) -> None:
    from ocmem.home.settings import load_settings
    from ocmem.setup import schedule

    units = tmp_path / "units"
    units.mkdir()
    settings = load_settings(home)
    printed = schedule.systemd_units(settings, 15)
    service, timer = (part.split("\n", 1)[1] for part in printed.split("\n\n# ~/")[0:2])
    (units / "ocmem-sync.service").write_text(service.replace(str(home), "/autre/dossier"))
    (units / "ocmem-sync.timer").write_text(timer)
    assert schedule.installed_units(settings, units) == []  # another home's: not this one's
    (units / "ocmem-sync.service").write_text(service)
    assert schedule.installed_units(settings, units) == [
        units / "ocmem-sync.service",
        units / "ocmem-sync.timer",
    ]
    (units / "ocmem-sync.service").write_text(USER_UNIT + f"ExecStart=/bin/true {home}\n")
    assert schedule.installed_units(settings, units) == []  # the user's own, under that name
