"""The wheel carries the content ``ocmem init`` installs (not only the Python code)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_wheel_contains_the_shipped_files(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--wheel-dir",
            str(tmp_path),
            str(REPO),
        ],
        check=True,
    )
    (wheel,) = tmp_path.glob("ocmem-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in [
        "ocmem/cli/commands.py",
        "ocmem/_data/AGENTS.md",
        "ocmem/_data/skills/retrospective/SKILL.md",
        "ocmem/_data/plugin/ocmem.ts",
        "ocmem/silverbullet/ocmem.lua",
        "ocmem/silverbullet/glue.lua",
    ]:
        assert expected in names
    assert any(n.endswith("entry_points.txt") for n in names)
