"""The ``ocmem`` command line (click): parse arguments, call the library, return its outcome.

Every command returns an ``Outcome``; errors are domain exceptions. ``ocmem.cli.entry.main`` alone
prints them and turns them into exit codes. Commands import what they need when they run, so
local commands stay fast. This module assembles the group (``ocmem.cli.app``) and its commands.
"""

from __future__ import annotations

import click

from ocmem.cli import french, maintenance, memorycommands, plugincommands, spacecommands
from ocmem.cli.app import Context, cli

__all__ = ["Context", "cli"]
# Imported: their commands register.
COMMAND_MODULES = (maintenance, memorycommands, spacecommands, plugincommands)


def _wait_after_the_command(
    ctx: click.Context, _param: click.Parameter, value: float | None
) -> None:
    if value is not None:
        ctx.find_object(Context).wait = value  # type: ignore[union-attr]


def _accept_wait_everywhere(group: click.Group) -> None:
    """``ocmem note --wait 5 …`` as well as ``ocmem --wait 5 note …``."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            _accept_wait_everywhere(command)
        else:
            command.params.append(
                click.Option(
                    ["--wait"],
                    type=click.FloatRange(min=0),
                    metavar="SECONDES",
                    expose_value=False,
                    hidden=True,
                    callback=_wait_after_the_command,
                )
            )


_accept_wait_everywhere(cli)
french.install()
french.french_metavars(
    cli,
    {
        "text": "TEXTE",
        "words": "MOTS",
        "pid": "ID",
        "keep": "GARDÉE",
        "other": "AUTRE",
        "path": "CHEMIN",
        "name": "NOM",
    },
)
