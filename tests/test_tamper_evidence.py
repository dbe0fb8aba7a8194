"""What the default mode's tamper monitor and token filter rely on from ocmem: every write ocmem
makes in the home is announced before it lands (the writes journal), the token's encodings the
plugin erases, and a session's exposure that only grows."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote

from hypothesis import given
from hypothesis import strategies as st

from conftest import Clock
from ocmem.home import sessions
from ocmem.home.fsio import WRITES_KEEP_BYTES, atomic_write, file_sha256, log_event, run_lock
from ocmem.home.paths import Paths
from ocmem.home.workspace import Workspace
from ocmem.plugin.tools import redactions


def announced(paths: Paths) -> list[dict[str, object]]:
    if not paths.writes_journal.exists():
        return []
    return [json.loads(line) for line in paths.writes_journal.read_text().splitlines()]


def test_writes_under_the_lock_are_announced_with_their_digest(workspace: Workspace) -> None:
    paths = workspace.paths
    before = len(announced(paths))
    with workspace.transaction("test") as txn:
        txn.write(paths.memory_md, "# Mémoire\n\n- un fait\n")
        atomic_write(paths.sessions_dir / "ses_x.json", "{}")  # ocmem's own state: not announced
        atomic_write(paths.plugin_command, '{"command": ["ocmem"]}\n')  # but how to start it is
    new = announced(paths)[before:]
    assert [(e["file"], e["sha256"]) for e in new] == [
        ("memory/MEMORY.md", file_sha256(paths.memory_md)),
        (".ocmem/plugin.json", file_sha256(paths.plugin_command)),
    ]


def test_appends_are_announced_as_the_bytes_they_add_and_cut_tails_as_the_whole_file(
    workspace: Workspace,
) -> None:
    """The journal grows by appends (O(1), not a rewrite): each is announced as where it lands
    and the digest of what it adds, so announcing costs the same on any journal; the monitor
    checks the bytes before it against the file it kept. A cut tail is a whole new file."""
    from conftest import journal_fields
    from ocmem.home.fsio import sha256
    from ocmem.services.memory import Memory

    paths = workspace.paths
    before = len(announced(paths))
    Memory(workspace).add_journal(journal_fields())
    data = paths.journal.read_bytes()
    (append,) = announced(paths)[before:]
    assert append["file"] == "memory/journal.md"
    at = int(str(append["append_at"]))
    assert append["size"] == len(data) and append["sha256"] == sha256(data[at:])
    with paths.journal.open("ab") as handle:  # what a killed append leaves
        handle.write("## 2026-11-29 10:05 · coupé".encode())
    Memory(workspace).add_journal(journal_fields(titre="Suivante"))
    cut, added = [e for e in announced(paths) if e["file"] == "memory/journal.md"][-2:]
    data = paths.journal.read_bytes()
    at = int(str(added["append_at"]))
    assert "append_at" not in cut and cut["sha256"] == sha256(data[:at])  # the tail cut off
    assert added["size"] == len(data) and added["sha256"] == sha256(data[at:])  # then the entry


def test_writes_outside_the_lock_are_not_announced(home: Path) -> None:
    paths = Paths(home)
    before = len(announced(paths))
    atomic_write(home / "AGENTS.md", "à la main\n")
    assert len(announced(paths)) == before


def test_files_a_pull_removes_are_announced(home: Path) -> None:
    paths = Paths(home)
    log_event(paths, Clock(), "pull", updated=[], removed=["skills/old/SKILL.md"])
    assert announced(paths)[-1]["file"] == "skills/old/SKILL.md"
    assert announced(paths)[-1]["sha256"] is None


def test_the_journal_stays_small(home: Path) -> None:
    paths = Paths(home)
    paths.writes_journal.write_text('{"file": "x", "sha256": null}\n' * (WRITES_KEEP_BYTES // 20))
    with run_lock(paths, Clock()):
        pass
    assert paths.writes_journal.stat().st_size <= WRITES_KEEP_BYTES // 2
    assert all(
        json.loads(line)["file"] == "x" for line in paths.writes_journal.read_text().splitlines()
    )


def erase(text: str, secrets: list[str]) -> str:
    """The plugin's filter (plugin/ocmem.ts, redact)."""
    for secret in secrets:
        text = text.replace(secret, "[masqué]")
    return text


TOKENS = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.",
    min_size=16,
    max_size=64,
)


@given(TOKENS, st.binary(max_size=5), st.binary(max_size=5))
def test_the_token_base64_encoded_anywhere_in_a_stream_is_erased(
    token: str, before: bytes, after: bytes
) -> None:
    encoded = base64.b64encode(before + token.encode() + after).decode()
    shown = erase(encoded, redactions([token]))
    assert "[masqué]" in shown
    # What is left around the mark is at most the two quanta the neighbours share.
    assert len(shown.replace("[masqué]", "")) <= len(encoded) - len(token) * 4 // 3 + 16


@given(TOKENS)
def test_the_token_in_clear_hex_reversed_or_url_quoted_is_erased(token: str) -> None:
    secrets = redactions([token])
    for shown in (
        token,
        token.encode().hex(),
        token.encode().hex().upper(),
        token[::-1],
        quote(token, safe=""),
    ):
        assert erase(f"x {shown} y", secrets) == "x [masqué] y"


def test_short_secrets_are_not_filtered() -> None:
    assert redactions(["abc"]) == []


@given(
    st.lists(
        st.tuples(
            st.sampled_from([sessions.UNTRUSTED_OUTPUT, sessions.DIRECT_CALL]), st.integers(0, 9)
        )
    )
)
def test_exposure_only_grows(events: list[tuple[str, int]]) -> None:
    record: dict[str, list[object]] = {"journal": [], "exposure": []}
    for kind, count in events:
        if count:
            sessions.with_exposure(record, Clock(), kind, count)
    expected: dict[str, int] = {}
    for kind, count in events:
        if count:
            expected[kind] = max(expected.get(kind, 0), count)
    assert {e["kind"]: e["count"] for e in record["exposure"]} == expected  # type: ignore[index]
