"""The plugin's own unit tests (plugin/test/*.test.ts), run by OpenCode's Bun: the pure parts of
the plugin (shapes, fold, paths, guards, sessions, taint, monitor, tools) without OpenCode."""

from __future__ import annotations

import os
import subprocess

import pytest

from support.plugin_runtime import BUN_ENV, REPO, bun

pytestmark = pytest.mark.real_clock  # Bun's own clock; the tests inject theirs


def test_the_plugins_unit_tests_pass() -> None:
    done = subprocess.run(
        [*bun(), "test"],
        cwd=REPO / "plugin",
        env={**os.environ, **BUN_ENV},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report[-4000:]
    assert " 0 fail" in report and "pass" in report, report[-2000:]
