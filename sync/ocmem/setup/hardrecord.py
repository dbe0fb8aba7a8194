"""The hardened mode's record, ``.ocmem/hardened.json``: what ``ocmem harden`` changes beyond
the home's owner (the parents it gives to root, with their owners and modes before; the home's
owner before, and what giving it changes beyond that owner; the sudoers rule), so that
``harden --annuler`` puts it back.

``harden`` writes it *before* its first change, stating what it is about to change: a run that
fails or is killed at any step leaves what undoes it (``harden --annuler``), or what the next
``harden`` finishes. Until the home is given to the owner, ``.ocmem/`` is the agent's: the agent
could put a file of its own there, never one of root's. So the record stays root's (``0644``:
nothing in it is secret, and the owner's ``ocmem doctor`` reads it), a record root does not own
is refused, and every path in it is checked against what ``harden`` may change (a parent of the
home, the agent's sudoers file): root never chowns nor removes what a forged record names.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from ocmem.errors import OcmemError, Refused
from ocmem.home.atomic import open_file
from ocmem.home.paths import Paths
from ocmem.home.statefiles import write_state

SUDOERS_DIR = Path("/etc/sudoers.d")
USER_NAME = re.compile(r"^[a-z_][a-z0-9_-]*$")  # what a Unix user name is made of
RECORD_MODE = 0o644


def sudoers_file(agent: str) -> Path:
    return SUDOERS_DIR / f"ocmem-{agent}"  # sudo skips names with a dot


def write_record(paths: Paths, record: dict[str, Any]) -> None:
    """Root's record, replaced as a whole (a crash leaves the old one or the new one)."""
    write_state(paths, paths.hardened_file, json.dumps(record, indent=1) + "\n", mode=RECORD_MODE)


def read_record(paths: Paths) -> dict[str, Any] | None:
    """The record (None: the home is not hardened); refused when root did not write it or when
    it names anything ``harden`` does not change."""
    where = paths.hardened_file
    try:
        fd = open_file(where, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _unreadable(paths, str(exc)) from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        raw = handle.read()
    if not stat.S_ISREG(info.st_mode) or info.st_uid != 0 or info.st_nlink != 1:
        raise Refused(
            f"{where} n'appartient pas à root (ou a un autre nom ailleurs) : `ocmem harden` ne l'a "
            "pas écrit tel quel, et l'agent a pu le fabriquer ; rien n'a été modifié",
            fix=f"vérifie-le (les dossiers qu'il nomme et leurs propriétaires d'origine) ; s'il "
            f"est juste : `chown root:root {where}` puis relance ; sinon retire-le et rends les "
            "dossiers à l'agent à la main (chown)",
        )
    try:
        record = json.loads(raw)
        problem = _problem(paths, record)
    except ValueError as exc:
        raise _unreadable(paths, str(exc)) from exc
    if problem:
        raise _unreadable(paths, problem)
    return dict(record)


def _problem(paths: Paths, record: Any) -> str | None:
    """What in ``record`` is not something ``harden`` writes (None: nothing)."""
    if not isinstance(record, dict):
        return "ce n'est pas un objet JSON"
    for key in ("agent", "owner"):
        if not isinstance(record.get(key), str) or not USER_NAME.match(record[key]):
            return f"`{key}` n'est pas un nom d'utilisateur"
    if record.get("sudoers") != str(sudoers_file(record["agent"])):
        return f"`sudoers` n'est pas {sudoers_file(record['agent'])}"
    if not _ids(record.get("home_owner"), 2):
        return "`home_owner` n'est pas [uid, gid]"
    parents = {str(parent) for parent in paths.home.parents}
    locked = record.get("locked")
    if not isinstance(locked, list):
        return "`locked` n'est pas une liste"
    for entry in locked:
        if not isinstance(entry, list) or len(entry) != 4 or not _ids(entry[1:], 3):
            return f"`locked` : {entry!r} n'est pas [dossier, uid, gid, droits]"
        if entry[0] not in parents:
            return f"`locked` : {entry[0]!r} n'est pas un dossier parent de {paths.home}"
        if entry[3] > 0o7777:
            return f"`locked` : droits invalides pour {entry[0]}"
    inside = record.get("inside", {})  # absent from the records of an ocmem before it
    if not isinstance(inside, dict):
        return "`inside` n'est pas un objet"
    for rel, ownership in inside.items():
        if not _below(rel) or not _ids(ownership, 3) or ownership[2] > 0o7777:
            return f"`inside` : {rel!r} n'a pas un [uid, gid, droits] d'un chemin du dossier"
    return None


def _below(rel: str) -> bool:
    """A path below the home as ``handover.differences`` writes it ("." for the home)."""
    return rel == "." or all(part not in ("", ".", "..") for part in rel.split("/"))


def _ids(values: Any, count: int) -> bool:
    return (
        isinstance(values, list)
        and len(values) == count
        and all(type(value) is int and value >= 0 for value in values)
    )


def _unreadable(paths: Paths, why: str) -> OcmemError:
    return OcmemError(
        f"{paths.hardened_file} est illisible ({why}) : rien n'a été modifié",
        fix="restaure-le depuis une sauvegarde, ou rends le dossier et ses parents à l'agent à "
        "la main (chown)",
    )
