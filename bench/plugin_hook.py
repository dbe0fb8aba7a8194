"""Micro-benchmark of the plugin's per-tool-call hooks, in OpenCode's own JavaScript runtime.

OpenCode 1.18.33 runs plugins in the Bun embedded in its binary; ``BUN_BE_BUN=1 opencode`` makes
that binary behave as ``bun`` (Bun 1.3.x), so ``plugin/ocmem.ts`` runs unmodified, in exactly
the runtime and version OpenCode uses (``bun`` on PATH is the fallback).

``bench/hook_micro.mjs`` installs the plugin as ``ocmem init`` does (``<home>/plugin/ocmem.ts``),
calls it with a fake client, announces a session, then times ``tool.execute.before`` and
``tool.execute.after`` one call at a time for typical tools, then a read and a shell command
while another session is exposed (session taint stats the files they name against its window).
Anchor: an empty async hook timed the same way in the same process. ``plugin.json`` points at a
wrapper that logs every ocmem process the plugin starts: none may start during tool calls.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from bench._paths import BENCH, REPO, harness
from bench.common import (
    PYTHON,
    SKIP,
    BenchResult,
    Row,
    init_home,
    progress,
    verdict,
    workdir,
)

NAME = "plugin_hook"
TITLE = "Plugin overhead per tool call: micro-benchmark of the hooks"
TARGET_US = 20.0  # one hook
PAIR_TARGET_US = 50.0  # a tool call: its before and after hooks together (issue 11)
OPENCODE_VERSION = "1.18.33"


def cache_dir() -> Path:
    """The e2e harness's install cache (``OCMEM_E2E_CACHE`` or ``<repo>/.cache/e2e``)."""
    try:
        return Path(harness().cache_dir())
    except ImportError:
        env = os.environ.get("OCMEM_E2E_CACHE")
        return Path(env).expanduser() if env else REPO / ".cache" / "e2e"


def opencode_binary() -> Path | None:
    """The cached OpenCode binary, if the e2e harness installed it (never installs here)."""
    stamp = cache_dir() / f"opencode-ai-{OPENCODE_VERSION}" / ".binary"
    if stamp.exists():
        binary = Path(stamp.read_text().strip())
        if binary.exists():
            return binary
    return None


def plugin_node_modules() -> Path | None:
    """``node_modules`` holding ``@opencode-ai/plugin`` (harness cache, else plugin/)."""
    for candidate in (
        cache_dir() / f"plugin-deps-{OPENCODE_VERSION}" / "node_modules",
        REPO / "plugin" / "node_modules",
    ):
        if (candidate / "@opencode-ai" / "plugin" / "package.json").exists():
            return candidate
    return None


def bun_command() -> tuple[list[str], dict[str, str]] | None:
    binary = opencode_binary()
    if binary is not None:
        return [str(binary)], {"BUN_BE_BUN": "1"}
    bun = shutil.which("bun")
    return ([bun], {}) if bun else None


def write_wrapper(path: Path, log: Path) -> Path:
    """An ``ocmem`` command that logs each invocation, then runs the real one.

    Each log line is ``<start> <end> <arguments>`` (seconds since the epoch). ``pull`` and the
    gate (which lives as long as the plugin) are ``exec``-ed and logged at their start, their end
    as ``-``; other commands run as a child so that their end can be logged.
    """
    path.write_text(
        "#!/bin/sh\n"
        "start=$(date +%s.%N)\n"
        'case " $* " in *" pull "*|*" gate "*)\n'
        f'  printf \'%s - %s\\n\' "$start" "$*" >> "{log}"\n'
        f'  exec "{PYTHON}" -m ocmem "$@" ;;\n'
        "esac\n"
        f'"{PYTHON}" -m ocmem "$@"\n'
        "rc=$?\n"
        f'printf \'%s %s %s\\n\' "$start" "$(date +%s.%N)" "$*" >> "{log}"\n'
        "exit $rc\n"
    )
    path.chmod(0o755)
    return path


def install_plugin_home(root: Path, log: Path, yaml: str = "", token: str | None = None) -> Path:
    """A home made by ``ocmem init``, plugin deps linked, plugin.json → the logging wrapper."""
    home = init_home(root / "home", yaml, token=token)
    deps = plugin_node_modules()
    if deps is not None and not (home / "node_modules").exists():
        (home / "node_modules").symlink_to(deps, target_is_directory=True)
    wrapper = write_wrapper(root / "ocmem-logged", log)
    (home / ".ocmem" / "plugin.json").write_text(json.dumps({"command": [str(wrapper)]}) + "\n")
    return home


