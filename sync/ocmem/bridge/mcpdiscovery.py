"""SilverBullet MCP servers in the agent's hands (issue 23).

A SilverBullet MCP server (``mcp-server-silverbullet``, ``kesor/silverbullet-mcp``…) holds a
token for the whole space and offers ``write_page``: through it the agent could write
``Agents/Memory/MEMORY.md`` or a skill in SilverBullet, and the next ``ocmem pull`` would install
that text as validated memory. This module finds such servers in the OpenCode configuration files
that apply, as OpenCode 1.18.33 loads them (``Config.loadInstanceState``, docs/opencode.md §1):

1. the global dir ``$XDG_CONFIG_HOME/opencode`` (``config.json``, ``opencode.json``,
   ``opencode.jsonc``), and ocmem's home when it is another folder;
2. ``$OPENCODE_CONFIG`` (a file);
3. unless ``OPENCODE_DISABLE_PROJECT_CONFIG``: ``opencode.jsonc``/``opencode.json`` from the
   worktree's root down to the project dir (``ConfigPaths.projectFiles``);
4. ``opencode.json[c]`` of each ``.opencode/`` between the project and its worktree, of
   ``~/.opencode`` and of ``$OPENCODE_CONFIG_DIR`` (``ConfigPaths.directories``);
5. ``$OPENCODE_CONFIG_CONTENT`` (inline JSON).

Each ``mcp.<name>`` entry is merged in that order (a later file may only say ``enabled: false``).
A server is SilverBullet-capable when one of its strings betrays it (:func:`marker_pattern`): its
name or a string of its entry says ``silverbullet``/``silver-bullet``/``sb-mcp``, names an
``SB_*``/``SILVERBULLET_*`` variable, refers to ocmem's SilverBullet variables or token file
(``{env:OCMEM_SILVERBULLET_TOKEN}``, ``{file:…/silverbullet.token}``), or holds the space's URL
(host and path prefix); or one of its strings holds the token itself.

The rule is one regular expression that Python and JavaScript read alike: the plugin receives it
(``PluginSettings.silverbullet_mcp_pattern``) and applies it to the merged configuration its
``config`` hook sees, which includes project files this process may not know of.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ocmem.errors import OcmemError
from ocmem.home import identity
from ocmem.home.settings import Settings, setting
from ocmem.home.space import (
    DEFAULT_PUSH,
    ENV_TOKEN,
    ENV_TOKEN_FILE,
    ENV_URL,
    HOME_PLACEHOLDER,
    configured_url,
    secret_values,
    sync_section,
)

CONTENT_SOURCE = "OPENCODE_CONFIG_CONTENT"
MAX_CONFIG_BYTES = 1_000_000
TOKEN_FILE_NAME = "silverbullet.token"
# Names and strings that say SilverBullet, whatever the space: separators between the words vary.
NAME_MARKERS = (
    r"silver[-_ .]?bullet",
    r"(?:^|[^A-Za-z0-9])sb[-_]?mcp",
    r"mcp[-_]?sb(?:$|[^A-Za-z0-9])",
    r"(?:^|[^A-Za-z0-9])(?:SB|SILVERBULLET|SILVER_BULLET)_[A-Z0-9_]*(?:$|[^A-Za-z0-9_])",
    r"\{env:(?:" + "|".join(re.escape(v) for v in (ENV_URL, ENV_TOKEN, ENV_TOKEN_FILE)) + r")\}",
    r"\{file:[^}]*(?:" + re.escape(TOKEN_FILE_NAME) + r"|\.ocmem/)[^}]*\}",
)


@dataclass(frozen=True)
class Source:
    """One configuration OpenCode loads: a file's path (or ``OPENCODE_CONFIG_CONTENT``), its text."""

    where: str
    text: str


@dataclass
class McpServer:
    name: str
    sources: list[str] = field(default_factory=list)  # where it is declared, in load order
    reasons: list[str] = field(default_factory=list)  # why it is SilverBullet's (French)
    enabled: bool = True

    def describe(self) -> str:
        return f"« {self.name} » ({', '.join(self.sources)} ; {', '.join(self.reasons)})"


def url_marker(url: str) -> str | None:
    """The space's address as a pattern: host (and port) and path prefix, any scheme, bounded so
    that ``notes.example.org`` does not match ``notes.example.org2`` nor ``a.notes.example.org``."""
    parts = urlsplit(url.strip())
    host = (parts.netloc or "").rsplit("@", 1)[-1]
    if not host:
        return None
    path = parts.path.rstrip("/").removesuffix("/.fs").rstrip("/")
    host_re = "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in host)
    return rf"(?:^|[^A-Za-z0-9.-]){host_re}{re.escape(path)}(?=$|[^A-Za-z0-9_-]|\.[^A-Za-z0-9])"


