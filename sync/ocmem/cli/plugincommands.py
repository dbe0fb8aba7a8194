"""The plugin's own commands (hidden from the help): its settings, the prompt blocks, a memory
tool outside the gate, and the gate."""

from __future__ import annotations

import json

import click

from ocmem.cli.app import Context, cli, pass_context, text_outcome
from ocmem.cli.options import option
from ocmem.cli.stdin import read_json
from ocmem.outcome import Outcome


@cli.command(name="plugin-config", hidden=True)
@pass_context
def plugin_config_command(obj: Context) -> Outcome:
    """Settings for the OpenCode plugin (JSON, see ocmem.bridge.contract)."""
    from ocmem.bridge.tools import plugin_config

    return text_outcome(json.dumps(plugin_config(obj.workspace().settings), ensure_ascii=False))


@cli.command(name="prompt-context", hidden=True)
@click.option("--session", help="Root session id: says whether it already has its journal entry.")
@pass_context
def prompt_context_command(obj: Context, session: str | None) -> Outcome:
    """Memory blocks for the system prompt and start-of-session warnings (JSON)."""
    from ocmem.bridge.tools import prompt_context

    return text_outcome(json.dumps(prompt_context(obj.workspace(), session), ensure_ascii=False))


@cli.command(name="tool", hidden=True)
@click.argument("name")
@pass_context
def tool_command(obj: Context, name: str) -> Outcome:
    """Run a memory tool for the plugin: envelope JSON on stdin."""
    from ocmem.bridge.tools import run_tool

    workspace = obj.human_workspace(f"tool {name}")
    return run_tool(workspace, name, read_json(f"tool {name}"))


@cli.command(name="gate", hidden=True)
@pass_context
def gate_command(obj: Context) -> Outcome:
    """The plugin's gate: JSON requests on stdin, one answer per line (see ocmem.bridge.gate)."""
    from ocmem.bridge.gate import serve

    return serve(obj.home, clock=obj.clock)


@cli.command(name="mcp")
@option(
    "--installer",
    "--install",
    "install",
    is_flag=True,
    help="Ajoute ocmem mcp aux serveurs MCP d'OpenCode (opencode.json du dossier).",
)
@option(
    "--retirer",
    "--uninstall",
    "uninstall",
    is_flag=True,
    help="Retire ocmem mcp de opencode.json.",
)
@pass_context
def mcp_command(obj: Context, install: bool, uninstall: bool) -> Outcome:
    """Serveur MCP (stdio) vers l'espace SilverBullet : lire, chercher, écrire sous la boîte de dépôt seulement."""
    if install and uninstall:
        raise click.UsageError("--installer ou --retirer, pas les deux")
    if install or uninstall:
        from ocmem.setup import mcpinstall

        if install:
            return mcpinstall.install(obj.human_workspace("mcp --installer"))
        return mcpinstall.uninstall(obj.human_workspace("mcp --retirer"))
    from ocmem.bridge.mcpserve import serve

    serve(obj.workspace)
    return Outcome()
