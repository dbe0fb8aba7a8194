"""What ocmem last saw of the SilverBullet space, per file (``<home>/.ocmem/sync-state.json``).

Pull records, per remote file, the validated (lastModified, size) and the sha256 of the bytes it
installed, so a no-op pull is one listing and a hand-edited local copy is noticed. Push records,
per page, the digest of every block it pushed (the merge base), the blocks a human removed, the
blocks a browser conflict moved aside, the local file digest of the last push, the page as its
last write left it (the server's metadata and the bytes' digest: the quiet rule), and the page as
it last held everything (its metadata, which a pull's listing compares for free).
The file is rewritten atomically after every file a run handles, so a crash costs at most one.

The state belongs to one space (its URL, with ``localhost``, ``127.0.0.1`` and ``[::1]`` taken as
one name). When the configured URL changes — a typo corrected, another instance — the state of
the space left is kept aside (``.ocmem/sync-states/``) and the new space's own state, if any, is
taken back: a wrong URL never binds the home, and coming back to a space finds its state.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ocmem.errors import OcmemError, Refused
from ocmem.home.atomic import read_bytes
from ocmem.home.paths import Paths
from ocmem.home.statefiles import remove_state, write_state

STATE_VERSION = 1
_LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]", "localhost.localdomain"}
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def space_key(url: str) -> str:
    """The space a URL names, as states compare it: case, default port, trailing slash and the
    loopback's names do not make another space."""
    scheme, _, rest = url.strip().partition("://")
    scheme = scheme.lower()
    authority, slash, path = rest.partition("/")
    authority = authority.rsplit("@", 1)[-1].lower()
    host, port = authority, ""
    found = re.fullmatch(r"(\[[^\]]*\]|[^:]*)(?::(\d*))?", authority)
    if found:
        host, port = found.group(1), found.group(2) or ""
    if host in _LOOPBACK:
        host = "localhost"
    if port in ("", _DEFAULT_PORTS.get(scheme)):
        port = ""
    path = (slash + path).rstrip("/")
    return f"{scheme}://{host}{':' + port if port else ''}{path}"


@dataclass
class PulledFile:
    local: str
    last_modified: int
    size: int
    sha256: str


@dataclass
class PushedPage:
    blocks: dict[str, str] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    conflicts: dict[str, str] = field(default_factory=dict)  # block id → the copy holding it
    copies: list[str] = field(default_factory=list)  # conflict copies of the page, still there
    local_sha256: str | None = None
    # Write-ahead record of a PUT under way: the blocks it carries. Cleared once the page is
    # settled, or when the PUT surely did not leave.
    in_flight: dict[str, str] = field(default_factory=dict)
    # The receipt number (« Envoi ocmem n° N » on the page) of our last write that landed, and
    # of the write under way: a read showing it proves that write landed.
    receipt: int = 0
    in_flight_receipt: int = 0
    # Per block: the receipt of the write that delivered its current version, and every
    # version of it we ever delivered (digests), to tell our older versions from a human's edit.
    sent_in: dict[str, int] = field(default_factory=dict)
    ours: dict[str, list[str]] = field(default_factory=dict)
    # The page exactly as our last write left it, seen by the read that verified it: its
    # X-Last-Modified and size (the server's stamp, compared only with the server's stamps) and
    # the digest of its bytes. A read showing all three finds that nobody wrote the page since
    # our write, which was itself made on a quiet page: the push need not wait (docs/sync.md).
    written_last_modified: int = 0
    written_size: int = 0
    written_sha256: str = ""
    # The page as the last push found it holding everything (its X-Last-Modified and size), and
    # whether a pull's listing showed it otherwise since: someone wrote it, maybe a browser
    # saving an older version over our blocks. The next push then reads it, even when the local
    # file did not change (docs/sync.md, « A page that moved »).
    seen_last_modified: int = 0
    seen_size: int = 0
    moved: bool = False


def _pushed_page(raw: dict[str, Any]) -> PushedPage:
    # Older states also recorded the page's metadata before a PUT (in_flight_from): the
    # receipt line replaced it.
    known = set(PushedPage.__dataclass_fields__)
    return PushedPage(**{k: v for k, v in raw.items() if k in known})


