"""The contract between ocmem and its OpenCode plugin, written once.

The plugin (TypeScript, ``plugin/ocmem.ts``) runs ``ocmem`` and exchanges JSON with it:

- ``ocmem plugin-config`` → :class:`PluginSettings` (paths to guard, tools to trust, patterns);
- ``ocmem prompt-context --session ID`` → :class:`PromptContext` (the memory blocks);
- ``ocmem tool NAME`` ← :class:`ToolEnvelope` on stdin (the user's messages, where the session
  has been, the tool's arguments), → the tool's answer as text;
- the gate's ``proposal`` request → :class:`ProposalSummary` (what the promotion prompt shows);
- the gate's ``space`` request (a space tool) → :class:`SpaceAnswer`;
- the gate's ``mcp-write`` request (a SilverBullet MCP server's write call) →
  :class:`McpWriteVerdict`.

Everything the plugin must agree with ocmem on is generated from here into
``plugin/ocmem/contract.ts`` (``scripts/generate.py``; its ``--check`` runs in CI): the
TypeScript types and the runtime shapes the plugin checks every answer against, its cold-start
settings (used until ``ocmem plugin-config`` has answered), the memory and space tools' schemas
(``ocmem.formats.operations``), the commands its guard refuses to the agent's shell, how text is
folded (``ocmem.text.words``), the environment variables and the exposure cap they share.
``tsc --noEmit`` checks the plugin against the generated types.
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from ocmem import __version__
from ocmem.bridge import mcpdiscovery
from ocmem.bridge.agentproc import AGENT_ENV
from ocmem.formats import operations
from ocmem.guards import exposure
from ocmem.guards.corrections import CORRECTION_SOURCE
from ocmem.guards.provenance import RETIENS_PATTERNS
from ocmem.home import gateenv, sessions
from ocmem.home.paths import Paths
from ocmem.home.settings import SECTIONS, Settings
from ocmem.home.space import ENV_TOKEN
from ocmem.text.words import LIGATURES

# Put in the first message of a maintenance run (the weekly curation): no retrospective then.
MAINTENANCE_MARKER = "<!-- ocmem:maintenance -->"
# The end of the plugin's reminder in the agent's system prompt once a task is non-trivial:
# what the model is asked to do, and what `ocmem essai`'s scripted model looks for.
RETROSPECTIVE_REMINDER = (
    "charge le skill `retrospective` et applique-le, une seule fois pour cette session."
)


class Exposure(TypedDict):
    """Untrusted content that entered a session (kinds: ``ocmem.guards.exposure``)."""

    kind: str
    source: str


class Window(TypedDict):
    """An exposed session's window, in milliseconds since the epoch (``ocmem.home.sessions``);
    ``open``: a turn of it runs (or its OpenCode died in one): it reaches every later moment."""

    session: str
    start: float
    end: float
    open: bool


class PluginSettings(TypedDict):
    version: str
    home: str
    threshold: int
    sync: bool
    pull_timeout_seconds: float
    protected_files: list[str]
    protected_dirs: list[str]
    secret_files: list[str]
    trusted_tools: list[str]
    untrusted_tools: list[str]
    retiens: str
    corrections: str
    skill_usage_file: str
    maintenance_marker: str
    # The tamper monitor (default mode) watches the whole home but ocmem's state dir, accepts
    # the changes the writes journal announces and moves the others to the quarantine dir.
    state_dir: str
    plugin_command_file: str
    writes_journal: str
    quarantine_dir: str
    # True when the home belongs to another Unix user (``ocmem harden``): the OS protects it.
    hardened: bool
    # The SilverBullet token and its obvious encodings, erased from every tool output (default
    # mode only: in the hardened mode the agent's user cannot read the token at all).
    redact: list[str]
    # Session taint (ocmem.guards.exposure): what makes a tool call bring outside content.
    fetch_commands: str
    path_tokens: str
    file_tokens: str
    untrusted_dirs: list[str]
    system_paths: list[str]
    trust_project: bool
    # Exposed sessions of the last days: a project file changed inside one is not trusted;
    # the file they are kept in (read again when a file changed after the plugin last read it).
    exposure_windows: list[Window]
    windows_file: str
    # SilverBullet MCP servers (ocmem.bridge.mcpdiscovery): the names ocmem found in the configs
    # it reads, the pattern that tells one in the merged config OpenCode hands the plugin, the
    # folder their tools may write to ("" when the home has no id: nowhere), named in the
    # plugin's messages. Whether a write call may run, the plugin asks the gate (``mcp-write``).
    silverbullet_mcp: list[str]
    silverbullet_mcp_pattern: str
    silverbullet_inbox: str
    # What the session start tells the user: settings given in OpenCode's environment that the
    # gate does not see (the hardened gate, started by sudo: ocmem.home.gateenv). The plugin
    # reports the variables by name (`plugin-config`'s ``environment``, the token masked).
    environment_warnings: list[str]


class PromptContext(TypedDict):
    system: list[str]
    warnings: list[str]
    journal_written: bool
    # Memory files holding quarantined items: reading one exposes the session.
    quarantined: list[str]


class ToolEnvelope(TypedDict):
    session: str
    user_messages: list[str]
    # Everything the plugin saw enter the session; ocmem keeps the union (never removes).
    exposures: list[Exposure]
    args: dict[str, object]


class SpaceAnswer(TypedDict):
    """A space tool's answer (``ocmem.bridge.spaceanswers``): what the model reads, and what the
    call brings into the session (the plugin records it before the model reads the text)."""

    text: str
    exposures: list[Exposure]


class McpWriteVerdict(TypedDict):
    """Whether a SilverBullet MCP server's write call may run (``ocmem.bridge.spacetools``
    ``mcp_write_refusal``): why it is refused, in French for the model ("" when it may run)."""

    refusal: str


class ProposalSummary(TypedDict):
    id: str
    kind: str
    title: str
    exposure: str  # "" when the proposal carries none
    replaces: str  # the MEMORY.md line it replaces, as it stands ("" when none)


# OpenCode 1.18.33's built-in tools whose output is the agent's own work. Anything else
# (webfetch, websearch, every MCP tool) is untrusted unless ocmem.yaml says otherwise.
TRUSTED_TOOLS = (
    "bash",
    "edit",
    "glob",
    "grep",
    "list",
    "read",
    "patch",
    "multiedit",
    "apply_patch",
    "skill",
    "task",
    "todoread",
    "todowrite",
    "write",
    "invalid",
)
# Settings fields that are paths: relative to the home in the cold-start settings.
PATH_FIELDS = (
    "protected_files",
    "protected_dirs",
    "secret_files",
    "skill_usage_file",
    "state_dir",
    "plugin_command_file",
    "writes_journal",
    "quarantine_dir",
    "windows_file",
)


def cold_start_settings() -> PluginSettings:
    """The settings of a home with no ocmem.yaml, paths relative to it: what the plugin uses
    before ``ocmem plugin-config`` has answered (generated into plugin/ocmem.ts)."""
    paths = Paths(Path("."))
    plugin = SECTIONS["plugin"]
    return {
        "version": __version__,
        "home": ".",
        "threshold": Settings(paths).limits.retrospective_threshold,
        "sync": False,
        "pull_timeout_seconds": plugin["pull_timeout_seconds"].default,
        "protected_files": [paths.rel(paths.agents_md), paths.rel(paths.config_file)],
        "protected_dirs": [
            paths.rel(paths.memory_dir),
            paths.rel(paths.skills_dir),
            paths.rel(paths.state_dir),
            paths.rel(paths.plugin_file.parent),
        ],
        "secret_files": [paths.rel(paths.default_token_file)],
        "trusted_tools": list(TRUSTED_TOOLS),
        "untrusted_tools": list(plugin["untrusted_tools"].default),
        "retiens": "|".join(RETIENS_PATTERNS),
        "corrections": CORRECTION_SOURCE,
        "skill_usage_file": paths.rel(paths.skill_usage),
        "maintenance_marker": MAINTENANCE_MARKER,
        "state_dir": paths.rel(paths.state_dir),
        "plugin_command_file": paths.rel(paths.plugin_command),
        "writes_journal": paths.rel(paths.writes_journal),
        "quarantine_dir": paths.rel(paths.quarantine_dir),
        "hardened": False,
        "redact": [],
        "fetch_commands": exposure.FETCH_COMMAND_SOURCE,
        "path_tokens": exposure.PATH_TOKEN_SOURCE,
        "file_tokens": exposure.FILE_TOKEN_SOURCE,
        "untrusted_dirs": list(exposure.UNTRUSTED_DIRS),
        "system_paths": list(exposure.SYSTEM_PATHS),
        "trust_project": plugin["trust_project"].default,
        "exposure_windows": [],
        "windows_file": paths.rel(paths.windows_index),
        "silverbullet_mcp": [],
        "silverbullet_mcp_pattern": mcpdiscovery.marker_pattern(),
        "silverbullet_inbox": "",
        "environment_warnings": [],
    }


_TS_TYPES = {str: "string", int: "number", float: "number", bool: "boolean"}


def _ts_type(annotation: Any) -> str:
    if annotation in _TS_TYPES:
        return _TS_TYPES[annotation]
    if typing.is_typeddict(annotation):
        return str(annotation.__name__)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list:
        return f"{_ts_type(args[0])}[]"
    if origin is dict:
        return "Record<string, unknown>"
    raise TypeError(f"no TypeScript type for {annotation!r}")


@functools.cache
def shapes() -> Mapping[str, Mapping[str, str]]:
    """Each JSON document's fields with their TypeScript type: what the plugin checks (built
    once: every tool call's envelope is checked against it)."""
    return {
        name: {field: _ts_type(t) for field, t in typing.get_type_hints(cls).items()}
        for name, cls in (
            ("Exposure", Exposure),
            ("Window", Window),
            ("Settings", PluginSettings),
            ("PromptContext", PromptContext),
            ("ToolEnvelope", ToolEnvelope),
            ("ProposalSummary", ProposalSummary),
            ("SpaceAnswer", SpaceAnswer),
            ("McpWriteVerdict", McpWriteVerdict),
        )
    }


