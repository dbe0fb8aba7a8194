"""Loaded only by ``scripts/test-clock-moved`` (on ``PYTHONPATH``), in every Python process of a
run under libfaketime with ``FAKETIME_DONT_FAKE_MONOTONIC=1``.

Debian's libfaketime 0.9.10 fails ``clock_nanosleep`` on the monotonic clock in that mode
(EINVAL), which is what ``time.sleep`` uses; without that mode, lock and event waits with a
timeout never return. So the monotonic clock stays real and ``time.sleep`` waits in ``select``,
which libfaketime leaves alone: only the wall clock moves, which is what the run is about.
"""

import select
import time

_monotonic = time.monotonic


def _sleep(seconds: float) -> None:
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    end = _monotonic() + seconds
    while (left := end - _monotonic()) > 0:
        select.select([], [], [], left)


setattr(time, "sleep", _sleep)  # noqa: B010  (a typed assignment would need a cast)
