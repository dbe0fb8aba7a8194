from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import CliResult, Clock, configure_sync

# A loopback address nothing listens on: the lines are built and run with fake programs, never
# sent anywhere.
URL = "http://127.0.0.1:9"


@pytest.fixture
def synced_home(home: Path) -> Path:
    configure_sync(home, URL)
    return home


def test_cron_install_is_idempotent_and_removable(
    synced_home: Path, crontab: Path, run_cli: Any
) -> None:
    first = run_cli("cron", "install", "--every", "10")
    assert first.code == 0 and "Crontab mise à jour" in first.out
    assert "Déjà en place" in run_cli("cron", "install", "--every", "10").out
    lines = crontab.read_text().splitlines()
    assert lines[0] == "0 3 * * * /usr/bin/backup # à l'utilisateur"
    assert (
        len(lines) == 2 and lines[1].startswith("*/10 * * * * OCMEM_HOME=") and "sync" in lines[1]
    )
    assert lines[1].endswith(f" # ocmem:sync {synced_home}")
    run_cli("cron", "install", "--every", "20")
    assert next(line for line in crontab.read_text().splitlines() if "ocmem" in line).startswith(
        "*/20 "
    )
    assert len(crontab.read_text().splitlines()) == 2
    assert "1 ligne(s) ocmem retirée(s)" in run_cli("cron", "remove").out
    assert crontab.read_text() == "0 3 * * * /usr/bin/backup # à l'utilisateur\n"


