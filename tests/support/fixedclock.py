"""``ocmem`` in a child process, on the test's clock: ``python tests/support/fixedclock.py ARGS``
with ``OCMEM_TEST_NOW`` (ISO time) runs ``ocmem ARGS`` on a clock that stays at that moment, so
a test can kill it where it wants (``OCMEM_TEST_EXIT_AFTER_RENAME=N``, read by
``ocmem.home.atomic``; or ``OCMEM_TEST_EXIT_AFTER_REPLACING=<path in the home>``: right after
the rename that puts that file in place, whatever the version of ocmem) and compare its dates."""

from __future__ import annotations

import os
import sys
from datetime import datetime
from typing import Any

from ocmem.clock import Clock


class FixedClock(Clock):
    def __init__(self, at: datetime):
        self.at = at

    def now(self) -> datetime:
        return self.at


def _exit_after_replacing(rel: str) -> None:
    """Exit right after the rename that puts the home's ``rel`` in place (not a backup copy)."""
    real = os.replace
    home = os.path.realpath(os.environ["OCMEM_HOME"])

    def replace(source: Any, target: Any, **where: Any) -> None:
        real(source, target, **where)
        folder = where.get("dst_dir_fd")
        full = os.fsdecode(target)
        if folder is not None:  # the rename of a no-link walk: its folder, by its descriptor
            full = os.path.join(os.readlink(f"/proc/self/fd/{folder}"), full)
        if os.path.realpath(full) == os.path.join(home, rel):
            os._exit(137)

    os.replace = replace  # type: ignore[assignment]


if os.environ.get("OCMEM_TEST_EXIT_AFTER_REPLACING"):
    _exit_after_replacing(os.environ["OCMEM_TEST_EXIT_AFTER_REPLACING"])

from ocmem.cli.entry import main  # noqa: E402  (after the hook: atomic's os.replace is the module's)

main(sys.argv[1:], FixedClock(datetime.fromisoformat(os.environ["OCMEM_TEST_NOW"])))
