"""HTTP client for SilverBullet's ``/.fs`` API, with the write guard built into the transport.

What the server offers (see docs/sync.md): a JSON listing, reads with metadata headers, a
metadata-only probe (``X-Get-Meta``), and PUT that truncates and rewrites. No ETag, no
conditional write. So this client:

- sends only GET and PUT, and PUT only under the inbox prefix: ``InboxGuard`` sits in the
  transport, below every caller, and raises before a forbidden request leaves the process;
- validates every read (body length = ``X-Content-Length``) and retries torn reads;
- retries reads on transport errors and 5xx, and a PUT only when it provably never left
  (connection not established); any other PUT failure is an unknown outcome for the caller;
- bounds a dead server: a request answered by nothing within ``timeout_seconds`` (a server that
  accepts connections and never answers) is not tried again, and retries stop once
  ``timeout_seconds`` have gone by, so a run fails in about that long, naming the URL;
- bounds a slow or endless one: every body is read as it streams, stopped past the bytes its
  reader allows (a page's bound, the run's total, the listing's) and past the run's deadline
  (:meth:`SilverBullet.set_deadline`: httpx's timeouts are per read, so a server sending a byte
  a second never trips them), each request's timeout shortened to what is left of it;
- says each request (retries included) to the ``waiting`` it is given (ocmem.progress: the
  command line shows it on a terminal after a second of silence);
- never follows redirects, and names the two classic set-up errors: a rejected token
  (401 / ``Location: /.auth``) and a wrong URL (SilverBullet's 200 HTML fallback).
"""

from __future__ import annotations

import json
import re
import threading
import time
import unicodedata
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn
from urllib.parse import quote, unquote

import httpx
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
    wait_random,
)

from ocmem.errors import OcmemError, Refused
from ocmem.home.space import ENV_TOKEN, ENV_TOKEN_FILE, SyncConfig
from ocmem.progress import Waiting, not_said

_CONFLICT_COPY = re.compile(r"\.conflicted:\d+((?:\.[^/]*)?)$")
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# Sent, and nothing came back in time: the server is there but stuck; asking again would only
# double the wait.
_NO_ANSWER = (httpx.ReadTimeout, httpx.WriteTimeout)
_TRANSIENT_STATUS = {500, 502, 503, 504}
# The listing of a space of some 100 000 files; past it, a server that does not stop.
LISTING_MAX_BYTES = 16 << 20
# A page read with no bound of its reader's: far past any page a human keeps.
PAGE_MAX_BYTES = 64 << 20
# Any other body (an error page, a probe's empty body).
_ANY_BODY_MAX_BYTES = 1 << 20


class SilverBulletError(OcmemError):
    """The server could not be used for this run (exit 1): retry later or fix the set-up."""


class UnknownOutcome(SilverBulletError):
    """A PUT failed after it was sent: it may or may not have been applied."""


class TornRead(SilverBulletError):
    """Every reading of a file came back shorter or longer than its announced size: it is being
    written. Not a fault of the server, the token or the network, which stay SilverBulletError."""


class PastDeadline(SilverBulletError):
    """The run's deadline passed while the server was still sending: stopped there."""


class TooLarge(SilverBulletError):
    """A body went past the bytes its reader allows: the read stopped there, nothing kept."""

    def __init__(self, name: str, bound: int):
        super().__init__(
            f"{name} : plus de {bound} octets reçus, lecture arrêtée (rien n'en est gardé)",
            fix="vérifie cette page dans SilverBullet (une page démesurée, ou un serveur qui ne "
            "s'arrête pas)",
        )
        self.name = name
        self.bound = bound


class BudgetSpent(TooLarge):
    """The bytes a run's reads may receive together are spent (``Budget``)."""


class Budget:
    """The bytes the reads of one run may still receive together (they run in parallel)."""

    def __init__(self, total: int):
        self.total = total
        self._left = total
        self._lock = threading.Lock()

    def spend(self, count: int) -> bool:
        """Take ``count`` bytes; False once the budget is overdrawn."""
        with self._lock:
            self._left -= count
            return self._left >= 0