def test_cron_print_never_contains_the_token(
    home: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCMEM_SILVERBULLET_TOKEN", "secret-token-123456")
    result = run_cli("cron", "print")
    assert "secret-token-123456" not in result.out + result.err
    assert "n'existe pas pour cron" in result.err
    units = run_cli("cron", "print", "--systemd").out
    assert "OnCalendar=*:0/15" in units and "ExecStart=" in units and "secret" not in units


# --- a home full of shell characters ------------------------------------------------------

WEIRD = "mon dossier 100%d $HOME 'simple' \"double\" `tick` \\barre"
DUMP = """#!{python}
import json, os, sys
print(json.dumps({{"argv": sys.argv[1:], "home": os.environ.get("OCMEM_HOME")}}))
"""


def cron_command(field: str) -> tuple[str, str | None]:
    """What cron (cronie's do_command.c) hands to /bin/sh: ``\\%`` → ``%``; an unescaped ``%``
    ends the command (the rest becomes its standard input)."""
    out: list[str] = []
    escaped = False
    for i, ch in enumerate(field):
        if escaped:
            if ch == "%":
                out[-1] = "%"
            else:
                out.append(ch)
            escaped = False
            continue
        if ch == "%":
            return "".join(out), field[i + 1 :]
        out.append(ch)
        escaped = ch == "\\"
    return "".join(out), None


def systemd_argv(value: str, env: dict[str, str] | None = None) -> list[str]:
    """An ExecStart= value as systemd turns it into argv (systemd.service(5), systemd.syntax(7)):
    specifiers first (only ``%%`` allowed here), then words with quotes and C escapes, then
    ``$$``/``$VAR`` in each word."""
    import re

    assert not re.search(r"%[^%]", value.replace("%%", "")), f"unknown specifier in {value!r}"
    value = value.replace("%%", "%")
    words: list[str] = []
    i = 0
    escapes = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", " ": " "}
    while i < len(value):
        if value[i].isspace():
            i += 1
            continue
        word = []
        while i < len(value) and not value[i].isspace():
            ch = value[i]
            if ch in "\"'":
                end = i + 1
                while value[end] != ch:
                    if value[end] == "\\":
                        word.append(escapes[value[end + 1]])
                        end += 2
                    else:
                        word.append(value[end])
                        end += 1
                i = end + 1
            elif ch == "\\":
                word.append(escapes[value[i + 1]])
                i += 2
            else:
                word.append(ch)
                i += 1
        words.append("".join(word))
    env = env or {}

    def substitute(word: str) -> str:
        return re.sub(
            r"\$(\$|\{(\w+)\}|(\w+))",
            lambda m: "$" if m.group(1) == "$" else env.get(m.group(2) or m.group(3), ""),
            word,
        )

    return [substitute(w) for w in words]


@pytest.mark.real_clock
def test_cron_and_systemd_lines_run_with_a_home_full_of_shell_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import shutil
    import subprocess
    import sys

    from ocmem.home.settings import load_settings
    from ocmem.setup import schedule

    home = tmp_path / f"home {WEIRD}"
    (home / ".ocmem").mkdir(parents=True)
    program = tmp_path / "bin 50% $USER 'q'" / "ocmem"
    program.parent.mkdir()
    program.write_text(DUMP.format(python=sys.executable))
    program.chmod(0o755)
    real_which = shutil.which
    monkeypatch.setattr(
        "ocmem.setup.schedule.shutil.which",
        lambda name: str(program) if name == "ocmem" else real_which(name),
    )
    monkeypatch.delenv("OCMEM_SILVERBULLET_TOKEN_FILE", raising=False)
    settings = load_settings(home)
    expected = {"argv": ["--wait", "60", "sync"], "home": str(home)}

    line = schedule.cron_line(settings, 15)
    minutes, hours, days, months, weekdays, command = line.split(" ", 5)
    assert (minutes, hours, days, months, weekdays) == ("*/15", "*", "*", "*", "*")
    shell, stdin = cron_command(command)
    assert stdin is None, "an unescaped % would cut the command"
    subprocess.run(
        ["/bin/sh", "-c", shell], check=True, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    )
    ran, end = (home / ".ocmem/cron.log").read_text().splitlines()
    assert json.loads(ran) == expected  # the redirect worked too
    assert schedule.last_runs(end, "sync") == [(0, end.split()[-1])]  # and the run's end

    units = schedule.systemd_units(settings, 15)
    exec_start = next(x for x in units.splitlines() if x.startswith("ExecStart="))
    argv = systemd_argv(
        exec_start.removeprefix("ExecStart="), env={"HOME": "/nonexistent", "USER": "x"}
    )
    assert argv[:2] == ["/bin/sh", "-c"] and len(argv) == 3
    done = subprocess.run(
        argv, capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"}
    )
    assert json.loads(done.stdout) == expected
    if shutil.which("systemd-analyze"):
        service = tmp_path / "ocmem-sync.service"
        service.write_text(
            units.split("# ~/.config/systemd/user/ocmem-sync.timer")[0].split("\n", 1)[1]
        )
        verify = subprocess.run(
            ["systemd-analyze", "verify", str(service)], capture_output=True, text=True, check=False
        )
        assert verify.returncode == 0, verify.stderr


def test_a_backslash_right_before_a_percent_is_refused_for_cron(tmp_path: Path) -> None:
    from ocmem.errors import OcmemError
    from ocmem.home.settings import load_settings
    from ocmem.setup import schedule

    with pytest.raises(OcmemError, match="systemd"):
        schedule.cron_line(load_settings(tmp_path / "a\\%b"), 15)


# --- what cron really runs: from $HOME (here /), PATH=/usr/bin:/bin, none of our variables -----

FAKE = """#!{python}
import json, os, shutil, sys
print(json.dumps({{
    "program": os.path.basename(sys.argv[0]),
    "argv": sys.argv[1:],
    "cwd": os.getcwd(),
    "home": os.environ.get("OCMEM_HOME"),
    "config_dir": os.environ.get("OPENCODE_CONFIG_DIR"),
    "token_file": os.environ.get("OCMEM_SILVERBULLET_TOKEN_FILE"),
    "ocmem": shutil.which("ocmem"),
    "stdin": sys.stdin.read(),
}}))
"""
CRON_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "SHELL": "/bin/sh"}
ALL_JOBS = ("--job", "sync", "--job", "curation", "--job", "review")


def fake_programs(folder: Path, *names: str) -> Path:
    """Stand-ins for ocmem and opencode that say how they were started (JSON on stdout)."""
    import sys

    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_text(FAKE.format(python=sys.executable))
        (folder / name).chmod(0o755)
    return folder