def marker_pattern(url: str = "") -> str:
    """The pattern one of a server's strings (its name, its entry as JSON) matches when the
    server can reach SilverBullet (flags: case-insensitive for the words, see NAME_MARKERS)."""
    markers = [f"(?:{m})" for m in NAME_MARKERS]
    found = url_marker(url) if url else None
    if found:
        markers.append(f"(?:{found})")
    return "|".join(markers)


_JSONC = re.compile(r'("(?:[^"\\]|\\.)*")|//[^\n]*|/\*.*?\*/', re.DOTALL)
_COMMA = re.compile(r'("(?:[^"\\]|\\.)*")|,(\s*[}\]])')


def parse_jsonc(text: str) -> Any:
    """JSON with comments and trailing commas, as OpenCode reads its config (ValueError if not)."""
    text = _JSONC.sub(lambda m: m.group(1) or "", text)
    return json.loads(_COMMA.sub(lambda m: m.group(1) or m.group(2), text))


def _merge(base: Any, extra: Any) -> Any:
    if isinstance(base, dict) and isinstance(extra, dict):
        merged = dict(base)
        for key, value in extra.items():
            merged[key] = _merge(base.get(key), value)
        return merged
    return extra


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


# Which part of an entry a reason points at (French, for the human).
_PARTS = (
    ("command", "sa commande ou ses arguments"),
    ("environment", "son environnement"),
    ("url", "son adresse distante"),
    ("headers", "ses en-têtes"),
)


def classify(
    name: str, entry: Mapping[str, Any], pattern: str, secrets: Sequence[str]
) -> list[str]:
    """Why the server ``name`` (its merged entry) can reach SilverBullet; empty: it cannot."""
    rule = re.compile(pattern, re.IGNORECASE)
    reasons = []
    if rule.search(name):
        reasons.append("son nom")
    parts = dict(_PARTS)
    for key, value in entry.items():
        texts = list(_strings(value))
        what = parts.get(key, f"« {key} »")
        if any(rule.search(t) for t in texts):
            reasons.append(f"SilverBullet dans {what}")
        if any(secret in t for secret in secrets for t in texts):
            reasons.append(f"le jeton SilverBullet dans {what}")
    return reasons


def merged_servers(
    sources: Iterable[Source],
) -> tuple[dict[str, Any], dict[str, list[str]], list[str]]:
    """Every MCP entry as OpenCode merges them (name → entry), where each is declared, and the
    sources that could not be read (French). Pure."""
    merged: dict[str, Any] = {}
    declared: dict[str, list[str]] = {}
    unreadable = []
    for source in sources:
        try:
            config = parse_jsonc(source.text)
        except ValueError as exc:
            unreadable.append(f"{source.where} n'est pas du JSON valide ({exc})")
            continue
        servers = config.get("mcp") if isinstance(config, dict) else None
        if not isinstance(servers, dict):
            continue
        for name, entry in servers.items():
            if not isinstance(entry, dict):
                continue
            merged[name] = _merge(merged.get(name), entry)
            declared.setdefault(name, []).append(source.where)
    return merged, declared, unreadable


def silverbullet_servers(
    sources: Iterable[Source],
    url: str = "",
    secrets: Sequence[str] = (),
    home: Path | None = None,
) -> tuple[list[McpServer], list[str]]:
    """The SilverBullet-capable MCP servers of these configurations (in load order), and the
    sources that could not be read (French). ``home``: ocmem's home, whose former ``ocmem mcp``
    entry is ocmem's leftover (doctor says so), not a server that reaches the space. Pure."""
    merged, declared, unreadable = merged_servers(sources)
    pattern = marker_pattern(url)
    secrets = [s for s in secrets if len(s) >= 8]
    found = []
    for name, entry in merged.items():
        if home is not None and name == FORMER_SERVER and former_server(entry, home):
            continue
        reasons = classify(name, entry, pattern, secrets)
        if reasons:
            enabled = entry.get("enabled", True) is not False
            found.append(McpServer(name, declared[name], reasons, enabled))
    return found, unreadable


# --- where OpenCode reads its configuration (I/O) ---------------------------------------------


def _up(start: Path, stop: Path | None) -> list[Path]:
    """``start`` and its parents up to ``stop`` (included), or to the root."""
    found = [start]
    current = start
    while current != stop and current.parent != current:
        current = current.parent
        found.append(current)
    return found


def worktree_of(directory: Path) -> Path | None:
    """The git worktree holding ``directory`` (where OpenCode stops looking up), None outside git."""
    for folder in _up(directory, None):
        if (folder / ".git").exists():
            return folder
    return None


