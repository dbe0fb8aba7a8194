"""What the default mode's tamper monitor and token filter rely on from ocmem: every write ocmem
makes in the home is announced before it lands (the writes journal), the token's encodings the
plugin erases, and a session's exposure that only grows."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import Clock
from ocmem.bridge.tools import redactions
from ocmem.home import sessions
from ocmem.home import workspace as workspace_module
from ocmem.home.announce import WRITES_KEEP_BYTES, announce
from ocmem.home.digest import file_sha256
from ocmem.home.paths import Paths
from ocmem.home.runlock import run_lock
from ocmem.home.statefiles import write_state
from ocmem.home.workspace import Workspace


def announced(paths: Paths) -> list[dict[str, object]]:
    if not paths.writes_journal.exists():
        return []
    return [json.loads(line) for line in paths.writes_journal.read_text().splitlines()]


def test_the_transactions_writes_are_announced_with_their_digest(workspace: Workspace) -> None:
    paths = workspace.paths
    before = len(announced(paths))
    with workspace.transaction("test") as txn:
        txn.write(paths.memory_md, "# Mémoire\n\n- un fait\n")
        write_state(paths, paths.sessions_dir / "ses_x.json", "{}")  # ocmem's own: unannounced
        txn.write(paths.plugin_command, '{"command": ["ocmem"]}\n')  # how to start it is watched
    new = announced(paths)[before:]
    assert [(e["file"], e["sha256"]) for e in new] == [
        ("memory/MEMORY.md", file_sha256(paths.memory_md)),
        (".ocmem/plugin.json", file_sha256(paths.plugin_command)),
    ]


def test_a_removal_is_announced_before_the_file_goes_and_undone_with_the_run(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = workspace.paths
    skill = paths.skills_dir / "old" / "SKILL.md"
    with workspace.transaction("test") as txn:
        txn.create(skill, "---\nname: old\n---\n")
    seen: list[tuple[bool, object]] = []
    real_announce = announce

    def watching(*args: Any) -> None:
        real_announce(*args)
        seen.append((skill.exists(), announced(paths)[-1]["sha256"]))

    monkeypatch.setattr(workspace_module, "announce", watching)

    class Interrupted(Exception):
        pass

    with pytest.raises(Interrupted), workspace.transaction("test") as txn:
        txn.remove(skill, up_to=paths.skills_dir)
        assert not skill.parent.exists()  # the emptied folder went with it
        raise Interrupted
    assert seen == [(True, None)]  # announced while the file was still there
    assert skill.read_text() == "---\nname: old\n---\n"  # the failed run put it back


def test_a_durable_change_stays_with_its_backup_when_the_run_fails(workspace: Workspace) -> None:
    paths = workspace.paths
    with workspace.transaction("test") as txn:
        txn.write(paths.agents_md, "v1\n")

    class Interrupted(Exception):
        pass

    with pytest.raises(Interrupted), workspace.transaction("pull") as txn:
        txn.write(paths.agents_md, "v2\n", durable=True)
        folder = txn.backups.folder
        raise Interrupted
    assert paths.agents_md.read_text() == "v2\n"
    assert (folder / "AGENTS.md").read_text() == "v1\n"


def test_state_writers_refuse_the_homes_files(workspace: Workspace) -> None:
    paths = workspace.paths
    for path in (paths.memory_md, paths.plugin_command, paths.home.parent / "elsewhere"):
        with pytest.raises(ValueError, match="Transaction"):
            write_state(paths, path, "x")
    assert paths.memory_md.read_text() != "x"


def test_appends_are_announced_as_the_bytes_they_add_and_cut_tails_as_the_whole_file(
    workspace: Workspace,
) -> None:
    """The journal grows by appends (O(1), not a rewrite): each is announced as where it lands
    and the digest of what it adds, so announcing costs the same on any journal; the monitor
    checks the bytes before it against the file it kept. A cut tail is a whole new file."""
    from conftest import journal_fields
    from ocmem.home.digest import sha256
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
    """The plugin's filter (plugin/ocmem/text.ts, redact)."""
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
