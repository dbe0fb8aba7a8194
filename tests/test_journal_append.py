"""Appending to journal.md: one write + fsync whatever the journal's size, crash-safe.

A run killed half-way leaves the journal followed by a prefix of what it appended; the next
append recognises that prefix (``journal.torn_end``), sets it aside in the backups and goes on,
so the journal only ever holds whole entries and every completed entry stays.
"""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import HOME_ID, Clock, journal_fields
from ocmem.errors import StorageError
from ocmem.formats import journal
from ocmem.formats.journal import JOURNAL_HEADER
from ocmem.services.memory import Memory

value = st.text(
    alphabet=st.characters(blacklist_categories=["Cs", "Cc"], blacklist_characters="·"),
    min_size=1,
    max_size=60,
).filter(lambda t: t.strip())
multiline = st.lists(value, min_size=1, max_size=3).map("\n".join)


def render(i: int, fields: list[str], rank: int = 1) -> journal.Entry:
    data = journal_fields(
        titre=f"Entrée {i}", demande=fields[0], fait=fields[1], piege=fields[2], lecon=fields[3]
    )
    return journal.entry_from_fields(
        data, datetime(2026, 11, 29, 10, i % 60), 40, 2000, 8000
    )._replace(rank=rank)


def tail_of(data: bytes) -> tuple[bytes, int]:
    """What `ocmem.services.memory` reads: from the newline before the last header (and its offset)."""
    start = max(data.rfind(b"\n## "), 0)
    return data[start:], start


@given(
    existing=st.lists(st.lists(multiline, min_size=4, max_size=4), max_size=3),
    new=st.lists(multiline, min_size=4, max_size=4),
)
def test_every_prefix_of_an_append_is_recognised_and_cut_back_to_the_journal_before_it(
    existing: list[list[str]], new: list[str]
) -> None:
    text = JOURNAL_HEADER.encode()
    for i, fields in enumerate(existing):
        text += (journal.separator(text) + render(i, fields).render()).encode()
    before = [(b.key, b.text) for b in journal.blocks(text.decode())]
    payload = (journal.separator(text) + render(len(existing), new).render()).encode()
    for cut_at in range(len(payload)):
        data = text + payload[:cut_at]
        tail, start = tail_of(data)
        cut = journal.torn_end(tail)
        recovered = data if cut is None else data[: start + cut]
        assert recovered.startswith(text.rstrip(b"\n")), cut_at
        assert recovered in (text, text + b"\n"), (
            cut_at,
            data[len(text) :],
        )  # at most a blank line
        assert [(b.key, b.text) for b in journal.blocks(recovered.decode())] == before
        assert journal.torn_end(tail_of(recovered)[0]) is None
    whole = text + payload
    assert journal.torn_end(tail_of(whole)[0]) is None
    assert len(journal.blocks(whole.decode())) == len(existing) + 1


@pytest.mark.parametrize(
    "end",
    [
        "Une note ajoutée à la main\n",
        "## Un titre libre\n\ndu texte\n",
        "du texte sans fin de ligne",
        "- Demande : une liste à la main\n",
    ],
)
def test_what_ocmem_did_not_write_is_left_alone(end: str) -> None:
    text = JOURNAL_HEADER + "\n" + render(1, ["a", "b", "c", "d"]).render() + "\n" + end
    assert journal.torn_end(tail_of(text.encode())[0]) is None


def test_an_interrupted_append_is_set_aside_then_the_entry_written(
    memory: Memory, home: Path, clock: Clock
) -> None:
    memory.add_journal(journal_fields(titre="Première"))
    path = home / "memory/journal.md"
    whole = path.read_bytes()
    torn = "\n" + journal.entry_from_fields(journal_fields(titre="Coupée"), clock(), 10).render()
    path.write_bytes(whole + torn.encode()[:70])
    clock.advance(minutes=1)
    result = memory.add_journal(journal_fields(titre="Suivante"))
    assert "mise de côté" in result.render()
    text = path.read_text()
    assert text.startswith(whole.decode())
    assert [b.title for b in journal.blocks(text)] == ["Première", "Suivante"]
    assert journal.torn_end(tail_of(text.encode())[0]) is None
    (kept,) = (home / ".ocmem/backups").rglob("journal.md.interrompue")
    assert kept.read_bytes() == torn.encode()[:70]


