"""Running one ocmem command: its outcome or error as an exit code and the text to print.

The command line (``ocmem.cli.entry``) and the plugin's gate (``ocmem.bridge.gate``, which runs commands
in-process) share this, so both answer exactly alike. Exit codes: 0 ok, 1 error, 2 usage or
invalid input, 3 refused / needs a human, 75 busy. Any other exception is a bug: one line, the
traceback kept in a file.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ocmem import INTERRUPTED
from ocmem.errors import Busy, InputError, OcmemError, Refused, from_os_error
from ocmem.outcome import Outcome, Status, terminal_safe


class Passthrough(Exception):
    """Raised by a caller of ``execute`` for an exit it already reported itself."""


EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NEEDS_HUMAN, EXIT_BUSY = 0, 1, 2, 3, 75
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports it
_STATUS_CODES = {
    Status.OK: EXIT_OK,
    Status.FAILED: EXIT_ERROR,
    Status.NEEDS_HUMAN: EXIT_NEEDS_HUMAN,
}
_ERROR_CODES: tuple[tuple[type[OcmemError], int], ...] = (
    (InputError, EXIT_USAGE),
    (Refused, EXIT_NEEDS_HUMAN),
    (Busy, EXIT_BUSY),
    (OcmemError, EXIT_ERROR),
)


def status_code(status: Status) -> int:
    """The exit code of a command that answered with ``status``."""
    return _STATUS_CODES[status]


def exit_code(error: OcmemError) -> int:
    return next(code for kind, code in _ERROR_CODES if isinstance(error, kind))


def _crash(exc: BaseException, debug: bool) -> str:
    """An exception ocmem did not expect: one line for the user, the traceback kept aside."""
    import tempfile
    import traceback

    details = "".join(traceback.format_exception(exc))
    try:
        # a new private file (a fixed name in a shared /tmp could be a planted symlink)
        fd, where = tempfile.mkstemp(prefix="ocmem-crash-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(details)
        kept = f"détails dans {where}"
    except OSError:
        kept = "relance avec --debug pour les détails"
    return (details if debug else "") + (
        f"ocmem : erreur inattendue ({type(exc).__name__}) ; {kept}. "
        "Rien n'est perdu : chaque écriture est atomique. C'est un bogue à signaler.\n"
    )


def execute(call: Callable[[], Outcome], debug: bool = False) -> tuple[int, str, str]:
    """Run ``call`` and map its outcome or error to ``(exit code, stdout, stderr)``, exactly as
    the command line does (the plugin's gate runs commands in-process through this)."""
    try:
        try:
            outcome = call()
        except OSError as exc:
            raise from_os_error(exc, action="d'accéder à") from exc
        out = terminal_safe(outcome.render()) + "\n" if outcome.lines else ""
        return status_code(outcome.status), out, ""
    except OcmemError as exc:
        return exit_code(exc), "", terminal_safe(f"ocmem : {exc.render()}") + "\n"
    except KeyboardInterrupt:  # what was running undid its own writes (Workspace.transaction)
        return EXIT_INTERRUPTED, "", f"{INTERRUPTED}\n"
    except Passthrough:
        raise
    except Exception as exc:
        return EXIT_ERROR, "", _crash(exc, debug)
