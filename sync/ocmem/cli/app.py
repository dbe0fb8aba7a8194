"""The ``ocmem`` command group, its global options and what every command receives (``Context``):
the commands themselves are in ``ocmem.cli.memorycommands``, ``ocmem.cli.spacecommands``,
``ocmem.cli.maintenance`` and ``ocmem.cli.plugincommands``; ``ocmem.cli.commands`` puts them together."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ocmem import __version__
from ocmem.cli.audience import AudienceGroup
from ocmem.clock import Clock
from ocmem.home.workspace import Workspace, open_workspace
from ocmem.outcome import Outcome

if TYPE_CHECKING:
    from ocmem.progress import Progress


class Context:
    def __init__(self, clock: Clock, progress: Progress | None = None):
        self.clock = clock
        self.progress = progress  # on a terminal only (ocmem.cli.entry)
        self.home: Path | None = None
        self.wait: float | None = None

    def workspace(self, *, creating: bool = False) -> Workspace:
        from ocmem.home.runlock import DEFAULT_WAIT_SECONDS

        return open_workspace(
            self.home,
            wait_seconds=DEFAULT_WAIT_SECONDS if self.wait is None else self.wait,
            clock=self.clock,
            notify=notify if self.progress is None else self.progress.say,
            waiting=None if self.progress is None else self.progress.waiting,
            creating=creating,
        )

    def reader(self) -> tuple[Workspace, bool]:
        """The workspace, and whether the agent runs this reader itself: quarantined text is
        then masked in what it prints (ocmem.guards.exposure)."""
        from ocmem.bridge.agentproc import agent_reason

        workspace = self.workspace()
        return workspace, agent_reason(workspace.paths) is not None

    def human_workspace(self, what: str, *, creating: bool = False) -> Workspace:
        """The workspace, for a command the agent may not run itself (see ocmem.bridge.agentproc)."""
        from ocmem.bridge.agentproc import refuse_agent

        workspace = self.workspace(creating=creating)
        refuse_agent(workspace.paths, what)
        return workspace


def notify(message: str) -> None:
    click.echo(f"ocmem : {message}", err=True)


pass_context = click.make_pass_decorator(Context)


def text_outcome(lines: str) -> Outcome:
    return Outcome([lines.rstrip("\n")])


@click.group(
    cls=AudienceGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    subcommand_metavar="COMMANDE [ARGUMENTS]...",
)
@click.version_option(__version__, prog_name="ocmem", help="Affiche la version.")
@click.option(
    "--home",
    type=click.Path(path_type=Path),
    envvar="OCMEM_HOME",
    help="Dossier ocmem (défaut : $XDG_CONFIG_HOME/opencode, sinon ~/.config/opencode).",
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    metavar="SECONDES",
    help="Attente maximale du verrou si une autre exécution d'ocmem le tient (défaut : 10 ; "
    "0 : échouer aussitôt, code 75). Acceptée aussi après la commande.",
)
@click.pass_context
def cli(ctx: click.Context, home: Path | None, wait: float | None) -> None:
    """Mémoire long terme d'OpenCode : notes, journal, propositions, skills."""
    obj = ctx.find_object(Context)  # made by ocmem.cli.entry, with the process's clock
    assert obj is not None, "ocmem.cli.entry.main runs the command line"
    if home is not None and home.exists() and not home.is_dir():
        from ocmem.home.paths import refuse_a_file_home

        from_env = ctx.get_parameter_source("home") is click.core.ParameterSource.ENVIRONMENT
        refuse_a_file_home(home, "OCMEM_HOME" if from_env else "--home")
    obj.home, obj.wait = home, wait
