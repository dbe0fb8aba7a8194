"""The plugin's own commands (hidden from the help): its settings, the prompt blocks, a memory
tool outside the gate, and the gate; and what ``ocmem mcp`` now says."""

from __future__ import annotations

import json

import click

from ocmem.cli.app import Context, cli, pass_context, text_outcome
from ocmem.cli.stdin import read_json
from ocmem.outcome import Outcome


@cli.command(name="plugin-config", hidden=True)
@pass_context
def plugin_config_command(obj: Context) -> Outcome:
    """Réglages du plugin OpenCode (JSON)."""
    from ocmem.bridge.tools import plugin_config

    return text_outcome(json.dumps(plugin_config(obj.workspace().settings), ensure_ascii=False))


@cli.command(name="prompt-context", hidden=True)
@click.option("--session", help="Session racine : dit si elle a déjà son entrée de journal.")
@pass_context
def prompt_context_command(obj: Context, session: str | None) -> Outcome:
    """Blocs mémoire du prompt système et alertes de début de session (JSON)."""
    from ocmem.bridge.tools import prompt_context

    return text_outcome(json.dumps(prompt_context(obj.workspace(), session), ensure_ascii=False))


@cli.command(name="tool", hidden=True)
@click.argument("name")
@pass_context
def tool_command(obj: Context, name: str) -> Outcome:
    """Lance un outil mémoire pour le plugin (enveloppe JSON sur l'entrée standard)."""
    from ocmem.bridge.tools import run_tool

    workspace = obj.human_workspace(f"tool {name}")
    return run_tool(workspace, name, read_json(f"tool {name}"))


@cli.command(name="gate", hidden=True)
@pass_context
def gate_command(obj: Context) -> Outcome:
    """Passerelle du plugin : requêtes JSON sur l'entrée standard, une réponse par ligne."""
    from ocmem.bridge.gate import serve

    return serve(obj.home, clock=obj.clock)


@cli.command(
    name="mcp",
    hidden=True,
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
def former_mcp_command() -> Outcome:
    """Removed (issue 35): what an OpenCode configured by an older ocmem still starts, and what
    an older guide tells a human to type, is told where the space went instead of « no such
    command »."""
    from ocmem.errors import Refused
    from ocmem.formats.operations import SPACE_OPERATIONS

    tools = ", ".join(op.tool for op in SPACE_OPERATIONS)
    raise Refused(
        "ocmem mcp n'existe plus : l'agent lit et écrit l'espace SilverBullet par les outils "
        f"{tools} du plugin ocmem, qui passent par sa passerelle",
        fix="ocmem init --mettre-a-jour (installe le plugin qui les apporte et retire "
        "l'entrée « mcp.ocmem » de la configuration d'OpenCode) ; ocmem doctor dit s'il en reste une",
    )
