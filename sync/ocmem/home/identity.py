"""The identity of an ocmem home: a short id, chosen at ``ocmem init``, that names its pages in
SilverBullet (``Agents/Inbox/<id>/journal.md``) and its proposals across homes (``<id>/P-0003``).

The file (``<home>/.ocmem/home.json``) also records the machine and the folder it was created
for: a home copied to another machine (or folder) keeps its id, and two homes pushing under one id
would write the same pages, so sync refuses until the copy is given an id of its own. And when the
home was made (``created``, by the injected clock): `ocmem review` does not call a skill unused over
a window the home has not lived yet.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from ocmem.errors import InputError, OcmemError, Refused
from ocmem.home.atomic import read_bytes
from ocmem.home.paths import Paths

SHARED_PAGES = "spec"  # home.json's "pages": the spec's Agents/Inbox/journal.md and pending.md
OWN_FOLDER = "dossier"  # Agents/Inbox/<id>/… (and every home.json written before this field)
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{1,23}$")


class HomeId(NamedTuple):
    id: str
    machine: str
    folder: str
    # The spec's pages (Agents/Inbox/journal.md, …/pending.md) rather than a folder of its own
    # (Agents/Inbox/<id>/…): a home made with the default id, for the one-VPS user; the claim on
    # the page keeps a second home out (it is asked for an id, hence a folder, of its own).
    shared_pages: bool = False
    # When `ocmem init` made it ("" in a home.json written before the field: see ``created``).
    created: str = ""

    @property
    def key(self) -> str:
        """This home's claim on its SilverBullet pages (written on their receipt line): two homes
        under one id have two keys, so neither takes the other's page for the human's."""
        return home_key(self.machine, self.folder)


def pages_folder(home: HomeId, inbox: str = "Agents/Inbox/") -> str:
    """Where this home's journal.md and pending.md are, with the default push rules."""
    return inbox if home.shared_pages else f"{inbox}{home.id}/"


def home_key(machine_id: str, folder: str) -> str:
    return hashlib.sha256(f"{machine_id}\0{folder}".encode()).hexdigest()[:8]


def id_problem(value: str) -> str | None:
    if not _ID.match(value):
        return "2 à 24 caractères : minuscules, chiffres et tirets, sans tiret au début"
    return None


def machine() -> str:
    """This machine's identity: systemd's machine id, else the host name."""
    for source in (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id")):
        try:
            value = (read_bytes(source) or b"").decode("ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if value:
            return value
    return socket.gethostname()


def default_id(folder: Path) -> str:
    """The host name, made readable, and 4 hex digits of the machine and folder: two homes on
    one machine (two users, a global and a project home) or two machines with one cloud image's
    host name (``ubuntu``, ``debian``) get two ids (``vps-prod-3fa9``)."""
    name = socket.gethostname().split(".")[0].lower()
    cleaned = re.sub(r"[^a-z0-9]+", "-", name).strip("-")[:19].strip("-") or "ocmem"
    suffix = home_key(machine(), str(folder))[:4]
    chosen = f"{cleaned}-{suffix}"
    return chosen if id_problem(chosen) is None else f"ocmem-{suffix}"


def read(paths: Paths) -> HomeId | None:
    try:
        data = read_bytes(paths.home_id)
        if data is None:
            return None
        raw = json.loads(data.decode("utf-8"))
        found = HomeId(
            str(raw["id"]),
            str(raw["machine"]),
            str(raw["folder"]),
            raw.get("pages") == SHARED_PAGES,
            str(raw.get("created", "")),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise OcmemError(
            f"identité du dossier ocmem illisible : {paths.home_id} ({exc})",
            fix="`ocmem init --id-dossier NOM` la réécrit (le nom actuel se lit dans SilverBullet : Agents/Inbox/NOM/)",
        ) from None
    if id_problem(found.id):
        raise OcmemError(
            f"identifiant de dossier invalide dans {paths.home_id} : {found.id!r}",
            fix="`ocmem init --id-dossier NOM` le remplace",
        )
    return found


def create(paths: Paths, value: str | None, now: datetime) -> HomeId:
    """The identity for this home on this machine, made ``now``: ``value`` (its pages in a
    folder of that name), else the default id (the spec's pages)."""
    chosen = default_id(paths.home.resolve()) if value is None else value
    problem = id_problem(chosen)
    if problem:
        raise InputError(
            f"identifiant de dossier invalide : {chosen!r} ({problem})", fix="--id-dossier vps-prod"
        )
    return HomeId(
        chosen,
        machine(),
        str(paths.home.resolve()),
        shared_pages=value is None,
        created=now.isoformat(timespec="seconds"),
    )


def render(identity: HomeId) -> str:
    record = {"id": identity.id, "machine": identity.machine, "folder": identity.folder}
    record["pages"] = SHARED_PAGES if identity.shared_pages else OWN_FOLDER
    if identity.created:
        record["created"] = identity.created
    return json.dumps(record, ensure_ascii=False, indent=1) + "\n"


def created(paths: Paths) -> datetime | None:
    """When this home was made: home.json's ``created``, else (a home made before the field) the
    file's last change, which init writes once (and again only for a new id); None without one."""
    found = read(paths)
    if found is None:
        return None
    try:
        return datetime.fromisoformat(found.created)
    except ValueError:
        return datetime.fromtimestamp(paths.home_id.stat().st_mtime)


def require(paths: Paths) -> HomeId:
    """The identity sync may use: present, and made for this machine and folder."""
    found = read(paths)
    if found is None:
        raise Refused(
            "ce dossier ocmem n'a pas encore d'identifiant (il nomme ses pages dans SilverBullet)",
            fix="lance `ocmem init` (ou `ocmem init --id-dossier NOM`)",
        )
    here = (machine(), str(paths.home.resolve()))
    if (found.machine, found.folder) != here:
        raise Refused(
            f"ce dossier ocmem a été créé ailleurs ({found.folder}) sous l'identifiant "
            f"« {found.id} » : deux dossiers écriraient les mêmes pages de SilverBullet",
            fix="donne-lui un identifiant à lui : `ocmem init --id-dossier NOUVEAU-NOM` "
            f"(ou, si c'est bien le même dossier déplacé, `ocmem init --id-dossier {found.id}`)",
        )
    return found
