"""The command line's last steps never end in a traceback: a standard output that refuses the
answer (a full disk, a reader gone) is said — what was done stays done —, and Ctrl-C at any
moment once ocmem's first module runs is one short line and exit 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ocmem
from ocmem import INTERRUPTED

pytestmark = pytest.mark.real_clock  # the ocmem processes run on the machine's clock

SCRIPT = Path(sys.executable).parent / "ocmem"
OCMEM = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "ocmem"]


def test_a_full_standard_output_says_the_note_was_written(home: Path) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [*OCMEM, "note", "une note écrite malgré tout"],
            env={**os.environ, "OCMEM_HOME": str(home)},
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "la commande a abouti (« Note ajoutée »)" in done.stderr, done.stderr
    assert "sa réponse n'a pas pu être écrite sur la sortie standard (disque plein)" in done.stderr
    assert "Correction : " in done.stderr
    assert "une note écrite malgré tout" in (home / "memory/SHORT_TERM.md").read_text()


def test_a_reader_gone_ends_quietly(home: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # `ocmem … | head`, head already gone
    try:
        done = subprocess.run(
            [*OCMEM, "status"],
            env={**os.environ, "OCMEM_HOME": str(home)},
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write)
    assert done.returncode == 1 and done.stderr == "", done.stderr


PACKAGE = str(Path(ocmem.__file__).parent)


def _python_start_up(err: str) -> bool:
    """Whether a Ctrl-C was answered by the interpreter before ocmem's first module ran (its
    own start-up, the console script's first imports): no frame of ocmem in the traceback.
    Once that module runs, no KeyboardInterrupt can escape (docs/robustness.md)."""
    frames = [line for line in err.splitlines() if line.lstrip().startswith('File "')]
    return not any(PACKAGE in line for line in frames)


def test_ctrl_c_at_any_moment_is_one_line_and_exit_130(home: Path) -> None:
    env = {**os.environ, "OCMEM_HOME": str(home)}
    answered: dict[str, int] = {"done first": 0, "ocmem": 0, "Python's start-up": 0}
    for delay in [0.0, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3] * 5:
        child = subprocess.Popen(
            [*OCMEM, "note", "une note pendant un Ctrl-C"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(delay)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
        if child.returncode == 0:
            answered["done first"] += 1
        elif child.returncode == 130 and err.strip() == INTERRUPTED:
            answered["ocmem"] += 1
        else:
            assert _python_start_up(err), (delay, child.returncode, err)
            answered["Python's start-up"] += 1
    print(f"\nCtrl-C at 60 moments: {answered}")
    assert answered["ocmem"] >= 10, answered  # the signal did land while ocmem ran