def test_a_disk_full_in_the_middle_of_an_append_leaves_the_journal_as_it_was(
    memory: Memory, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.add_journal(journal_fields(titre="Première"))
    path = home / "memory/journal.md"
    before = path.read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: bytes | memoryview) -> int:
        if len(data) > 40:
            return real_write(fd, bytes(data[:40]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("ocmem.home.workspace.os.write", half_then_full)
    with pytest.raises(
        StorageError,
        match=r"disque plein : impossible d'écrire memory/journal\.md : rien n'a été modifié",
    ):
        memory.add_journal(journal_fields(titre="Seconde"))
    monkeypatch.undo()
    assert path.read_bytes() == before


def test_the_rank_is_unique_across_the_journal_and_its_archive(
    memory: Memory, home: Path, clock: Clock
) -> None:
    entry = journal.entry_from_fields(journal_fields(titre="Archivée"), clock(), 10)
    (home / f"memory/{journal.archive_name(clock())}").write_text(
        JOURNAL_HEADER + "\n" + entry.render()
    )
    assert memory.add_journal(journal_fields(titre="Nouvelle")).lines[0].endswith("10:00~2")


def test_an_entry_is_stamped_with_its_minute_never_a_later_one(
    memory: Memory, clock: Clock
) -> None:
    """30 quick adds in one minute: all at that minute (~2 … ~30), none in the future."""
    start = clock()
    refs = []
    for i in range(30):
        clock.value = start + timedelta(seconds=i)
        refs.append(
            journal.parse_ref(
                memory.add_journal(journal_fields(titre=f"Rapide {i}"))
                .lines[0]
                .removeprefix("Entrée ajoutée : ")
            )
        )
    assert {r.when for r in refs} == {start}
    assert [r.rank for r in refs] == list(range(1, 31))


# --- killed at random --------------------------------------------------------------------------

RUNS = 200


@pytest.mark.real_clock
def test_journal_add_killed_at_random_leaves_only_whole_entries_and_every_completed_one(
    home: Path,
) -> None:
    """200 `ocmem journal add`, 4 at a time: three SIGKILLed after a random delay (or not, when
    they have finished first), one left to finish (on a loaded machine every delay may be too
    short: some runs complete all the same)."""
    env = {**os.environ, "OCMEM_HOME": str(home)}
    rng = random.Random(13)
    path = home / "memory/journal.md"
    add("Mesure", env)  # warm the caches, then time one run: kills land across its whole length
    started = time.monotonic()
    add("Mesure 2", env)
    typical = time.monotonic() - started
    completed = {"Mesure", "Mesure 2"}
    killed = 0
    for batch in range(RUNS // 4):
        procs = []
        for j in range(4):
            title = f"Tuée {batch}-{j}"
            proc = subprocess.Popen(
                [sys.executable, "-m", "ocmem", "--wait", "30", "journal", "add"],
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(journal_fields(titre=title)).encode())
            proc.stdin.close()
            proc.stdin = None  # communicate() must not flush it
            deadline = None if j == 3 else time.monotonic() + rng.uniform(0, typical * 2)
            procs.append((title, proc, deadline))
        for title, proc, deadline in procs:
            if deadline is not None:
                time.sleep(max(0.0, deadline - time.monotonic()))
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
            out, _ = proc.communicate()
            if proc.returncode == 0:
                assert out.decode().startswith("Entrée ajoutée : ")
                completed.add(title)
            else:
                assert deadline is not None and proc.returncode == -signal.SIGKILL
                killed += 1
        # between batches the journal holds whole entries, perhaps then one torn tail
        data = path.read_bytes()
        tail, start = tail_of(data)
        cut = journal.torn_end(tail)
        whole = data if cut is None else data[: start + cut]
        found = journal.blocks(whole.decode("utf-8"))
        assert all(journal.parse_entry(b) is not None for b in found)
        assert completed <= {b.title for b in found}
    final = add("Après", env)  # recovers a torn tail the last batch may have left
    found = journal.blocks(path.read_text())
    assert all(journal.parse_entry(b) is not None for b in found)
    assert journal.torn_end(tail_of(path.read_bytes())[0]) is None
    titles = [b.title for b in found]
    assert completed | {final} <= set(titles)
    assert len(titles) == len(set(titles))  # nothing written twice
    assert len({b.key for b in found}) == len(found)  # references unique
    assert killed > 0  # the random delays did kill (and those left to finish completed)


def add(title: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ocmem", "journal", "add"],
        env=env,
        input=json.dumps(journal_fields(titre=title)),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return title


def test_entries_of_one_minute_are_pushed_as_distinct_blocks(
    synced: Path, sb: object, memory: Memory
) -> None:
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace
    from ocmem.services import sync

    for title in ("Première", "Deuxième", "Troisième"):
        memory.add_journal(journal_fields(titre=title))
    sync.push(Workspace(load_settings(synced), clock=Clock()))
    page = sb.read(f"Agents/Inbox/{HOME_ID}/journal.md")  # type: ignore[attr-defined]
    for title in ("Première", "Deuxième", "Troisième"):  # the spec's headers, in their order
        assert f"## 2026-11-29 10:00 · {title} · " in page
    assert "~" not in page and page.index("Première") < page.index("Deuxième") < page.index(
        "Troisième"
    )
    sync.push(Workspace(load_settings(synced), clock=Clock()))  # again: nothing duplicated
    assert sb.read(f"Agents/Inbox/{HOME_ID}/journal.md").count("## 2026-11-29 10:00") == 3  # type: ignore[attr-defined]


def test_entries_of_one_minute_are_archived_both(memory: Memory, home: Path, clock: Clock) -> None:
    from datetime import date

    clock.value = datetime(2026, 7, 1, 8, 0)
    for title in ("Une", "Deux"):
        memory.add_journal(journal_fields(titre=title))
    clock.value = datetime(2026, 9, 1, 9, 0)  # a cutoff in the future is refused
    memory.archive_journal(date(2026, 9, 1))
    archived = journal.blocks((home / "memory/journal-2026-07.md").read_text())
    assert [(str(b.key), b.title) for b in archived] == [
        ("journal 2026-07-01 08:00", "Une"),
        ("journal 2026-07-01 08:00~2", "Deux"),
    ]
    clock.value = datetime(2026, 7, 1, 8, 0, 30)
    assert (
        memory.add_journal(journal_fields(titre="Trois")).lines[0].endswith("08:00~3")
    )  # the archive counts
