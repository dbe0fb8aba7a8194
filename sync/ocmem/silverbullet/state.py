"""What ocmem last saw of the SilverBullet space, per file (``<home>/.ocmem/sync-state.json``).

Pull records, per remote file, the validated (lastModified, size) and the sha256 of the bytes it
installed, so a no-op pull is one listing and a hand-edited local copy is noticed. Push records,
per page, the digest of every block it pushed (the merge base), the blocks a human removed, the
blocks a browser conflict moved aside, and the local file digest of the last push.
The file is rewritten atomically after every file a run handles, so a crash costs at most one.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ocmem.errors import OcmemError
from ocmem.home.fsio import write_state
from ocmem.home.paths import Paths

STATE_VERSION = 1


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
    paths: Paths | None = field(default=None, repr=False, compare=False)

    @classmethod
    def load(cls, paths: Paths, space: str) -> SyncState:
        path = paths.sync_state
        if not path.exists():
            return cls(space=space, paths=paths)
        try:
            raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            if raw.get("version") != STATE_VERSION:
                raise ValueError(f"version {raw.get('version')!r}")
            state = cls(
                space=raw["space"],
                pulled={k: PulledFile(**v) for k, v in raw.get("pulled", {}).items()},
                pushed={k: _pushed_page(v) for k, v in raw.get("pushed", {}).items()},
                paths=paths,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise OcmemError(
                f"état de synchronisation illisible ({path}) : {exc}",
                fix=f"mets {path} de côté : le prochain pull refera l'état (avec sauvegardes)",
            ) from exc
        if state.space != space:
            raise OcmemError(
                f"l'état de synchronisation concerne {state.space}, pas {space}",
                fix=f"si tu as changé d'instance exprès, mets {path} de côté puis relance",
            )
        return state

    def save(self) -> None:
        if self.paths is None:
            raise OcmemError("état sans chemin")
        data = {
            "version": STATE_VERSION,
            "space": self.space,
            "pulled": {k: asdict(v) for k, v in sorted(self.pulled.items())},
            "pushed": {k: asdict(v) for k, v in sorted(self.pushed.items())},
        }
        write_state(
            self.paths, self.paths.sync_state, json.dumps(data, ensure_ascii=False, indent=1) + "\n"
        )
