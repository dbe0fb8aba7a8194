"""The tests that set the hardened mode up share two real Unix users (``ocmem-e2e``,
``ocmem-e2e-agent``) and their one sudoers file, machine-wide: a test marked ``shared_users``
holds an exclusive lock on them for its whole run (tests/conftest.py), so two pytest-xdist
workers, or two runs of the suite at once, never set them up at the same time."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SHARED_USERS = pytest.mark.shared_users
LOCK = Path(tempfile.gettempdir()) / "ocmem-tests-shared-users.lock"


@contextmanager
def held() -> Iterator[None]:
    """The users to this test alone. Only root sets them up (the tests skip otherwise): only
    root takes the lock."""
    if os.geteuid() != 0:
        yield
        return
    fd = os.open(LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
