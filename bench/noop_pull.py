# (ocmem has no py.typed marker yet, so from outside sync/ its modules count as untyped.)
"""No-op pull of a 500-file space: exactly one request, and the CPU it costs per listing entry.

Subject: ``ocmem.services.sync.pull`` (library) after a first pull, nothing changed on either side.
Anchor (same server, same run): a naive client that lists the space and GETs every file it
mirrors (the mapped files), and, for scale, one that GETs every file of the space. Both use one
keep-alive httpx client, as ocmem does.

CPU: the calling thread's CPU time (``time.thread_time``) of the no-op pull; the server runs in
other threads and is not counted. Measured at two space sizes, the difference gives the marginal
cost of one more listing entry (fixed costs cancel out), reported per 100 entries.
"""

from __future__ import annotations

import time
from pathlib import Path

from bench._paths import FakeSilverBullet
from bench.common import (
    PYTHON,
    TOKEN,
    BenchResult,
    Row,
    Sample,
    SpaceLayout,
    clone_home,
    fill_space,
    init_home,
    interleave,
    ms,
    ocmem_cmd,
    ocmem_env,
    progress,
    ratio_spread,
    sequential_reads,
    sync_yaml,
    time_command,
    verdict,
    workdir,
)

NAME = "noop_pull"
TITLE = "No-op pull, 500 files in the space"


def _pull(home: Path) -> tuple[float, float, bool]:
    """(wall s, thread CPU s, changed) of one library pull."""
    from ocmem.clock import Clock
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace
    from ocmem.services import sync

    settings = load_settings(home)
    wall, cpu = time.perf_counter(), time.thread_time()
    report = sync.pull(Workspace(settings, clock=Clock()), env={"OCMEM_SILVERBULLET_TOKEN": TOKEN})
    return time.perf_counter() - wall, time.thread_time() - cpu, _changed(report.render())


def _changed(report: str) -> bool:
    return "Pull : 0 fichier(s) mis à jour, 0 supprimé(s)" not in report


def run(quick: bool = False) -> BenchResult:
    result = BenchResult(NAME, TITLE)
    reps = 3 if quick else 20
    latency = 2 if quick else 10
    small = SpaceLayout(skills=10, files_per_skill=3, unrelated=468)  # 32 mapped, 500 in all
    extra = 500 if quick else 4500
    with workdir(NAME) as root, FakeSilverBullet(token=TOKEN) as sb:
        progress(f"{small.total} files, {latency} ms injected latency, {reps} repetitions")
        mapped = fill_space(sb, small)
        every = [m.name for m in sb.listing()]
        template = init_home(root / "template", sync_yaml(sb.url), token=TOKEN)
        home = clone_home(template, root / "home")
        _pull(home)  # the first, full pull: state now matches the space
        sb.latency_ms = latency

        requests: list[int] = []
        cpu_small: list[float] = []

        def subject() -> float:
            sb.clear_requests()
            wall, cpu, changed = _pull(home)
            if changed:
                raise RuntimeError("the no-op pull changed something")
            requests.append(len(sb.requests))
            cpu_small.append(cpu)
            return wall

        pull, naive = interleave(reps, subject, lambda: sequential_reads(sb.url, mapped))
        requests, cpu_small = requests[1:], cpu_small[1:]  # drop the warm-up
        whole = Sample.of([sequential_reads(sb.url, every) for _ in range(1 if quick else 3)])
        result.add(
            Row(
                "requests per no-op pull",
                f"{max(requests)} (every one of {len(requests)} runs: {sorted(set(requests))})",
                f"naive: {1 + len(mapped)} (listing + {len(mapped)} mapped files); "
                f"whole space: {1 + len(every)}",
                f"{max(requests) / (1 + len(mapped)):.3f}×",
                "exactly 1",
                verdict(set(requests) == {1}),
            ),
            Row(
                f"wall time, {latency} ms latency",
                ms(pull),
                f"naive (mapped): {ms(naive)}; whole space: {ms(whole)}",
                ratio_spread(pull, naive),
                "reported",
            ),
        )

        # The command the plugin awaits at session start: `ocmem pull`, a fresh process.
        cli = ocmem_cmd(home, "pull")
        env = ocmem_env(TOKEN)
        command, bare = interleave(
            reps,
            lambda: time_command(cli, env=env),
            lambda: time_command([PYTHON, "-c", "pass"], env=env),
        )
        result.add(
            Row(
                f"`ocmem pull` command (no-op, {latency} ms latency)",
                ms(command),
                f"python -c pass: {ms(bare)}",
                ratio_spread(command, bare),
                "reported (what the plugin awaits at session start)",
            )
        )

        # Marginal CPU per listing entry: same pull with many more unrelated files listed.
        sb.latency_ms = 0
        progress(f"adding {extra} unrelated files for the CPU slope")
        fill_space(
            sb, SpaceLayout(skills=10, files_per_skill=3, unrelated=extra), start=small.unrelated
        )
        sb.latency_ms = latency
        big_n = small.total + extra
        cpu_big: list[float] = []
        for _ in range(reps + 1):
            sb.clear_requests()
            _wall, cpu, changed = _pull(home)
            if changed or len(sb.requests) != 1:
                raise RuntimeError("the no-op pull of the bigger space was not a single request")
            cpu_big.append(cpu)
        cpu_s, cpu_b = Sample.of(cpu_small), Sample.of(cpu_big[1:])
        per_100 = (cpu_b.median - cpu_s.median) / (big_n - small.total) * 100
        result.add(
            Row(
                "thread CPU of a no-op pull",
                f"{ms(cpu_s)} at {small.total} entries; {ms(cpu_b)} at {big_n}",
                "",
                "",
                "reported",
            ),
            Row(
                "CPU per 100 listing entries",
                f"{per_100 * 1e3:.3f} ms marginal; {cpu_s.median / small.total * 100 * 1e3:.2f} ms "
                f"average at {small.total} (fixed costs included)",
                "",
                "",
                "reported",
            ),
        )
        result.note(
            f"Space: {small.total} files, of which {len(mapped)} mapped (AGENTS.md, MEMORY.md, "
            f"{small.skills} skills × {small.files_per_skill} files). Latency is injected by the "
            "server before each answer."
        )
    return result


if __name__ == "__main__":
    from bench.run import main

    main(["--only", NAME])
