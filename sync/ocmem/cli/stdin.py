"""A JSON object on standard input: how the plugin and the retrospective talk to ocmem."""

from __future__ import annotations

import json
import sys
from typing import Any

from ocmem.errors import InputError


def read_json(what: str) -> Any:
    if sys.stdin.isatty():
        raise InputError(f"{what} attend un objet JSON sur l'entrée standard", fix="voir --help")
    raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(
            f"l'entrée standard n'est pas de l'UTF-8 (octet {exc.start})",
            fix="envoie le JSON encodé en UTF-8",
        ) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"JSON invalide sur l'entrée standard : {exc}", fix="envoie un seul objet JSON valide"
        ) from None
