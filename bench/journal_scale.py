"""A 100 000-entry journal (issue 34): `status`, an append, the index built for a hand-written
journal, a warm search by the words, and by the words and the meaning.

The journal is ``bench.journal_corpus``'s generator at 100 000 entries (10 000 with --quick):
about 32 MB, written whole as a human would (no index yet). Every figure is a whole command as
the plugin or a user runs it, interleaved with `python -c pass` (the ratio is the figure a
machine's speed does not change much).

- *status*: with the index describing the journal (the count read from it), and with the journal
  just edited by hand (the index stale: header lines counted as bytes).
- *journal add*: JSON on stdin, as the plugin's retrospective does.
- *index built*: the first search of a hand-written journal (no index) by the words
  (``OCMEM_MEANING=0``): what waits for the lexical index. In process too, the build alone.
- *warm search*: the index built; by the words (``OCMEM_MEANING=0``), then by the words and the
  meaning with a vector for every entry. Encoding 100 000 entries takes hours of background work
  (docs/benchmarks.md « Le sens »), so these vectors are random unit vectors keyed by the real
  entries: the search's cost does not depend on their values.

Paired with another version's code when ``OCMEM_BENCH_BASELINE`` names its ``sync`` folder
(main's: ``git archive main sync | tar -x -C /tmp/before``): the same commands on a copy of the
home, run in turn with this code's.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import (
    PYTHON,
    BenchResult,
    Row,
    Sample,
    init_home,
    interleave,
    ms,
    ocmem_cmd,
    ocmem_env,
    progress,
    ratio_spread,
    time_command,
    verdict,
    workdir,
)
from bench.journal_corpus import build

NAME = "journal_scale"
TITLE = "a 100 000-entry journal: status, append, index built, warm search (10 000 with --quick)"
TARGETS = {"status": 0.3, "append": 0.1, "built": 3.0, "warm": 0.5}
QUESTION = "comment renouveler un certificat expiré sur nginx".split()
ENTRY = (
    '{"titre": "Vérification quotidienne", "tags": ["vps"], "demande": "contrôle", '
    '"fait": "df -h", "piege": "aucun", "lecon": "rien à signaler", "resultat": "réussi"}'
)


def fill_vectors(home: Path) -> int:
    """A random unit vector for every indexed entry (issue 34's cost, not its quality)."""
    import numpy as np

    from ocmem.home import journalindex, journalmeaning
    from ocmem.home.journalvectors import open_vectors
    from ocmem.home.paths import Paths
    from ocmem.text import meaning

    paths = Paths(home)
    journalindex.search(paths.journal_index, [paths.journal], "x")  # the index, built
    store = open_vectors(paths.journal_vectors, paths.journal_vector_rows, write=True)
    assert store is not None
    import sqlite3

    db = sqlite3.connect(paths.journal_index, isolation_level=None)
    digests = [bytes(d) for (d,) in db.execute("SELECT DISTINCT digest FROM entries")]
    rng = np.random.default_rng(34)
    for start in range(0, len(digests), 10_000):
        batch = digests[start : start + 10_000]
        vectors = rng.standard_normal((len(batch), meaning.DIMENSIONS)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.add(batch, vectors.astype(np.float16))
    journalmeaning.link(db, store)
    db.close()
    store.close()
    return len(digests)


def _touch_journal(path: Path) -> None:
    """A hand edit that changes nothing but the file's time (the index is then stale)."""
    now = time.time()
    os.utime(path, (now, now))


def run(quick: bool = False) -> BenchResult:
    result = BenchResult(NAME, TITLE)
    entries = 10_000 if quick else 100_000
    reps = 3 if quick else 9
    baseline = os.environ.get("OCMEM_BENCH_BASELINE", "")
    words_only = ocmem_env(extra={"OCMEM_MEANING": "0"})
    meaning_on = ocmem_env()
    before_env = ocmem_env(extra={"PYTHONPATH": baseline}) if baseline else {}
    bare = [PYTHON, "-c", "pass"]
    with workdir(NAME) as root:
        progress(f"generating {entries} entries")
        text, _ = build(entries)
        home = init_home(root / "home")
        journal_path = home / "memory" / "journal.md"
        journal_path.write_text(text, encoding="utf-8")
        size = len(text.encode())
        before = root / "before"
        if baseline:
            shutil.copytree(home, before, symlinks=True)
        progress(f"{entries} entries, {size / 1e6:.1f} MB, {reps} repetitions")

        def pair(label: str, key: str, fn: Callable[[Path, dict[str, str]], float], n: int) -> None:
            if baseline:
                subject, old, anchor = interleave(
                    n,
                    lambda: fn(home, words_only),
                    lambda: fn(before, before_env),
                    lambda: time_command(bare, env=words_only),
                )
                old_text = f"before: {ms(old)}"
            else:
                subject, anchor = interleave(
                    n, lambda: fn(home, words_only), lambda: time_command(bare, env=words_only)
                )
                old_text = "—"
            result.add(_row(label, subject, anchor, key))
            if baseline:
                result.add(
                    Row(
                        f"{label}: the baseline's code",
                        old_text,
                        ms(anchor),
                        target="reported",
                    )
                )

        # the first search of a hand-written journal builds the index
        def cold(where: Path, env: dict[str, str]) -> float:
            (where / ".ocmem" / "journal-index.sqlite3").unlink(missing_ok=True)
            return time_command(ocmem_cmd(where, "journal", "search", *QUESTION), env=env)

        pair(
            "first search: index built for a hand-written journal (words)",
            "built",
            cold,
            max(2, reps // 3),
        )
        result.add(_in_process_build(home))

        def status(where: Path, env: dict[str, str]) -> float:
            return time_command(ocmem_cmd(where, "status"), env=env)

        pair("status, index up to date", "status", status, reps)

        def status_stale(where: Path, env: dict[str, str]) -> float:
            _touch_journal(where / "memory" / "journal.md")
            return time_command(ocmem_cmd(where, "status"), env=env)

        pair("status, journal edited since the index", "status", status_stale, reps)

        def append(where: Path, env: dict[str, str]) -> float:
            return time_command(ocmem_cmd(where, "journal", "add"), env=env, stdin=ENTRY)

        pair("journal add (JSON on stdin)", "append", append, reps)

        def warm(where: Path, env: dict[str, str]) -> float:
            cmd = ocmem_cmd(where, "journal", "search", *QUESTION)
            time_command(cmd, env=env)  # the appends above: indexed here, not timed
            return time_command(cmd, env=env)

        pair("warm search, by the words", "warm", warm, reps)
        progress("random vectors for every entry")
        filled = fill_vectors(home)
        search = ocmem_cmd(home, "journal", "search", *QUESTION)
        time_command(search, env=meaning_on)
        subject, anchor = interleave(
            reps,
            lambda: time_command(search, env=meaning_on),
            lambda: time_command(bare, env=meaning_on),
        )
        result.add(
            _row(
                "warm search, by the words and the meaning (every entry encoded)",
                subject,
                anchor,
                "warm",
            )
        )
        index = home / ".ocmem" / "journal-index.sqlite3"
        rows = home / ".ocmem" / "journal-vectors.f16"
        result.note(
            f"Journal: {entries} entries, {size / 1e6:.1f} MB; index {index.stat().st_size / 1e6:.1f} MB; "
            f"vectors {rows.stat().st_size / 1e6:.1f} MB for {filled} distinct entries."
        )
    return result


def _in_process_build(home: Path) -> Row:
    """The lexical index built from scratch, in process (no interpreter start, no search)."""
    from ocmem.home import journalindex
    from ocmem.home.paths import Paths

    paths = Paths(home)
    times = []
    for _ in range(2):
        paths.journal_index.unlink(missing_ok=True)
        start = time.perf_counter()
        journalindex.search(paths.journal_index, [paths.journal], "certificat")
        times.append(time.perf_counter() - start)
    sample = Sample.of(times)
    return Row(
        "index built in process (the lexical part)",
        ms(sample),
        "—",
        "",
        f"≤ {TARGETS['built']:.0f} s",
        verdict(sample.median <= TARGETS["built"]),
    )


def _row(label: str, subject: Sample, anchor: Sample, key: str) -> Row:
    target = TARGETS[key]
    return Row(
        label,
        ms(subject),
        f"`python -c pass` {ms(anchor)}",
        ratio_spread(subject, anchor),
        f"≤ {target * 1000:.0f} ms",
        verdict(subject.median <= target),
    )


if __name__ == "__main__":
    from bench.run import main

    main(["--only", NAME])
