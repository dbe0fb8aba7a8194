"""No link is followed below the home (ocmem.home.atomic): a memory, journal, pending, state or
token file that is a symbolic link, or sits in a linked folder, is refused with the link named
and the fix, by every command, the gate and the pull alike; the home itself may be a link."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import SB_TOKEN, CliResult, configure_sync, journal_fields

Run = Callable[..., CliResult]
TOKEN = "jeton-secret-9f8e7d6c5b4a"


def add_entry(run_cli: Run, **overrides: object) -> str:
    result = run_cli("journal", "add", stdin=json.dumps(journal_fields(**overrides)))
    assert result.code == 0, result.err
    return result.out.splitlines()[0].removeprefix("Entrée ajoutée : ")


def propose_fact(
    run_cli: Run, content: str = "Vérifier les ports libres avant de déployer."
) -> None:
    a, b = add_entry(run_cli), add_entry(run_cli, titre="Encore")
    proposed = run_cli(
        "propose",
        stdin=json.dumps(
            {
                "type": "fait",
                "titre": "Ports",
                "contenu": content,
                "sources": [a, b],
                "contradiction": "aucune",
                "remplace": "rien",
            }
        ),
    )
    assert proposed.code == 0, proposed.err


def token_file(home: Path) -> Path:
    path = home / ".ocmem/silverbullet.token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


def linked(path: Path, target: Path) -> Path:
    """``path`` replaced by a symbolic link to ``target`` (relative when inside the home)."""
    if path.is_dir() and not path.is_symlink():
        import shutil

        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    path.symlink_to(os.path.relpath(target, path.parent))
    return path


def refused_for_link(result: CliResult, rel: str) -> None:
    assert result.code == 3, (result.code, result.out, result.err)
    assert f"{rel} est un lien symbolique" in result.err, result.err
    assert "Correction : " in result.err and "rm " in result.err
    assert "Traceback" not in result.err


def test_memory_linked_to_the_token_never_reaches_the_prompt(run_cli: Run, home: Path) -> None:
    token = token_file(home)
    linked(home / "memory/MEMORY.md", token)
    result = run_cli("prompt-context")
    assert result.code == 0, result.err
    assert TOKEN not in result.out
    context = json.loads(result.out)
    assert any("memory/MEMORY.md est un lien symbolique" in w for w in context["warnings"])
    assert any("rm " in w for w in context["warnings"])  # the fix, named
    assert not any("cp " in w for w in context["warnings"])  # never: copy the token into memory


def test_accept_never_writes_the_token_into_memory(run_cli: Run, home: Path) -> None:
    propose_fact(run_cli)
    token = token_file(home)
    pending_before = (home / "memory/pending.md").read_bytes()
    linked(home / "memory/MEMORY.md", token)
    result = run_cli("pending", "accept", "P-0001", "--yes")
    refused_for_link(result, "memory/MEMORY.md")
    assert (home / "memory/MEMORY.md").is_symlink()  # nothing replaced it
    assert token.read_text() == TOKEN + "\n"
    assert (home / "memory/pending.md").read_bytes() == pending_before
    assert not any(
        TOKEN in p.read_text(errors="replace")
        for p in home.rglob("*")
        if p.is_file() and not p.is_symlink() and p != token
    )


def test_a_file_outside_the_home_is_never_promoted_into_memory(
    run_cli: Run, home: Path, tmp_path: Path
) -> None:
    propose_fact(run_cli)
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n")
    linked(home / "memory/MEMORY.md", passwd)
    refused_for_link(run_cli("pending", "accept", "P-0001", "--yes"), "memory/MEMORY.md")
    assert passwd.read_text() == "root:x:0:0:root:/root:/bin/bash\n"
    assert (home / "memory/MEMORY.md").is_symlink()


def test_a_journal_linked_outside_gets_no_entry(run_cli: Run, home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "ailleurs.md"
    outside.write_text("# à quelqu'un d'autre\n")
    linked(home / "memory/journal.md", outside)
    result = run_cli("journal", "add", stdin=json.dumps(journal_fields()))
    refused_for_link(result, "memory/journal.md")
    assert outside.read_text() == "# à quelqu'un d'autre\n"
    refused_for_link(run_cli("journal", "search", "ports"), "memory/journal.md")


def test_a_linked_memory_folder_is_refused(run_cli: Run, home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (home / "memory").rename(elsewhere)
    (home / "memory").symlink_to(elsewhere)
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    result = run_cli("note", "une note")
    refused_for_link(result, "memory")
    assert "cp -a" in result.err  # a folder: put the folder back
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before


@pytest.mark.parametrize("state", ["writes.jsonl", "ocmem.lock", "sessions"])
def test_a_linked_state_file_is_never_written_through(
    run_cli: Run, home: Path, tmp_path: Path, state: str
) -> None:
    outside = tmp_path / "victime"
    outside.write_text("intact\n") if state != "sessions" else outside.mkdir()
    linked(home / ".ocmem" / state, outside)
    short_term = (home / "memory/SHORT_TERM.md").read_bytes()
    if state == "sessions":
        result = run_cli("tool", "memory_note", stdin=json.dumps(envelope({"text": "une note"})))
    else:
        result = run_cli("note", "une note")
    refused_for_link(result, f".ocmem/{state}")
    assert (home / "memory/SHORT_TERM.md").read_bytes() == short_term
    if state == "sessions":
        assert list(outside.iterdir()) == []
    else:
        assert outside.read_text() == "intact\n"


def envelope(args: dict[str, object]) -> dict[str, object]:
    return {"session": "ses_1", "user_messages": [], "exposures": [], "args": args}


def test_the_action_log_is_never_appended_through_a_link(
    run_cli: Run, home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "bashrc"
    outside.write_text("export PATH\n")
    linked(home / ".ocmem/log.jsonl", outside)
    assert run_cli("note", "une note").code == 0  # the log is best effort: the note is written
    assert outside.read_text() == "export PATH\n"


def test_the_token_is_never_read_through_a_link(run_cli: Run, home: Path, sb: object) -> None:
    configure_sync(home, sb.url)  # type: ignore[attr-defined]
    real = home / ".ocmem/vrai.token"
    real.write_text(SB_TOKEN + "\n")
    real.chmod(0o600)
    linked(home / ".ocmem/silverbullet.token", real)
    refused_for_link(run_cli("pull"), ".ocmem/silverbullet.token")


def test_the_home_itself_may_be_reached_through_a_link(
    run_cli: Run, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alias = tmp_path / "config-opencode"
    alias.symlink_to(home)
    monkeypatch.setenv("OCMEM_HOME", str(alias))
    propose_fact(run_cli)
    assert run_cli("note", "une note").code == 0
    accepted = run_cli("pending", "accept", "P-0001", "--yes")
    assert accepted.code == 0, accepted.err
    assert "Vérifier les ports libres" in (home / "memory/MEMORY.md").read_text()


def test_a_linked_skill_is_reported_not_read(run_cli: Run, home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "skill-ailleurs"
    outside.mkdir()
    (outside / "SKILL.md").write_text("---\nname: ailleurs\ndescription: x. y.\n---\n\n" + TOKEN)
    (home / "skills/ailleurs").symlink_to(outside)
    status = run_cli("status")
    assert status.code == 0, status.err
    doctor = run_cli("doctor")
    assert "skills/ailleurs est un lien symbolique" in doctor.out, doctor.out
    assert TOKEN not in status.out + doctor.out


def test_a_skill_is_never_promoted_through_a_linked_folder(
    run_cli: Run, home: Path, tmp_path: Path
) -> None:
    a, b = add_entry(run_cli), add_entry(run_cli, titre="Encore")
    proposal = {
        "type": "skill",
        "titre": "Déployer",
        "name": "deployer",
        "description": "Déployer un service. Vérifier les ports.",
        "contenu": "1. vérifier les ports libres\n2. docker compose up -d",
        "sources": [a, b],
        "contradiction": "aucune",
        "remplace": "rien",
    }
    assert run_cli("propose", stdin=json.dumps(proposal)).code == 0
    outside = tmp_path / "ailleurs"
    outside.mkdir()
    (home / "skills/deployer").symlink_to(outside)
    refused_for_link(run_cli("pending", "accept", "P-0001", "--yes"), "skills/deployer")
    assert list(outside.iterdir()) == []


def test_doctor_names_every_link_below_the_home(run_cli: Run, home: Path) -> None:
    token = token_file(home)
    linked(home / "memory/MEMORY.md", token)
    result = run_cli("doctor")
    assert "memory/MEMORY.md est un lien symbolique" in result.out
    assert result.code == 1


def test_a_linked_skill_does_not_stop_the_push(
    run_cli: Run, home: Path, tmp_path: Path, sb: Any
) -> None:
    """The review page's gestures are planned from the skills the door reads: a linked one is
    left out (doctor names it), the pending page is pushed all the same."""
    propose_fact(run_cli)
    outside = tmp_path / "skill-ailleurs"
    outside.mkdir()
    (outside / "SKILL.md").write_text("---\nname: ailleurs\ndescription: x. y.\n---\n\n" + TOKEN)
    (home / "skills/ailleurs").symlink_to(outside)
    configure_sync(home, sb.url)
    pushed = run_cli("push")
    assert pushed.code == 0, pushed.err
    assert "pending.md : 1 ajouté(s)" in pushed.out, pushed.out
    page = next(m.name for m in sb.listing() if m.name.endswith("/pending.md"))
    assert "P-0001" in sb.read(page) and TOKEN not in sb.read(page)
