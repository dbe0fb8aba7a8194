"""Run the ocmem benchmarks: ``python bench/run.py [--quick] [--only NAME ...] [--json FILE]``.

Each benchmark prints its figures next to an anchor measured in the same run, as a ratio, with
the target and PASS/MISS (INFO: reported only; SKIP: a prerequisite is missing). ``--quick``
shrinks sizes and repetitions to keep the scripts working in CI (thresholds are not asserted
there: the exit code is 0 unless a benchmark crashed, or ``--fail-on-miss`` is given).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from types import ModuleType

if __package__ in (None, ""):  # `python bench/run.py`: make the `bench` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import MISS, SKIP, BenchResult, Row, machine

BENCHMARKS: tuple[str, ...] = (
    "noop_pull",
    "full_pull",
    "push_one",
    "pull_rss",
    "journal_add",
    "journal_search",
    "journal_retrieval",
    "journal_meaning",
    "journal_scale",
    "plugin_hook",
    "plugin_run",
    "session_start",
    "offline_start",
    "hostile_pull",
    "coherence",
)


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"bench.{name}")


def _table(results: Sequence[BenchResult]) -> str:
    header = ("benchmark", "figure", "measured", "anchor (same run)", "ratio", "target", "")
    lines = [header]
    for res in results:
        for row in res.rows:
            lines.append(
                (res.name, row.figure, row.value, row.anchor, row.ratio, row.target, row.verdict)
            )
    return "\n".join(" | ".join(cell for cell in line) for line in lines)


def run_one(name: str, quick: bool) -> BenchResult:
    module = _module(name)
    title = str(getattr(module, "TITLE", name))
    print(f"\n== {name}: {title}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    try:
        result: BenchResult = module.run(quick=quick)
    except Exception as exc:  # one broken benchmark must not hide the others
        traceback.print_exc()
        result = BenchResult(name, title)
        result.add(Row("crashed", f"{type(exc).__name__}: {exc}", verdict="ERROR"))
    result.seconds = time.perf_counter() - start
    _print(result)
    return result


def _print(result: BenchResult) -> None:
    print(f"\n## {result.name} — {result.title} ({result.seconds:.1f} s)")
    for row in result.rows:
        print(f"- [{row.verdict}] {row.figure}: {row.value}")
        if row.anchor:
            print(f"    anchor: {row.anchor}")
        if row.ratio or row.target:
            print(f"    ratio: {row.ratio or '—'}   target: {row.target or '—'}")
    for note in result.notes:
        print(f"  note: {note}")
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repetitions (CI)")
    parser.add_argument(
        "--only", action="append", choices=BENCHMARKS, metavar="NAME", help="repeatable"
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    parser.add_argument("--fail-on-miss", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args(argv)

    names = args.only or list(BENCHMARKS)
    info = machine()
    print("# ocmem benchmarks" + (" (quick)" if args.quick else ""))
    for key, value in info.items():
        print(f"- {key}: {value}")
    start = time.perf_counter()
    results = [run_one(name, args.quick) for name in names]
    total = time.perf_counter() - start
    print(f"\n## Summary ({total:.1f} s)\n")
    print(_table(results))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "machine": info,
                    "quick": args.quick,
                    "seconds": total,
                    "results": [asdict(r) for r in results],
                },
                ensure_ascii=False,
                indent=1,
            )
            + "\n"
        )
    crashed = any(r.verdict == "ERROR" for res in results for r in res.rows)
    missed = any(v == MISS for res in results for v in res.verdicts)
    skipped = [res.name for res in results if any(r.verdict == SKIP for r in res.rows)]
    if skipped:
        print(f"\nfigures skipped (prerequisite missing) in: {', '.join(skipped)}")
    return 1 if crashed or (args.fail_on_miss and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