def config_files(
    env: Mapping[str, str], home: Path | None = None, directory: Path | None = None
) -> list[Path]:
    """The configuration files OpenCode would load for a project in ``directory`` (None: only
    the global ones), in its load order; ``home``: ocmem's home (usually the global dir)."""
    user = Path(env.get("HOME") or str(Path.home()))
    xdg = Path(env.get("XDG_CONFIG_HOME") or user / ".config")
    global_dir = xdg / "opencode"
    found = [global_dir / n for n in ("config.json", "opencode.json", "opencode.jsonc")]
    if home is not None and home.resolve() != global_dir.resolve():
        found += [home / n for n in ("config.json", "opencode.json", "opencode.jsonc")]
    if env.get("OPENCODE_CONFIG"):
        found.append(Path(env["OPENCODE_CONFIG"]).expanduser())
    project = directory is not None and not env.get("OPENCODE_DISABLE_PROJECT_CONFIG")
    dirs: list[Path] = []
    if directory is not None and project:
        levels = _up(directory, worktree_of(directory))
        for folder in reversed(levels):
            found += [folder / "opencode.jsonc", folder / "opencode.json"]
        dirs += [folder / ".opencode" for folder in levels]
    dirs.append(user / ".opencode")
    if env.get("OPENCODE_CONFIG_DIR"):
        dirs.append(Path(env["OPENCODE_CONFIG_DIR"]).expanduser())
    for folder in dirs:
        found += [folder / "opencode.json", folder / "opencode.jsonc"]
    unique: list[Path] = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique


def read_sources(
    env: Mapping[str, str], home: Path | None = None, directory: Path | None = None
) -> tuple[list[Source], list[str]]:
    """The configurations that exist, with their text, and those that could not be read."""
    sources, unreadable = [], []
    for path in config_files(env, home, directory):
        try:
            # A regular file only: a FIFO planted there would hold the gate (and doctor) forever.
            if not path.is_file():
                continue
            if path.stat().st_size > MAX_CONFIG_BYTES:
                unreadable.append(f"{path} dépasse {MAX_CONFIG_BYTES} octets")
                continue
            sources.append(Source(str(path), path.read_text(encoding="utf-8")))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (OSError, UnicodeDecodeError) as exc:
            unreadable.append(f"{path} illisible ({exc})")
    if env.get(CONTENT_SOURCE):
        sources.append(Source(CONTENT_SOURCE, env[CONTENT_SOURCE]))
    return sources, unreadable


def find(
    settings: Settings, env: Mapping[str, str] | None = None, directory: Path | None = None
) -> tuple[list[McpServer], list[str]]:
    """The SilverBullet MCP servers OpenCode would start for ``directory`` (None: the global
    configuration only), and what could not be read."""
    env = os.environ if env is None else env
    sources, unreadable = read_sources(env, settings.paths.home, directory)
    found, bad = silverbullet_servers(
        sources,
        configured_url(settings, env),
        secret_values(settings, env),
        settings.paths.home,
    )
    return found, unreadable + bad


# `ocmem mcp`, the MCP server ocmem installed before its tools moved into the plugin (issue 35):
# an entry of it left in OpenCode's configuration is ocmem's to remove (ocmem.setup.formermcp),
# never a SilverBullet server of the user's.
FORMER_SERVER = "ocmem"


def former_server(entry: object, home: Path) -> bool:
    """Whether ``entry`` starts ``ocmem mcp`` for this home, as ``ocmem mcp --installer`` wrote
    it: an ``ocmem`` program (or ``python -m ocmem``), then ``--home <home> mcp``."""
    command = entry.get("command") if isinstance(entry, dict) else None
    if not isinstance(command, list) or not all(isinstance(part, str) for part in command):
        return False
    program = command[:-3]
    return command[-3:] == ["--home", str(home), "mcp"] and any(
        Path(part).name == "ocmem" for part in program
    )


def home_inbox(settings: Settings) -> str:
    """``Agents/Inbox/<home-id>/``: the only folder an agent may write to in SilverBullet ("" when
    the home has no id yet: nowhere)."""
    try:
        found = identity.read(settings.paths)
    except OcmemError:
        return ""
    if found is None:
        return ""
    inbox = str(setting(settings, "silverbullet", "inbox")).strip().strip("/")
    return f"{inbox}/{found.id}/"


# The pages of a home's folder that only ocmem (journal, pending) or the human (decisions, read
# by the pull) writes: the review page shows ``pending`` as this home's proposals.
RESERVED_NAMES = ("journal", "pending", "decisions")


def reserved_pages(settings: Settings) -> list[str]:
    """The pages of the home's inbox folder no MCP tool may write (without ``.md``): ocmem's own
    pushed pages and the human's decisions page."""
    inbox = home_inbox(settings)
    if not inbox:
        return []
    home = inbox.rstrip("/").rsplit("/", 1)[-1]
    pushed = {remote for _, remote in DEFAULT_PUSH}
    rules = sync_section(settings).get("push")
    if isinstance(rules, list):
        pushed |= {str(r.get("remote")) for r in rules if isinstance(r, dict) and r.get("remote")}
    pages = {p.replace(HOME_PLACEHOLDER, home).strip("/").removesuffix(".md") for p in pushed}
    pages |= {inbox + name for name in RESERVED_NAMES}
    return sorted(pages)
