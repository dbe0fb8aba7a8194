"""What a new user met, command by command (issue 13): each now a clear refusal or the right
behaviour. The broken environments are in tests/test_failures.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import SB_TOKEN, CliResult, Clock, configure_sync, journal_fields

Run = Callable[..., CliResult]
ESC = "\x1b"


def add(run_cli: Run, **fields: object) -> str:
    result = run_cli("journal", "add", stdin=json.dumps(journal_fields(**fields)))
    assert result.code == 0, result.err
    return result.out.splitlines()[0].removeprefix("Entrée ajoutée : ")


# --- guards ---------------------------------------------------------------------------------


def test_the_configured_token_is_refused_even_when_its_file_is_loose(
    home: Path, run_cli: Run
) -> None:
    configure_sync(home, "http://127.0.0.1:9")
    (home / ".ocmem/silverbullet.token").chmod(0o644)
    result = run_cli("note", f"pour se connecter : {SB_TOKEN}")
    assert result.code == 3 and SB_TOKEN not in result.err
    assert (home / "memory/SHORT_TERM.md").read_text() == ""


def test_short_password_assignments_are_secrets(home: Path, run_cli: Run, unchanged: None) -> None:
    for text in ("password=hunter2", "le mot de passe est hunter2"):
        result = run_cli("note", text)
        assert result.code == 3, (text, result)
        assert "hunter2" not in result.err


# --- bad input ------------------------------------------------------------------------------


def test_an_oversized_journal_value_is_refused_with_its_size(
    home: Path, run_cli: Run, unchanged: None
) -> None:
    result = run_cli("journal", "add", stdin=json.dumps(journal_fields(fait="x" * 5_000_000)))
    assert result.code == 2
    assert (
        "« Fait » fait 5000000 caractères (maximum 500)" in result.err
        and "Correction :" in result.err
    )
    assert len(result.err) < 400  # the value is not echoed


def test_an_oversized_note_is_refused(home: Path, run_cli: Run, unchanged: None) -> None:
    result = run_cli("note", "y" * 301)
    assert result.code == 2 and "la note fait 301 caractères (maximum 300)" in result.err


def test_a_legacy_oversized_entry_is_cut_in_search_results(home: Path, run_cli: Run) -> None:
    add(run_cli, titre="Énorme")
    journal = home / "memory/journal.md"
    journal.write_text(
        journal.read_text().replace(
            "- Fait : docker compose up -d", "- Fait : " + "énorme " * 20000
        )
    )
    shown = run_cli("journal", "search", "énorme").out
    assert len(shown) < 3000 and "entrée tronquée" in shown


def test_control_characters_never_reach_the_files_nor_the_terminal(
    home: Path, run_cli: Run
) -> None:
    nasty = f"titre{ESC}]0;pwned\x07 {ESC}[31mrouge\x00nul\x9b2J"
    add(run_cli, titre="Contrôles", lecon=nasty)
    assert run_cli("note", f"note {ESC}[2J effacée\x00").code == 0
    for name in ("journal.md", "SHORT_TERM.md"):
        stored = (home / "memory" / name).read_text()
        assert not any(c in stored for c in (ESC, "\x00", "\x07", "\x9b")), name
    # files written by hand (or by an older ocmem) are escaped on the way out
    (home / "memory/SHORT_TERM.md").write_text(
        f"[2026-11-29 → expire 2026-12-31] à la main {ESC}]0;titre\x07\n"
    )
    (home / "memory/pending.md").write_text((home / "memory/pending.md").read_text())
    journal = home / "memory/journal.md"
    journal.write_text(journal.read_text().replace("Contrôles", f"Contrôles {ESC}[5m"))
    for args in (
        ("note", "--list"),
        ("journal", "search", "contrôles"),
        ("journal", "recent"),
        ("status",),
    ):
        result = run_cli(*args)
        assert result.code == 0, (args, result)
        assert not any(c in result.out + result.err for c in (ESC, "\x07", "\x9b")), args
    assert "\\u001b]0;titre\\u0007" in run_cli("note", "--list").out


def test_tool_arguments_of_the_wrong_type_are_usage_errors(home: Path, run_cli: Run) -> None:
    envelope = {
        "session": "ses_1",
        "user_messages": [],
        "exposures": [],
        "args": {"text": "une note", "days": "abc"},
    }
    result = run_cli("tool", "memory_note", stdin=json.dumps(envelope))
    assert result.code == 2 and "« days » doit être un nombre entier" in result.err


def test_non_utf8_input_is_a_usage_error(home: Path, run_cli: Run, unchanged: None) -> None:
    for args in (("note", "caf\udce9"), ("journal", "add", "--titre", "\udcff")):
        result = run_cli(*args)
        assert result.code == 2 and "non UTF-8" in result.err, args


# --- usability ------------------------------------------------------------------------------


def test_wait_is_accepted_after_the_command(home: Path, run_cli: Run) -> None:
    assert run_cli("note", "x", "--wait", "3").code == 0
    assert run_cli("--wait", "3", "note", "y").code == 0
    assert run_cli("journal", "add", "--wait", "3", stdin=json.dumps(journal_fields())).code == 0
    assert run_cli("note", "z", "--wait", "-1").code == 2


def test_a_mistyped_home_is_refused_and_nothing_created(tmp_path: Path, run_cli: Run) -> None:
    missing = tmp_path / "ocmem-hmoe"
    for args in (("note", "x"), ("status",), ("journal", "add")):
        result = run_cli("--home", str(missing), *args, stdin=json.dumps(journal_fields()))
        assert result.code == 2 and "n'existe pas" in result.err and "init" in result.err
    assert not missing.exists()
    empty = tmp_path / "vide"
    empty.mkdir()
    result = run_cli("--home", str(empty), "note", "x")
    assert result.code == 2 and "ni memory/ ni .ocmem/" in result.err
    assert list(empty.iterdir()) == []
    assert run_cli("--home", str(missing), "init").code == 0
    assert run_cli("--home", str(missing), "note", "x").code == 0


def test_a_home_that_is_a_file_is_refused_in_french_naming_where_it_came_from(
    tmp_path: Path, run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_file = tmp_path / "hostname"
    a_file.write_text("vps\n")
    monkeypatch.setenv("OCMEM_HOME", str(a_file))
    for args in (("status",), ("journal", "recent"), ("init",)):  # click's path and the fast one
        result = run_cli(*args)
        assert result.code == 2, args
        assert f"OCMEM_HOME désigne {a_file}, qui est un fichier" in result.err
        assert "--home" not in result.err and "Directory" not in result.err
    monkeypatch.delenv("OCMEM_HOME")
    result = run_cli("--home", str(a_file), "status")
    assert result.code == 2 and f"--home désigne {a_file}, qui est un fichier" in result.err
    assert a_file.read_text() == "vps\n"


def test_numbers_in_a_search_match_whole_and_the_count_is_shown(home: Path, run_cli: Run) -> None:
    for n in (100, 1005, 1006, 1007, 1008, 1009):
        add(run_cli, titre=f"Serveur {n}", fait=f"redémarrage du serveur {n}")
    shown = run_cli("journal", "search", "serveur", "100").out
    first = shown.split("\n## ")[0]
    assert "Serveur 100 " in first  # the exact number first
    assert "Serveur 1005" not in first
    assert shown.rstrip().endswith(
        "5 sur 6 entrées, dont 4 faible(s), les plus pertinentes d'abord (par les mots)"
    )


def test_help_and_usage_errors_speak_french(home: Path, run_cli: Run) -> None:
    helped = run_cli("journal", "add", "--help").out
    assert (
        "Affiche cette aide." in helped
        and "--titre TEXTE" in helped
        and "Show this message" not in helped
    )
    top = run_cli("--help").out
    assert "Usage :" in top and "COMMANDE [ARGUMENTS]..." in top and "--wait SECONDES" in top
    assert "Commands" not in top and "Show the version" not in top
    wrong = run_cli("note", "--jours", "abc", "x")
    assert wrong.code == 2
    assert wrong.err == (
        "ocmem : valeur invalide pour '--jours' : 'abc' n'est pas un nombre valide\n"
        "Correction : `ocmem note --help` montre l'usage\n"
    )
    unknown = run_cli("notte")
    assert "commande inconnue : 'notte'. Voulais-tu dire 'note' ?" in unknown.err
    for args in (("note", "--list", "--help"), ("pending", "--help"), ("cron", "print", "--help")):
        text = run_cli(*args).out
        for english in ("Show this", "Usage:", "[default:", "TEXT ", "INTEGER"):
            assert english not in text, (args, english)


@pytest.mark.parametrize("command", [("journal", "add"), ("propose",)])
def test_every_option_has_help_text(command: tuple[str, ...]) -> None:
    import click

    from ocmem.cli.commands import cli

    found: click.Command = cli
    for name in command:
        assert isinstance(found, click.Group)
        found = found.commands[name]
    for param in found.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert getattr(param, "help", None), param.name


def test_a_bug_is_one_line_and_its_traceback_kept_aside(
    home: Path, run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    from ocmem.services import status

    def broken(ws: object) -> None:
        raise RuntimeError("bogue simulé")

    monkeypatch.setattr(status, "status", broken)
    result = run_cli("status")
    assert result.code == 1 and "Traceback" not in result.err
    assert len(result.err.splitlines()) == 1 and "erreur inattendue (RuntimeError)" in result.err
    log = Path(re.search(r"détails dans (\S+)\.", result.err).group(1))  # type: ignore[union-attr]
    assert "bogue simulé" in log.read_text() and log.stat().st_mode & 0o077 == 0
    log.unlink()
    debug = run_cli("--debug", "status")
    assert "Traceback" in debug.err and "bogue simulé" in debug.err
    Path(re.search(r"détails dans (\S+)\.", debug.err).group(1)).unlink()  # type: ignore[union-attr]


def test_the_promotion_prompt_takes_a_french_answer(
    home: Path,
    run_cli: Run,
    clock: Clock,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io
    import sys

    from ocmem.cli.entry import main

    refs = [add(run_cli, titre=t) for t in ("Un", "Deux")]
    proposal = {
        "type": "fait",
        "titre": "Ports",
        "contenu": "Vérifier les ports.",
        "sources": refs,
        "contradiction": "aucune",
        "remplace": "rien",
    }
    assert run_cli("propose", stdin=json.dumps(proposal)).code == 0

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    def answer(text: str) -> int:
        monkeypatch.setattr(sys, "stdin", Terminal(text))
        capsys.readouterr()
        with pytest.raises(SystemExit) as done:
            main(["pending", "accept", "P-0001"], clock)
        return int(done.value.code or 0)

    assert answer("n\n") == 3
    assert "[o/N]" in capsys.readouterr().out
    assert answer("oui\n") == 0
    assert "P-0001 promue" in capsys.readouterr().out


def test_a_token_is_a_secret_whatever_configures_it(
    home: Path, run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a `silverbullet` section, the default token file or the variable still count."""
    token_file = home / ".ocmem/silverbullet.token"
    token_file.write_text(SB_TOKEN + "\n")
    assert run_cli("note", f"voir {SB_TOKEN} pour le détail").code == 3
    token_file.unlink()
    # nothing configures it any more: not a known secret
    assert run_cli("note", f"voir {SB_TOKEN} pour le détail").code == 0
    monkeypatch.setenv("OCMEM_SILVERBULLET_TOKEN", "env-token-9f8e7d6c5b")
    assert run_cli("note", "voir env-token-9f8e7d6c5b pour le détail").code == 3
