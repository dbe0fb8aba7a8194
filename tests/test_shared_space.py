"""The shared space (issue 10): several homes, a human in SilverBullet, a server that tears reads
and interleaves writes — nothing lost, nothing doubled, the human's decisions read back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import HOME_ID, SB_TOKEN, CliResult, Clock, configure_sync, journal_fields
from ocmem.errors import Busy, InputError, Refused
from ocmem.formats import pending
from ocmem.home import identity
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import sync
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from ocmem.setup.install import Installer
from ocmem.silverbullet.client import SilverBulletError
from ocmem.silverbullet.push import untangle
from ocmem.silverbullet.receipt import RECEIPT, with_receipt
from support.faults import AfterEachResponse
from support.sbserver import RealServerFaults

JOURNAL = f"Agents/Inbox/{HOME_ID}/journal.md"
PENDING = f"Agents/Inbox/{HOME_ID}/pending.md"


def workspace(path: Path, clock: Clock) -> Workspace:
    return Workspace(load_settings(path), clock=clock, sync_mode=True)


def push(path: Path, **kwargs: Any) -> Outcome:
    return sync.push(Workspace(load_settings(path), clock=Clock()), **kwargs)


def pull(path: Path, clock: Clock, **kwargs: Any) -> Outcome:
    return sync.pull(workspace(path, clock), **kwargs)


def new_home(root: Path, home_id: str, url: str, clock: Clock) -> Path:
    path = root / home_id
    Installer(Workspace(load_settings(path), clock=clock), home_id=home_id).run()
    configure_sync(path, url)
    return path


def fact(
    refs: list[str], title: str = "Ports", content: str = "Vérifier les ports libres."
) -> dict[str, Any]:
    return {
        "type": "fait",
        "titre": title,
        "contenu": content,
        "sources": refs,
        "contradiction": "aucune",
        "remplace": "rien",
        "retiens_ca": True,
    }


def entry(memory: Memory, title: str) -> str:
    """The new entry's reference (« journal AAAA-MM-JJ HH:MM »)."""
    added = memory.add_journal(journal_fields(titre=title))
    return added.lines[0].removeprefix("Entrée ajoutée : ")


def minute(ref: str) -> str:
    """The block id of an entry, from its reference."""
    return ref.removeprefix("journal ")


# --- identity -------------------------------------------------------------------------------


def test_two_homes_writing_in_the_same_minute_lose_nothing(
    tmp_path: Path, sb: Any, clock: Clock
) -> None:
    homes = [new_home(tmp_path, name, sb.url, clock) for name in ("vps-prod", "vps-dev")]
    for path in homes:
        memory = Memory(Workspace(load_settings(path), clock=clock))
        ref = entry(memory, f"Tâche de {path.name}")
        Proposals(Workspace(load_settings(path), clock=clock)).propose(
            fact([ref], title=f"Ports {path.name}")
        )
    for path in homes:
        assert not push(path).needs_human
    for path in homes:
        journal_page = sb.read(f"Agents/Inbox/{path.name}/journal.md")
        pending_page = sb.read(f"Agents/Inbox/{path.name}/pending.md")
        assert (
            journal_page.count("## 2026-11-29 10:00 · ") == 1
            and f"Tâche de {path.name}" in journal_page
        )
        assert pending_page.count("## P-0001 · ") == 1 and f"Ports {path.name}" in pending_page
    for path in homes:  # and once more: nothing doubled
        push(path)
        assert sb.read(f"Agents/Inbox/{path.name}/journal.md").count("## 2026-11-29 10:00 · ") == 1


def test_a_copied_home_must_take_an_id_of_its_own(tmp_path: Path, sb: Any, clock: Clock) -> None:
    original = new_home(tmp_path, "vps-prod", sb.url, clock)
    copy = tmp_path / "copie"
    import shutil

    shutil.copytree(original, copy)
    with pytest.raises(Refused, match="créé ailleurs") as refused:
        push(copy)
    assert "--id-dossier" in refused.value.render()
    Installer(Workspace(load_settings(copy), clock=clock), home_id="vps-copie").run()
    assert identity.require(load_settings(copy).paths).id == "vps-copie"
    push(copy)
    assert not sb.exists("Agents/Inbox/vps-prod/journal.md")


