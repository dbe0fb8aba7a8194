"""Loaded only by ``scripts/test-clock-moved`` (on ``PYTHONPATH``), in every Python process of a
run under Debian's libfaketime 0.9.10 with ``FAKETIME_DONT_FAKE_MONOTONIC=1``. Two of its
limits, worked around here so that only the wall clock moves:

- ``clock_nanosleep`` on the monotonic clock fails (EINVAL) in that mode, and it is what
  ``time.sleep`` uses (without that mode, lock and event waits with a timeout never return):
  ``time.sleep`` waits in ``select``, which libfaketime leaves alone;
- its wrappers read the environment (``getenv``) from threads Python starts without holding its
  lock, while a test changes the environment in another (``monkeypatch.setenv``): glibc's
  ``setenv`` is not safe against that, and the process crashes now and then. So the C
  environment is never changed after start-up: ``os.environ`` changes only Python's copy, and a
  child process started without an explicit environment gets that copy.
"""

import os
import select
import subprocess
import time
from typing import Any

_monotonic = time.monotonic


def _sleep(seconds: float) -> None:
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    end = _monotonic() + seconds
    while (left := end - _monotonic()) > 0:
        select.select([], [], [], left)


def _keep_c_environment(*_args: object) -> None:
    """os.environ's hook into the C environment: left out (see above)."""


_popen_init = subprocess.Popen.__init__


def _popen_with_python_environment(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
    if kwargs.get("env") is None:
        kwargs["env"] = dict(os.environ)
    _popen_init(self, args, *rest, **kwargs)


setattr(time, "sleep", _sleep)  # noqa: B010  (typed assignments would need casts)
setattr(os, "putenv", _keep_c_environment)  # noqa: B010
setattr(os, "unsetenv", _keep_c_environment)  # noqa: B010
setattr(subprocess.Popen, "__init__", _popen_with_python_environment)  # noqa: B010
