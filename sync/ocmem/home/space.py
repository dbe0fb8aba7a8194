"""SilverBullet sync settings: ``silverbullet:`` in ocmem.yaml, overridden by environment variables.

Directions are one-way per file and checked here, before any run: pull targets can only be
AGENTS.md, memory/MEMORY.md or files under skills/; push sources are journal.md and pending.md,
and every push target must lie under the inbox prefix (``Agents/Inbox/`` by default).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from ocmem.errors import InputError, Refused
from ocmem.formats import decisionspage
from ocmem.home.atomic import read_bytes
from ocmem.home.settings import SECTIONS, Settings, setting
from ocmem.home.settings import section as config_section

ENV_URL = "OCMEM_SILVERBULLET_URL"
ENV_TOKEN = "OCMEM_SILVERBULLET_TOKEN"
ENV_TOKEN_FILE = "OCMEM_SILVERBULLET_TOKEN_FILE"

DEFAULT_INBOX: str = SECTIONS["silverbullet"]["inbox"].default
DEFAULT_PULL = (
    ("Agents/Skills/", "skills/"),
    ("Agents/Memory/MEMORY.md", "memory/MEMORY.md"),
    ("Agents/Memory/ARCHIVE.md", "memory/ARCHIVE.md"),
    ("Agents/AGENTS.md", "AGENTS.md"),
)
# Each home writes its own pages, named by its id (ocmem.home): no two homes ever write one page.
HOME_PLACEHOLDER = "{home}"
DEFAULT_PUSH = (
    ("memory/journal.md", "Agents/Inbox/{home}/journal.md"),
    ("memory/pending.md", "Agents/Inbox/{home}/pending.md"),
)
# The human's decisions page beside each home's pending page (ocmem.formats.decisionspage):
# written by the review page and by hand, read by the pull, never pushed.
DECISIONS_PAGE = decisionspage.PAGE_NAME
# Files the pull may never write, whatever the mapping says.
LOCAL_ONLY = frozenset(
    {"memory/SHORT_TERM.md", "memory/QUARANTINE.md", "memory/journal.md", "memory/pending.md"}
)


class PullRule(NamedTuple):
    """``remote`` is a folder (ends with /) mirrored into the ``local`` folder, or one file."""

    remote: str
    local: str

    @property
    def is_folder(self) -> bool:
        return self.remote.endswith("/")

    def local_for(self, remote_name: str) -> str | None:
        if self.is_folder:
            if remote_name.startswith(self.remote) and remote_name != self.remote:
                return self.local + remote_name[len(self.remote) :]
            return None
        return self.local if remote_name == self.remote else None

    def remote_for(self, local: str) -> str | None:
        """Where the local file (or folder, ending with /) ``local`` comes from under this rule."""
        if self.is_folder:
            return self.remote + local[len(self.local) :] if local.startswith(self.local) else None
        return self.remote if local == self.local else None


DEFAULT_PULL_RULES = tuple(PullRule(remote, local) for remote, local in DEFAULT_PULL)


def pulled_from(rules: Iterable[PullRule], local: str) -> str | None:
    """The SilverBullet page (or folder) the local ``local`` is pulled from: the first rule's
    that maps it; None when none does."""
    found = (rule.remote_for(local) for rule in rules)
    return next((remote for remote in found if remote is not None), None)


class PushRule(NamedTuple):
    local: str
    remote: str  # may hold {home}, the home's id

    def page(self, home_id: str, *, shared: bool = False) -> str:
        """The page for this home: ``{home}`` is its id, or, for a home on the spec's shared
        pages, the ``{home}/`` folder is dropped (``Agents/Inbox/journal.md``)."""
        if shared:
            return self.remote.replace(HOME_PLACEHOLDER + "/", "").replace(
                HOME_PLACEHOLDER, home_id
            )
        return self.remote.replace(HOME_PLACEHOLDER, home_id)


class SyncConfig(NamedTuple):
    """The `silverbullet:` section as a sync run uses it (defaults: ocmem.home.settings)."""

    url: str
    token: str | None
    inbox: str
    pull: tuple[PullRule, ...]
    push: tuple[PushRule, ...]
    max_delete_ratio: float
    concurrency: int
    timeout_seconds: float
    retry_wait_seconds: float
    # A page is written only after it stayed unchanged this long (a human may be editing it),
    # unless it is exactly as ocmem's own last write left it (docs/sync.md, the quiet rule).
    quiet_seconds: float
    # How long a push waits for a page to become quiet before postponing it.
    patience_seconds: float
    expect_space_path: str | None
    # What a pull may install (ocmem.silverbullet.bounds): per file, skills, in all; and the
    # deadline of the whole pull (listing and reads).
    pull_max_file_bytes: int
    pull_max_skills: int
    pull_max_total_bytes: int
    pull_deadline_seconds: float

    def __repr__(self) -> str:
        return f"SyncConfig(url={self.url!r}, token={'***' if self.token else None})"

    def local_target(self, remote_name: str) -> str | None:
        for rule in self.pull:
            target = rule.local_for(remote_name)
            if target is not None:
                return target
        return None


def sync_section(settings: Settings) -> Mapping[str, Any]:
    return config_section(settings, "silverbullet")


def is_configured(settings: Settings, env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return bool(env.get(ENV_URL) or sync_section(settings).get("url"))


def configured_url(settings: Settings, env: Mapping[str, str]) -> str:
    """The SilverBullet URL as configured (environment first): the instance, prefix included,
    without a trailing slash nor the ``/.fs`` of its API (which users often copy)."""
    url = str(env.get(ENV_URL) or sync_section(settings).get("url") or "").strip().rstrip("/")
    return url.removesuffix("/.fs").rstrip("/")


def load_sync_config(settings: Settings, env: Mapping[str, str] | None = None) -> SyncConfig:
    env = os.environ if env is None else env
    raw = sync_section(settings)
    where = settings.paths.config_file
    url = configured_url(settings, env)
    if not url:
        raise InputError(
            "aucune instance SilverBullet configurée",
            fix=f"définis {ENV_URL} ou `silverbullet.url` dans {where}",
        )
    if not url.startswith(("http://", "https://")):
        raise InputError(
            f"URL SilverBullet invalide : {redacted(url)!r}",
            fix="elle commence par http:// ou https://",
        )
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        raise InputError(
            f"l'URL SilverBullet contient un identifiant ou un mot de passe ({redacted(url)}) : "
            "il finirait dans les messages, les journaux et l'historique",
            fix=f"retire « …@ » de l'URL ({where} ou {ENV_URL}) ; l'authentification passe par "
            f"un jeton dans un fichier (`token_file`, mode 600)",
        )
    if "?" in url or "#" in url:
        raise InputError(
            f"URL SilverBullet invalide (paramètres ou ancre) : {url!r}",
            fix="donne l'adresse de l'instance, avec son préfixe éventuel (ex. https://notes.example.org/sb)",
        )
    inbox = _folder(setting(settings, "silverbullet", "inbox"), "inbox")
    pull = tuple(
        _pull_rule(item)
        for item in raw.get("pull", [{"remote": r, "local": loc} for r, loc in DEFAULT_PULL])
    )
    push = tuple(
        _push_rule(item, inbox)
        for item in raw.get("push", [{"local": loc, "remote": r} for loc, r in DEFAULT_PUSH])
    )
    for rule in pull:
        if rule.remote.startswith(inbox) or inbox.startswith(rule.remote):
            raise InputError(
                f"la règle de pull {rule.remote!r} recouvre la boîte de dépôt {inbox!r}",
                fix="un fichier est tiré OU poussé, jamais les deux",
            )
    token = _token(settings, raw, env)
    if (
        token
        and plain_http_to_remote(url)
        and not setting(settings, "silverbullet", "allow_plain_http")
    ):
        raise Refused(
            f"le jeton partirait en clair (http://) vers {parts.hostname}, qui n'est pas cette machine",
            fix="utilise une URL https:// ; si le réseau est sûr (VPN, réseau privé), ajoute "
            f"`allow_plain_http: true` sous `silverbullet` dans {where}",
        )
    return SyncConfig(
        url=url,
        token=token,
        inbox=inbox,
        pull=pull,
        push=push,
        # Types and bounds: checked with the rest of ocmem.yaml (ocmem.home.settings.SECTIONS).
        max_delete_ratio=float(setting(settings, "silverbullet", "max_delete_ratio")),
        concurrency=int(setting(settings, "silverbullet", "concurrency")),
        timeout_seconds=float(setting(settings, "silverbullet", "timeout_seconds")),
        retry_wait_seconds=float(setting(settings, "silverbullet", "retry_wait_seconds")),
        quiet_seconds=float(setting(settings, "silverbullet", "quiet_seconds")),
        patience_seconds=float(setting(settings, "silverbullet", "patience_seconds")),
        expect_space_path=setting(settings, "silverbullet", "expect_space_path"),
        pull_max_file_bytes=int(setting(settings, "silverbullet", "pull_max_file_bytes")),
        pull_max_skills=int(setting(settings, "silverbullet", "pull_max_skills")),
        pull_max_total_bytes=int(setting(settings, "silverbullet", "pull_max_total_bytes")),
        pull_deadline_seconds=float(setting(settings, "silverbullet", "pull_deadline_seconds")),
    )


def _clean(path: object, what: str) -> str:
    if not isinstance(path, str) or not path.strip():
        raise InputError(f"chemin {what} vide ou invalide : {path!r}", fix="corrige ocmem.yaml")
    text = path.strip()
    parts = PurePosixPath(text.rstrip("/")).parts
    if text.startswith("/") or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        raise InputError(
            f"chemin {what} interdit : {path!r}",
            fix="un chemin relatif, sans . ni .., sans dossier caché",
        )
    return text


def _folder(path: object, what: str) -> str:
    text = _clean(path, what)
    return text if text.endswith("/") else text + "/"


def _pull_rule(item: object) -> PullRule:
    if not isinstance(item, Mapping):
        raise InputError("chaque règle de pull est {remote, local}", fix="corrige ocmem.yaml")
    remote, local = _clean(item.get("remote"), "distant"), _clean(item.get("local"), "local")
    if remote.endswith("/") != local.endswith("/"):
        raise InputError(
            f"règle de pull {remote!r} → {local!r} : dossier vers dossier ou fichier vers fichier",
            fix="termine les deux par / ou aucun",
        )
    allowed = local in ("AGENTS.md", "memory/MEMORY.md", "memory/ARCHIVE.md") or local.startswith(
        "skills/"
    )
    if not allowed or local in LOCAL_ONLY:
        raise InputError(
            f"le pull ne peut pas écrire {local!r}",
            fix="le pull n'écrit que AGENTS.md, memory/MEMORY.md, memory/ARCHIVE.md et skills/",
        )
    return PullRule(remote, local)


def _push_rule(item: object, inbox: str) -> PushRule:
    if not isinstance(item, Mapping):
        raise InputError("chaque règle de push est {local, remote}", fix="corrige ocmem.yaml")
    local, remote = _clean(item.get("local"), "local"), _clean(item.get("remote"), "distant")
    if local not in ("memory/journal.md", "memory/pending.md"):
        raise InputError(
            f"le push ne lit que journal.md et pending.md, pas {local!r}", fix="corrige ocmem.yaml"
        )
    sample = PushRule(local, remote).page("home-id")
    if not sample.startswith(inbox) or not sample.endswith(".md") or "{" in sample:
        raise InputError(
            f"le push n'écrit que des pages .md sous {inbox!r}, pas {remote!r}",
            fix="corrige ocmem.yaml",
        )
    if sample.rpartition("/")[2] == DECISIONS_PAGE:
        # One writer per page: the human's decisions page is never ocmem's (docs/sync.md).
        raise InputError(
            f"le push n'écrit jamais {DECISIONS_PAGE} (la page des décisions de l'humain), pas {remote!r}",
            fix="corrige ocmem.yaml",
        )
    return PushRule(local, remote)


def redacted(url: str) -> str:
    """``url`` without what precedes an ``@`` in its authority (user, password)."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rsplit("@", 1)[1]
    return f"{scheme}{sep}{authority}{slash}{path}"