def test_two_homes_given_one_id_never_write_each_others_page(
    tmp_path: Path, sb: Any, clock: Clock
) -> None:
    # Two Unix users (or a global and a project home) who both chose « vm » (issue 22: the
    # second push took the first home's entries for the human's edits and doubled P-0001).
    first = new_home(tmp_path / "alice", "vm", sb.url, clock)
    second = new_home(tmp_path / "bob", "vm", sb.url, clock)
    for path in (first, second):
        memory = Memory(Workspace(load_settings(path), clock=clock))
        Proposals(Workspace(load_settings(path), clock=clock)).propose(
            fact([entry(memory, f"Tâche de {path.parent.name}")], title=f"Ports {path.parent.name}")
        )
    assert not push(first).needs_human
    journal_before = sb.read("Agents/Inbox/vm/journal.md")
    pending_before = sb.read("Agents/Inbox/vm/pending.md")
    with pytest.raises(Refused, match="tenue par un autre dossier ocmem") as refused:
        push(second)
    assert "ocmem init --id-dossier" in refused.value.render()
    assert sb.read("Agents/Inbox/vm/journal.md") == journal_before
    assert sb.read("Agents/Inbox/vm/pending.md") == pending_before
    assert "Tâche de bob" not in journal_before and "~agent-" not in journal_before
    assert not push(first).needs_human  # the first home still owns its pages
    suggested = refused.value.render().split("--id-dossier ")[1].split("`")[0]
    Installer(Workspace(load_settings(second), clock=clock), home_id=suggested).run()
    assert not push(second).needs_human
    assert "Tâche de bob" in sb.read(f"Agents/Inbox/{suggested}/journal.md")


def test_doctor_names_a_page_another_home_holds(tmp_path: Path, sb: Any, clock: Clock) -> None:
    import os

    from ocmem.setup.doctor import diagnose

    first = new_home(tmp_path / "alice", "vm", sb.url, clock)
    second = new_home(tmp_path / "bob", "vm", sb.url, clock)
    Memory(Workspace(load_settings(first), clock=clock)).add_journal(journal_fields())
    push(first)
    env = {**os.environ, "OPENCODE_CONFIG_DIR": str(second)}
    report = diagnose(Workspace(load_settings(second), clock=clock), env=env)
    assert report.status.name == "FAILED"
    assert "Agents/Inbox/vm/journal.md est tenue par un autre dossier ocmem" in report.render()
    env["OPENCODE_CONFIG_DIR"] = str(first)
    mine = diagnose(Workspace(load_settings(first), clock=clock), env=env).render()
    assert "tenue par un autre" not in mine


def test_two_homes_on_one_machine_get_two_default_ids(tmp_path: Path, clock: Clock) -> None:
    # Cloud images share host names (« ubuntu », « debian »): the default id tells folders apart.
    ids = []
    for folder in ("global", "projet"):
        Installer(Workspace(load_settings(tmp_path / folder), clock=clock)).run()
        ids.append(identity.require(load_settings(tmp_path / folder).paths).id)
    assert ids[0] != ids[1]
    assert all(identity.id_problem(i) is None for i in ids)
    again = identity.read(load_settings(tmp_path / "global").paths)
    assert again is not None and again.id == ids[0]  # chosen once, kept


def test_an_empty_home_id_is_refused(tmp_path: Path, clock: Clock) -> None:
    with pytest.raises(InputError, match="identifiant de dossier invalide"):
        Installer(Workspace(load_settings(tmp_path / "h"), clock=clock), home_id="").run()
    assert not (tmp_path / "h").exists()


def test_a_block_under_our_id_that_we_never_wrote_is_not_adopted(
    synced: Path, sb: Any, memory: Memory
) -> None:
    minute_id = minute(entry(memory, "La nôtre"))
    sb.write(
        JOURNAL,
        f"# Journal\n\n## {minute_id} · Écrite par quelqu'un d'autre · #x\n- Demande : autre\n",
    )
    report = push(synced)
    text = sb.read(JOURNAL)
    assert "Écrite par quelqu'un d'autre" in text and "La nôtre" in text
    assert "déjà présent" not in report.render()


# --- reads that cannot be trusted ------------------------------------------------------------


