"""ocmem: long-term memory for the OpenCode agent.

The library never imports click; ``ocmem.cli.commands`` is the only command-line boundary.
"""

import sys as _sys

__version__ = "0.1.0"

INTERRUPTED = "ocmem : interrompu (Ctrl-C)"


def quiet_interrupt(signum: int, frame: object) -> None:
    """Ctrl-C while the command line starts or prints: one short line, exit 130, never a
    traceback. (While the command itself runs, ``ocmem.cli.entry.main`` lets Ctrl-C raise, so
    that a run undoes what it started.)"""
    import os

    os.write(2, f"{INTERRUPTED}\n".encode())
    os._exit(130)


# The command line (the `ocmem` script, `python -m ocmem`): from its very first module on, not
# when a program (a test) imports ocmem as a library. `_signal` is the interpreter's own.
if _sys.argv[:1] == ["-m"] or _sys.argv[0].rsplit("/", 1)[-1] == "ocmem":
    import _signal  # type: ignore[import-not-found]  # the interpreter's own: no signal.py, no enum

    _signal.signal(_signal.SIGINT, quiet_interrupt)
