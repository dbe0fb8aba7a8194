from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

FAKE_CRONTAB = """#!/bin/sh
# Stand-in for crontab(1): the table lives in $CRONTAB_FILE.
if [ "$1" = "-l" ]; then [ -f "$CRONTAB_FILE" ] && cat "$CRONTAB_FILE" || exit 1; exit 0; fi
if [ "$1" = "-" ]; then cat > "$CRONTAB_FILE"; exit 0; fi
exit 2
"""


@pytest.fixture
def crontab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "crontab").write_text(FAKE_CRONTAB)
    (bin_dir / "crontab").chmod(0o755)
    table = tmp_path / "crontab.txt"
    table.write_text("0 3 * * * /usr/bin/backup # à l'utilisateur\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("CRONTAB_FILE", str(table))
    return table


def test_cron_install_is_idempotent_and_removable(home: Path, crontab: Path, run_cli: Any) -> None:
    first = run_cli("cron", "install", "--every", "10")
    assert first.code == 0 and "Ajouté" in first.out
    assert "Déjà en place" in run_cli("cron", "install", "--every", "10").out
    lines = crontab.read_text().splitlines()
    assert lines[0] == "0 3 * * * /usr/bin/backup # à l'utilisateur"
    assert len(lines) == 2 and lines[1].startswith("*/10 * * * * OCMEM_HOME=") and "sync" in lines[1]
    run_cli("cron", "install", "--every", "20")
    assert next(line for line in crontab.read_text().splitlines() if "ocmem" in line).startswith("*/20 ")
    assert len(crontab.read_text().splitlines()) == 2
    assert "1 ligne(s) ocmem retirée(s)" in run_cli("cron", "remove").out
    assert crontab.read_text() == "0 3 * * * /usr/bin/backup # à l'utilisateur\n"


def test_cron_print_never_contains_the_token(home: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCMEM_SILVERBULLET_TOKEN", "secret-token-123456")
    result = run_cli("cron", "print")
    assert "secret-token-123456" not in result.out + result.err
    assert "n'existe pas pour cron" in result.err
    units = run_cli("cron", "print", "--systemd").out
    assert "OnCalendar=*:0/15" in units and "ExecStart=" in units and "secret" not in units