def test_an_empty_read_during_a_save_never_wipes_the_page(
    synced: Path, sb: Any, memory: Memory
) -> None:
    import threading

    human = "# Journal\n\n" + "".join(f"ligne humaine {i}\n" for i in range(65))
    sb.write(JOURNAL, human)
    entry(memory, "Un")
    push(synced)
    entry(memory, "Deux")
    # The human's browser saves while ocmem pushes: the page stays truncated (empty, previous
    # mtime) for 200 ms, far longer than on a real disk, and ocmem reads it then.
    truncated = threading.Event()
    sb.faults = RealServerFaults(
        truncate_ms=200, on_step=lambda step: truncated.set() if step.kind == "truncated" else None
    )
    saved = sb.read(JOURNAL) + "ligne pendant la sauvegarde\n"
    saving = threading.Thread(
        target=httpx.put,
        args=(f"{sb.url}/.fs/{JOURNAL}",),
        kwargs={"content": saved.encode(), "headers": {"Authorization": f"Bearer {SB_TOKEN}"}},
    )
    saving.start()
    assert truncated.wait(5)
    push(synced)
    saving.join()
    sb.faults = None
    push(synced)  # and once more, as cron would: what the save overwrote comes back
    text = sb.read(JOURNAL)
    assert all(f"ligne humaine {i}\n" in text for i in range(65))
    assert "ligne pendant la sauvegarde" in text
    assert "· Un ·" in text and "· Deux ·" in text


def test_overlapping_writes_are_untangled(synced: Path, sb: Any, memory: Memory) -> None:
    ours = "# J\n\nEnvoi ocmem n° 1 (maison, x) — ligne tenue par ocmem.\n\n## 2026-11-29 10:00 · Un · #a\n- Demande : d\n"
    theirs = "# J\n\nune ligne humaine\n"
    page = theirs + ours[len(theirs) :]
    assert untangle(page, ours) == theirs
    assert untangle(ours, ours) is None
    assert untangle(theirs, ours) is None


def test_a_write_from_an_older_read_does_not_delete_our_blocks(
    synced: Path, sb: Any, memory: Memory
) -> None:
    entry(memory, "Un")
    push(synced)
    old = sb.read(JOURNAL)
    entry(memory, "Deux")
    push(synced)
    # A client that read the page before our last write saves its version with one more line.
    sb.write(JOURNAL, old + "\nligne d'un client en retard\n")
    entry(memory, "Trois")
    push(synced)
    text = sb.read(JOURNAL)
    for title in ("Un", "Deux", "Trois"):
        assert text.count(f"· {title} ·") == 1, title
    assert "ligne d'un client en retard" in text


def test_a_deletion_by_a_human_who_saw_the_block_is_respected(
    synced: Path, sb: Any, memory: Memory
) -> None:
    minute_id = minute(entry(memory, "À supprimer"))
    push(synced)
    text = sb.read(JOURNAL)
    start = text.index(f"## {minute_id}")
    sb.write(JOURNAL, text[:start])  # the receipt line stays: the human saw our last write
    entry(memory, "Autre")  # the same minute: « …~2 », under the same header
    report = push(synced)
    page = sb.read(JOURNAL)
    assert "À supprimer" not in page and "respecté" in report.render()
    assert page.count("· Autre ·") == 1
    again = push(synced)  # the page's only block of that minute is « Autre »: nothing comes back
    assert sb.read(JOURNAL) == page, again.render()


def _older_version_saved_over(sb: Any, snapshot: str) -> None:
    """A stale tab resolves a conflict: the server's version to a copy, its own over the page."""
    sb.write(JOURNAL.removesuffix(".md") + ".conflicted:1796303049216.md", sb.read(JOURNAL))
    sb.write(JOURNAL, snapshot + "\nmodification hors ligne\n")


def _annotated(sb: Any, snapshot: str) -> None:
    sb.write(JOURNAL, sb.read(JOURNAL) + "\nannotation de l'humain\n")


def _deleted_having_seen_it(sb: Any, snapshot: str) -> None:
    text = sb.read(JOURNAL)
    sb.write(JOURNAL, text[: text.index("## ", text.index("· Deux ·") - 30)])


