"""ocmem push against the SilverBullet-faithful server over real HTTP: nothing lost, nothing doubled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import HOME_ID, Clock, journal_fields
from ocmem.errors import Refused
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import sync
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from ocmem.silverbullet.receipt import RECEIPT
from ocmem.text import inert
from support.faults import AfterEachResponse, Crash

JOURNAL = f"Agents/Inbox/{HOME_ID}/journal.md"
PENDING = f"Agents/Inbox/{HOME_ID}/pending.md"


def push(home: Path, **kwargs: Any) -> Outcome:
    return sync.push(Workspace(load_settings(home), clock=Clock()), **kwargs)


def entry(memory: Memory, clock: Clock, title: str, **fields: str) -> str:
    clock.advance(minutes=1)
    line = memory.add_journal(journal_fields(titre=title, **fields)).lines[0]
    return line.removeprefix("Entrée ajoutée : journal ")


def headers_of(sb: Any, method: str) -> list[dict[str, str]]:
    return [r.headers for r in sb.requests if r.method == method and r.path.startswith("/.fs")]


def test_spec_an_entry_appears_without_overwriting_existing_content(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    sb.write(JOURNAL, "# Journal de l'agent\n\nNote de l'humain, à garder.\n")
    minute = entry(memory, clock, "Première tâche")
    push(synced)
    text = sb.read(JOURNAL)
    assert text.startswith("# Journal de l'agent\n\nNote de l'humain, à garder.\n\n")
    assert f"## {minute} · Première tâche · #docker #vps" in text


def test_spec_dollar_test_displays_literally(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    entry(memory, clock, "Template", lecon="la page affichait ${test} au lieu du texte")
    push(synced)
    assert "affichait \\$\\{test\\} au lieu" in sb.read(JOURNAL)


def test_spec_a_write_to_agents_skills_is_refused_before_sending(synced: Path, sb: Any) -> None:
    from ocmem.home.space import load_sync_config
    from ocmem.silverbullet.client import ForbiddenRequest, SilverBullet

    with SilverBullet(load_sync_config(load_settings(synced))) as client:
        for path in [
            "Agents/Skills/evil/SKILL.md",
            "Agents/Memory/MEMORY.md",
            "Agents/Inbox/../Skills/x.md",
            "AGENTS.md",
        ]:
            with pytest.raises(ForbiddenRequest):
                client.put(path, b"x")
        with pytest.raises(ForbiddenRequest):
            client._client.delete(client._url(JOURNAL))
    assert sb.requests_matching("PUT") == [] and sb.requests_matching("DELETE") == []


def test_push_targets_outside_the_inbox_are_refused_by_config(home: Path, sb: Any) -> None:
    from conftest import configure_sync

    configure_sync(
        home, sb.url, push=[{"local": "memory/journal.md", "remote": "Agents/Skills/journal.md"}]
    )
    with pytest.raises(Exception, match=r"n'écrit que des pages \.md sous"):
        push(home)


def test_one_new_entry_costs_four_requests_and_no_listing(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    entry(memory, clock, "Un")
    push(synced)
    entry(memory, clock, "Deux")
    sb.clear_requests()
    push(synced)
    fs = [
        (r.method, r.path, "x-get-meta" in r.headers)
        for r in sb.requests
        if r.path.startswith("/.fs")
    ]
    assert fs == [
        ("GET", f"/.fs/{JOURNAL}", False),
        ("GET", f"/.fs/{JOURNAL}", True),
        ("PUT", f"/.fs/{JOURNAL}", False),
        ("GET", f"/.fs/{JOURNAL}", False),
    ]


def test_an_unchanged_memory_costs_no_request(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    entry(memory, clock, "Un")
    push(synced)
    sb.clear_requests()
    assert push(synced).render() == "Push : rien de nouveau"
    assert sb.requests == []


def test_headers_sync_mode_always_and_never_last_modified(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    entry(memory, clock, "Un")
    push(synced)
    assert all(
        h.get("x-sync-mode") == "true" for h in headers_of(sb, "GET") + headers_of(sb, "PUT")
    )
    assert all("x-last-modified" not in h for h in headers_of(sb, "PUT"))


def test_pushing_twice_never_duplicates(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    minute = entry(memory, clock, "Un")
    push(synced)
    sb.write(JOURNAL, sb.read(JOURNAL) + "\nligne ajoutée par l'humain\n")
    push(synced)
    entry(memory, clock, "Deux")
    push(synced)
    assert sb.read(JOURNAL).count(f"## {minute} ·") == 1
    assert "ligne ajoutée par l'humain" in sb.read(JOURNAL)


def test_a_handled_entry_the_human_deleted_never_comes_back(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    first = entry(memory, clock, "Traitée")
    second = entry(memory, clock, "Gardée")
    push(synced)
    text = sb.read(JOURNAL)
    start = text.index(f"## {first}")
    sb.write(JOURNAL, text[:start] + text[text.index(f"## {second}") :])
    sb.clear_requests()
    push(synced)  # nothing new locally: the deletion costs no request
    assert sb.requests == []
    entry(memory, clock, "Nouvelle")
    report = push(synced)
    assert f"## {first}" not in sb.read(JOURNAL)
    assert "supprimé(s) dans SilverBullet : respecté(s)" in report.render()
    entry(memory, clock, "Encore")
    push(synced)
    assert f"## {first}" not in sb.read(JOURNAL)
    assert not report.needs_human


def test_human_annotations_are_kept(synced: Path, sb: Any, memory: Memory, clock: Clock) -> None:
    minute = entry(memory, clock, "Un")
    push(synced)
    annotated = sb.read(JOURNAL).replace(
        "- Résultat : réussi", "- Résultat : réussi\n- Note humaine : vu, ok"
    )
    sb.write(JOURNAL, annotated)
    entry(memory, clock, "Deux")
    push(synced)
    text = sb.read(JOURNAL)
    assert "- Note humaine : vu, ok" in text and text.count(f"## {minute}") == 1


def test_a_crash_after_the_put_converges_without_duplicate(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    minute = entry(memory, clock, "Un")

    def die_after_put(request: httpx.Request) -> None:
        if request.method == "PUT":
            raise Crash

    with pytest.raises(Crash):
        push(synced, transport=AfterEachResponse(die_after_put))
    assert sb.read(JOURNAL).count(f"## {minute}") == 1  # it landed, the state was not saved
    push(synced)
    assert sb.read(JOURNAL).count(f"## {minute}") == 1


def test_a_connection_lost_after_the_write_is_not_a_duplicate(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    minute = entry(memory, clock, "Un")
    sb.reset_next(method="PUT", after_apply=True)
    push(synced)
    assert sb.read(JOURNAL).count(f"## {minute}") == 1


def test_a_write_between_our_read_and_the_probe_is_kept(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    sb.write(JOURNAL, "# Journal\n")
    entry(memory, clock, "Un")
    fired: list[object] = []

    def human_writes_after_first_read(request: httpx.Request) -> None:
        if (
            request.method == "GET"
            and "x-get-meta" not in request.headers
            and request.url.path.endswith("journal.md")
            and not fired
        ):
            fired.append(True)
            sb.clock.advance(3)
            sb.write(JOURNAL, "# Journal\n\nécrit par l'humain pendant le push\n")

    push(synced, transport=AfterEachResponse(human_writes_after_first_read))
    text = sb.read(JOURNAL)
    assert "écrit par l'humain pendant le push" in text and "· Un ·" in text


def test_residual_window_a_write_between_probe_and_put_is_overwritten_but_documented(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    """SilverBullet has no conditional PUT: this one-round-trip window is the documented residual risk."""
    sb.write(JOURNAL, "# Journal\n\nversion lue par ocmem\n")
    entry(memory, clock, "Un")
    sb.on_probe_before_put(
        JOURNAL, lambda path: sb.write(path, "# Journal\n\nécrite dans la fenêtre\n")
    )
    push(synced)
    assert "écrite dans la fenêtre" not in sb.read(JOURNAL)
    kept = list((synced / ".ocmem/backups").rglob("journal.md"))
    assert any("version lue par ocmem" in p.read_text() for p in kept)
    assert "probe" in (Path(__file__).parents[1] / "docs/sync.md").read_text()


def test_torn_reads_and_server_errors_are_retried(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    minute = entry(memory, clock, "Un")
    push(synced)
    entry(memory, clock, "Deux")
    sb.tear_next_read(JOURNAL)
    sb.fail_next(503, method="GET", path=JOURNAL)
    push(synced)
    assert sb.read(JOURNAL).count(f"## {minute}") == 1 and "· Deux ·" in sb.read(JOURNAL)


def test_same_millisecond_same_size_human_edit_is_not_lost(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    entry(memory, clock, "Un")
    push(synced)
    sb.clock.freeze()
    before = sb.meta(JOURNAL)
    edited = sb.read(JOURNAL).replace("docker compose up -d", "DOCKER COMPOSE UP -D")
    sb.write(JOURNAL, edited, mtime_ms=before.last_modified)
    assert (
        sb.meta(JOURNAL).size == before.size
        and sb.meta(JOURNAL).last_modified == before.last_modified
    )
    entry(memory, clock, "Deux")
    push(synced)
    assert "DOCKER COMPOSE UP -D" in sb.read(JOURNAL)


def test_a_browser_conflict_fork_is_reported_and_the_copy_kept(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    sb.write(JOURNAL, "# Journal\n")
    first = entry(memory, clock, "Un")
    push(synced)
    sb.clock.advance(1000)
    copy = sb.fork_conflict(JOURNAL, "# Journal\n\nmodif faite hors ligne dans le navigateur\n")
    assert copy is not None
    entry(memory, clock, "Deux")
    report = push(synced)
    assert report.needs_human
    assert f"une autre version de {JOURNAL} dans {copy}" in report.render()
    text = sb.read(JOURNAL)
    # The browser's version stays, and what it had not seen comes back: nothing lost, once.
    assert (
        "modif faite hors ligne" in text and "· Deux ·" in text and text.count(f"## {first}") == 1
    )
    assert sb.exists(copy) and sb.requests_matching("DELETE") == []
    # Until the human has looked at the copy, every push says so.
    entry(memory, clock, "Trois")
    assert push(synced).needs_human
    sb.delete(copy)
    entry(memory, clock, "Quatre")
    final = push(synced)
    assert not final.needs_human and sb.read(JOURNAL).count(f"## {first}") == 1


def test_cli_push_exits_3_on_a_fork(
    synced: Path, sb: Any, memory: Memory, clock: Clock, run_cli: Any
) -> None:
    sb.write(JOURNAL, "# Journal\n")
    entry(memory, clock, "Un")
    assert run_cli("push").code == 0
    sb.clock.advance(1000)
    sb.fork_conflict(JOURNAL, "# Journal\n\nversion du navigateur\n")
    entry(memory, clock, "Deux")
    result = run_cli("push")
    assert result.code == 3 and "conflit d'édition" in result.out


def proposal_fields(refs: list[str]) -> dict[str, Any]:
    return {
        "type": "fait",
        "titre": "Ports",
        "contenu": "Vérifier les ports.",
        "sources": refs,
        "contradiction": "aucune",
        "remplace": "rien",
    }


def test_pending_merges_per_proposal(
    synced: Path, sb: Any, memory: Memory, clock: Clock, proposals: Proposals
) -> None:
    refs = [f"journal {entry(memory, clock, 'A')}", f"journal {entry(memory, clock, 'B')}"]
    proposals.propose(proposal_fields(refs))
    push(synced)
    assert "## P-0001 · fait · Ports" in sb.read(PENDING)
    # local-only change (the proposal gets a new source) → remote updated
    refs.append(f"journal {entry(memory, clock, 'C')}")
    proposals.propose(proposal_fields(refs))
    push(synced)
    assert "récurrence (3 épisodes)" in sb.read(PENDING)
    # remote-only change (the human annotates) → kept
    sb.write(
        PENDING,
        sb.read(PENDING).replace("- Remplace : rien", "- Remplace : rien\n- Avis : à reformuler"),
    )
    push(synced)
    assert "- Avis : à reformuler" in sb.read(PENDING)
    # both changed → human's kept, agent's inserted beside it, reported
    refs.append(f"journal {entry(memory, clock, 'D')}")
    proposals.propose(proposal_fields(refs))
    sb.write(
        PENDING,
        sb.read(PENDING).replace("- Avis : à reformuler", "- Avis : à reformuler, vraiment"),
    )
    report = push(synced)
    text = sb.read(PENDING)
    assert "- Avis : à reformuler, vraiment" in text
    assert text.count("## P-0001 · ") == 1 and text.count("## P-0001~agent-") == 1
    assert "modifié des deux côtés" in report.render()
    assert "récurrence (4 épisodes)" in text.split("## P-0001~agent-")[1]
    push(synced)
    assert sb.read(PENDING).count("## P-0001~agent-") == 1


def test_local_promotion_is_refused_in_sync_mode(
    synced: Path, memory: Memory, clock: Clock, proposals: Proposals
) -> None:
    from conftest import Clock as _Clock  # noqa: F401  (fixture type only)
    from ocmem.home.space import is_configured

    refs = [f"journal {entry(memory, clock, 'A')}", f"journal {entry(memory, clock, 'B')}"]
    proposals.propose(proposal_fields(refs))
    synced_workspace = Workspace(
        load_settings(synced), clock=clock, sync_mode=is_configured(load_settings(synced))
    )
    with pytest.raises(Refused, match="promotion se fait dans SilverBullet"):
        Proposals(synced_workspace).accept("P-0001")


def test_read_only_space_is_refused_clearly(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    entry(memory, clock, "Un")
    sb.read_only = True
    with pytest.raises(Refused, match="lecture seule"):
        push(synced)


def test_status_shows_sync_state(
    synced: Path, sb: Any, memory: Memory, clock: Clock, run_cli: Any
) -> None:
    entry(memory, clock, "Un")
    push(synced)
    out = run_cli("status").out
    assert f"SilverBullet    {sb.url} — 0 fichier(s) tiré(s)" in out
    assert f"{JOURNAL} : 1 bloc(s) poussé(s)" in out


def test_an_entry_deleted_after_a_crash_mid_push_does_not_come_back(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    first = entry(memory, clock, "Un")

    def die_after_put(request: httpx.Request) -> None:
        if request.method == "PUT":
            raise Crash

    with pytest.raises(Crash):
        push(synced, transport=AfterEachResponse(die_after_put))
    text = sb.read(JOURNAL)
    sb.clock.advance(5)
    sb.write(JOURNAL, text[: text.index(f"## {first}")])  # the human handled it and deleted it
    entry(memory, clock, "Deux")
    push(synced)
    assert f"## {first}" not in sb.read(JOURNAL) and "· Deux ·" in sb.read(JOURNAL)


def test_a_put_that_never_landed_is_sent_again(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    sb.write(JOURNAL, "# Journal\n")
    first = entry(memory, clock, "Un")

    def die_before_put(request: httpx.Request) -> None:
        if request.method == "GET" and "x-get-meta" in request.headers:
            raise Crash  # killed after recording the intent, before the PUT left

    with pytest.raises(Crash):
        push(synced, transport=AfterEachResponse(die_before_put))
    assert f"## {first}" not in sb.read(JOURNAL)
    push(synced)
    assert sb.read(JOURNAL).count(f"## {first}") == 1


def test_entries_written_by_an_older_ocmem_are_rendered_inert_before_leaving(
    synced: Path, sb: Any
) -> None:
    legacy = (
        "# Journal\n\n## 2026-11-20 10:00 · Ancienne entrée <img src=x onerror=alert(1)> · #vps\n"
        "- Demande : d\n- Fait : ${space.writePage('Agents/Memory/MEMORY', 'x')}\n"
        "- Piège : aucun\n- Leçon : l\n- Résultat : réussi\n"
    )
    (synced / "memory/journal.md").write_text(legacy)
    push(synced)
    page = sb.read(JOURNAL)
    assert "&lt;img `src=x` `onerror=alert(1)>`" in page
    assert "\\$\\{space.writePage('Agents/Memory/MEMORY', 'x')\\}" in page
    assert inert.active_constructs(page) == []


def test_a_block_that_is_not_an_entry_stays_local(synced: Path, sb: Any) -> None:
    (synced / "memory/journal.md").write_text(
        "# Journal\n\n## 2026-11-20 10:00 · Bricolé à la main · #vps\n<script>x()</script>\n"
    )
    report = push(synced)
    assert report.needs_human
    assert "2026-11-20 10:00 n'est pas envoyé" in report.render()
    assert "<script>" not in (sb.read(JOURNAL) if sb.exists(JOURNAL) else "")


def test_entries_only_in_a_conflict_copy_are_named_in_their_order(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    sb.write(JOURNAL, "# Journal\n")
    clock.advance(minutes=1)
    refs = [
        memory.add_journal(journal_fields(titre=f"Tâche {n}")).lines[0].split("journal ")[-1]
        for n in range(11)
    ]  # one minute: ~2 … ~11
    push(synced)
    sb.clock.advance(1000)
    # The human's browser saw them (the receipt stays), and its version dropped them: a
    # deletion the push respects, but the server's version, moved to a copy, still holds them.
    seen = sb.read(JOURNAL)
    stamp = RECEIPT.search(seen)
    assert stamp is not None
    copy = sb.fork_conflict(JOURNAL, f"{seen[: seen.index('## ')]}\n{stamp.group(0)}\n")
    assert copy is not None
    entry(memory, clock, "Après")
    said = push(synced).render()
    assert f"{', '.join(refs)} ne sont plus que dans la copie" in said, said
