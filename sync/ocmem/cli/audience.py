"""Whose each command is, in one place: ``ocmem --help`` and the README's command table
(``ocmem.cli.docs``) list the human's daily commands first, then the set-up ones, then, apart,
those the agent, the plugin or cron run, each with who runs it. ``tests/test_french_texts.py``
fails when a command is in no section, or in two.

English command names kept as aliases (``pending undo``, ``uninstall``) and the removed
``mcp`` are in no section: they are hidden, and stay so.
"""

from __future__ import annotations

from collections.abc import Iterator

import click

DAILY = "Pour toi, au quotidien"
SETUP = "Pour toi, à l'installation et pour les réglages"
MACHINE = "Lancées par l'agent, le plugin ou cron (pas par toi)"

# (section, ((command path without « ocmem », who runs it — for MACHINE only), …))
SECTIONS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        DAILY,
        (
            ("init", ""),
            ("status", ""),
            ("doctor", ""),
            ("pending list", ""),
            ("pending show", ""),
            ("pending accept", ""),
            ("pending reject", ""),
            ("pending annuler", ""),
            ("pending duplicates", ""),
            ("pending merge", ""),
            ("retire fact", ""),
            ("retire skill", ""),
            ("review", ""),
            ("journal search", ""),
            ("journal recent", ""),
            ("history", ""),
        ),
    ),
    (
        SETUP,
        (
            ("essai", ""),
            ("harden", ""),
            ("cron install", ""),
            ("cron print", ""),
            ("cron remove", ""),
            ("curate", ""),
            ("context-size", ""),
            ("journal index", ""),
            ("pull", ""),
            ("push", ""),
            ("desinstaller", ""),
        ),
    ),
    (
        MACHINE,
        (
            ("note", "l'agent (memory_note) ; toi : --lever-quarantaine"),
            ("journal add", "l'agent (skill retrospective)"),
            ("propose", "l'agent (skill retrospective)"),
            ("journal archive", "l'agent (curation hebdomadaire)"),
            ("sync", "cron"),
            ("gate", "le plugin (une par OpenCode)"),
            ("tool", "le plugin, hors de sa passerelle"),
            ("prompt-context", "le plugin, à chaque session"),
            ("plugin-config", "le plugin, à son démarrage"),
        ),
    ),
)


def find(group: click.Group, path: str) -> click.Command:
    command: click.Command = group
    for word in path.split():
        assert isinstance(command, click.Group), path
        command = command.commands[word]
    return command


def sections(group: click.Group) -> Iterator[tuple[str, list[tuple[str, click.Command, str]]]]:
    """Each section's title and its commands: (path, command, who runs it)."""
    for title, rows in SECTIONS:
        yield title, [(path, find(group, path), caller) for path, caller in rows]


class AudienceGroup(click.Group):
    """The root group: its help lists the commands by audience (full paths: ``pending accept``),
    not in alphabetical order."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for title, rows in sections(self):
            shown = [(path, shown_help(command, caller)) for path, command, caller in rows]
            with formatter.section(title + " "):
                formatter.write_dl(shown)


def shown_help(command: click.Command, caller: str) -> str:
    """A command's summary in ``--help`` (wrapped, not cut), after who runs it when that is
    not the human."""
    summary = command.get_short_help_str(limit=300)
    return f"[{caller}] {summary}" if caller else summary
