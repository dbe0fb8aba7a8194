"""Text hidden in base64: a run that decodes to readable text is read again by the guards.

``echo ghp_… | base64``, a private key pasted as one base64 line (``LS0tLS1CRUdJTi…``), a
Kubernetes secret's ``data:`` value: the guards look at what such a run says, not only at its
letters. A run is decoded when it has at least 24 characters of the standard or the URL-safe
alphabet (18 bytes: the shortest secret worth hiding this way is longer), with upper and lower
case letters (base64 of text always has both; paths, words and hexadecimal digests seldom do).
Its decoding is kept when it is UTF-8 text made of printable characters, or when it is an
OpenSSH private key's binary body (``openssh-key-v1``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_RUN = r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/=_-])"
OPENSSH_BODY = b"openssh-key-v1\x00"
OPENSSH_HEADER = "-----BEGIN OPENSSH PRIVATE KEY-----"


def decoded_runs(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, decoded text) of every base64 run of ``text`` that decodes to text."""
    if all(len(word) < 24 for word in text.split()):  # no run, no regex to compile
        return
    for match in re.finditer(_RUN, text):
        run = match.group(0).rstrip("=")
        if len(run) % 4 == 1 or run.islower() or run.isupper():
            continue
        data = _decode(run)
        if data.startswith(OPENSSH_BODY):
            yield match.start(), match.end(), OPENSSH_HEADER
            continue
        try:
            decoded = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if decoded and all(c.isprintable() or c in "\n\r\t" for c in decoded):
            yield match.start(), match.end(), decoded


def _decode(run: str) -> bytes:
    import base64
    import binascii

    padded = run + "=" * (-len(run) % 4)
    urlsafe = "-" in run or "_" in run
    try:
        if urlsafe:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return b""
