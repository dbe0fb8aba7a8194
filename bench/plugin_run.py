"""Plugin overhead per tool call inside the real OpenCode: the same runs with and without it.

Two OpenCode environments, identical except that one keeps ``plugin/ocmem.ts`` (both have ocmem
installed by ``ocmem init``: same AGENTS.md, same skills). The scripted model makes N bash calls
then answers; runs alternate between the two. The per-call overhead is the difference of slopes,
((with, N=21) − (with, N=1)) − ((without, N=21) − (without, N=1)), divided by 20: fixed costs
(plugin start, session start) cancel out. A whole run takes seconds, so this figure is noisy;
the hook micro-benchmark (``plugin_hook``) gives the precise per-call cost.

Processes: ``plugin.json`` points at a wrapper that logs each ocmem process the plugin starts;
the count must not grow with N. In full mode the four cases are also run once under
``strace -f -e trace=execve`` to count every program OpenCode's whole process tree starts.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench.common import SKIP, BenchResult, Row, Sample, ms, progress, verdict, workdir
from bench.opencode import Scene, clear_trace, count_execve, install, scene_env, with_strace

NAME = "plugin_run"
TITLE = "Plugin overhead per tool call: OpenCode runs with and without the plugin"


def _per_call(
    with_hi: Sample, with_lo: Sample, none_hi: Sample, none_lo: Sample, extra: int
) -> float:
    return ((with_hi.median - with_lo.median) - (none_hi.median - none_lo.median)) / extra


def run(quick: bool = False) -> BenchResult:
    result = BenchResult(NAME, TITLE)
    found = install(quick)
    if found is None:
        result.add(
            Row("OpenCode runs", "OpenCode not installed (run the e2e suite once)", verdict=SKIP)
        )
        return result
    reps = 1 if quick else 5
    lo, hi = 1, 3 if quick else 21
    with (
        workdir(NAME) as root,
        scene_env(found, root / "with") as oc_with,
        scene_env(found, root / "without") as oc_without,
    ):
        with_plugin = Scene(oc_with, plugin=True)
        without = Scene(oc_without, plugin=False)
        # --quick keeps the code paths working with 3 runs: no run without the plugin at N=lo.
        cases = (
            [(True, lo), (True, hi), (False, hi)]
            if quick
            else [(True, lo), (False, lo), (True, hi), (False, hi)]
        )
        progress(f"{reps} × {len(cases)} runs (N = {lo} and {hi} tool calls)")
        if not quick:  # a warm-up pair
            with_plugin.run(lo)
            without.run(lo)
        times: dict[tuple[bool, int], list[float]] = {}
        spawns: dict[int, list[Counter[str]]] = {lo: [], hi: []}
        for rep in range(reps):
            order = list(cases)
            if rep % 2:
                order.reverse()
            for plugged, n in order:
                timing = (with_plugin if plugged else without).run(n)
                times.setdefault((plugged, n), []).append(timing.total)
                if plugged:
                    spawns[n].append(Counter(s.command for s in timing.spawns))
        s = {key: Sample.of(v) for key, v in times.items()}
        result.add(
            Row(
                f"opencode run, {hi} tool calls, with the plugin",
                ms(s[True, hi]),
                f"without: {ms(s[False, hi])}",
                f"{s[True, hi].median / s[False, hi].median:.3f}×",
                "reported",
            )
        )
        if (False, lo) in s:
            per_call = _per_call(s[True, hi], s[True, lo], s[False, hi], s[False, lo], hi - lo)
            fixed = s[True, lo].median - s[False, lo].median
            result.add(
                Row(
                    f"opencode run, {lo} tool call, with the plugin",
                    ms(s[True, lo]),
                    f"without: {ms(s[False, lo])}",
                    f"{s[True, lo].median / s[False, lo].median:.3f}× (+{fixed * 1e3:.0f} ms fixed)",
                    "reported",
                ),
                Row(
                    "overhead per tool call (difference of slopes)",
                    f"{per_call * 1e3:+.1f} ms",
                    f"tool call without the plugin: "
                    f"{(s[False, hi].median - s[False, lo].median) / (hi - lo) * 1e3:.0f} ms",
                    "",
                    "reported (noise: see the spreads above)",
                ),
            )
        lo_spawns = [sum(c.values()) for c in spawns[lo]]
        hi_spawns = [sum(c.values()) for c in spawns[hi]]
        shape = ", ".join(f"{k} {v}" for k, v in sorted(spawns[hi][-1].items()))
        extra = (max(hi_spawns) - min(lo_spawns)) / (hi - lo)
        result.add(
            Row(
                "ocmem processes per run (wrapper log)",
                f"N={hi}: {sorted(set(hi_spawns))} ({shape}); N={lo}: {sorted(set(lo_spawns))}",
                "",
                f"{extra:.2f} per extra tool call",
                "0 per tool call",
                verdict(set(hi_spawns) == set(lo_spawns)),
            )
        )
        if not quick:
            _strace(result, found, root, lo, hi)
    return result


def _strace(result: BenchResult, found: object, root: Path, lo: int, hi: int) -> None:
    counts: dict[tuple[bool, int], Counter[str]] = {}
    for plugged in (True, False):
        trace = root / f"strace-{plugged}" / "execve"
        trace.parent.mkdir()
        straced = with_strace(found, root, trace)
        if straced is None:
            result.note("strace not available: execve counts skipped")
            return
        progress(f"strace runs, plugin={plugged}")
        with scene_env(straced, root / f"strace-{'with' if plugged else 'without'}") as oc:
            scene = Scene(oc, plugin=plugged, log_spawns=False)
            for n in (lo, hi):
                clear_trace(trace)
                scene.run(n, timeout=300)
                counts[plugged, n] = count_execve(trace)
    programs = sorted(set().union(*counts.values()))
    growth = {
        p: (counts[True, hi][p] - counts[True, lo][p])
        - (counts[False, hi][p] - counts[False, lo][p])
        for p in programs
    }
    total = sum(growth.values()) / (hi - lo)

    def shape(key: tuple[bool, int]) -> str:
        return ", ".join(f"{p} {counts[key][p]}" for p in programs if counts[key][p])

    result.add(
        Row(
            "programs started (strace -ff execve), whole OpenCode tree",
            f"with plugin: N={lo}: {shape((True, lo))}; N={hi}: {shape((True, hi))}",
            f"without: N={lo}: {shape((False, lo))}; N={hi}: {shape((False, hi))}",
            f"{total:+.2f} per tool call due to the plugin",
            "0 per tool call",
            verdict(all(g <= 0 for g in growth.values())),
        )
    )


if __name__ == "__main__":
    from bench.run import main

    main(["--only", NAME])
