"""The one clock: every date and time ocmem writes, compares or waits for comes from here.

A ``Clock`` gives the wall-clock time in two forms (local, as the user's files show it: journal
headers, expiry dates, archive months, backup folders; UTC, in ocmem's own records: logs, session
records, the writes journal) and the monotonic time and sleep that waits are measured with. The
command line and the gate make one ``Clock()`` per process and hand it down (``Workspace.clock``);
tests hand their own (a clock they move by hand), so no result depends on the day a test runs.

Nothing here compares a file's timestamp with the clock: the kernel stamps files with its own
time, which a test's clock (or a machine's skewed one) does not move. What ocmem needs to know
about *when* is written into its files by this clock.
"""

# No `from __future__ import annotations`: on the path of every command (see ocmem.home.settings).

import time
from datetime import date, datetime, timezone


class Clock:
    """The machine's clock. Subclasses (tests) override ``now``, and ``monotonic`` and ``sleep``
    when they drive waits too."""

    def now(self) -> datetime:
        """Local time, naive (what the user reads in their files)."""
        return datetime.now()

    def today(self) -> date:
        return self.now().date()

    def utc(self) -> datetime:
        """The same instant, timezone-aware in UTC (ocmem's records)."""
        return self.now().astimezone(timezone.utc)

    def timestamp(self) -> float:
        """Seconds since the epoch."""
        return self.now().timestamp()

    def stamp(self, timespec: str = "milliseconds") -> str:
        """``2026-11-29T10:00:00.000+00:00``: a record's time."""
        return self.utc().isoformat(timespec=timespec)

    def monotonic(self) -> float:
        """Seconds on a clock that only moves forward: what waits and deadlines use."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def parse_stamp(text: object) -> float | None:
    """Seconds since the epoch of a record's time (``Clock.stamp``), None when it is not one."""
    try:
        return datetime.fromisoformat(str(text)).timestamp()
    except ValueError:
        return None