def problems(value: object, name: str) -> list[str]:
    """Why ``value`` is not a ``name`` document (the plugin applies the same rule)."""
    if not isinstance(value, dict):
        return ["pas un objet JSON"]
    found = []
    known = shapes()
    for field, kind in known[name].items():
        item = value.get(field)
        if kind.endswith("[]") and kind[:-2] in known:
            ok = isinstance(item, list) and not any(problems(x, kind[:-2]) for x in item)
        elif kind.endswith("[]"):
            ok = isinstance(item, list) and all(_is(x, kind[:-2]) for x in item)
        elif kind.startswith("Record<"):
            ok = isinstance(item, dict)
        else:
            ok = _is(item, kind)
        if not ok:
            found.append(f"« {field} » doit être {kind}")
    return found


def _is(value: object, kind: str) -> bool:
    """JavaScript's ``typeof value === kind`` for JSON values."""
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, {"string": str, "boolean": bool}[kind])


def tool_schemas(
    declared: tuple[operations.Operation, ...] = operations.OPERATIONS,
) -> dict[str, dict[str, Any]]:
    """Each tool's description and argument schemas, as the plugin declares the tool (the
    memory tools unless ``declared`` says otherwise)."""
    return {
        op.tool: {"description": op.description, "args": {a.name: a.schema() for a in op.args}}
        for op in declared
    }