def measure(
    runtime: list[str],
    extra_env: dict[str, str],
    plugin: Path,
    project: Path,
    log: Path,
    iterations: int,
    out: Path,
) -> dict[str, Any]:
    env = {**os.environ, **extra_env}
    env.pop("OCMEM_HOME", None)
    done = subprocess.run(
        [
            *runtime,
            str(BENCH / "hook_micro.mjs"),
            str(plugin),
            str(project),
            str(log),
            str(iterations),
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"hook micro-benchmark failed ({done.returncode}): {done.stderr[-2000:]}"
        )
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def _rows(result: BenchResult, data: dict[str, Any], judged: bool) -> None:
    results: dict[str, dict[str, float]] = data["results"]
    anchor = results["anchor:empty async hook"]
    runtime = str(data["runtime"])
    for name, stats in results.items():
        if name.startswith("anchor:") or "via the gate" in name:
            continue
        med = stats["median"] / 1000
        target = PAIR_TARGET_US if name.startswith("pair:") else TARGET_US
        label = f"{name[5:]} tool call (before + after)" if name.startswith("pair:") else name
        result.add(
            Row(
                f"{label} median ({runtime})",
                f"{med:.2f} µs (p10 {stats['p10'] / 1000:.2f}, p90 {stats['p90'] / 1000:.2f}, "
                f"p99 {stats['p99'] / 1000:.2f}; n={int(stats['n'])})",
                f"empty async hook: {anchor['median'] / 1000:.2f} µs",
                f"{stats['median'] / anchor['median']:.1f}×",
                f"≤ {target:.0f} µs median" if judged else "reported",
                verdict(med <= target) if judged else "INFO",
            )
        )
    during = [line.split(" ", 2)[2] for line in data["spawnedDuringCalls"]]
    at_init = [line.split(" ", 2)[2] for line in data["spawnedAtInit"]]
    result.add(
        Row(
            f"processes spawned during {int(data['totalCalls'])} hook calls ({runtime})",
            str(len(during)) + (f" ({', '.join(during[:5])})" if during else ""),
            f"at plugin start: {len(at_init)} ({', '.join(at_init)})",
            "",
            "0 per tool call",
            verdict(not during) if judged else "INFO",
        )
    )


def one_shot_tool(home: Path, runs: int) -> list[float]:
    """What a memory tool call cost before the gate: one ``ocmem tool`` process per call."""
    envelope = '{"session": "ses_bench", "user_messages": [], "exposures": [], '
    envelope += '"args": {"query": "port"}}'
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [PYTHON, "-m", "ocmem", "--home", str(home), "tool", "memory_search"],
            input=envelope,
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(time.perf_counter() - start)
    return times


def _memory_rows(result: BenchResult, data: dict[str, Any], home: Path, quick: bool) -> None:
    gate = data["results"]["memory_search via the gate"]
    one_shot = sorted(one_shot_tool(home, 3 if quick else 15))
    process_ms = one_shot[len(one_shot) // 2] * 1000
    gate_ms = gate["median"] / 1e6
    result.add(
        Row(
            f"memory_search tool call through the gate, median ({data['runtime']})",
            f"{gate_ms:.1f} ms (p90 {gate['p90'] / 1e6:.1f}; n={int(gate['n'])})",
            f"one `ocmem tool` process per call: {process_ms:.1f} ms (median of {len(one_shot)})",
            f"{gate_ms / process_ms:.2f}×",
            "reported",
            "INFO",
        )
    )


def run(quick: bool = False) -> BenchResult:
    result = BenchResult(NAME, TITLE)
    iterations = 2_000 if quick else 20_000
    bun = bun_command()
    with workdir(NAME) as root:
        log = root / "spawns.log"
        home = install_plugin_home(root, log)
        project = root / "project"
        (project / "src").mkdir(parents=True)
        (project / "src" / "app.ts").write_text("export const a = 1\n")
        plugin = home / "plugin" / "ocmem.ts"
        if bun is not None:
            progress(f"{' '.join(bun[0])} {bun[1]}: {iterations} calls per case")
            data = measure(*bun, plugin, project, log, iterations, root / "bun.json")
            _rows(result, data, True)
            _memory_rows(result, data, home, quick)
        else:
            result.add(
                Row("hook micro-benchmark in Bun", "no OpenCode binary, no bun", verdict=SKIP)
            )
        result.note(
            "Each call is timed on its own (process.hrtime.bigint); rounds of every case "
            "alternate with the empty-hook anchor. before:edit/write resolve symlinks of the "
            "target (fs.realpath); after: hooks of tools that can write (bash, edit) let pending "
            "inotify events in (one setImmediate) and test the tamper monitor's flag. The plugin "
            "runs in the default mode: its monitor watches the whole home."
        )
    return result


if __name__ == "__main__":
    from bench.run import main

    main(["--only", NAME])
