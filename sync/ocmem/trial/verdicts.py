"""What ``ocmem essai`` prints: one row per spec test (test, résultat, ce qui le prouve), a
one-line summary, and how the run ends. Pure: tests/test_essai.py checks it on made-up rows.

A test is *réussi* (its rule held, the proof says what was seen), *échec* (it ran and the rule
did not hold), *non lancé* (what it needs is missing: the reason and the fix), or *en partie*
(what ran held, a part could not run). Exit: 1 when a test failed, else 3 when one did not run
in full (a person must act: install OpenCode 1.x), else 0 — ocmem's codes (ocmem.execution).
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass

from ocmem.execution import status_code
from ocmem.outcome import Outcome, Status

PASSED = "réussi"
FAILED = "échec"
NOT_RUN = "non lancé"
PARTLY = "en partie"


@dataclass(frozen=True)
class Verdict:
    number: int
    title: str
    result: str  # PASSED, FAILED, NOT_RUN, PARTLY
    proof: str
    seconds: float = 0.0


def status_of(verdicts: list[Verdict]) -> Status:
    results = {v.result for v in verdicts}
    if FAILED in results:
        return Status.FAILED
    if results & {NOT_RUN, PARTLY}:
        return Status.NEEDS_HUMAN
    return Status.OK


def summary(verdicts: list[Verdict], seconds: float) -> str:
    counts = [
        (sum(v.result == result for v in verdicts), result)
        for result in (PASSED, FAILED, PARTLY, NOT_RUN)
    ]
    plural = {PASSED: "réussis", FAILED: "échecs", NOT_RUN: "non lancés", PARTLY: PARTLY}
    said = ", ".join(
        f"{count} {plural[name] if count > 1 else name}" for count, name in counts if count
    )
    return f"{len(verdicts)} tests : {said} — {seconds:.0f} s."


def table(verdicts: list[Verdict], width: int = 100) -> list[str]:
    """The rows, each cell wrapped to its column (the proof takes what the others leave)."""
    widths = [3, max(24, width // 3), len(NOT_RUN)]
    widths.append(max(30, width - sum(widths) - 2 * len(widths)))
    head = ["n°", "test", "résultat", "ce qui le prouve"]
    lines = [_row(head, widths), _row(["─" * w for w in widths], widths)]
    for verdict in verdicts:
        cells = [str(verdict.number), verdict.title, verdict.result, verdict.proof]
        wrapped = [
            textwrap.wrap(c, w, break_on_hyphens=False) or [""]
            for c, w in zip(cells, widths, strict=True)
        ]
        for line in range(max(len(w) for w in wrapped)):
            lines.append(_row([w[line] if line < len(w) else "" for w in wrapped], widths))
    return lines


def _row(cells: list[str], widths: list[int]) -> str:
    first, *rest = cells
    return "  ".join(
        [first.rjust(widths[0]), *(c.ljust(w) for c, w in zip(rest, widths[1:], strict=True))]
    ).rstrip()


def outcome(
    verdicts: list[Verdict],
    heading: list[str],
    notes: list[str],
    seconds: float,
    *,
    as_json: bool = False,
    width: int = 100,
) -> Outcome:
    verdicts = sorted(verdicts, key=lambda v: v.number)
    status = status_of(verdicts)
    if as_json:
        document = {
            "tests": [
                {
                    "numero": v.number,
                    "test": v.title,
                    "resultat": v.result,
                    "preuve": v.proof,
                    "secondes": round(v.seconds, 1),
                }
                for v in verdicts
            ],
            "secondes": round(seconds, 1),
            "contexte": heading,
            "remarques": notes,
            "code": status_code(status),
        }
        return Outcome([json.dumps(document, ensure_ascii=False, indent=2)], status)
    lines = [*heading, "", *table(verdicts, width), ""]
    lines += [*notes, *([""] if notes else []), summary(verdicts, seconds)]
    return Outcome(lines, status)