class ForbiddenRequest(OcmemError):
    """A code path tried to send a request ocmem never sends (DELETE, or PUT outside the inbox)."""


class _Transient(Exception):
    """A read failed in a way worth retrying (5xx, torn body)."""


@dataclass(frozen=True)
class Meta:
    last_modified: int
    size: int

    @classmethod
    def from_headers(cls, headers: httpx.Headers) -> Meta:
        return cls(int(headers["x-last-modified"]), int(headers["x-content-length"]))


@dataclass(frozen=True)
class RemoteFile:
    name: str
    meta: Meta


@dataclass(frozen=True)
class Read:
    body: bytes
    meta: Meta


def original_of(name: str) -> str:
    """The page a conflict copy was taken from (``MEMORY.conflicted:123.md`` → ``MEMORY.md``)."""
    return _CONFLICT_COPY.sub(lambda m: m.group(1), name)


def is_conflict_copy(name: str) -> bool:
    """``Page.conflicted:1754000012345.md``: SilverBullet's copy of a version it moved aside."""
    return bool(_CONFLICT_COPY.search(name))


def remote_name_problem(name: str) -> str | None:
    """Why a listed name is unsafe to map onto a local path (None when it is fine)."""
    if unicodedata.normalize("NFC", name) != name:
        return "nom non normalisé (NFD)"
    if name.startswith("/") or "\\" in name or "\x00" in name:
        return "chemin absolu ou caractère interdit"
    parts = name.split("/")
    if any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        return "segment vide, . ou .., ou dossier caché"
    if any(ord(c) < 32 for c in name):
        return "caractère de contrôle"
    return None


class InboxGuard(httpx.BaseTransport):
    """Refuses, before sending, any request but GET and PUT-under-the-inbox."""

    def __init__(self, inner: httpx.BaseTransport, fs_path: str, inbox: str):
        self.inner = inner
        self.allowed_put = fs_path + "/" + inbox

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        method = request.method.upper()
        if method == "GET":
            return self.inner.handle_request(request)
        path = unquote(request.url.path)
        if (
            method == "PUT"
            and path.startswith(self.allowed_put)
            and "/../" not in path
            and "/./" not in path
        ):
            return self.inner.handle_request(request)
        raise ForbiddenRequest(
            f"requête refusée par ocmem avant envoi : {method} {path}",
            fix="ocmem n'envoie que des lectures, et des écritures sous la boîte de dépôt ; c'est un bogue à signaler",
        )

    def close(self) -> None:
        self.inner.close()


