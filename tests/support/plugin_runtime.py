"""Where plugin/ocmem.ts can run outside OpenCode: OpenCode's own Bun (``BUN_BE_BUN=1``, from the
e2e harness's install cache; never installed here), else Node on a copy transpiled by the
repository's TypeScript (``plugin/node_modules``). Used by the plugin tests that drive its hooks
(tests/support/plugin_driver.mjs) and by bench/plugin_hook.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
OPENCODE_VERSION = "1.18.33"
DRIVER = REPO / "tests/support/plugin_driver.mjs"
_TRANSPILE = (
    "const ts = require(process.argv[1]); const fs = require('fs');"
    "const out = ts.transpileModule(fs.readFileSync(process.argv[2], 'utf8'),"
    " {compilerOptions: {module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022}});"
    "fs.writeFileSync(process.argv[3], out.outputText);"
)


def transpile_for_node(plugin: Path) -> Path | None:
    """A Node-runnable copy of ocmem.ts next to it (same HOME), or None without TypeScript."""
    node = shutil.which("node")
    typescript = REPO / "plugin" / "node_modules" / "typescript"
    if node is None or not typescript.exists():
        return None
    target = plugin.with_name("ocmem.node.mjs")
    subprocess.run([node, "-e", _TRANSPILE, str(typescript), str(plugin), str(target)], check=True)
    return target


def runtime(plugin: Path) -> tuple[list[str], dict[str, str], Path] | None:
    """How to run ``plugin``: OpenCode's Bun if the e2e harness installed it, else Node on a
    transpiled copy; None when neither is here."""
    env_cache = os.environ.get("OCMEM_E2E_CACHE")
    cache = Path(env_cache) if env_cache else REPO / ".cache/e2e"
    stamp = cache / f"opencode-ai-{OPENCODE_VERSION}/.binary"
    if stamp.exists() and Path(stamp.read_text().strip()).exists():
        return [stamp.read_text().strip()], {"BUN_BE_BUN": "1"}, plugin
    transpiled = transpile_for_node(plugin)
    return None if transpiled is None else (["node"], {}, transpiled)


def driver(
    home: Path, project: Path, steps: list[dict[str, Any]], tmp: Path, name: str = "driver"
) -> tuple[list[str], dict[str, str], Path]:
    """The command line, environment and answers file of a run of ``steps`` against the home's
    plugin (plugin_driver.mjs), for a test that runs several at once. Skips the test when the
    plugin cannot run here."""
    import pytest  # test-only: the benchmark imports this module without it

    found = runtime(home / "plugin/ocmem.ts")
    if found is None:
        pytest.skip(
            "neither OpenCode's Bun (e2e cache) nor node with plugin/node_modules/typescript"
        )
    command, extra, plugin = found
    (tmp / f"{name}-steps.json").write_text(json.dumps(steps))
    out = tmp / f"{name}-answers.json"
    env = {k: v for k, v in os.environ.items() if k != "OCMEM_HOME"}
    argv = [*command, str(DRIVER), str(plugin), str(project), str(tmp / f"{name}-steps.json")]
    return [*argv, str(out)], {**env, **extra}, out


def answers_of(out: Path) -> list[str]:
    answers: list[str] = json.loads(out.read_text())
    return answers


def drive(home: Path, project: Path, steps: list[dict[str, Any]], tmp: Path) -> list[str]:
    """Play ``steps`` against the home's plugin (plugin_driver.mjs); the memory tools' answers."""
    argv, env, out = driver(home, project, steps, tmp)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return answers_of(out)
