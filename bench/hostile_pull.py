# (ocmem has no py.typed marker yet, so from outside sync/ its modules count as untyped.)
"""Hostile spaces against ``ocmem pull`` (issue 33): how long each holds it, as a ratio to
``timeout_seconds``, and what it installed.

Subject: ``ocmem.services.sync.pull`` (library) on a fresh home, against the test server made
hostile: a 10 MB MEMORY.md page; a page whose listing and headers announce 20 bytes and whose
body is 10 MB; 5 000 skills; a server answering one byte a second (``drip_bytes_per_second``);
a listing that never ends (``endless_listing``). The deadline is 3 × ``timeout_seconds`` (the
defaults' ratio: 90 s for 30 s). Anchor: ``timeout_seconds`` itself; the bound a pull must keep
is the deadline plus one wait for a packet, 4 ×. Before these bounds (main at 0f9a721) the first
case installed 10 MB, the third read 4 918 skills in 900 s, the fourth held a pull 463 s with
``timeout_seconds: 30``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from bench._paths import FakeSilverBullet
from bench.common import (
    TOKEN,
    BenchResult,
    Row,
    init_home,
    progress,
    sync_yaml,
    verdict,
    workdir,
)

NAME = "hostile_pull"
TITLE = "Hostile spaces: how long each holds a pull (ratio to timeout_seconds)"
MEMORY_PAGE = "Agents/Memory/MEMORY.md"
TEN_MB = b"- Un fait, encore et encore.\n" * (10 * 1024 * 1024 // 29 + 1)


def _pull(home: Path) -> tuple[float, str]:
    """(wall s, how it ended) of one library pull."""
    from ocmem.clock import Clock
    from ocmem.errors import OcmemError
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace
    from ocmem.services import sync

    started = time.perf_counter()
    try:
        report = sync.pull(
            Workspace(load_settings(home), clock=Clock()), env={"OCMEM_SILVERBULLET_TOKEN": TOKEN}
        )
        ended = f"exit {3 if report.needs_human else 0 if report.status.value == 'ok' else 1}"
        said = next((line for line in report.lines if line.startswith("⚠")), "")
    except OcmemError as exc:
        ended, said = "exit 1", exc.message
    return time.perf_counter() - started, f"{ended}: {said[:90]}"


def _big_page(sb: FakeSilverBullet) -> None:
    sb.write(MEMORY_PAGE, TEN_MB)


def _longer_than_announced(sb: FakeSilverBullet) -> None:
    sb.write(MEMORY_PAGE, "# Mémoire\n\n- Petit.\n")
    sb.tear_next_read(MEMORY_PAGE, body=TEN_MB, times=10)


def _skills(sb: FakeSilverBullet) -> None:
    for number in range(5000):
        folder = sb.space / f"Agents/Skills/s{number}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: s{number}\ndescription: S.\n---\n# s\n")


def _drip(sb: FakeSilverBullet) -> None:
    sb.write(MEMORY_PAGE, "# Mémoire\n\n- Un fait.\n")
    sb.drip_bytes_per_second = 1


def _endless(sb: FakeSilverBullet) -> None:
    sb.endless_listing = True


CASES: tuple[tuple[str, Callable[[FakeSilverBullet], None]], ...] = (
    ("10 MB MEMORY.md page", _big_page),
    ("page of 20 bytes announced, 10 MB sent", _longer_than_announced),
    ("5 000 skills", _skills),
    ("server answering 1 byte/s", _drip),
    ("listing that never ends", _endless),
)


def run(quick: bool = False) -> BenchResult:
    result = BenchResult(NAME, TITLE)
    timeout = 2.0 if quick else 10.0
    deadline = 3 * timeout
    with workdir(NAME) as root:
        for number, (label, make) in enumerate(CASES):
            with FakeSilverBullet(token=TOKEN) as sb:
                make(sb)
                yaml = sync_yaml(sb.url, timeout_seconds=timeout, pull_deadline_seconds=deadline)
                home = init_home(root / f"home{number}", yaml, token=TOKEN)
                before = (home / "memory/MEMORY.md").read_bytes()
                progress(label)
                seconds, ended = _pull(home)
                kept = (home / "memory/MEMORY.md").read_bytes() == before
                skills = sum(1 for _ in (home / "skills").glob("s*"))
                result.add(
                    Row(
                        label,
                        f"{seconds:.2f} s, {ended}",
                        f"timeout_seconds {timeout:g} s (deadline {deadline:g} s)",
                        f"{seconds / timeout:.2f}×",
                        "≤ 4× (deadline + one wait); MEMORY.md kept, no skill installed",
                        verdict(seconds <= 4 * timeout and kept and skills == 0),
                    )
                )
    result.note(
        "Each case on a fresh home and server; the hostile server's MEMORY.md never replaces "
        "the home's, and none of its skills is installed (checked, in the verdict)."
    )
    return result


if __name__ == "__main__":
    from bench.run import main

    main(["--only", NAME])