@pytest.mark.parametrize(
    ("after_our_last_push", "deux_on_the_page", "a_put", "needs_human"),
    [
        (_older_version_saved_over, 1, True, True),  # put back; the copy is reported
        (_annotated, 1, False, False),  # read once, nothing to write
        (_deleted_having_seen_it, 0, False, False),  # the human's deletion stands
    ],
)
def test_a_page_written_after_our_last_push_is_read_by_the_push_after_the_next_pull(
    synced: Path,
    sb: Any,
    memory: Memory,
    clock: Clock,
    after_our_last_push: Callable[[Any, str], None],
    deux_on_the_page: int,
    a_put: bool,
    needs_human: bool,
) -> None:
    """With nothing new locally a push sends no request, so it cannot see a write made after its
    last one: an older version saved over the page took an entry away until the agent wrote
    again (found by tests/test_sync_stateful.py). The pull's listing shows ocmem's pages for
    free: one changed since the push last saw it whole is read by the next push."""
    entry(memory, "Un")
    push(synced)
    sb.write(JOURNAL, sb.read(JOURNAL) + "\nligne humaine\n")
    snapshot = sb.read(JOURNAL)  # what a tab holds
    entry(memory, "Deux")
    push(synced)
    after_our_last_push(sb, snapshot)
    sb.clear_requests()
    assert push(synced).render() == "Push : rien de nouveau" and sb.requests == []
    pulled = pull(synced, clock)
    assert len(sb.requests) == 1  # its listing, nothing more
    report = push(synced)
    text = sb.read(JOURNAL)
    assert text.count("· Deux ·") == deux_on_the_page and text.count("· Un ·") == 1
    assert "ligne humaine" in text
    assert bool(sb.requests_matching("PUT")) == a_put
    assert report.needs_human == needs_human and not pulled.needs_human
    sb.clear_requests()
    pull(synced, clock)
    again = push(synced)  # settled: nothing written, the conflict copy reported until merged
    assert not sb.requests_matching("PUT") and again.needs_human == needs_human
    assert needs_human or len(sb.requests) == 1  # else the pull's listing alone


# --- writes that fail ------------------------------------------------------------------------


def test_a_refused_write_is_sent_again_never_taken_for_a_deletion(
    synced: Path, sb: Any, memory: Memory
) -> None:
    minute_id = minute(entry(memory, "Un"))
    sb.read_only = True
    with pytest.raises(Refused, match="lecture seule"):
        push(synced)
    sb.read_only = False
    sb.write(JOURNAL, "# Journal\n\nla page a changé entre-temps\n")
    push(synced)
    assert f"## {minute_id}" in sb.read(JOURNAL)


