"""The background encoder a command-line search starts: ``ocmem journal index --fond``, detached,
when entries are left without a sentence vector after the search's own small budget (the gate
encodes in its own thread; this is for a terminal with no OpenCode running)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocmem.home.workspace import Workspace
    from ocmem.services.journalsearch import JournalSearch

# what a command-line search spends encoding the newest entries before answering
SEARCH_ENCODE_SECONDS = 1.0


def encode_in_background(home: Path, lock: Path) -> Callable[[], None]:
    """A function that starts the background encoder for ``home``, unless one holds ``lock``."""

    def start() -> None:
        from ocmem.home.journalvectors import encoder_running

        if encoder_running(lock):
            return
        command = [sys.executable, "-m", "ocmem", "--home", str(home), "journal", "index", "--fond"]
        with contextlib.suppress(OSError):  # the next search tries again; the words answer
            subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # outlives this command, and a ^C of it
                close_fds=True,
            )

    return start


def searching_memory(workspace: Workspace, agent: bool) -> JournalSearch:
    """The memory a command-line search runs on: it encodes the newest entries without a vector
    for ``SEARCH_ENCODE_SECONDS``, and leaves the rest to the background encoder."""
    from ocmem.services.journalsearch import JournalSearch

    paths = workspace.paths
    return JournalSearch(
        workspace,
        agent=agent,
        encode_budget=SEARCH_ENCODE_SECONDS,
        encode_later=encode_in_background(paths.home, paths.journal_encoding_lock),
    )
