from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def test_cron_install_is_idempotent_and_removable(home: Path, crontab: Path, run_cli: Any) -> None:
    first = run_cli("cron", "install", "--every", "10")
    assert first.code == 0 and "Ajouté" in first.out
    assert "Déjà en place" in run_cli("cron", "install", "--every", "10").out
    lines = crontab.read_text().splitlines()
    assert lines[0] == "0 3 * * * /usr/bin/backup # à l'utilisateur"
    assert (
        len(lines) == 2 and lines[1].startswith("*/10 * * * * OCMEM_HOME=") and "sync" in lines[1]
    )
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
    assert json.loads((home / ".ocmem/cron.log").read_text()) == expected  # the redirect worked too

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