def test_a_write_that_never_left_is_sent_again(synced: Path, sb: Any, memory: Memory) -> None:
    minute_id = minute(entry(memory, "Un"))
    calls = {"n": 0}

    class Refusing(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            if request.method == "PUT":
                calls["n"] += 1
                raise httpx.ConnectError("refused", request=request)
            return httpx.HTTPTransport().handle_request(request)

    with pytest.raises(SilverBulletError, match="injoignable"):
        push(synced, transport=Refusing())
    sb.write(JOURNAL, "# Journal\n\nchangée par l'humain\n")
    push(synced)
    assert f"## {minute_id}" in sb.read(JOURNAL) and calls["n"] >= 1


def test_a_lost_answer_is_decided_by_the_receipt(synced: Path, sb: Any, memory: Memory) -> None:
    minute_id = minute(entry(memory, "Un"))
    sb.reset_next(method="PUT", after_apply=True)
    push(synced)
    text = sb.read(JOURNAL)
    assert text.count(f"## {minute_id}") == 1 and RECEIPT.search(text)


def test_a_page_being_edited_is_not_written(synced: Path, sb: Any, memory: Memory) -> None:
    import yaml

    config = yaml.safe_load((synced / "ocmem.yaml").read_text())
    config["silverbullet"].update(quiet_seconds=0.2, patience_seconds=0.6)
    (synced / "ocmem.yaml").write_text(yaml.safe_dump(config))
    entry(memory, "Un")
    sb.write(JOURNAL, "# Journal\n")
    count = {"n": 0}

    def keep_typing(request: httpx.Request) -> None:
        if request.method == "GET":
            count["n"] += 1
            sb.clock.advance(1)
            sb.write(JOURNAL, f"# Journal\n\nfrappe {count['n']}\n")

    with pytest.raises(Busy, match="change sans cesse"):
        push(synced, transport=AfterEachResponse(keep_typing))
    assert sb.requests_matching("PUT") == []
    push(synced)
    assert "· Un ·" in sb.read(JOURNAL)


def test_with_receipt_adds_then_replaces_one_line() -> None:
    from datetime import datetime

    from ocmem.silverbullet.merge import JOURNAL_BLOCK

    when = datetime(2026, 11, 30, 10, 0)
    once = with_receipt(
        "# J\n\nnote\n\n## 2026-11-29 10:00 · x · #a\n", 1, "h", when, JOURNAL_BLOCK
    )
    assert once.count("Envoi ocmem") == 1 and once.index("Envoi") < once.index("## 2026")
    twice = with_receipt(once, 2, "h", when, JOURNAL_BLOCK)
    assert twice.count("Envoi ocmem") == 1 and "n° 2 (h," in twice
    assert with_receipt("", 1, "h", when, JOURNAL_BLOCK).startswith("Envoi ocmem n° 1")


# --- the human's decisions come back -----------------------------------------------------------


def decide(sb: Any, pid: str, status: str) -> None:
    text = sb.read(PENDING)
    start = text.index(f"## {pid} · ")
    line = text.index("- Statut : en attente", start)
    sb.write(
        PENDING, text[:line] + f"- Statut : {status}" + text[line + len("- Statut : en attente") :]
    )


def test_decisions_made_in_silverbullet_come_back_at_pull(
    synced: Path, sb: Any, memory: Memory, clock: Clock, run_cli: Callable[..., CliResult]
) -> None:
    proposals = Proposals(workspace(synced, clock))
    refs = [entry(memory, "A"), entry(memory, "B")]
    proposals.propose(fact(refs, "Ports", "Vérifier les ports libres."))
    proposals.propose(fact(refs, "Podman", "Le VPS utilise Podman, pas Docker."))
    push(synced)
    decide(sb, "P-0001", "promu (2026-11-30)")
    decide(sb, "P-0002", "refusé (2026-11-30) : on garde Docker")
    report = pull(synced, clock)
    assert "P-0001 : promu (2026-11-30)" in report.render()
    assert "P-0002 refusée dans SilverBullet" in report.render()
    listing = run_cli("pending", "list", "--all").out
    assert "P-0001 · fait · Ports — promu (2026-11-30)" in listing
    assert "P-0002 · fait · Podman — refusé (2026-11-30) : on garde Docker" in listing
    with pytest.raises(Refused, match="on garde Docker"):
        proposals.propose(
            {**fact(refs, "Podman", "Le VPS utilise Podman, pas Docker."), "retiens_ca": False}
        )
    with pytest.raises(Refused, match="déjà été promue"):
        proposals.propose(fact(refs, "Ports", "Vérifier les ports libres."))
    push(synced)
    page = sb.read(PENDING)
    assert "~agent" not in page and "- Statut : refusé (2026-11-30) : on garde Docker" in page
    # Promoted on the decisions page alone: MEMORY.md does not hold it, and status says so.
    said = "1 promue(s) (dont 1 absente(s) de la mémoire validée), 1 refusée(s)"
    assert run_cli("status").out.count(said) == 1


DECISIONS = f"Agents/Inbox/{HOME_ID}/decisions.md"


def test_decisions_on_the_decisions_page_come_back_and_ocmem_never_writes_it(
    synced: Path, sb: Any, memory: Memory, clock: Clock, run_cli: Callable[..., CliResult]
) -> None:
    """One writer per page (issue 24): the review page's gestures go to the human's decisions
    page; the pull reads it; the push carries the statuses on ocmem's own page."""
    from ocmem.formats import decisionspage

    proposals = Proposals(workspace(synced, clock))
    refs = [entry(memory, "A"), entry(memory, "B")]
    proposals.propose(fact(refs, "Ports", "Vérifier les ports libres."))
    proposals.propose(fact(refs, "Podman", "Le VPS utilise Podman, pas Docker."))
    push(synced)
    pushed_page = sb.read(PENDING)
    decided = (
        decisionspage.HEADER
        + "\n- P-0001 : promu (2026-11-30)\n"
        + "Une note de l'humain.\n"
        + "- P-0002 : refusé (2026-11-30) : on garde \\#Docker\n"
        + "- P-0001 : refusé (2026-11-30) : ligne en cours d'écriture"  # no newline yet
    )
    sb.write(DECISIONS, decided)
    report = pull(synced, clock).render()
    assert "P-0001 : promu (2026-11-30) (décidé dans SilverBullet)" in report
    assert "P-0002 refusée dans SilverBullet : refusé (2026-11-30) : on garde #Docker" in report
    listing = run_cli("pending", "list", "--all").out
    assert "Ports — promu (2026-11-30)" in listing  # the unfinished last line does not count
    assert "Podman — refusé (2026-11-30) : on garde #Docker" in listing
    assert sb.read(PENDING) == pushed_page  # the pull writes nothing
    sb.clear_requests()
    push(synced)
    page = sb.read(PENDING)
    assert "~agent" not in page and "- Statut : promu (2026-11-30)" in page
    assert "- Statut : refusé (2026-11-30) : on garde \\#Docker" in page
    assert sb.read(DECISIONS) == decided
    assert [r.path for r in sb.requests_matching("PUT")] == [f"/.fs/{PENDING}"]
    # Done: pulling again changes nothing and reports nothing.
    assert "Décision de l'humain" not in pull(synced, clock).render()


def test_no_push_rule_may_name_the_decisions_page(home: Path, sb: Any) -> None:
    configure_sync(
        home,
        sb.url,
        push=[{"local": "memory/pending.md", "remote": "Agents/Inbox/{home}/decisions.md"}],
    )
    with pytest.raises(InputError, match="décisions de l'humain"):
        push(home)


def test_a_proposal_deleted_or_promoted_by_hand_comes_back(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    proposals = Proposals(workspace(synced, clock))
    refs = [entry(memory, "A")]
    proposals.propose(fact(refs, "Ports", "Vérifier les ports libres."))
    proposals.propose(fact(refs, "Compose", "Le VPS lance ses services par docker compose."))
    push(synced)
    text = sb.read(PENDING)
    sb.write(PENDING, text[: text.index("## P-0002")])  # deleted by the human
    sb.write(
        "Agents/Memory/MEMORY.md",
        "# Mémoire\n\n- Vérifier les ports libres. (2026-11-30, Source : maison/P-0001)\n",
    )
    pull(synced, clock)
    found = {p.id: p for p in pending.parse((synced / "memory/pending.md").read_text())}
    assert found["P-0001"].state == pending.STATE_PROMOTED
    assert found["P-0002"].state == pending.STATE_REFUSED and "supprimée" in found["P-0002"].status
    push(synced)
    page = sb.read(PENDING)
    assert "## P-0002" not in page and "- Statut : promu (" in page


# --- the local pending.md keeps every byte a person writes --------------------------------------


def test_hand_notes_truncated_headers_and_header_like_content_survive(
    home: Path, memory: Memory, clock: Clock, run_cli: Callable[..., CliResult]
) -> None:
    proposals = Proposals(Workspace(load_settings(home), clock=clock))
    refs = [entry(memory, "A")]
    skill = {
        "type": "skill",
        "titre": "Déployer",
        "name": "deployer",
        "description": "Déploie le service.",
        "contenu": "# Déployer\n\n## P-0099 · fait · faux en-tête\n\n```bash\nmake deploy\n```",
        "sources": refs,
        "contradiction": "aucune",
        "remplace": "rien",
        "retiens_ca": True,
    }
    proposals.propose(skill)
    path = home / "memory/pending.md"
    notes = "\nNote à la main entre deux blocs.\n\n## P-0002 · fa\n"
    path.write_text(path.read_text() + notes + "Dernière note, sans fin de ligne")
    before = path.read_text()
    proposals.propose(fact(refs, "Ports", "Vérifier les ports libres."))
    after = path.read_text()
    assert notes in after and "Dernière note, sans fin de ligne" in after
    assert after.startswith(before.rsplit("Dernière note", 1)[0])
    ids = [p.id for p in pending.parse(after)]
    assert ids == ["P-0001", "P-0003"]  # P-0002 is taken by the damaged block, P-0099 is content
    for args in (
        ("pending", "list", "--all"),
        ("pending", "show", "P-0001"),
        ("status",),
        ("doctor",),
    ):
        result = run_cli(*args)
        assert "Traceback" not in result.err and result.code in (0, 1, 3), (args, result.err)
    assert "ne se lit pas comme une proposition" in run_cli("doctor").out
    proposals.reject("P-0003", "pas utile")
    final = path.read_text()
    assert notes in final and "Dernière note, sans fin de ligne" in final


# --- URLs ------------------------------------------------------------------------------------


def test_a_server_under_a_url_prefix_works(home: Path, tmp_path: Path, memory: Memory) -> None:
    from support.sbserver import FakeSilverBullet

    with FakeSilverBullet(token=SB_TOKEN, url_prefix="/sb") as server:
        configure_sync(home, server.url + "/.fs")  # a copied API URL is accepted too
        server.write("Agents/Memory/MEMORY.md", "# Mémoire\n\n- fait\n")
        entry(memory, "Un")
        sync.pull(Workspace(load_settings(home), clock=Clock()))
        assert (home / "memory/MEMORY.md").read_text() == "# Mémoire\n\n- fait\n"
        push(home)
        assert "· Un ·" in server.read(JOURNAL)


def test_pull_reports_a_conflict_copy_of_any_pulled_page(
    synced: Path, sb: Any, clock: Clock
) -> None:
    sb.write("Agents/Memory/MEMORY.md", "# Mémoire\n")
    sb.write("Agents/Memory/MEMORY.conflicted:1754000012345.md", "# Mémoire\n\n- autre version\n")
    report = pull(synced, clock)
    assert "MEMORY.conflicted:1754000012345.md" in report.render()


def test_the_push_summary_says_what_was_written(synced: Path, sb: Any, memory: Memory) -> None:
    entry(memory, "Un")
    entry(memory, "Deux")
    assert f"{JOURNAL} : 2 ajouté(s)" in push(synced).render()
    assert "Push : rien de nouveau" in push(synced).render()


def test_the_state_file_of_an_older_ocmem_still_loads(
    synced: Path, sb: Any, memory: Memory
) -> None:
    state = synced / ".ocmem/sync-state.json"
    state.write_text(
        json.dumps(
            {
                "version": 1,
                "space": sb.url,
                "pulled": {},
                "pushed": {JOURNAL: {"blocks": {}, "in_flight_from": [1, 2]}},
            }
        )
    )
    entry(memory, "Un")
    push(synced)
    assert "· Un ·" in sb.read(JOURNAL)


def test_a_never_quiet_page_is_waited_for_as_long_as_the_patience_says(
    synced: Path, sb: Any, memory: Memory
) -> None:
    # Issue 26: against the real server a push gave up after 12 tries (~3.8 s), not after
    # `patience_seconds`. A writer that saves every 20 ms, for real, during the whole push.
    import threading
    import time

    import yaml

    config = yaml.safe_load((synced / "ocmem.yaml").read_text())
    patience = 3.0
    config["silverbullet"].update(quiet_seconds=0.1, patience_seconds=patience)
    (synced / "ocmem.yaml").write_text(yaml.safe_dump(config))
    entry(memory, "Un")
    sb.write(JOURNAL, "# Journal\n")
    stop = threading.Event()

    def human() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            sb.clock.advance(1)
            sb.write(JOURNAL, f"# Journal\n\nfrappe {n}\n")
            time.sleep(0.02)

    writer = threading.Thread(target=human, daemon=True)
    writer.start()
    started = time.monotonic()
    try:
        with pytest.raises(Busy, match="change sans cesse"):
            push(synced)
    finally:
        waited = time.monotonic() - started
        stop.set()
        writer.join()
    assert sb.requests_matching("PUT") == []
    # At least the patience, at most one more try (a quiet wait and a probe) plus a loaded
    # machine's slack.
    assert patience <= waited <= patience + 2.0, waited
    push(synced)
    assert "· Un ·" in sb.read(JOURNAL)
