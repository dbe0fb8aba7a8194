"""Entry point of the ``ocmem`` command: the one place where outcomes and errors become messages
and exit codes.

Exit codes: 0 ok, 1 error, 2 usage or invalid input, 3 refused / needs a human, 75 busy.
Nothing reaches the user as a Python traceback: an unexpected exception prints one line that says
where the details were logged (``--debug`` or ``OCMEM_DEBUG=1`` prints the traceback instead).

The two machine-facing commands that take a JSON object on stdin — ``journal add`` (the
retrospective without the plugin) and ``tool NAME`` (a memory tool run outside the plugin's gate,
``ocmem.bridge.gate``) — and the two journal readers in their plain form (``journal search
WORDS…``, no word starting with ``-``; ``journal recent``) run without importing click: they have
no options to parse, and the click import alone costs about twice Python's own start-up.
Everything else (an option, ``--help``, a usage error) goes through ``ocmem.cli.commands``.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the interpreter's own: no signal.py, no enum
import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from ocmem import INTERRUPTED, quiet_interrupt
from ocmem.clock import Clock
from ocmem.errors import FULL, InputError, OcmemError
from ocmem.execution import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE, Passthrough, execute
from ocmem.outcome import Outcome, terminal_safe

if TYPE_CHECKING:
    from ocmem.progress import Progress


def _fast_path(args: list[str], clock: Clock, progress: Progress | None) -> Outcome | None:
    """Run ``[--home H] [--wait S] (journal add | tool NAME | journal search WORDS… | journal
    recent) [--wait S]``; None for anything else (click then parses it, and explains any usage
    error)."""
    home: Path | None = None
    wait: float | None = None
    rest = list(args)
    while len(rest) >= 2 and rest[0] in ("--home", "--wait"):
        option, value = rest.pop(0), rest.pop(0)
        if option == "--home":
            home = Path(value)
        elif (wait := _seconds(value)) is None:
            return None
    if len(rest) == 4 and rest[2] == "--wait":
        if (wait := _seconds(rest.pop())) is None:
            return None
        rest.pop()
    reading = rest == ["journal", "recent"] or (
        rest[:2] == ["journal", "search"] and not any(w.startswith("-") for w in rest[2:])
    )
    if rest != ["journal", "add"] and not (len(rest) == 2 and rest[0] == "tool") and not reading:
        return None
    from ocmem.bridge.agentproc import refuse_agent
    from ocmem.cli.stdin import read_json
    from ocmem.home.runlock import DEFAULT_WAIT_SECONDS
    from ocmem.home.workspace import open_workspace

    workspace = open_workspace(
        home,
        wait_seconds=DEFAULT_WAIT_SECONDS if wait is None else wait,
        clock=clock,
        notify=progress.say
        if progress is not None
        else lambda message: _emit(sys.stderr, f"ocmem : {message}\n"),
        waiting=progress.waiting if progress is not None else None,
    )
    if reading:
        from ocmem.bridge.agentproc import agent_reason
        from ocmem.cli.encoding import searching_memory
        from ocmem.formats.operations import RECENT_MAX

        memory = searching_memory(workspace, agent_reason(workspace.paths) is not None)
        if rest[1] == "recent":
            return memory.recent_journal(RECENT_MAX)
        return memory.search_journal(" ".join(rest[2:]))
    refuse_agent(workspace.paths, " ".join(rest))
    if rest[0] == "journal":
        from ocmem.services.memory import Memory

        return Memory(workspace).add_journal(read_json("journal add"))
    from ocmem.bridge.tools import run_tool

    return run_tool(workspace, rest[1], read_json(f"tool {rest[1]}"))


def _seconds(value: str) -> float | None:
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _run_cli(args: list[str], clock: Clock, progress: Progress | None) -> Outcome:
    import click

    from ocmem.cli.commands import Context, cli

    try:
        result = cli.main(
            args=args, prog_name="ocmem", standalone_mode=False, obj=Context(clock, progress)
        )
    except click.exceptions.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):
            raise KeyboardInterrupt from None  # Ctrl-C, answered as everywhere (``execute``)
        raise OcmemError("interrompu", fix="relance la commande") from None
    except click.exceptions.NoArgsIsHelpError as exc:
        _emit(sys.stdout, exc.format_message() + "\n")  # `ocmem` alone: its help
        raise _Handled(EXIT_USAGE) from None
    except click.ClickException as exc:
        if isinstance(exc, click.exceptions.NoSuchOption):
            from ocmem.cli.options import shown_suggestions

            shown_suggestions(exc)
        context = getattr(exc, "ctx", None)
        command = context.command_path if context is not None else "ocmem"
        raise InputError(
            exc.format_message().rstrip("."), fix=f"`{command} --help` montre l'usage"
        ) from None
    # --help and --version print and return nothing.
    return result if isinstance(result, Outcome) else Outcome()


class _Handled(Passthrough):
    """Click already told the user; only the exit code is left."""

    def __init__(self, code: int):
        self.code = code


def _emit(stream: TextIO, text: str) -> None:
    """Write ``text`` as a terminal can show it without running anything: control characters
    (ESC, OSC, CSI… but tab and newline) as ``\\uXXXX``, whatever file they were read from; in
    JSON output that is the same string. A stream that cannot encode a character gets an
    escape instead of an exception."""
    safe = terminal_safe(text)
    try:
        stream.write(safe)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "utf-8"
        stream.write(safe.encode(encoding, "backslashreplace").decode(encoding))


def _progress(clock: Clock) -> Progress | None:
    """The progress line of long waits, when stderr is a terminal (ocmem.progress); None for
    cron, scripts and tests, which parse what ocmem prints."""
    try:
        if not sys.stderr.isatty():
            return None
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return None
    import shutil

    from ocmem.progress import Progress

    return Progress(sys.stderr, clock, columns=shutil.get_terminal_size().columns)


def _undecodable(args: list[str]) -> str | None:
    """An argument that was not valid UTF-8 on the command line (Python keeps it as surrogates)."""
    return next((a for a in args if any("\udc80" <= c <= "\udcff" for c in a)), None)


def main(argv: list[str] | None = None, clock: Clock | None = None) -> NoReturn:
    """``clock``: the process's one clock (tests give theirs; ocmem.clock)."""
    # Ctrl-C: quiet while starting and printing (ocmem.quiet_interrupt, set by the command line's
    # first module); while the command runs it raises, so a run undoes what it started, and
    # ``execute`` answers it in one line (exit 130). A program that imports ocmem keeps its own.
    ours = _signal.getsignal(_signal.SIGINT) is quiet_interrupt
    try:
        code = _main(argv, clock, ours)
    except KeyboardInterrupt:
        _silence(sys.stdout)
        sys.stderr.write(f"{INTERRUPTED}\n")
        code = EXIT_INTERRUPTED
    if ours:  # the command line's own process: done, without Python's finalization, when
        # SIGINT is back to the system's default (a late Ctrl-C would end it without a word)
        _signal.signal(_signal.SIGINT, quiet_interrupt)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                _silence(stream)
        os._exit(code)
    sys.exit(code)


