"""Issue 16: hostile agent text, pushed by ocmem, must stay inert in SilverBullet's real web client.

Runs ``drive.py`` (see README.md beside it) against a real SilverBullet with its web client and
asserts that no payload executes, styles the space, loads from another origin, redirects the tab
or hides or alters a human line, and that every control is detected (so a blind rig cannot pass).

Skipped unless all of these are given:

- ``OCMEM_TEST_SILVERBULLET_URL``: a scratch SilverBullet (its ``Agents/Inbox/`` is emptied);
- ``OCMEM_TEST_SILVERBULLET_TOKEN``: its ``SB_AUTH_TOKEN`` (if it has auth);
- ``OCMEM_TEST_SILVERBULLET_USER``: ``user:password`` of its ``SB_USER``, for the browser;
- Chromium (``OCMEM_TEST_CHROMIUM``, else ``chromium`` on the PATH or ``/usr/bin/chromium``);
- Playwright for Python, importable by ``OCMEM_TEST_BROWSER_PYTHON`` (default: this Python).
  Playwright is not a dependency of ocmem; never run ``playwright install``, the system
  Chromium is used.

``OCMEM_TEST_BROWSER_ONLY`` (comma-separated ids, kinds or id prefixes like ``jt-*``) runs part of the corpus.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

URL = os.environ.get("OCMEM_TEST_SILVERBULLET_URL", "").rstrip("/")
TOKEN = os.environ.get("OCMEM_TEST_SILVERBULLET_TOKEN") or None
USER = os.environ.get("OCMEM_TEST_SILVERBULLET_USER", "")
BROWSER_PYTHON = os.environ.get("OCMEM_TEST_BROWSER_PYTHON") or sys.executable
ONLY = os.environ.get("OCMEM_TEST_BROWSER_ONLY", "")
TESTS_DIR = Path(__file__).resolve().parent.parent
ASSERTED = ("execution", "style", "other_origin", "redirect", "hidden")


def chromium() -> str | None:
    for candidate in (
        os.environ.get("OCMEM_TEST_CHROMIUM"),
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
        "/usr/bin/chromium",
    ):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


@functools.cache
def skip_reason() -> str | None:
    if not URL:
        return "OCMEM_TEST_SILVERBULLET_URL is not set: no real SilverBullet to open in a browser"
    if not USER:
        return "OCMEM_TEST_SILVERBULLET_USER (user:password) is not set: the browser cannot log in"
    if chromium() is None:
        return "no Chromium found (OCMEM_TEST_CHROMIUM, chromium on the PATH, /usr/bin/chromium)"
    probe = subprocess.run(
        [BROWSER_PYTHON, "-c", "import playwright.sync_api"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        return f"Playwright is not importable by {BROWSER_PYTHON} (OCMEM_TEST_BROWSER_PYTHON)"
    return None


pytestmark = [
    pytest.mark.real_silverbullet,
    pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or ""),
]


def test_hostile_corpus_stays_inert_in_the_web_client(tmp_path: Path) -> None:
    command = [
        BROWSER_PYTHON,
        "-m",
        "browser.drive",
        "--sb-url",
        URL,
        "--user",
        USER,
        "--out",
        str(tmp_path),
        "--ocmem-python",
        sys.executable,
        "--chromium",
        str(chromium()),
    ]
    if ONLY:
        command += ["--only", ONLY]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS_DIR), env.get("PYTHONPATH")]))
    if TOKEN:
        env["OCMEM_TEST_SILVERBULLET_TOKEN"] = TOKEN  # read by the driver, not shown in `ps`
    run = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    summary = report["summary"]

    # The rig first proves it sees each kind of failure on raw pages written without ocmem.
    assert summary["controls_missed"] == [], run.stdout
    assert summary["totals"]["errors"] == 0, [
        (p["id"], p["evidence"].get("error")) for p in report["payloads"] if p["status"] == "error"
    ]
    got_through = {
        p["id"]: [c for c in ASSERTED if p["flags"][c]]
        for p in report["payloads"]
        if any(p["flags"][c] for c in ASSERTED)
    }
    assert got_through == {}, run.stdout