class SilverBullet:
    def __init__(
        self,
        config: SyncConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        attempts: int = 4,
        waiting: Waiting | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.config = config
        self._monotonic = monotonic
        self._deadline: float | None = None  # on ``monotonic``'s clock; None: no deadline
        self._waiting = waiting or not_said
        self._what = f"en attente de SilverBullet ({config.url})"
        base = httpx.URL(config.url)
        # Requests carry the whole path (prefix included), so the client's base is the origin
        # alone: httpx would otherwise add the prefix twice (/sb/sb/.fs).
        self.fs_path = base.path.rstrip("/") + "/.fs"
        origin = str(base.copy_with(path="/", query=None, fragment=None)).rstrip("/")
        # gzip only: the reads inflate it themselves, counting every byte (``_body``).
        headers = {"X-Sync-Mode": "true", "User-Agent": "ocmem", "Accept-Encoding": "gzip"}
        if config.token:
            headers["Authorization"] = f"Bearer {config.token}"
        self.requests_sent = 0
        self._client = httpx.Client(
            base_url=origin,
            # No TLS context for plain http: building one costs more than a no-op pull.
            transport=InboxGuard(
                transport or httpx.HTTPTransport(verify=base.scheme == "https"),
                self.fs_path,
                config.inbox,
            ),
            headers=headers,
            timeout=httpx.Timeout(
                config.timeout_seconds, connect=min(10.0, config.timeout_seconds)
            ),
            follow_redirects=False,
            event_hooks={"request": [self._count]},
        )
        self._retry_wait = config.retry_wait_seconds
        self._attempts = attempts

    def _count(self, request: httpx.Request) -> None:
        self.requests_sent += 1

    def set_deadline(self, seconds: float, fix: str | None = None) -> None:
        """From now on, every request and every byte must come within ``seconds``; ``fix``: what
        the error says to do when they do not (by default, the pull's setting)."""
        self._deadline = self._monotonic() + seconds
        self._deadline_seconds = seconds
        self._deadline_fix = fix

    def _left(self) -> float | None:
        return None if self._deadline is None else self._deadline - self._monotonic()

    def _past_deadline(self) -> PastDeadline:
        seconds = f"{self._deadline_seconds:g}"
        return PastDeadline(
            f"SilverBullet ({self.config.url}) n'a pas tout envoyé en {seconds} s : arrêté là, "
            "un serveur qui répond trop lentement ne retient pas ocmem",
            fix=self._deadline_fix
            or "vérifie que SilverBullet répond normalement (ouvre-le dans un navigateur) ; si "
            "la connexion est seulement lente, augmente `silverbullet.pull_deadline_seconds` "
            f"dans ocmem.yaml (actuellement {seconds})",
        )

    def _timeout(self) -> httpx.Timeout:
        """Each request's timeout: ``timeout_seconds``, or what is left of the deadline."""
        seconds = self.config.timeout_seconds
        left = self._left()
        if left is not None:
            if left <= 0:
                raise self._past_deadline()
            seconds = min(seconds, left)
        return httpx.Timeout(seconds, connect=min(10.0, seconds))

    def _sleep(self, seconds: float) -> None:
        """A wait between retries, never past the deadline (the next try then stops)."""
        left = self._left()
        time.sleep(max(0.0, seconds if left is None else min(seconds, left)))

    def _body(
        self, response: httpx.Response, what: str, max_bytes: int, budget: Budget | None
    ) -> bytes:
        """The body as it streams, stopped past ``max_bytes`` (counted decoded: a compressed
        bomb counts at its real size, and is never inflated past it), the ``budget`` or the
        deadline. Read raw and inflated here, so that every packet that arrives is counted and
        timed: a decoder holding bytes back would let a slow server hold the read."""
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", "gzip"):
            raise SilverBulletError(
                f"réponse de SilverBullet encodée en {encoding!r} pour {what}, non demandé",
                fix="vérifie l'URL (un proxy devant SilverBullet ?)",
            )
        inflate = zlib.decompressobj(wbits=31) if encoding == "gzip" else None
        chunks: list[bytes] = []
        size = 0

        def keep(data: bytes) -> None:
            nonlocal size
            size += len(data)
            if size > max_bytes:
                raise TooLarge(what, max_bytes)
            if budget is not None and not budget.spend(len(data)):
                raise BudgetSpent(what, budget.total)
            chunks.append(data)

        if response.is_stream_consumed:  # a transport read it already (a test's seam): decoded
            keep(response.content)
            return b"".join(chunks)
        try:
            for raw in response.iter_raw():
                left = self._left()
                if left is not None and left <= 0:
                    raise self._past_deadline()
                if inflate is None:
                    keep(raw)
                    continue
                keep(inflate.decompress(raw, max_bytes - size + 1))
                while inflate.unconsumed_tail:
                    keep(inflate.decompress(inflate.unconsumed_tail, max_bytes - size + 1))
            if inflate is not None:
                keep(inflate.flush())
        except zlib.error as exc:
            raise _Transient(f"réponse compressée illisible pour {what} ({exc})") from None
        return b"".join(chunks)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> SilverBullet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _url(self, name: str) -> str:
        return self.fs_path + "/" + quote(name, safe="/")

    def _retrying(self, retry_on: Callable[[BaseException], bool]) -> Retrying:
        return Retrying(
            retry=retry_if_exception(retry_on),
            # retries stop at the attempts' count or once the timeout has gone by, whichever first
            stop=stop_after_attempt(self._attempts) | stop_after_delay(self.config.timeout_seconds),
            wait=wait_exponential(multiplier=self._retry_wait, max=8)
            + wait_random(0, self._retry_wait),
            sleep=self._sleep,
            reraise=True,
        )

    def _read_request(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        *,
        max_bytes: int = _ANY_BODY_MAX_BYTES,
        budget: Budget | None = None,
    ) -> tuple[httpx.Response, bytes]:
        """The answer to one GET and its body, read as it streams (``_body``)."""

        def retry_on(exc: BaseException) -> bool:
            left = self._left()
            return (
                isinstance(exc, (httpx.TransportError, _Transient))
                and not isinstance(exc, _NO_ANSWER)
                and (left is None or left > 0)
            )

        try:
            with self._waiting(self._what):
                for attempt in self._retrying(retry_on):
                    with (
                        attempt,
                        self._client.stream(
                            "GET", url, headers=headers, timeout=self._timeout()
                        ) as response,
                    ):
                        if response.status_code in _TRANSIENT_STATUS:
                            raise _Transient(f"HTTP {response.status_code}")
                        self._check(response)
                        return response, self._body(response, unquote(url), max_bytes, budget)
        except _Transient as exc:
            raise SilverBulletError(
                f"SilverBullet ({self.config.url}) ne répond pas correctement ({exc})",
                fix="réessaie plus tard",
            ) from exc
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _unreachable(self, exc: httpx.TransportError) -> SilverBulletError:
        left = self._left()
        if left is not None and left <= 0:
            return self._past_deadline()  # its timeouts were cut to the deadline
        url, seconds = self.config.url, f"{self.config.timeout_seconds:g}"
        if isinstance(exc, _NO_ANSWER):
            return SilverBulletError(
                f"SilverBullet ({url}) n'a pas répondu en {seconds} s : la connexion est "
                "acceptée, mais aucune réponse ne vient",
                fix=f"vérifie que SilverBullet tourne et répond à {url} (ouvre-la dans un "
                "navigateur) et qu'aucun proxy ne bloque ; s'il est seulement lent, augmente "
                f"`silverbullet.timeout_seconds` dans ocmem.yaml (actuellement {seconds})",
            )
        if isinstance(exc, httpx.ConnectTimeout):
            why = f"pas de connexion en {self._client.timeout.connect or 0:g} s"
        elif isinstance(exc, httpx.ConnectError):
            why = "connexion refusée, ou adresse introuvable"
        else:
            why = "échange interrompu"
        return SilverBulletError(
            f"SilverBullet injoignable à {url} : {why} ({type(exc).__name__})",
            fix=f"vérifie que SilverBullet tourne, l'URL {url} et le réseau",
        )

    def _check(self, response: httpx.Response) -> None:
        status = response.status_code
        location = response.headers.get("location", "")
        if status == 401 or "/.auth" in location:
            raise SilverBulletError(
                "SilverBullet a refusé le jeton (401)",
                fix=f"vérifie que {ENV_TOKEN} ou le fichier {ENV_TOKEN_FILE} contient le SB_AUTH_TOKEN du serveur",
            )
        if 300 <= status < 400:
            raise SilverBulletError(
                f"SilverBullet a redirigé la requête (HTTP {status} vers {location or '?'})",
                fix="vérifie l'URL configurée (préfixe éventuel) ; ocmem ne suit pas les redirections",
            )
        content_type = response.headers.get("content-type", "")
        if (
            status == 200
            and "text/html" in content_type
            and "x-last-modified" not in response.headers
        ):
            raise SilverBulletError(
                f"{self.config.url} a répondu par une page HTML : ce n'est pas l'API /.fs de SilverBullet",
                fix="vérifie l'URL (sans /.fs, avec le préfixe de l'instance s'il y en a un)",
            )

    def list(self) -> list[RemoteFile]:
        try:
            response, body = self._read_request(self.fs_path, max_bytes=LISTING_MAX_BYTES)
        except TooLarge as exc:
            raise SilverBulletError(
                f"la liste des fichiers de SilverBullet ({self.config.url}) dépasse "
                f"{exc.bound >> 20} Mio sans finir : arrêtée là, rien n'a été tiré",
                fix="vérifie le serveur (une liste qui ne finit pas est un serveur défaillant) "
                "et l'URL configurée",
            ) from None
        if response.status_code != 200 or "json" not in response.headers.get("content-type", ""):
            self._unexpected(response, "la liste des fichiers")
        expected = self.config.expect_space_path
        if expected and response.headers.get("x-space-path") != expected:
            raise Refused(
                f"ce serveur sert l'espace {response.headers.get('x-space-path')!r}, pas {expected!r}",
                fix="vérifie l'URL ou `silverbullet.expect_space_path`",
            )
        try:
            return [
                RemoteFile(str(item["name"]), Meta(int(item["lastModified"]), int(item["size"])))
                for item in json.loads(body)
            ]
        except (ValueError, KeyError, TypeError) as exc:
            raise SilverBulletError(
                "liste des fichiers illisible", fix="vérifie que l'URL pointe vers SilverBullet v2"
            ) from exc

    def meta(self, name: str) -> Meta | None:
        response, _ = self._read_request(self._url(name), {"X-Get-Meta": "true"})
        if response.status_code == 404:
            return None
        if response.status_code != 200 or "x-last-modified" not in response.headers:
            self._unexpected(response, name)
        return Meta.from_headers(response.headers)

    def read(
        self, name: str, *, max_bytes: int | None = None, budget: Budget | None = None
    ) -> Read | None:
        """The file's bytes with their metadata; a torn body (wrong length) is read again.
        Past ``max_bytes`` or the ``budget``: ``TooLarge``, nothing kept."""

        def retry_on(exc: BaseException) -> bool:
            return isinstance(exc, _Transient)

        bound = PAGE_MAX_BYTES if max_bytes is None else max_bytes
        try:
            for attempt in self._retrying(retry_on):
                with attempt:
                    response, body = self._read_request(
                        self._url(name), max_bytes=bound, budget=budget
                    )
                    if response.status_code == 404:
                        return None
                    if response.status_code != 200 or "x-last-modified" not in response.headers:
                        self._unexpected(response, name)
                    meta = Meta.from_headers(response.headers)
                    if len(body) != meta.size:
                        raise _Transient(f"lecture incomplète de {name}")
                    return Read(body, meta)
        except _Transient as exc:
            raise TornRead(
                f"{exc} (écriture en cours côté serveur ?)", fix="réessaie plus tard"
            ) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def put(self, name: str, body: bytes) -> Meta:
        """Write ``name``. Never sends X-Last-Modified: the server stamps its own time."""

        def retry_on(exc: BaseException) -> bool:
            return isinstance(exc, _NOT_SENT)

        try:
            with self._waiting(self._what):
                for attempt in self._retrying(retry_on):
                    with attempt:
                        response = self._client.put(
                            self._url(name),
                            content=body,
                            headers={"Content-Type": "text/markdown"},
                        )
        except _NOT_SENT as exc:
            raise self._unreachable(exc) from exc
        except _NO_ANSWER as exc:
            raise UnknownOutcome(
                f"écriture de {name} sans réponse de SilverBullet ({self.config.url}) en "
                f"{self.config.timeout_seconds:g} s : appliquée ou non",
                fix="relance quand SilverBullet répond : ocmem relit la page avant de réécrire",
            ) from exc
        except httpx.TransportError as exc:
            raise UnknownOutcome(
                f"écriture de {name} interrompue ({type(exc).__name__}) : appliquée ou non",
                fix="relance : ocmem relit la page avant de réécrire",
            ) from exc
        if response.status_code == 403:
            raise Refused(
                f"SilverBullet refuse l'écriture de {name} : {response.text.strip()[:120]}",
                fix="l'espace est-il en lecture seule (SB_READ_ONLY) ?",
            )
        if response.status_code in _TRANSIENT_STATUS:
            raise UnknownOutcome(
                f"écriture de {name} : HTTP {response.status_code}",
                fix="relance : ocmem relit la page avant de réécrire",
            )
        self._check(response)
        if response.status_code != 200:
            self._unexpected(response, name)
        return (
            Meta.from_headers(response.headers)
            if "x-last-modified" in response.headers
            else Meta(0, len(body))
        )

    def _unexpected(self, response: httpx.Response, what: str) -> NoReturn:
        raise SilverBulletError(
            f"réponse inattendue pour {what} : HTTP {response.status_code}",
            fix="vérifie l'URL et la version de SilverBullet (v2 attendue)",
        )