@pytest.fixture
def tools(tmp_path: Path, crontab: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Fake ocmem and opencode first on PATH (after the fake crontab is there)."""
    import os

    folder = fake_programs(tmp_path / "outils", "ocmem", "opencode")
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    return folder


def ocmem_lines(crontab: Path) -> list[str]:
    return [line for line in crontab.read_text().splitlines() if "# ocmem:" in line]


def run_as_cron(line: str) -> None:
    """Run a crontab line's command the way cron does: sh -c, from /, with cron's PATH only."""
    import subprocess

    shell, stdin = cron_command(line.split(" ", 5)[5])
    assert stdin is None, "an unescaped % would cut the command"
    subprocess.run(
        ["/bin/sh", "-c", shell], cwd="/", env=CRON_ENV, stdin=subprocess.DEVNULL, check=True
    )


def records(path: Path) -> list[dict[str, Any]]:
    import json

    # The runs' own output (the stand-in programs dump what they got), not the sync's end records.
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines if not line.startswith("ocmem:fin ")]


@pytest.mark.real_clock
def test_every_job_runs_as_written_from_cron(
    synced_home: Path, tools: Path, crontab: Path, run_cli: Any
) -> None:
    from ocmem.home.shipped import data_root

    home = synced_home
    result = run_cli("cron", "install", *ALL_JOBS)
    assert result.code == 0, result
    sync, curation, review = ocmem_lines(crontab)
    assert sync.startswith("*/15 * * * * ") and sync.endswith(f" # ocmem:sync {home}")
    assert curation.startswith("0 7 * * 1 ") and curation.endswith(f" # ocmem:curation {home}")
    assert review.startswith("0 8 1 1,4,7,10 * ") and review.endswith(f" # ocmem:review {home}")
    # The prompt is the home's copy, not the one inside the Python install (an upgrade moves it).
    prompt = home / ".ocmem/prompts/curation-hebdomadaire.md"
    shipped = data_root() / "prompts/curation-hebdomadaire.md"
    assert prompt.read_bytes() == shipped.read_bytes()
    assert str(prompt) in curation and str(shipped) not in crontab.read_text()

    for line in (sync, curation, review):
        run_as_cron(line)
    [ran] = records(home / ".ocmem/cron.log")
    assert ran["program"] == "ocmem" and ran["argv"] == ["--wait", "60", "sync"]
    assert ran["home"] == str(home)
    [ran] = records(home / ".ocmem/curation.log")
    assert ran["program"] == "opencode" and ran["argv"] == ["run"] and ran["cwd"] == str(home)
    assert ran["stdin"] == shipped.read_text() and ran["home"] == str(home)
    assert ran["config_dir"] == str(home)  # not ~/.config/opencode: OpenCode must be told
    assert ran["ocmem"] == str(tools / "ocmem")  # the model's shell finds `ocmem`
    [report] = (home / ".ocmem").glob("revue-*.md")
    [ran] = records(report)
    assert ran["argv"] == ["--wait", "60", "review"] and ran["home"] == str(home)

    again = run_cli("cron", "install", *ALL_JOBS)
    assert "Déjà en place" in again.out and len(ocmem_lines(crontab)) == 3


@pytest.mark.real_clock
def test_a_relative_home_and_relative_programs_become_absolute(
    synced_home: Path, tools: Path, crontab: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quick start's `--home demo-home`: cron runs from $HOME, where that is another folder."""
    import os
    import shlex

    home = synced_home
    monkeypatch.chdir(home.parent)
    monkeypatch.delenv("OCMEM_HOME")
    monkeypatch.setenv("PATH", f"{tools.name}:{tmp_bin(crontab)}:/usr/bin:/bin")
    monkeypatch.setenv("OCMEM_SILVERBULLET_TOKEN_FILE", f"{home.name}/.ocmem/silverbullet.token")
    result = run_cli("--home", home.name, "cron", "install")
    assert result.code == 0, result
    [sync] = ocmem_lines(crontab)
    assert f"OCMEM_HOME={home} " in sync and f"OCMEM_HOME={home.name} " not in sync
    assert f"{tools}/ocmem --wait 60 sync" in sync
    assert result.out.splitlines()[0] == f"Crontab mise à jour pour {home} :"

    result = run_cli("--home", home.name, "cron", "install", *ALL_JOBS)
    assert result.code == 0, result
    lines = ocmem_lines(crontab)
    assert lines[0] == sync
    assert len(lines) == 3 and f"OCMEM_HOME={home.name}" not in crontab.read_text()
    for line in lines:
        for word in shlex.split(line.split(" ", 5)[5].split(" # ocmem:")[0]):
            value = word.split("=", 1)[1] if "=" in word.split("/")[0] else word
            for part in value.split(":") if word.startswith("PATH=") else [value]:
                assert "/" not in part or part.startswith("/"), (part, line)
    assert f"OCMEM_HOME={home}" in lines[0] and f"{tools}/ocmem" in lines[0]
    assert f"{tools}/opencode run" in lines[1]

    os.chdir("/")
    monkeypatch.delenv("OCMEM_SILVERBULLET_TOKEN_FILE")
    for line in lines:
        run_as_cron(line)
    [ran] = records(home / ".ocmem/cron.log")
    assert ran["home"] == str(home)
    assert ran["token_file"] == str(home / ".ocmem/silverbullet.token")
    [ran] = records(home / ".ocmem/curation.log")
    assert ran["cwd"] == str(home) and ran["ocmem"] == str(tools / "ocmem")


def tmp_bin(crontab: Path) -> Path:
    """Where the fake crontab is (conftest's ``crontab`` fixture)."""
    return crontab.parent / "bin"


def test_the_sync_job_is_refused_where_silverbullet_is_not_configured(
    home: Path, tools: Path, crontab: Path, run_cli: Any
) -> None:
    before = crontab.read_bytes()
    refused = run_cli("cron", "install")
    assert refused.code == 3
    assert "SilverBullet n'est pas configuré pour" in refused.err and str(home) in refused.err
    assert "rien n'a été installé" in refused.err
    assert "Correction :" in refused.err and str(home / "ocmem.yaml") in refused.err
    assert "cron install --tache curation --tache review" in refused.err
    refused = run_cli("cron", "install", *ALL_JOBS)  # one job refused: none installed
    assert refused.code == 3 and crontab.read_bytes() == before
    assert not (home / ".ocmem/prompts").exists()
    assert "SilverBullet n'est pas configuré" in run_cli("cron", "print").err

    done = run_cli("cron", "install", "--job", "curation", "--job", "review")
    assert done.code == 0, done
    assert [line.rsplit(" # ocmem:", 1)[1].split()[0] for line in ocmem_lines(crontab)] == [
        "curation",
        "review",
    ]


def test_each_home_has_its_own_block(
    synced_home: Path, tools: Path, crontab: Path, run_cli: Any, clock: Clock
) -> None:
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace
    from ocmem.setup.install import Installer

    first = synced_home
    second = first.parent / "second dossier"
    Installer(Workspace(load_settings(second), clock=clock), home_id="second").run()
    configure_sync(second, URL)
    user_line = "0 3 * * * /usr/bin/backup # à l'utilisateur"

    assert run_cli("cron", "install").code == 0
    assert run_cli("--home", str(second), "cron", "install", "--every", "30").code == 0
    assert run_cli("cron", "install", "--every", "20").code == 0
    assert run_cli("cron", "install", "--every", "20").code == 0
    lines = crontab.read_text().splitlines()
    assert len(lines) == 3 and lines[0] == user_line
    assert lines[1].startswith("*/20 ") and lines[1].endswith(f"# ocmem:sync {first}")
    assert lines[2].startswith("*/30 ") and lines[2].endswith(f"# ocmem:sync '{second}'")

    # The first home's curation joins its block; the second home's line stays where it was.
    assert run_cli("cron", "install", "--job", "curation").code == 0
    lines = crontab.read_text().splitlines()
    assert [line.rsplit(" # ocmem:", 1)[1] for line in lines[1:]] == [
        f"sync {first}",
        f"curation {first}",
        f"sync '{second}'",
    ]

    removed = run_cli("--home", str(second), "cron", "remove")
    assert (
        "1 ligne(s) ocmem retirée(s)" in removed.out and "2 ligne(s) ocmem d'autres" in removed.out
    )
    assert crontab.read_text().splitlines() == lines[:3]
    assert "Aucune ligne ocmem pour" in run_cli("--home", str(second), "cron", "remove").out
    assert run_cli("cron", "remove", "--job", "curation").code == 0
    assert crontab.read_text().splitlines() == lines[:2]
    assert run_cli("cron", "remove").code == 0
    assert crontab.read_text() == user_line + "\n"


def test_cron_remove_works_for_a_home_that_is_gone(
    synced_home: Path, tools: Path, crontab: Path, run_cli: Any
) -> None:
    import shutil

    assert run_cli("cron", "install").code == 0
    shutil.rmtree(synced_home)
    removed = run_cli("cron", "remove")
    assert removed.code == 0 and "1 ligne(s) ocmem retirée(s)" in removed.out
    assert ocmem_lines(crontab) == [] and not synced_home.exists()


def test_an_old_line_without_its_home_is_taken_over_only_for_its_home(
    synced_home: Path, tools: Path, crontab: Path, run_cli: Any
) -> None:
    """Lines of the previous release end with `# ocmem:sync` alone; cron ran them from $HOME."""
    ours = (
        "*/15 * * * * OCMEM_HOME=../ocmem-home /vieux/ocmem --wait 60 sync >> log 2>&1 # ocmem:sync"
    )
    theirs = "*/15 * * * * OCMEM_HOME=autre /vieux/ocmem --wait 60 sync >> log 2>&1 # ocmem:sync"
    crontab.write_text(f"{ours}\n0 3 * * * /usr/bin/backup\n{theirs}\n")
    assert (Path.home() / "../ocmem-home").resolve() == synced_home.resolve()
    done = run_cli("cron", "install")
    assert done.code == 0 and "1 ligne(s) ocmem d'autres dossiers" in done.out
    lines = crontab.read_text().splitlines()
    assert lines[0].endswith(f"# ocmem:sync {synced_home}") and lines[1:] == [
        "0 3 * * * /usr/bin/backup",
        theirs,
    ]
    crontab.write_text(f"{ours}\n{theirs}\n")
    assert run_cli("cron", "remove").code == 0
    assert crontab.read_text() == theirs + "\n"


@pytest.mark.real_clock
def test_the_curation_needs_opencode_found_or_given(
    home: Path, crontab: Path, tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    only_ocmem = fake_programs(tmp_path / "sans-opencode", "ocmem")
    elsewhere = fake_programs(tmp_path / "ailleurs", "opencode")
    monkeypatch.setenv("PATH", f"{only_ocmem}:{tmp_bin(crontab)}:/usr/bin:/bin")
    before = crontab.read_bytes()
    refused = run_cli("cron", "install", "--job", "curation")
    assert refused.code == 2 and "opencode introuvable dans le PATH" in refused.err
    assert "--opencode /chemin/vers/opencode" in refused.err
    assert crontab.read_bytes() == before and not (home / ".ocmem/prompts").exists()
    missing = run_cli("cron", "install", "--job", "curation", "--opencode", str(tmp_path / "x"))
    assert missing.code == 2 and "pas un programme exécutable" in missing.err
    assert run_cli("cron", "install", "--opencode", str(elsewhere / "opencode")).code == 2

    monkeypatch.chdir(tmp_path)
    given = run_cli("cron", "install", "--job", "curation", "--opencode", "ailleurs/opencode")
    assert given.code == 0, given
    [line] = ocmem_lines(crontab)
    assert f" {elsewhere}/opencode run < " in line
    run_as_cron(line)
    [ran] = records(home / ".ocmem/curation.log")
    assert ran["program"] == "opencode" and ran["ocmem"] == str(only_ocmem / "ocmem")


def test_the_prompt_copy_follows_the_shipped_one_and_keeps_a_changed_copy(
    home: Path, tools: Path, crontab: Path, run_cli: Any
) -> None:
    prompt = home / ".ocmem/prompts/curation-hebdomadaire.md"
    first = run_cli("cron", "install", "--job", "curation")
    assert f"Prompt de curation copié dans {prompt}" in first.out
    shipped = prompt.read_text()
    prompt.write_text("un ancien prompt\n")  # an older release's, or edited by hand
    again = run_cli("cron", "install", "--job", "curation")
    assert "Déjà en place" in again.out and "Prompt de curation mis à jour" in again.out
    assert prompt.read_text() == shipped
    [kept] = (home / ".ocmem/backups").rglob("curation-hebdomadaire.md")
    assert kept.read_text() == "un ancien prompt\n" and str(kept) in again.out
    assert "Prompt de curation" not in run_cli("cron", "install", "--job", "curation").out


@pytest.mark.parametrize("every", ["-5", "0", "60"])
def test_an_interval_out_of_range_is_a_usage_error_naming_the_french_option(
    home: Path, run_cli: Callable[..., CliResult], every: str
) -> None:
    done = run_cli("--home", str(home), "cron", "print", "--toutes-les", every)
    assert done.code == 2, done
    assert "--toutes-les doit être entre 1 et 59" in done.err and "--toutes-les 15" in done.err
