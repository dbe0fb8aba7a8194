"""Where the plugin runs outside OpenCode: OpenCode's own Bun (``BUN_BE_BUN=1``), the binary the
e2e harness installs in its cache (npm ``opencode-ai``, once). Used by the tests that drive the
plugin's hooks (tests/support/plugin_driver.mjs) and by its unit tests (plugin/test). Without npm or the registry the test is skipped with the reason, or fails
when ``OCMEM_E2E_REQUIRED`` is set (as in CI)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "tests/support/plugin_driver.mjs"


def bun() -> list[str]:
    """The command line of OpenCode's Bun: installed if it is not yet (skip or fail otherwise)."""
    import pytest

    from e2e.harness import E2EUnavailable, e2e_required, ensure_opencode

    try:
        return [str(ensure_opencode())]
    except E2EUnavailable as exc:
        if e2e_required():
            pytest.fail(f"OpenCode's Bun is required (OCMEM_E2E_REQUIRED is set): {exc}")
        pytest.skip(f"OpenCode's Bun is not here: {exc}")


BUN_ENV = {"BUN_BE_BUN": "1"}


def bun_json(script: str) -> Any:
    """What ``script`` (TypeScript, run by OpenCode's Bun) prints on its one line, read as JSON: to
    check that the plugin's code and ocmem's answer alike."""
    done = subprocess.run(
        [*bun(), "-e", script],
        env={**os.environ, **BUN_ENV},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(done.stdout)


def driver(
    home: Path, project: Path, steps: list[dict[str, Any]], tmp: Path, name: str = "driver"
) -> tuple[list[str], dict[str, str], Path]:
    """The command line, environment and answers file of a run of ``steps`` against the home's
    plugin (plugin_driver.mjs), for a test that runs several at once. Skips the test when the
    plugin cannot run here."""
    command, plugin = bun(), home / "plugin/ocmem.ts"
    (tmp / f"{name}-steps.json").write_text(json.dumps(steps))
    out = tmp / f"{name}-answers.json"
    env = {k: v for k, v in os.environ.items() if k != "OCMEM_HOME"}
    argv = [*command, str(DRIVER), str(plugin), str(project), str(tmp / f"{name}-steps.json")]
    return [*argv, str(out)], {**env, **BUN_ENV}, out


def answers_of(out: Path) -> list[str]:
    answers: list[str] = json.loads(out.read_text())
    return answers


def drive(home: Path, project: Path, steps: list[dict[str, Any]], tmp: Path) -> list[str]:
    """Play ``steps`` against the home's plugin (plugin_driver.mjs); the memory tools' answers."""
    argv, env, out = driver(home, project, steps, tmp)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return answers_of(out)
