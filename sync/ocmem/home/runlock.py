"""ocmem's single run lock: one run at a time on a home, whatever started it."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ocmem.clock import Clock
from ocmem.errors import DENIED, Busy
from ocmem.home.announce import trim_writes
from ocmem.home.atomic import open_file
from ocmem.home.diskerrors import storage_error
from ocmem.home.paths import Paths

if TYPE_CHECKING:
    from ocmem.progress import Waiting

# How long a direct command waits for another ocmem run, and when it says it is waiting.
DEFAULT_WAIT_SECONDS = 10.0
WAIT_NOTICE_SECONDS = 1.0


@contextlib.contextmanager
def run_lock(
    paths: Paths,
    clock: Clock,
    wait_seconds: float = 0.0,
    notify: Callable[[str], None] | None = None,
    waiting: Waiting | None = None,
) -> Iterator[None]:
    """Hold ocmem's single lock for a whole run; Busy (exit 75) when another run keeps it
    beyond ``wait_seconds``. ``waiting`` (ocmem.progress: a terminal's progress line) is
    entered for as long as we wait; without it, ``notify`` hears once, after
    WAIT_NOTICE_SECONDS, that we wait.

    An flock on a dedicated file (never on a data file, which os.replace swaps): the kernel
    releases it when the process dies, so a crashed run never leaves a stale lock behind.
    """
    import fcntl

    try:
        fd = open_file(paths.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        # flock needs no write access: on a read-only home the run goes on, and fails (if it
        # must write) on the file it needs, which says more than the lock would.
        if exc.errno not in (*DENIED, errno.EROFS) or not paths.lock_file.is_file():
            raise storage_error(exc, paths, action="de créer le verrou", changed=False) from exc
        try:
            fd = open_file(paths.lock_file, os.O_RDONLY)
        except OSError as again:
            raise storage_error(again, paths, action="d'ouvrir le verrou", changed=False) from exc
    try:
        started = clock.monotonic()
        deadline = started + max(wait_seconds, 0.0)
        told = False
        with contextlib.ExitStack() as said:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if waiting is not None and wait_seconds > 0:
                        # entered at the first refusal only: an uncontended run says nothing;
                        # the progress line says we wait, so the notice is not needed
                        said.enter_context(
                            waiting(
                                "en attente d'une autre exécution d'ocmem "
                                f"(verrou, au plus {wait_seconds:.0f} s)"
                            )
                        )
                        waiting, told = None, True
                    now = clock.monotonic()
                    if now >= deadline:
                        waited = f" (attendu {now - started:.0f} s)" if wait_seconds >= 1 else ""
                        raise Busy(
                            f"une autre exécution d'ocmem tient le verrou{waited} : rien n'a été modifié",
                            fix="relance dans un moment, ou attends plus longtemps avec --wait SECONDES",
                        ) from None
                    if notify and not told and now - started >= WAIT_NOTICE_SECONDS:
                        notify(
                            f"une autre exécution d'ocmem tient le verrou : j'attends "
                            f"(jusqu'à {wait_seconds:.0f} s)…"
                        )
                        told = True
                    clock.sleep(0.05)
        trim_writes(paths)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
