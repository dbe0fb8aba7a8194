"""The wheel carries the content ``ocmem init`` installs (not only the Python code)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# what a build does not read: the checkout's caches, virtualenvs and the build's own output
NOT_SOURCES = shutil.ignore_patterns(
    ".git",
    ".venv",
    ".cache",
    "node_modules",
    "__pycache__",
    "build",
    "dist",
    "*.egg-info",
    ".*_cache",
)


def test_wheel_contains_the_shipped_files(tmp_path: Path) -> None:
    # built from a copy: pip builds in the source tree (build/, *.egg-info), and two runs of the
    # suite at once (CI's moved clocks) must not build in the same one
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=NOT_SOURCES)
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
            str(source),
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
