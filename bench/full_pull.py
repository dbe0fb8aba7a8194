# (ocmem has no py.typed marker yet, so from outside sync/ its modules count as untyped.)
"""Full pull of 200 mapped files with 50 ms of injected latency: bounded concurrency pays.

Subject: ``ocmem.services.sync.pull`` (library) into a fresh home (nothing pulled yet): listing, 200 reads
(8 in flight by default), atomic writes with fsync, state saves, backups, the history commit and
the context report — the whole command as a user runs it, minus interpreter start-up.
Anchor (same server, same run): the same listing and 200 GETs sent one after the other on one
keep-alive httpx client, writing nothing. ocmem does strictly more work per file, so the ratio
understates what concurrency alone buys.

Also reported: ocmem with ``concurrency: 1`` (its own sequential path) and ocmem at 0 ms latency
(its local work alone: what no concurrency can hide).
"""

from __future__ import annotations

import time
from pathlib import Path

from bench._paths import FakeSilverBullet
from bench.common import (
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
    progress,
    ratio_spread,
    sequential_reads,
    sync_yaml,
    verdict,
    workdir,
)

NAME = "full_pull"
TITLE = "Full pull, 200 files, 50 ms injected latency"
TARGET = 6.0


def _pull(template: Path, target: Path) -> float:
    from ocmem.clock import Clock
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace
    from ocmem.services import sync

    home = clone_home(template, target)
    settings = load_settings(home)
    start = time.perf_counter()
    report = sync.pull(Workspace(settings, clock=Clock()), env={"OCMEM_SILVERBULLET_TOKEN": TOKEN})
    elapsed = time.perf_counter() - start
    if not _changed(report.render()):
        raise RuntimeError("the full pull installed nothing")
    return elapsed


def _changed(report: str) -> bool:
    return "Pull : 0 fichier(s) mis à jour, 0 supprimé(s)" not in report


def run(quick: bool = False) -> BenchResult:
    result = BenchResult(NAME, TITLE)
    latency = 50
    reps = 1 if quick else 5
    layout = (
        SpaceLayout(skills=2, files_per_skill=11, unrelated=10)  # 24 mapped
        if quick
        else SpaceLayout(skills=11, files_per_skill=18, unrelated=100)  # 200 mapped
    )
    with workdir(NAME) as root, FakeSilverBullet(token=TOKEN) as sb:
        mapped = fill_space(sb, layout)
        progress(f"{len(mapped)} mapped files, {latency} ms latency, {reps} repetitions")
        template = init_home(root / "template", sync_yaml(sb.url), token=TOKEN)
        serial_template = init_home(
            root / "serial-template", sync_yaml(sb.url, concurrency=1), token=TOKEN
        )
        sb.latency_ms = latency
        sb.clear_requests()
        pull, seq = interleave(
            reps, lambda: _pull(template, root / "home"), lambda: sequential_reads(sb.url, mapped)
        )
        gets = len(sb.requests_matching("GET")) / (reps + 1)
        progress("ocmem with concurrency: 1")
        serial = Sample.of(
            [_pull(serial_template, root / "home") for _ in range(1 if quick else 2)]
        )
        sb.latency_ms = 0
        progress("ocmem at 0 ms latency (local work only)")
        local = Sample.of([_pull(template, root / "home") for _ in range(3 if quick else 5)])

        speedup = seq.median / pull.median
        result.add(
            Row(
                f"ocmem full pull of {len(mapped)} files",
                ms(pull),
                f"sequential GETs: {ms(seq)}",
                f"{speedup:.2f}× faster (time ratio {ratio_spread(pull, seq)})",
                f"≥ {TARGET:.0f}× faster",
                verdict(speedup >= TARGET),
            ),
            Row(
                "ocmem with concurrency: 1",
                ms(serial),
                f"sequential GETs: {ms(seq)}",
                f"{serial.median / seq.median:.2f}× the anchor's time",
                "reported",
            ),
            Row(
                "ocmem at 0 ms latency (local work only)",
                ms(local),
                f"{latency} ms × {len(mapped) + 1} requests / 8 in flight = "
                f"{latency * (len(mapped) + 1) / 8:.0f} ms of waiting at best",
                "",
                "reported",
            ),
        )
        result.note(
            f"Requests per round (ocmem + anchor): {gets:.0f} GETs for {len(mapped)} files; "
            f"ideal with 8 in flight: {(len(mapped) / 8 + 1) * latency:.0f} ms of latency."
        )
    return result


if __name__ == "__main__":
    from bench.run import main

    main(["--only", NAME])
