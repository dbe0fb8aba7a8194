"""Options in one language (issue 22): every option is shown under a French name (or one of the
universal names, ocmem.cli.options), and the English names it had before still parse, hidden —
cron lines, scripts, the plugin and older docs keep working."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest

from conftest import CliResult
from ocmem.cli import docs
from ocmem.cli.commands import cli
from ocmem.cli.options import UNIVERSAL, Option, shown_name

# Every shown name that is not universal: French, without accents. A new option fails here until
# its French name is added (and, if it replaces an English one, that one kept as an alias).
FRENCH = {
    # words that are the same in French, and program names
    "--agent",
    "--contradiction",
    "--description",
    "--opencode",
    "--session",
    "--source",
    "--systemd",
    "--tag",
    "--tags",
    "--type",
    # French
    "--ou",
    "--accepter-actif",
    "--afficher",
    "--annuler",
    "--avant",
    "--complet",
    "--contenu",
    "--demande",
    "--dernieres",
    "--espace",
    "--fait",
    "--forcer-suppression",
    "--garder",
    "--id-dossier",
    "--importer-court-terme",
    "--independant",
    "--jours",
    "--lecon",
    "--lever-quarantaine",
    "--liste",
    "--mettre-a-jour",
    "--nom",
    "--note-recurrente",
    "--oui",
    "--piege",
    "--plus-vieux-que",
    "--proprietaire",
    "--raison",
    "--remplace",
    "--remplacer-ancienne",
    "--remplacer-local",
    "--installer",
    "--reparer",
    "--resultat",
    "--retiens-ca",
    "--retirer",
    "--seuil",
    "--simulation",
    "--tache",
    "--titre",
    "--toutes",
    "--toutes-les",
    "--voir",
    "--voir-bibliotheque",
    "--voir-section",
}

# The English names, still accepted: (command, English, French).
ALIASES = [
    ("note", "--days", "--jours"),
    ("note", "--list", "--liste"),
    ("note", "--remove", "--retirer"),
    ("note", "--trust", "--lever-quarantaine"),
    ("journal search", "--last", "--dernieres"),
    ("journal recent", "--last", "--dernieres"),
    ("journal archive", "--before", "--avant"),
    ("journal archive", "--older-than", "--plus-vieux-que"),
    ("propose", "--name", "--nom"),
    ("pending list", "--all", "--toutes"),
    ("pending duplicates", "--threshold", "--seuil"),
    ("pending accept", "--yes", "--oui"),
    ("pending reject", "--reason", "--raison"),
    ("retire fact", "--reason", "--raison"),
    ("retire skill", "--reason", "--raison"),
    ("init", "--upgrade", "--mettre-a-jour"),
    ("init", "--import-short-term", "--importer-court-terme"),
    ("init", "--show-section", "--voir-section"),
    ("init", "--show-library", "--voir-bibliotheque"),
    ("init", "--home-id", "--id-dossier"),
    ("init", "--replace-old", "--remplacer-ancienne"),
    ("cron print", "--every", "--toutes-les"),
    ("cron install", "--every", "--toutes-les"),
    ("cron install", "--job", "--tache"),
    ("cron remove", "--job", "--tache"),
    ("curate", "--print", "--afficher"),
    ("doctor", "--fix", "--reparer"),
    ("harden", "--owner", "--proprietaire"),
    ("harden", "--undo", "--annuler"),
    ("pull", "--dry-run", "--simulation"),
    ("pull", "--force-delete", "--forcer-suppression"),
    ("pull", "--full", "--complet"),
    ("pull", "--accept-active", "--accepter-actif"),
    ("pull", "--replace-local", "--remplacer-local"),
    ("push", "--dry-run", "--simulation"),
    ("history", "--show", "--voir"),
]


def every_option() -> Iterator[tuple[str, click.Option]]:
    yield from (("ocmem", p) for p in cli.params if isinstance(p, click.Option))
    for path, command in docs.commands(cli, "ocmem", hidden=True):
        yield from ((path, p) for p in command.params if isinstance(p, click.Option))


def command(path: str) -> click.Command:
    found: click.Command = cli
    for word in path.split():
        assert isinstance(found, click.Group)
        found = found.commands[word]
    return found


def test_every_shown_option_name_is_french_or_universal() -> None:
    shown = {shown_name(p) for _, p in every_option() if not p.hidden}
    assert shown - UNIVERSAL - FRENCH == set()
    assert all(name.isascii() for name in FRENCH)  # typed: no accents


def test_an_option_with_two_names_shows_only_its_first() -> None:
    for path, param in every_option():
        long_names = [o for o in param.opts if o.startswith("--")]
        if len(long_names) > 1:
            assert isinstance(param, Option), (path, param.opts)


@pytest.mark.parametrize(("path", "english", "french"), ALIASES)
def test_each_english_name_still_parses_as_the_french_one(
    path: str, english: str, french: str
) -> None:
    params = [p for p in command(path).params if english in p.opts]
    assert len(params) == 1, (path, english)
    (param,) = params
    assert isinstance(param, Option) and param.shown == french and english in param.aliases
    # the parser takes it: the same parameter as the French name
    ctx = command(path).make_context(path, [], resilient_parsing=True)
    parser = command(path).make_parser(ctx)
    assert parser._long_opt[english].dest == parser._long_opt[french].dest == param.name


@pytest.mark.parametrize(("path", "english", "french"), ALIASES)
def test_the_help_shows_the_french_name_and_not_the_english_one(
    path: str, english: str, french: str
) -> None:
    ctx = click.Context(command(path), info_name=path)
    text = command(path).get_help(ctx)
    assert french in text and english not in text.replace(french, "")
    assert english not in docs.table().replace(french, "")


def test_a_usage_error_names_the_french_option(run_cli: Callable[..., CliResult]) -> None:
    result = run_cli("pending", "reject", "P-0001")
    assert result.code == 2
    assert "'--raison'" in result.err and "--reason" not in result.err


def test_english_spellings_run_as_before(run_cli: Callable[..., CliResult], home: Path) -> None:
    """What cron lines, scripts and docs written before keep doing."""
    assert run_cli("note", "relancer nginx demain", "--days", "3").code == 0
    listed = run_cli("note", "--list")
    assert listed.code == 0 and "relancer nginx" in listed.out
    assert run_cli("note", "--liste").out == listed.out
    assert run_cli("note", "--remove", "1").code == 0
    assert "relancer nginx" not in run_cli("note", "--liste").out
    english = run_cli("cron", "print", "--every", "30")
    assert english.code == 0, english.err
    assert run_cli("cron", "print", "--toutes-les", "30").out == english.out
    assert run_cli("--wait", "0", "status").code == 0
    assert run_cli("status", "--wait", "0").code == 0


def test_a_mistyped_option_is_answered_with_its_french_name(
    run_cli: Callable[..., CliResult],
) -> None:
    close_to_english = run_cli("journal", "archive", "--befor", "2020-01-01")
    assert close_to_english.code == 2 and "'--avant'" in close_to_english.err
    assert "--before" not in close_to_english.err.replace("--befor'", "")
    close_to_french = run_cli("pull", "--simul")
    assert "'--simulation' ?" in close_to_french.err and "--complet" not in close_to_french.err