@dataclass
class SyncState:
    space: str
    pulled: dict[str, PulledFile] = field(default_factory=dict)
    pushed: dict[str, PushedPage] = field(default_factory=dict)
    # Proposals validated here that a pull reopened for this space (ocmem.silverbullet.carryover).
    carried: list[str] = field(default_factory=list)
    # Promoted proposals whose fact or skill a pull's install left out of validated memory, and
    # the day of that pull (what `pending list` says of them: ocmem.services.presence).
    gone: dict[str, str] = field(default_factory=dict)
    paths: Paths | None = field(default=None, repr=False, compare=False)

    # The state of another space this file held, to keep aside at the next save.
    displaced: SyncState | None = field(default=None, repr=False, compare=False)
    aside: Path | None = field(default=None, repr=False, compare=False)  # where it was read
    switched_from: str | None = field(default=None, repr=False, compare=False)

    def note_listing(self, listed: Mapping[str, tuple[int, int]]) -> bool:
        """Mark the pushed pages that a listing (name → lastModified, size) shows otherwise than
        the last push saw them; True when one was newly marked."""
        marked = False
        for name, page in self.pushed.items():
            seen = (page.seen_last_modified, page.seen_size)
            if not page.moved and listed.get(name, (0, 0)) != seen:
                page.moved = marked = True
        return marked

    @classmethod
    def load(cls, paths: Paths, space: str) -> SyncState:
        current = cls._read(paths, paths.sync_state)
        if current is None or space_key(current.space) == space_key(space):
            return current or cls(space=space, paths=paths)
        aside = aside_path(paths, space)
        state = cls._read(paths, aside) or cls(space=space, paths=paths)
        state.space, state.displaced, state.aside = space, current, aside
        state.switched_from = current.space
        return state

    @classmethod
    def _read(cls, paths: Paths, path: Path) -> SyncState | None:
        data = read_bytes(path)
        if data is None:
            return None
        try:
            raw: dict[str, Any] = json.loads(data.decode("utf-8"))
            if raw.get("version") != STATE_VERSION:
                raise ValueError(f"version {raw.get('version')!r}")
            return cls(
                space=raw["space"],
                pulled={k: PulledFile(**v) for k, v in raw.get("pulled", {}).items()},
                pushed={k: _pushed_page(v) for k, v in raw.get("pushed", {}).items()},
                carried=[str(p) for p in raw.get("carried", [])],
                gone={str(k): str(v) for k, v in raw.get("gone", {}).items()},
                paths=paths,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise OcmemError(
                f"état de synchronisation illisible ({path}) : {exc}",
                fix=f"mets {path} de côté : le prochain pull refera l'état (avec sauvegardes)",
            ) from exc

    def save(self) -> None:
        if self.paths is None:
            raise OcmemError("état sans chemin")
        if self.displaced is not None:  # first: the other space's state is never lost
            self.displaced.paths = self.paths
            self.displaced._write(aside_path(self.paths, self.displaced.space))
            self.displaced = None
        self._write(self.paths.sync_state)
        if self.aside is not None:
            remove_state(self.paths, self.aside)  # now in the main file
            self.aside = None

    def _write(self, path: Path) -> None:
        assert self.paths is not None
        data = {
            "version": STATE_VERSION,
            "space": self.space,
            "pulled": {k: asdict(v) for k, v in sorted(self.pulled.items())},
            "pushed": {k: asdict(v) for k, v in sorted(self.pushed.items())},
            "carried": sorted(self.carried),
            "gone": dict(sorted(self.gone.items())),
        }
        write_state(self.paths, path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")


def aside_path(paths: Paths, space: str) -> Path:
    """Where the state of a space this home no longer syncs with is kept."""
    key = space_key(space)
    readable = re.sub(r"[^a-z0-9]+", "-", key.split("://", 1)[-1]).strip("-")[:48]
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    return paths.state_dir / "sync-states" / f"{readable}-{digest}.json"


def gone_since(paths: Paths) -> dict[str, str]:
    """The days the pulls of the space this home syncs with left a promoted proposal's item out
    of validated memory (``SyncState.gone``); empty when there is no state, or it is illegible
    (a status line then says only that the item is absent)."""
    try:
        raw = json.loads(read_bytes(paths.sync_state) or b"")
        return {str(k): str(v) for k, v in dict(raw.get("gone", {})).items()}
    except (OSError, ValueError, TypeError, AttributeError, Refused):  # a link: never read
        return {}