_LOCAL_HOSTS = ("localhost", "ip6-localhost")


def plain_http_to_remote(url: str) -> bool:
    """Whether ``url`` is plain http to a host other than this machine (loopback)."""
    import ipaddress

    parts = urlsplit(url)
    if parts.scheme != "http":
        return False
    host = (parts.hostname or "").lower()
    if host in _LOCAL_HOSTS or host.endswith(".localhost"):
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True


def secret_values(settings: Settings, env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Every token this process can read, whatever the state of its file: memory writes must
    never contain one. (A token file with loose permissions is refused for syncing, but it is
    still a secret: the guard must not switch off because the set-up is wrong.)"""
    env = os.environ if env is None else env
    found = [env[ENV_TOKEN].strip()] if env.get(ENV_TOKEN, "").strip() else []
    # a password written into the URL (refused for syncing) is a secret all the same
    password = urlsplit(configured_url(settings, env)).password
    if password:
        found.append(password)
    path = token_file_path(settings, sync_section(settings), env)
    # Absent, or unreadable by this user (hardened mode): nothing this process could leak.
    with contextlib.suppress(OSError, Refused):  # a link: refused, and said by the sync
        found.append((read_bytes(path) or b"").decode("utf-8", errors="replace").strip())
    return tuple(secret for secret in found if secret)


def token_file_path(settings: Settings, section: Mapping[str, Any], env: Mapping[str, str]) -> Path:
    """The token file: the variable's (relative to where it was set: the current folder), else
    ocmem.yaml's — relative to the home, so cron, the plugin and a terminal read one file
    whatever folder they run in —, else ``.ocmem/silverbullet.token``."""
    if env.get(ENV_TOKEN_FILE):
        return Path(env[ENV_TOKEN_FILE]).expanduser()
    raw = section.get("token_file")
    if not raw:
        return settings.paths.default_token_file
    path = Path(str(raw)).expanduser()
    return path if path.is_absolute() else settings.paths.home / path


def loose_mode(path: Path) -> int | None:
    """The permission bits of a token file that others could read, or None if it is private."""
    mode = stat.S_IMODE(path.stat().st_mode)
    return mode if mode & 0o077 else None


def _token(settings: Settings, section: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    if env.get(ENV_TOKEN):
        return env[ENV_TOKEN].strip()
    path = token_file_path(settings, section, env)
    if not path.exists():
        if env.get(ENV_TOKEN_FILE) or section.get("token_file"):
            raise InputError(
                f"fichier de jeton introuvable : {path}",
                fix="crée-le (une ligne, mode 600) ou corrige le chemin",
            )
        return None  # an open SilverBullet (no SB_USER) needs no token
    mode = loose_mode(path)
    if mode is not None:
        raise Refused(
            f"le fichier de jeton {path} est lisible par d'autres (mode {mode:o})",
            fix=f"chmod 600 {path}",
        )
    try:  # never through a link below the home (ocmem.home.atomic): refused, naming it
        token = (read_bytes(path) or b"").decode("utf-8").strip()
    except UnicodeDecodeError:
        raise InputError(
            f"le fichier de jeton {path} n'est pas du texte UTF-8",
            fix="écris le jeton SilverBullet (SB_AUTH_TOKEN) sur une ligne, en texte",
        ) from None
    if not token:
        raise InputError(
            f"le fichier de jeton {path} est vide",
            fix="écris le jeton SilverBullet (SB_AUTH_TOKEN) sur une ligne",
        )
    return token
