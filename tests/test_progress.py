"""Long waits on a terminal: a progress line after a second of silence, nothing off a terminal;
and a SilverBullet that accepts connections but never answers fails in about its timeout."""

from __future__ import annotations

import contextlib
import io
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from conftest import Clock, configure_sync
from ocmem.errors import Busy, OcmemError
from ocmem.home.paths import Paths
from ocmem.home.runlock import run_lock
from ocmem.home.settings import load_settings
from ocmem.home.space import load_sync_config
from ocmem.progress import Progress
from ocmem.silverbullet.client import SilverBullet
from support.faultenv import lock_held

URL = "http://sb.example:3000"
SB = f"en attente de SilverBullet ({URL})"


class Ticking(Clock):
    """The test's clock, with a monotonic time the test moves (and sleeps that move it)."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 100.0
        self.on_sleep: Callable[[], None] = lambda: None

    def monotonic(self) -> float:
        return self.seconds

    def sleep(self, seconds: float) -> None:
        self.seconds += seconds
        self.on_sleep()


class Screen(io.StringIO):
    """A terminal's stderr: what a person would see, "\\r" rewriting the line in place."""

    def isatty(self) -> bool:
        return True

    def seen(self) -> list[str]:
        lines = []
        for line in self.getvalue().split("\n"):
            shown = ""
            for part in line.split("\r"):
                shown = part + shown[len(part) :]
            lines.append(shown.rstrip())
        return lines


@pytest.fixture
def clock() -> Ticking:
    return Ticking()


@pytest.fixture
def screen() -> Screen:
    return Screen()


@pytest.fixture
def progress(clock: Ticking, screen: Screen) -> Progress:
    return Progress(screen, clock, ticker=False)


def at(clock: Ticking, progress: Progress, seconds: float) -> None:
    clock.seconds = 100.0 + seconds
    progress.tick()


def test_nothing_is_said_in_the_first_second(
    clock: Ticking, screen: Screen, progress: Progress
) -> None:
    with progress.waiting(SB):
        at(clock, progress, 0.5)
        at(clock, progress, 0.99)
    at(clock, progress, 5)
    progress.close()
    assert screen.getvalue() == ""


def test_a_silent_wait_shows_one_line_updated_every_two_seconds_then_erased(
    clock: Ticking, screen: Screen, progress: Progress
) -> None:
    with progress.waiting(SB):
        at(clock, progress, 1.0)
        assert screen.seen() == [f"… {SB} depuis 1 s"]
        at(clock, progress, 2.5)
        assert screen.seen() == [f"… {SB} depuis 1 s"]  # at most every 2 s
        at(clock, progress, 3.2)
        assert screen.seen() == [f"… {SB} depuis 3 s"]
        assert "\n" not in screen.getvalue()  # rewritten in place, never scrolled
    at(clock, progress, 4.0)
    assert screen.seen() == [f"… {SB} depuis 3 s"]  # a next request may follow at once
    at(clock, progress, 5.5)
    assert screen.seen() == [""]  # none came: erased
    progress.close()
    assert screen.seen() == [""]


def test_requests_close_together_count_as_one_wait(
    clock: Ticking, screen: Screen, progress: Progress
) -> None:
    """A pull's many quick reads, a push reading a page until it is quiet: one long wait."""
    for step in range(12):
        clock.seconds = 100.0 + step * 0.4
        with progress.waiting(SB):
            clock.seconds += 0.1
        progress.tick()
    assert screen.seen() == [f"… {SB} depuis 3 s"]
    progress.close()
    assert screen.seen() == [""]


def test_the_oldest_wait_is_shown_and_a_notice_starts_the_silence_again(
    clock: Ticking, screen: Screen, progress: Progress
) -> None:
    lock = "en attente du verrou d'ocmem"
    with progress.waiting(lock):
        at(clock, progress, 0.5)
        with progress.waiting(SB):
            progress.say("une autre exécution d'ocmem tient le verrou : j'attends…")
            at(clock, progress, 1.2)
            assert screen.seen() == [
                "ocmem : une autre exécution d'ocmem tient le verrou : j'attends…",
                "",
            ]
            at(clock, progress, 1.6)
            assert screen.seen()[-1] == f"… {lock} depuis 1 s"
            progress.say("deuxième avis")
    assert screen.seen()[-2:] == ["ocmem : deuxième avis", ""]  # the line erased before it


def test_a_long_line_is_cut_to_the_terminal(clock: Ticking, screen: Screen) -> None:
    progress = Progress(screen, clock, ticker=False, columns=40)
    with progress.waiting("en attente de SilverBullet (https://" + "x" * 80 + ")"):
        at(clock, progress, 1)
    assert len(screen.seen()[0]) == 39 and screen.seen()[0].endswith("… depuis 1 s")


