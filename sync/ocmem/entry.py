"""Entry point of the ``ocmem`` command: the one place where errors become messages and exit codes.

Exit codes: 0 ok, 1 error, 2 usage or invalid input, 3 refused / needs a human, 75 busy.

The two machine-facing commands that take a JSON object on stdin — ``journal add`` (the
retrospective) and ``tool NAME`` (every memory tool of the OpenCode plugin) — run without
importing click: they have no options to parse, and they are the hot path (the click import
alone costs about twice Python's own start-up). Everything else goes through ``ocmem.cli``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ocmem.errors import InputError, OcmemError

if TYPE_CHECKING:
    from ocmem.engine import Memory


def open_memory(home: Path | None, wait_seconds: float) -> Memory:
    """The engine for a home, knowing the sync mode and the token to keep out of memory."""
    from ocmem.config import load_settings
    from ocmem.engine import Memory
    from ocmem.syncconfig import configured_secrets, is_configured

    settings = load_settings(home)
    return Memory(
        settings,
        wait_seconds=wait_seconds,
        known_secrets=configured_secrets(settings),
        sync_mode=is_configured(settings),
    )


def read_json_stdin(what: str) -> Any:
    if sys.stdin.isatty():
        raise InputError(f"{what} attend un objet JSON sur l'entrée standard", fix="voir --help")
    try:
        return json.loads(sys.stdin.read())
    except json.JSONDecodeError as exc:
        raise InputError(
            f"JSON invalide sur l'entrée standard : {exc}", fix="envoie un seul objet JSON valide"
        ) from exc


def _fast_path(args: list[str]) -> str | None:
    """Run ``[--home H] [--wait S] (journal add | tool NAME)``; None for anything else."""
    home: Path | None = None
    wait = 0.0
    rest = list(args)
    while len(rest) >= 2 and rest[0] in ("--home", "--wait"):
        option, value = rest.pop(0), rest.pop(0)
        if option == "--home":
            home = Path(value)
        else:
            try:
                wait = float(value)
            except ValueError:
                return None  # let click explain the usage error
    if rest == ["journal", "add"]:
        return open_memory(home, wait).add_journal(read_json_stdin("journal add")).render()
    if len(rest) == 2 and rest[0] == "tool":
        from ocmem.pluginapi import run_tool

        return run_tool(
            open_memory(home, wait), rest[1], read_json_stdin(f"tool {rest[1]}")
        ).render()
    return None


def main(argv: list[str] | None = None) -> NoReturn:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        output = _fast_path(args)
        if output is None:
            from ocmem.cli import run

            sys.exit(run(args))
        sys.stdout.write(output + "\n")
    except OcmemError as exc:
        sys.stderr.write(f"ocmem : {exc.render()}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)
