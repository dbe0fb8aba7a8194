"""Page names of the SilverBullet space as ocmem reads them from a tool's arguments, and which
pages are validated memory (what the pull installs, and what the human trusts): the one reading
of names, for the space tools and for the SilverBullet MCP servers' writes the plugin hands the
gate (ocmem.bridge.spacetools)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import unquote

from ocmem.guards.homoglyphs import latin_skeleton
from ocmem.home.settings import Settings, setting
from ocmem.home.space import SyncConfig

_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# The spaces trimmed around a name: JavaScript's trim() set. Not Python's strip(), which would
# also take \x1c-\x1f and \x85: control characters make a name refused, never trimmed away.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def page_path(raw: str) -> str | None:
    """A page name as SilverBullet stores it (without ``.md``), or None when it cannot be one:
    percent-decoding until stable (as decodeURIComponent: a stray ``%`` refused), a URL's path,
    ``\\`` as ``/``, ``.`` and ``..`` resolved (``..`` above the root refused), no leading ``/``
    nor ``/.fs/``, no ``.md``."""
    text = unicodedata.normalize("NFC", raw).strip(_JS_SPACE)
    for _ in range(6):
        if _STRAY_PERCENT.search(text):  # not an encoding: refused, as decodeURIComponent does
            return None
        try:
            decoded = unicodedata.normalize("NFC", unquote(text, errors="strict")).strip(_JS_SPACE)
        except UnicodeDecodeError:
            return None
        if decoded == text:
            break
        text = decoded
    else:
        return None
    if re.search(r"[\x00-\x1f\x7f]", text):
        return None
    url = re.match(r"^[a-z][a-z0-9+.-]*://[^/]*(/[^?#]*)?", text, re.IGNORECASE)
    if url:
        text = url.group(1) or ""
    text = re.sub(r"^/*\.fs/", "", text.replace("\\", "/"))
    parts: list[str] = []
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    name = "/".join(parts)
    return re.sub(r"\.md$", "", name, flags=re.IGNORECASE) or None


def file_of(page: str) -> str:
    return page + ".md"


def validated_pages(settings: Settings, config: SyncConfig | None) -> list[str]:
    """The pages (folders end with ``/``) whose reading does not expose the session: what the
    pull installs, and the human's ``silverbullet.trusted_pages``; names without ``.md``."""
    found: list[str] = []
    for rule in config.pull if config is not None else ():
        found.append(rule.remote if rule.is_folder else re.sub(r"\.md$", "", rule.remote))
    for raw in setting(settings, "silverbullet", "trusted_pages") or []:
        folder = str(raw).strip().endswith("/")
        page = page_path(str(raw))
        if page:
            found.append(page + "/" if folder else page)
    return sorted(set(found))


def is_validated(page: str, validated: Iterable[str]) -> bool:
    return any(page.startswith(v) if v.endswith("/") else page == v for v in validated)


# What SilverBullet's browser appends to a page it moves aside (``journal.conflicted:<ms>``).
_CONFLICT = ".conflicted:"


def _skeleton(page: str) -> str:
    """How a page name reads to a person: look-alikes made Latin, compatibility forms folded and
    invisible characters dropped (``guards.homoglyphs.latin_skeleton``, the guards' own
    reading), case folded; accents, spaces, dots ending a segment and the ``.md`` the name may
    repeat dropped."""
    folded = unicodedata.normalize("NFKD", latin_skeleton(page).casefold())
    kept = "".join(
        c for c in folded if unicodedata.category(c) not in ("Mn", "Cf") and not c.isspace()
    )
    segments = [s.rstrip(".") for s in kept.split("/")]
    last = segments[-1]
    while last.endswith(".md"):
        last = last[:-3].rstrip(".")
    return "/".join([*segments[:-1], last])


def mimicked_page(page: str, reserved: Iterable[str]) -> str | None:
    """The reserved page (ocmem's own pages, the human's decisions page) that ``page`` passes
    for — itself, a conflict copy of it, or either spelled another way (case, Unicode,
    look-alike letters, invisible characters; ``page`` as :func:`page_path` reads it, so
    percent-encodings are already undone) —, None when it passes for none. The one rule of what
    a tool may never write under ocmem's names (``space_write``, ocmem.bridge.spacetools)."""
    name = _skeleton(page)
    for model in reserved:
        shape = _skeleton(model)
        copy = shape + _CONFLICT
        if name == shape or (len(name) > len(copy) and name.startswith(copy)):
            return model
    return None
