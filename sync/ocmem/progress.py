"""What a long wait looks like on a terminal: one line once it has been silent for a second.

The library never prints: around each wait (an HTTP request to SilverBullet, retries included;
the run lock held by another run) it enters ``waiting(what)``, a ``Waiting`` it was handed, or
``not_said`` when none was. The command line makes a ``Progress`` only when stderr is a terminal
(cron, scripts and tests parse the output: they get nothing) and hands its ``waiting`` down.

``Progress`` shows « … en attente de SilverBullet (https://…) depuis 3 s » on one line of
stderr, rewritten in place at most every ``every`` seconds, once the oldest wait under way has
lasted ``silence`` seconds with nothing else said; the line is erased when the waits are over
(or before anything else is said). Waits for the same thing a moment apart (a pull's many
reads, a push reading a page again until it is quiet) count as one: a wait that starts within
``linger`` seconds of the end of the previous one keeps its start. A ticker thread, started at
the first wait, looks at the clock every ``tick`` seconds; tests call ``tick()`` themselves,
with their own clock and stream.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import TextIO

from ocmem.clock import Clock
from ocmem.outcome import terminal_safe

Waiting = Callable[[str], AbstractContextManager[object]]


def not_said(what: str) -> AbstractContextManager[object]:
    """The ``Waiting`` of a run nobody watches: nothing."""
    return contextlib.nullcontext()


class _Wait:
    __slots__ = ("ended", "running", "started")

    def __init__(self, started: float):
        self.started = started
        self.running = 0  # waits for this under way (a pull reads in several threads)
        self.ended = started


class Progress:
    def __init__(
        self,
        stream: TextIO,
        clock: Clock,
        *,
        silence: float = 1.0,
        every: float = 2.0,
        linger: float = 2.0,
        tick: float = 0.2,
        columns: int = 80,
        ticker: bool = True,
    ):
        self.stream = stream
        self.clock = clock
        self.silence, self.every, self.linger, self.interval = silence, every, linger, tick
        self.columns = max(columns, 20)
        self._ticker = ticker
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._waits: dict[str, _Wait] = {}
        self._said_at = float("-inf")  # when something was last said (silence starts again)
        self._shown = ""  # the line on screen, "" when none
        self._shown_at = 0.0
        self._shown_what = ""

    @classmethod
    def on_terminal(cls, stream: TextIO, clock: Clock) -> Progress | None:
        """A Progress on ``stream`` when it is a terminal; None otherwise (nothing is said)."""
        try:
            if not stream.isatty():
                return None
        except (AttributeError, ValueError):  # no isatty, or closed
            return None
        return cls(stream, clock, columns=shutil.get_terminal_size().columns)

    @contextlib.contextmanager
    def waiting(self, what: str) -> Iterator[None]:
        """A ``Waiting``: the run waits for ``what`` (« en attente de … ») while inside."""
        now = self.clock.monotonic()
        with self._lock:
            wait = self._waits.get(what)
            if wait is None or (not wait.running and now - wait.ended > self.linger):
                wait = self._waits[what] = _Wait(now)
            wait.running += 1
            self._start_ticker()
        try:
            yield
        finally:
            with self._lock:
                wait.running -= 1
                wait.ended = self.clock.monotonic()

    def say(self, message: str) -> None:
        """A line of its own (``ocmem : …``, as the CLI's notices), the progress line erased
        first; the silence starts again."""
        with self._lock:
            self._erase()
            self._write(f"ocmem : {terminal_safe(message)}\n")
            self._said_at = self.clock.monotonic()

    def tick(self) -> None:
        """One look at the clock: the line shown, refreshed or erased as the waits say."""
        now = self.clock.monotonic()
        with self._lock:
            for what, wait in list(self._waits.items()):
                if not wait.running and now - wait.ended > self.linger:
                    del self._waits[what]
            if not self._waits:
                self._erase()
                return
            what, wait = min(self._waits.items(), key=lambda item: item[1].started)
            if self._shown:
                if what == self._shown_what and now - self._shown_at < self.every:
                    return
            elif now - max(wait.started, self._said_at) < self.silence:
                return
            self._show(what, f" depuis {int(now - wait.started)} s", now)

    def close(self) -> None:
        """The ticker stopped and the line erased: what the command prints comes next."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=1.0)
        with self._lock:
            self._erase()

    # --- the line ----------------------------------------------------------------------------

    def _start_ticker(self) -> None:
        if not self._ticker or self._thread is not None or self._stop.is_set():
            return
        self._thread = threading.Thread(target=self._run, name="ocmem-progress", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.tick()
            except (OSError, ValueError):  # the terminal went away: nothing more to say
                return

    def _show(self, what: str, since: str, now: float) -> None:
        text = terminal_safe(f"… {what}")
        room = self.columns - 1 - len(since)  # a wrapped line could not be rewritten in place
        if len(text) > room:
            text = text[: room - 1] + "…"
        line = text + since
        padding = " " * max(len(self._shown) - len(line), 0)  # what a longer line left
        self._write(f"\r{line}{padding}")
        self._shown, self._shown_at, self._shown_what = line + padding, now, what

    def _erase(self) -> None:
        if self._shown:
            self._write("\r" + " " * len(self._shown) + "\r")
            self._shown = self._shown_what = ""

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
