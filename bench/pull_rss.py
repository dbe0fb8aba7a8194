"""Peak memory of a pull does not depend on unrelated files: a 50 MB file is never fetched.

Subject: ``ocmem pull`` (the CLI, in a subprocess) into a fresh home, its peak RSS read from
``wait4``. Measured on the same space with and without a 50 MB unrelated file
(``Attachments/backup.tar``, outside every pull rule); the ratio should be 1.
Control (same run): a subprocess that GETs the 50 MB file with httpx vs one that GETs a small
page, to show this measurement does see a fetch of that size.
"""

from __future__ import annotations

import os
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
    mib,
    ocmem_cmd,
    ocmem_env,
    peak_rss,
    progress,
    sync_yaml,
    verdict,
    workdir,
)

NAME = "pull_rss"
TITLE = "Peak RSS of a pull, with and without a 50 MB unrelated file"
BIG = "Attachments/backup.tar"
TOLERANCE = 0.05

_FETCH = """
import sys, httpx
r = httpx.get(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]}, trust_env=False)
r.raise_for_status()
print(len(r.content))
"""


def _pull_rss(template: Path, home: Path) -> int:
    clone_home(template, home)
    code, rss = peak_rss(ocmem_cmd(home, "pull"), env=ocmem_env(TOKEN))
    if code != 0:
        raise RuntimeError(f"ocmem pull exited {code}")
    return rss


def _fetch_rss(url: str) -> int:
    code, rss = peak_rss([PYTHON, "-c", _FETCH, url, TOKEN])
    if code != 0:
        raise RuntimeError(f"control fetch of {url} exited {code}")
    return rss


def run(quick: bool = False) -> BenchResult:
    result = BenchResult(NAME, TITLE)
    reps = 1 if quick else 7
    size = 50 * 1024 * 1024
    with workdir(NAME) as root, FakeSilverBullet(token=TOKEN) as sb:
        layout = SpaceLayout(skills=5, files_per_skill=4, unrelated=50)
        fill_space(sb, layout)
        template = init_home(root / "template", sync_yaml(sb.url), token=TOKEN)
        big = os.urandom(size)  # incompressible: gzip cannot shrink a fetch of it
        progress(f"{reps} pulls with and {reps} without a {size >> 20} MB unrelated file")
        without: list[int] = []
        with_big: list[int] = []
        for rep in range(reps):
            # alternate which case runs first
            for present in (rep % 2 == 0, rep % 2 == 1):
                if present:
                    sb.write(BIG, big)
                    with_big.append(_pull_rss(template, root / "home"))
                else:
                    if sb.exists(BIG):
                        sb.delete(BIG)
                    without.append(_pull_rss(template, root / "home"))
        fetched = [r for r in sb.requests if r.fs_path == BIG]
        sb.write(BIG, big)
        small_url = f"{sb.url}/.fs/Agents/Memory/MEMORY.md"
        controls = 1 if quick else 3
        control_big = Sample.of([_fetch_rss(f"{sb.url}/.fs/{BIG}") for _ in range(controls)])
        control_small = Sample.of([_fetch_rss(small_url) for _ in range(controls)])
        w, wo = Sample.of(with_big), Sample.of(without)
        ratio = w.median / wo.median
        result.add(
            Row(
                f"peak RSS of `ocmem pull` ({layout.mapped} mapped files)",
                f"with the 50 MB file: {mib(w)}",
                f"without it: {mib(wo)}",
                f"{ratio:.3f}×",
                f"independent (1 ± {TOLERANCE:.0%}); never fetched",
                verdict(abs(ratio - 1) <= TOLERANCE and not fetched),
            ),
            Row(
                "requests for the 50 MB file during the pulls",
                str(len(fetched)),
                "",
                "",
                "0",
                verdict(not fetched),
            ),
            Row(
                "control: peak RSS of a plain httpx GET",
                f"of the 50 MB file: {mib(control_big)}",
                f"of a small page: {mib(control_small)}",
                f"{control_big.median / control_small.median:.2f}× "
                f"(+{(control_big.median - control_small.median) / 2**20:.0f} MiB)",
                "shows the measurement sees a 50 MB fetch",
            ),
        )
    return result


if __name__ == "__main__":
    from bench.run import main

    main(["--only", NAME])
