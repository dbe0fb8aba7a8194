"""The sha256 of bytes and files: what the plugin's tamper monitor compares, and what the sync
state remembers of each file."""

from __future__ import annotations

import stat
from pathlib import Path

from ocmem.home.atomic import read_bytes, status


def sha256(data: bytes) -> str:
    import hashlib  # lazy: the hot path never hashes

    return hashlib.sha256(data).hexdigest()


def small_sha256(data: bytes) -> str:
    """The sha256 of a few kilobytes without loading OpenSSL: ``hashlib``'s import (~3.5 ms)
    would be most of what a journal append adds to Python's start-up. Python's own
    implementation is ``_sha2`` from 3.12, ``_sha256`` before."""
    import importlib

    for name in ("_sha2", "_sha256"):
        try:
            builtin = importlib.import_module(name)
        except ImportError:
            continue
        return str(builtin.sha256(data).hexdigest())
    return sha256(data)


def file_sha256(path: Path) -> str | None:
    """The digest of a file's bytes, or None when it is not a file (never through a link
    below the home: ocmem.home.atomic)."""
    found = status(path)
    if found is None or not stat.S_ISREG(found.st_mode):
        return None
    data = read_bytes(path)
    return None if data is None else sha256(data)