def _main(argv: list[str] | None, clock: Clock | None, ours: bool) -> int:
    clock = Clock() if clock is None else clock
    args = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("OCMEM_DEBUG", "") not in ("", "0")
    if args[:1] == ["--debug"]:
        debug, args = True, args[1:]
    progress = _progress(clock)

    def run() -> Outcome:
        bad = _undecodable(args)
        if bad is not None:
            raise InputError(
                f"argument non UTF-8 : {bad.encode('utf-8', 'replace').decode('utf-8')!r}",
                fix="passe le texte en UTF-8 (ou en JSON sur l'entrée standard)",
            )
        outcome = _fast_path(args, clock, progress)
        return _run_cli(args, clock, progress) if outcome is None else outcome

    try:
        if ours:
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        try:
            code, out, err = execute(run, debug)
        finally:
            if ours:
                _signal.signal(_signal.SIGINT, quiet_interrupt)
            if progress is not None:
                progress.close()  # its line erased before what the command says
    except _Handled as handled:
        return handled.code
    return _deliver(code, out, err)


def _deliver(code: int, out: str, err: str) -> int:
    """Print what the command says; when its answer cannot be written (a full disk, a reader
    gone), say so — the command did what it did — and exit non-zero, never a traceback."""
    try:
        _emit(sys.stdout, out)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence(sys.stdout)
        return EXIT_ERROR  # the reader went away (`ocmem … | head`): nothing to say
    except OSError as exc:
        _silence(sys.stdout)
        first = out.strip().splitlines()[0] if out.strip() else ""
        done = (
            f"la commande a abouti (« {first} »)"
            if code == 0 and first
            else "la commande a abouti"
            if code == 0
            else f"la commande s'est terminée (code {code})"
        )
        reason = "disque plein" if exc.errno in FULL else (exc.strerror or str(exc))
        err = (
            f"ocmem : {done}, mais sa réponse n'a pas pu être écrite sur la sortie standard "
            f"({reason})\nCorrection : envoie la sortie vers un fichier ou un disque qui a de la "
            "place ; inutile de relancer la commande pour ce qu'elle a fait\n" + err
        )
        code = EXIT_ERROR
    _emit(sys.stderr, err)
    return code


def _silence(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at /dev/null: what its buffer still holds goes nowhere,
    instead of failing again when Python flushes it at exit."""
    from ocmem.home.atomic import open_file

    try:
        fd = open_file(Path(os.devnull), os.O_WRONLY)
        os.dup2(fd, stream.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass  # not a file (a test's capture): nothing flushes it at exit
