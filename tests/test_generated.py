"""Every generated file is as the code makes it (scripts/generate.py): one mechanism for all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_no_generated_file_is_stale() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
