# (ocmem has no py.typed marker yet, so from outside sync/ its modules count as untyped.)
"""``ocmem journal search`` on a 10 000-entry journal, against ``grep -ci`` on the same file.

Subject: ``python -m ocmem --home H journal search QUERY`` (a fresh process, as the plugin's
``memory_search`` tool runs it). Anchor: ``grep -ci WORD memory/journal.md``, a fresh process
that reads the whole file once: the floor for "answer from a cold start by scanning the file".
Queries: a common word, a word found only in the oldest entry, a word found nowhere, and a tag
found nowhere. The command ranks through its index in ``.ocmem/``, built by the discarded
warm-up round: these are warm searches (``bench.journal_retrieval`` times the cold one).
"""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

from bench.common import (
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

NAME = "journal_search"
TITLE = "`ocmem journal search` on a 10 000-entry journal (2 000 with --quick)"
TARGET_MS = 150.0

_TOPICS = ("nginx", "docker", "postgres", "backup", "certificats", "pare-feu", "cron", "dns")


def write_journal(home: Path, entries: int) -> int:
    """A journal of ``entries`` valid entries (rendered by ocmem itself); returns its size."""
    from ocmem.formats import journal

    start = datetime(2020, 1, 1, 8, 0)
    parts = [journal.JOURNAL_HEADER]
    for i in range(entries):
        topic = _TOPICS[i % len(_TOPICS)]
        special = "kubernetes" if i == 0 else topic
        parts.append(
            journal.Entry(
                when=start + timedelta(minutes=37 * i),
                title=f"Intervention {i} sur {topic}",
                tags=(topic, f"lot{i % 50}"),
                demande=f"régler un problème de {topic} sur le VPS n°{i % 7}",
                fait=f"diagnostic, correction de la configuration {special}, redémarrage",
                piege="le service ne relisait pas sa configuration après modification",
                lecon=f"toujours vérifier la configuration {topic} avant de redémarrer",
                resultat=("réussi", "partiel", "échec")[i % 3],
            ).render()
        )
    text = parts[0].rstrip("\n") + "\n\n" + "\n".join(parts[1:])
    path = home / "memory" / "journal.md"
    path.write_text(text, encoding="utf-8")
    return len(text.encode())


def run(quick: bool = False) -> BenchResult:
    result = BenchResult(NAME, TITLE)
    entries = 2_000 if quick else 10_000
    reps = 3 if quick else 15
    grep = shutil.which("grep")
    env = ocmem_env(
        extra={"OCMEM_MEANING": "0"}
    )  # by the words: bench.journal_meaning times the rest
    with workdir(NAME) as root:
        home = init_home(root / "home")
        size = write_journal(home, entries)
        journal_file = home / "memory" / "journal.md"
        progress(f"{entries} entries, {size / 1e6:.1f} MB, {reps} repetitions per query")
        cases = [
            ("common word, found in the newest entries", ["search", "nginx"], "nginx"),
            ("word only in the oldest entry", ["search", "kubernetes"], "kubernetes"),
            ("word found nowhere (worst case)", ["search", "introuvable"], "introuvable"),
            ("tag found nowhere", ["search", "--tag", "absent"], "#absent"),
        ]
        worst = 0.0
        for label, args, word in cases:
            cmd = ocmem_cmd(home, "journal", *args)
            if grep is None:
                subject = Sample.of([time_command(cmd, env=env) for _ in range(reps)])
                anchor_text, ratio = "grep not found", ""
            else:
                subject, anchor = interleave(
                    reps,
                    lambda cmd=cmd: time_command(cmd, env=env),  # type: ignore[misc]
                    lambda word=word: time_command(  # type: ignore[misc]
                        [grep, "-ci", word, str(journal_file)], env=env, check=False
                    ),
                )
                anchor_text, ratio = f"grep -ci: {ms(anchor)}", ratio_spread(subject, anchor)
            worst = max(worst, subject.median * 1e3)
            result.add(
                Row(
                    f"search: {label}",
                    ms(subject),
                    anchor_text,
                    ratio,
                    f"≤ {TARGET_MS:.0f} ms",
                    verdict(subject.median * 1e3 <= TARGET_MS),
                )
            )
        result.note(
            f"Journal: {entries} entries, {size / 1e6:.2f} MB, one file (no archives). "
            f"Slowest median: {worst:.0f} ms."
        )
    return result


if __name__ == "__main__":
    from bench.run import main

    main(["--only", NAME])