def typescript() -> str:
    """The text of plugin/ocmem/contract.ts."""
    lines = [
        "// Generated from sync/ocmem/bridge/contract.py by `scripts/generate.py`: do not edit.",
        "/* eslint-disable */",
    ]
    for name, fields in shapes().items():
        lines.append(f"export type {name} = {{")
        lines += [f"  {field}: {kind}" for field, kind in fields.items()]
        lines.append("}")
    lines.append(f"export const SHAPES = {json.dumps(shapes(), indent=2)} as const")
    lines.append(f"export const PATH_FIELDS = {json.dumps(list(PATH_FIELDS))} as const")
    cold = json.dumps(cold_start_settings(), indent=2, ensure_ascii=False)
    lines.append("/** Until `ocmem plugin-config` answers: paths relative to the home. */")
    lines.append(f"export const COLD_START: Settings = {cold}")
    lines.append("/** The memory tools (sync/ocmem/formats/operations.py). */")
    tools = json.dumps(tool_schemas(), indent=2, ensure_ascii=False)
    lines.append(f"export const TOOLS = {tools} as const")
    lines.append("export type ToolName = keyof typeof TOOLS")
    lines.append("/** The SilverBullet space's tools (sync/ocmem/formats/operations.py). */")
    space = json.dumps(tool_schemas(operations.SPACE_OPERATIONS), indent=2, ensure_ascii=False)
    lines.append(f"export const SPACE_TOOLS = {space} as const")
    lines.append("export type SpaceToolName = keyof typeof SPACE_TOOLS")
    lines.append(
        "/** What the agent's shell may not run (ocmem.bridge.agentproc refuses them too). */"
    )
    refused = json.dumps(list(operations.AGENT_REFUSED), ensure_ascii=False)
    lines.append(f"export const AGENT_REFUSED_COMMANDS = {refused} as const")
    lines.append("/** Letters NFKD keeps whole, spread out by fold (sync/ocmem/text/words.py). */")
    lines.append(
        f"export const LIGATURES: Record<string, string> = {json.dumps(LIGATURES, ensure_ascii=False)}"
    )
    lines.append(f"export const AGENT_ENV = {json.dumps(AGENT_ENV)}")
    reminder = json.dumps(RETROSPECTIVE_REMINDER, ensure_ascii=False)
    lines.append(f"export const RETROSPECTIVE_REMINDER = {reminder}")
    lines.append(f"export const TOKEN_ENV = {json.dumps(ENV_TOKEN)}")
    # What the plugin tells the gate it has (a gate started by sudo sees none of it), the token
    # by presence only: ocmem.home.gateenv.
    lines.append(f"export const SPACE_ENV = {json.dumps(list(gateenv.VARIABLES))} as const")
    lines.append(f"export const MASKED_ENV_VALUE = {json.dumps(gateenv.MASKED)}")
    lines.append(f"export const MAX_EXPOSURES = {sessions.MAX_ITEMS}")
    token_file = Paths(Path(".")).default_token_file.name
    lines.append(
        f"export const TOKEN_FILE_NAME = {json.dumps(token_file)} // wherever it is copied"
    )
    return "\n".join(lines) + "\n"
