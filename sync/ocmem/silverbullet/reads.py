"""Reads of a SilverBullet page that a decision can rest on.

SilverBullet truncates a page before writing it, so a read during a save can answer an empty (or
short) page under its previous metadata, looking perfectly consistent. A read that misses what the
caller knows the page holds is therefore confirmed by an identical read ``quiet`` seconds later
before anything — a merge, a deletion, a human's decision — is decided from it.
"""

from __future__ import annotations

from collections.abc import Callable

from ocmem.clock import Clock
from ocmem.errors import Refused
from ocmem.silverbullet.client import Read, SilverBullet

# An existing page read empty is what a save in progress looks like; a human emptying a whole
# page is rare, so that reading is confirmed over a span longer than any save (sb §10: the
# truncated state lasts well under 10 ms; 1 s leaves room for a slow disk).
EMPTY_CONFIRM_SECONDS = 1.0


def text_of(name: str, read: Read | None) -> str | None:
    if read is None:
        return None
    try:
        return read.body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(
            f"{name} n'est pas du texte UTF-8", fix="corrige la page dans SilverBullet"
        ) from exc


def trusted_read(
    clock: Clock,
    client: SilverBullet,
    name: str,
    suspicious: Callable[[str | None], bool],
    quiet: float,
    deadline: float,
    on_timeout: Callable[[], Exception],
) -> tuple[Read | None, str | None, float]:
    """A read to decide from, its text, and when it was made (``clock.monotonic()``).

    While ``suspicious(text)``, read again after ``quiet`` seconds: two identical reads in a row
    are the page as it is. Past ``deadline`` (the page never settled), ``on_timeout()`` is raised.
    """
    read = client.read(name)
    at = clock.monotonic()
    text = text_of(name, read)
    while suspicious(text):
        if clock.monotonic() > deadline:
            raise on_timeout()
        clock.sleep(max(quiet, EMPTY_CONFIRM_SECONDS) if text == "" else quiet)
        again = client.read(name)
        if again == read:
            break  # stable: what is missing is really gone
        read, text, at = again, text_of(name, again), clock.monotonic()
    return read, text, at
