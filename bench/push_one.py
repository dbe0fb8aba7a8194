# (ocmem has no py.typed marker yet, so from outside sync/ its modules count as untyped.)
"""Push of one new journal entry: at most 4 requests including the verification read, no listing.

Subject: ``ocmem.services.sync.push`` (library) after one ``Memory.add_journal``, the journal page already
on the server with 30 entries and a human preamble.
Anchor (same server, same run): SilverBullet's own client, which reads the page and writes it
back with the entry appended (GET + PUT): no probe, no verification, no merge, so a concurrent
edit is simply lost. Requests are counted by the server; wall times use 50 ms of injected
latency, the same for both.

The page is quiet (nobody but ocmem writes it between pushes): each push reads it exactly as its
previous write left it, so it probes and writes at once instead of waiting ``quiet_seconds``
(docs/sync.md, « Quiet, probe, PUT »); the waits each push logged are reported.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import httpx

from bench._paths import FakeSilverBullet
from bench.common import (
    TOKEN,
    BenchResult,
    Row,
    init_home,
    interleave,
    ms,
    progress,
    ratio_spread,
    sync_yaml,
    verdict,
    workdir,
)

NAME = "push_one"
TITLE = "Push of one new journal entry"
ANCHOR_PAGE = "Agents/Inbox/anchor.md"

ENTRY = {
    "titre": "Déploiement du service",
    "tags": ["docker", "vps"],
    "demande": "déployer le service web",
    "fait": "compose up, vérification des ports",
    "piege": "le port 8080 était pris",
    "lecon": "vérifier les ports libres avant de déployer",
    "resultat": "réussi",
}


class _Journal:
    """Adds entries to a home's journal through the library, one minute apart."""

    def __init__(self, home: Path) -> None:
        from ocmem.clock import Clock
        from ocmem.home.settings import load_settings
        from ocmem.home.workspace import Workspace
        from ocmem.services.memory import Memory

        class MinuteClock(Clock):
            """A minute later at each entry: every entry gets its own header."""

            def __init__(self) -> None:
                self.when = datetime(2026, 1, 5, 9, 0)

            def now(self) -> datetime:
                return self.when

        self.clock = MinuteClock()
        self.memory = Memory(Workspace(load_settings(home), clock=self.clock))

    def add(self) -> None:
        self.clock.when += timedelta(minutes=1)
        self.memory.add_journal(ENTRY)


def _kind(method: str, path: str, headers: dict[str, str]) -> str:
    if path in ("/.fs", "/.fs/"):
        return "listing"
    if method == "GET" and headers.get("x-get-meta"):
        return "probe"
    return "read" if method == "GET" else method.lower()


def run(quick: bool = False) -> BenchResult:
    from ocmem.clock import Clock
    from ocmem.home import identity
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace
    from ocmem.services import sync

    result = BenchResult(NAME, TITLE)
    reps = 3 if quick else 10
    latency = 50
    env = {"OCMEM_SILVERBULLET_TOKEN": TOKEN}
    with workdir(NAME) as root, FakeSilverBullet(token=TOKEN) as sb:
        preamble = "# Journal de l'agent\n\nNotes de l'humain sur ce journal.\n"
        home = init_home(root / "home", sync_yaml(sb.url), token=TOKEN)
        # The page the default push rule gives this home: the spec's Agents/Inbox/journal.md for a
        # home made with the default id, Agents/Inbox/<id>/journal.md for one given an id.
        found = identity.require(load_settings(home).paths)
        page_name = identity.pages_folder(found) + "journal.md"
        sb.write(page_name, preamble)
        sb.write(ANCHOR_PAGE, preamble)
        journal = _Journal(home)
        for _ in range(30):
            journal.add()
        sync.push(
            Workspace(load_settings(home), clock=Clock()), env=env
        )  # the page now holds the 30 entries
        sb.latency_ms = latency
        progress(f"{latency} ms latency, {reps} pushes of one entry")

        counts: list[Counter[str]] = []

        def subject() -> float:
            journal.add()
            settings = load_settings(home)
            sb.clear_requests()
            start = time.perf_counter()
            sync.push(Workspace(settings, clock=Clock()), env=env)
            elapsed = time.perf_counter() - start
            counts.append(Counter(_kind(r.method, r.path, dict(r.headers)) for r in sb.requests))
            return elapsed

        entry_text = (home / "memory" / "journal.md").read_text().split("\n\n## ")[-1]
        headers = {"Authorization": f"Bearer {TOKEN}", "X-Sync-Mode": "true"}
        anchor_counts: list[int] = []

        def anchor() -> float:
            sb.clear_requests()
            start = time.perf_counter()
            with httpx.Client(base_url=sb.url, headers=headers, trust_env=False) as client:
                page = client.get(f"/.fs/{ANCHOR_PAGE}")
                page.raise_for_status()
                body = page.text.rstrip("\n") + "\n\n## " + entry_text
                client.put(f"/.fs/{ANCHOR_PAGE}", content=body.encode()).raise_for_status()
            elapsed = time.perf_counter() - start
            anchor_counts.append(len(sb.requests))
            return elapsed

        pushed, sb_client = interleave(reps, subject, anchor)
        counts, anchor_counts = counts[1:], anchor_counts[1:]
        totals = [sum(c.values()) for c in counts]
        listings = sum(c["listing"] for c in counts)
        shape = ", ".join(f"{k} {v}" for k, v in sorted(counts[-1].items()))
        page = sb.read(page_name)
        if page.count("\n## 2026-") != 30 + reps + 1 or not page.startswith(preamble):
            raise RuntimeError("the pushed page does not hold every entry once")
        logged = [
            json.loads(line)
            for line in (home / ".ocmem/log.jsonl").read_text().splitlines()
            if '"action": "push"' in line
        ]
        waits = [w for entry in logged[-reps:] for w in entry.get("quiet_waits_ms", [])]
        ratio = pushed.median / sb_client.median
        result.add(
            Row(
                "requests per push of one entry",
                f"{max(totals)} ({shape}); listings: {listings}",
                f"SilverBullet's client: {max(anchor_counts)} (GET + PUT)",
                f"{max(totals) / max(anchor_counts):.1f}×",
                "≤ 4 incl. verification read, no listing",
                verdict(max(totals) <= 4 and listings == 0),
            ),
            Row(
                f"wall time, {latency} ms latency",
                ms(pushed),
                f"SilverBullet's client: {ms(sb_client)}",
                ratio_spread(pushed, sb_client),
                "≤ 2× on a quiet page",
                verdict(ratio <= 2),
            ),
            Row(
                "quiet waits per push (the page as our last write left it)",
                f"{sum(1 for w in waits if w > 0)} of {len(waits)} writes waited",
                "before this rule: every write waited quiet_seconds (0.3 s)",
                "",
                "0",
                verdict(bool(waits) and not any(waits)),
            ),
        )
        result.note(
            "The push also checks pending.md: unchanged locally, it costs no request. The page "
            "ends with every entry exactly once and the human preamble intact (checked)."
        )
    return result


if __name__ == "__main__":
    from bench.run import main

    main(["--only", NAME])