def test_the_lock_wait_is_said_while_it_lasts(
    home: Path, clock: Ticking, screen: Screen, progress: Progress
) -> None:
    paths = Paths(home)
    clock.on_sleep = progress.tick
    with (
        lock_held(paths.lock_file),
        pytest.raises(Busy),
        run_lock(paths, clock, wait_seconds=4, notify=progress.say, waiting=progress.waiting),
    ):
        pass
    what = "… en attente d'une autre exécution d'ocmem (verrou, au plus 4 s)"
    assert screen.getvalue().startswith(f"\r{what} depuis 1 s\r{what} depuis 3 s")
    assert "\n" not in screen.getvalue()  # the line says it: no notice besides
    progress.close()
    assert screen.seen() == [""]  # erased: the refusal comes next


def test_an_uncontended_lock_says_nothing_and_starts_no_thread(home: Path, screen: Screen) -> None:
    progress = Progress(screen, Clock())
    with run_lock(Paths(home), Clock(), wait_seconds=4, waiting=progress.waiting):
        pass
    progress.close()
    assert screen.getvalue() == "" and not any(
        t.name == "ocmem-progress" for t in threading.enumerate()
    )


# --- a SilverBullet that accepts connections and never answers ---------------------------------


@pytest.fixture
def mute_server() -> Iterator[str]:
    """A loopback socket that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


class Recorder:
    def __init__(self) -> None:
        self.said: list[str] = []

    def __call__(self, what: str) -> AbstractContextManager[object]:
        self.said.append(what)
        return contextlib.nullcontext()


def test_a_server_that_never_answers_fails_once_within_its_timeout(
    home: Path, mute_server: str
) -> None:
    configure_sync(home, mute_server, timeout_seconds=0.5, retry_wait_seconds=0.2)
    said = Recorder()
    started = time.monotonic()
    config = load_sync_config(load_settings(home))
    with SilverBullet(config, waiting=said) as client, pytest.raises(OcmemError) as error:
        client.list()
    elapsed = time.monotonic() - started
    assert client.requests_sent == 1 and elapsed < 1.5  # asked once: not 4 × the timeout
    assert error.value.render().splitlines() == [
        f"SilverBullet ({mute_server}) n'a pas répondu en 0.5 s : la connexion est acceptée, "
        "mais aucune réponse ne vient",
        f"Correction : vérifie que SilverBullet tourne et répond à {mute_server} (ouvre-la dans "
        "un navigateur) et qu'aucun proxy ne bloque ; s'il est seulement lent, augmente "
        "`silverbullet.timeout_seconds` dans ocmem.yaml (actuellement 0.5)",
    ]
    assert said.said == [f"en attente de SilverBullet ({mute_server})"]


def test_retries_stop_once_the_timeout_has_gone_by(home: Path) -> None:
    """Connection refused is retried, but never for longer than ``timeout_seconds`` in all."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    configure_sync(home, f"http://127.0.0.1:{port}", timeout_seconds=0.3, retry_wait_seconds=0.25)
    started = time.monotonic()
    config = load_sync_config(load_settings(home))
    with (
        SilverBullet(config) as client,
        pytest.raises(OcmemError, match=f"injoignable à http://127.0.0.1:{port}"),
    ):
        client.list()
    assert client.requests_sent < 4 and time.monotonic() - started < 1.5


def run_pull(monkeypatch: pytest.MonkeyPatch, stderr: io.StringIO, clock: Clock) -> tuple[int, str]:
    from ocmem.cli.entry import main

    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    with pytest.raises(SystemExit) as exit_info:
        main(["pull"], clock)
    return int(exit_info.value.code or 0), stderr.getvalue()


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "not a terminal"])
def test_pull_against_a_mute_server_shows_progress_only_on_a_terminal(
    home: Path, mute_server: str, monkeypatch: pytest.MonkeyPatch, terminal: bool
) -> None:
    configure_sync(home, mute_server, token=None, timeout_seconds=1.5)
    stderr = Screen() if terminal else io.StringIO()
    code, said = run_pull(monkeypatch, stderr, Clock())
    assert code == 1
    error = [
        f"ocmem : SilverBullet ({mute_server}) n'a pas répondu en 1.5 s : la connexion est "
        "acceptée, mais aucune réponse ne vient",
        f"Correction : vérifie que SilverBullet tourne et répond à {mute_server} (ouvre-la dans "
        "un navigateur) et qu'aucun proxy ne bloque ; s'il est seulement lent, augmente "
        "`silverbullet.timeout_seconds` dans ocmem.yaml (actuellement 1.5)",
    ]
    if not terminal:
        assert said.splitlines() == error  # cron and scripts: the error, nothing else
        return
    assert f"\r… en attente de SilverBullet ({mute_server}) depuis 1 s" in said
    assert isinstance(stderr, Screen) and stderr.seen() == [*error, ""]  # the line erased first
    assert not any(t.name == "ocmem-progress" for t in threading.enumerate())
