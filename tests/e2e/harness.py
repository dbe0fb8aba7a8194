"""Hermetic end-to-end harness: the real OpenCode binary driven by a scripted fake LLM.

Typical test (see ``test_harness_smoke.py`` and ``README.md``)::

    import pytest
    from e2e.fake_llm import Text, ToolCalls
    from e2e.harness import OpenCode  # the fixtures (oc, fake_llm, …) come from conftest.py

    pytestmark = pytest.mark.e2e

    def test_something(oc: OpenCode) -> None:
        project = oc.project()
        oc.llm.set_script(ToolCalls.one("bash", command="echo hi", description="x"), Text("done"))
        result = oc.run(project, "say hi")
        assert result.returncode == 0, oc.debug_report(result)
        assert result.final_text == "done"

Everything OpenCode reads or writes lives under a per-test temp HOME; outbound HTTP(S) goes to
a refusing proxy (``netguard``) and the ``oc`` fixture fails the test at teardown if anything
tried to leave the machine. Stdlib + pytest + httpx only.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import httpx
import pytest

from e2e.fake_llm import FakeLLM
from e2e.netguard import NetGuard
from ocmem.trial.sandbox import DISABLE_FLAGS, LOOPBACK
from ocmem.trial.scriptedmodel import opencode_config

__all__ = [
    "DISABLE_FLAGS",
    "OPENCODE_VERSION",
    "E2EUnavailable",
    "EventStream",
    "OpenCode",
    "OpenCodeInstall",
    "OpenCodeServer",
    "OpenCodeTimeout",
    "RunResult",
    "assistant_text",
    "base_config",
    "cache_dir",
    "e2e_required",
    "ensure_install",
    "ensure_opencode",
    "ensure_plugin_deps",
    "parse_events",
    "require_e2e",
    "run_opencode",
    "seed_config_dir",
    "serve_opencode",
]

OPENCODE_VERSION = "1.18.33"
PLUGIN_PACKAGE = "@opencode-ai/plugin"
REPO_ROOT = Path(__file__).resolve().parents[2]

# Environment at import time: npm must see the real HOME (~/.npmrc, npm cache) even when a
# test-suite fixture has monkeypatched HOME/XDG_* by the time an install runs.
_ORIGINAL_ENV: dict[str, str] = dict(os.environ)
# What scripts/test-clock-moved sets: libfaketime, its settings, and its Python shim.
CLOCK_MOVED_ENV = ("LD_PRELOAD", "FAKETIME", "FAKETIME_DONT_FAKE_MONOTONIC", "PYTHONPATH")


# --------------------------------------------------------------------------------------------
# Prerequisites, skip/fail policy


class E2EUnavailable(RuntimeError):
    """A prerequisite (npm, node, rg, network for the one-time install) is missing."""


def e2e_required() -> bool:
    """True when ``OCMEM_E2E_REQUIRED`` is set (CI): missing prerequisites then fail loudly."""
    value = os.environ.get("OCMEM_E2E_REQUIRED", "").strip().lower()
    return value not in ("", "0", "false", "no")


def require_e2e(reason: str) -> NoReturn:
    """Skip (local default) or fail (``OCMEM_E2E_REQUIRED`` set) with ``reason``."""
    if e2e_required():
        pytest.fail(f"e2e prerequisites missing and OCMEM_E2E_REQUIRED is set: {reason}", False)
    pytest.skip(f"e2e: {reason} (set OCMEM_E2E_REQUIRED=1 to turn this skip into a failure)")


def check_prerequisites() -> None:
    """Raise ``E2EUnavailable`` unless node, npm and ripgrep are on PATH on a supported OS."""
    system = platform.system()
    if system not in ("Linux", "Darwin"):
        raise E2EUnavailable(f"unsupported platform {system!r} (Linux/macOS only)")
    path = _ORIGINAL_ENV.get("PATH")
    missing = [tool for tool in ("node", "npm") if shutil.which(tool, path=path) is None]
    if missing:
        raise E2EUnavailable(f"{' and '.join(missing)} not on PATH (install Node.js >= 18)")
    if shutil.which("rg", path=path) is None:
        raise E2EUnavailable(
            "ripgrep (rg) not on PATH: OpenCode's skill/grep/glob tools need it and would "
            "otherwise try to download it from github.com (apt-get install -y ripgrep)"
        )


# --------------------------------------------------------------------------------------------
# Installation (cached, locked)


def cache_dir() -> Path:
    """``$OCMEM_E2E_CACHE`` or ``<repo>/.cache/e2e`` (must be gitignored)."""
    env = os.environ.get("OCMEM_E2E_CACHE")
    return Path(env).expanduser().resolve() if env else REPO_ROOT / ".cache" / "e2e"


@contextlib.contextmanager
def _install_lock(cache: Path) -> Iterator[None]:
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".install.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _npm_install(directory: Path, spec: str, timeout: float = 600) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    pkg = directory / "package.json"
    if not pkg.exists():  # without it npm walks up and installs into a parent package
        pkg.write_text(json.dumps({"name": directory.name, "private": True}, indent=2) + "\n")
    cmd = ["npm", "install", "--no-audit", "--no-fund", "--save-exact", spec]
    try:
        proc = subprocess.run(
            cmd,
            cwd=directory,
            env=_ORIGINAL_ENV,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise E2EUnavailable(
            f"`{' '.join(cmd)}` timed out after {timeout}s in {directory}"
        ) from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise E2EUnavailable(
            f"`{' '.join(cmd)}` failed (rc={proc.returncode}) in {directory}:\n{tail}"
        )


def _platform_packages() -> list[str]:
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system(), "linux")
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), "x64"
    )
    base = f"opencode-{system}-{arch}"
    return [base, f"{base}-baseline", f"{base}-musl", f"{base}-baseline-musl"]


def _binary_version(binary: Path) -> str | None:
    try:
        proc = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**_ORIGINAL_ENV, "OPENCODE_DISABLE_AUTOUPDATE": "1"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _find_binary(install_dir: Path) -> Path | None:
    nm = install_dir / "node_modules"
    candidates = [nm / ".bin" / "opencode"]
    # npm >= 11 may block opencode-ai's postinstall script (allowScripts): then run the
    # platform package's binary directly.
    candidates += [nm / pkg / "bin" / "opencode" for pkg in _platform_packages()]
    for candidate in candidates:
        if candidate.exists() and _binary_version(candidate) == OPENCODE_VERSION:
            return candidate
    return None


def ensure_opencode(cache: Path | None = None) -> Path:
    """Install ``opencode-ai@OPENCODE_VERSION`` into the cache (once) and return the binary."""
    check_prerequisites()
    root = cache or cache_dir()
    install_dir = root / f"opencode-ai-{OPENCODE_VERSION}"
    stamp = install_dir / ".binary"
    with _install_lock(root):
        if stamp.exists():
            cached = Path(stamp.read_text().strip())
            if cached.exists():
                return cached
        binary = _find_binary(install_dir)
        if binary is None:
            _npm_install(install_dir, f"opencode-ai@{OPENCODE_VERSION}")
            binary = _find_binary(install_dir)
        if binary is None:
            raise E2EUnavailable(
                f"opencode-ai@{OPENCODE_VERSION} installed in {install_dir} but no runnable "
                f"binary reporting version {OPENCODE_VERSION} was found "
                f"(looked at node_modules/.bin/opencode and node_modules/opencode-*/bin/opencode)"
            )
        stamp.write_text(str(binary))
        return binary


def ensure_plugin_deps(cache: Path | None = None) -> Path:
    """Install ``@opencode-ai/plugin@OPENCODE_VERSION`` once into the cache.

    Returns a directory holding ``node_modules/``, ``package.json`` and ``package-lock.json``
    that ``seed_config_dir`` links into OpenCode config dirs, so OpenCode's startup
    dependency install is skipped (no network) and plugins can import ``@opencode-ai/plugin``.
    """
    check_prerequisites()
    root = cache or cache_dir()
    deps = root / f"plugin-deps-{OPENCODE_VERSION}"
    marker = deps / "node_modules" / "@opencode-ai" / "plugin" / "package.json"
    with _install_lock(root):
        ok = False
        if marker.exists() and (deps / "package-lock.json").exists():
            ok = json.loads(marker.read_text()).get("version") == OPENCODE_VERSION
        if not ok:
            _npm_install(deps, f"{PLUGIN_PACKAGE}@{OPENCODE_VERSION}")
        return deps


@dataclass(frozen=True)
class OpenCodeInstall:
    binary: Path
    plugin_deps: Path
    version: str
    seconds: float  # time spent in ensure_install (≈0 when cached)

    @property
    def sdk_types(self) -> Path:
        """``@opencode-ai/sdk`` type definitions (endpoint reference)."""
        return self.plugin_deps / "node_modules" / "@opencode-ai" / "sdk" / "dist"


def ensure_install(cache: Path | None = None) -> OpenCodeInstall:
    start = time.monotonic()
    binary = ensure_opencode(cache)
    deps = ensure_plugin_deps(cache)
    return OpenCodeInstall(binary, deps, OPENCODE_VERSION, time.monotonic() - start)


def seed_config_dir(config_dir: Path, deps: Path, *, copy: bool = False) -> None:
    """Make OpenCode's startup ``npm install`` in ``config_dir`` a no-op.

    OpenCode (``Npm.install``) skips the install when ``node_modules/`` exists and the
    ``package-lock.json`` root deps contain every ``package.json`` dep plus
    ``@opencode-ai/plugin``. Existing files are left alone (a test adding its own deps must
    seed them itself).
    """
    config_dir.mkdir(parents=True, exist_ok=True)
    nm = config_dir / "node_modules"
    if not nm.exists() and not nm.is_symlink():
        if copy:
            shutil.copytree(deps / "node_modules", nm, symlinks=True)
        else:
            nm.symlink_to(deps / "node_modules", target_is_directory=True)
    for name in ("package.json", "package-lock.json"):
        if not (config_dir / name).exists():
            shutil.copyfile(deps / name, config_dir / name)


# --------------------------------------------------------------------------------------------
# Config, env, output parsing


def base_config(llm_base_url: str) -> dict[str, Any]:
    """The global ``opencode.json`` used for every test (tests may mutate ``oc.config``): the
    one ``ocmem essai`` writes, pointing OpenCode at the scripted model and nothing else."""
    return opencode_config(llm_base_url)


def parse_events(stdout: str) -> list[dict[str, Any]]:
    """Parse ``opencode run --format json`` NDJSON; non-JSON lines are kept as ``{"raw": line}``."""
    events: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            events.append({"type": "raw", "raw": line})
            continue
        events.append(value if isinstance(value, dict) else {"type": "raw", "raw": value})
    return events


class RunResult(subprocess.CompletedProcess[str]):
    """``CompletedProcess[str]`` of ``opencode run --format json`` plus parsed events."""

    duration: float

    @property
    def events(self) -> list[dict[str, Any]]:
        return parse_events(self.stdout or "")

    @property
    def texts(self) -> list[str]:
        return [
            str(e["part"].get("text", ""))
            for e in self.events
            if e.get("type") == "text" and isinstance(e.get("part"), dict)
        ]

    @property
    def final_text(self) -> str:
        texts = self.texts
        return texts[-1] if texts else ""

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        """The ``part`` of every ``tool_use`` event (``tool``, ``callID``, ``state``...)."""
        return [
            e["part"]
            for e in self.events
            if e.get("type") == "tool_use" and isinstance(e.get("part"), dict)
        ]

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == "error"]

    @property
    def session_id(self) -> str | None:
        for e in self.events:
            if e.get("sessionID"):
                return str(e["sessionID"])
        return None


class OpenCodeTimeout(AssertionError):
    pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])


# --------------------------------------------------------------------------------------------
# serve


class EventStream:
    """Background reader of ``GET /global/event`` (SSE) of a running ``opencode serve``.

    Each recorded event is ``{"index", "directory", "type", "properties", "payload"}``
    (``payload`` is the raw bus payload; ``index`` its position in ``events``). ``sync`` replication payloads are skipped.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.events: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._connected = threading.Event()
        self._closed = False
        self._client = httpx.Client(base_url=url, trust_env=False, timeout=httpx.Timeout(None))
        self._thread = threading.Thread(target=self._read, name="opencode-events", daemon=True)

    def start(self, timeout: float = 10.0) -> EventStream:
        self._thread.start()
        if not self._connected.wait(timeout):
            raise OpenCodeTimeout(f"no server.connected on {self.url}/global/event in {timeout}s")
        return self

    def _read(self) -> None:
        try:
            with self._client.stream("GET", "/global/event") as response:
                for line in response.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    try:
                        data = json.loads(line[5:].strip())
                    except json.JSONDecodeError:
                        continue
                    payload = data.get("payload") if isinstance(data, dict) else None
                    if not isinstance(payload, dict) or payload.get("type") == "sync":
                        continue
                    event = {
                        "index": len(self.events),
                        "directory": data.get("directory"),
                        "type": payload.get("type"),
                        "properties": payload.get("properties") or {},
                        "payload": payload,
                    }
                    with self._cond:
                        self.events.append(event)
                        self._cond.notify_all()
                    if event["type"] == "server.connected":
                        self._connected.set()
        except Exception:  # the server went away: normal at shutdown
            pass
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            self._connected.set()

    def close(self) -> None:
        self._client.close()

    def mark(self) -> int:
        """Index to pass as ``since`` to only consider later events."""
        with self._cond:
            return len(self.events)

    @staticmethod
    def _matches(event: Mapping[str, Any], type_: str, session_id: str | None) -> bool:
        if event["type"] != type_:
            return False
        return session_id is None or event["properties"].get("sessionID") == session_id

    def of_type(self, type_: str, session_id: str | None = None) -> list[dict[str, Any]]:
        with self._cond:
            return [e for e in self.events if self._matches(e, type_, session_id)]

    def wait_for(
        self,
        type_: str,
        *,
        session_id: str | None = None,
        since: int = 0,
        timeout: float = 60.0,
        predicate: Any = None,
    ) -> dict[str, Any]:
        """Wait for an event of ``type_`` (optionally of ``session_id`` and matching
        ``predicate(event)``) at index >= ``since``; return it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.events[since:]:
                    if self._matches(event, type_, session_id) and (
                        predicate is None or predicate(event)
                    ):
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    seen = [e["type"] for e in self.events[since:]]
                    raise OpenCodeTimeout(
                        f"no {type_} event (session={session_id}) within {timeout}s; "
                        f"stream closed={self._closed}; saw {seen[-30:]}"
                    )
                self._cond.wait(min(remaining, 0.5))


class OpenCodeServer:
    """A running ``opencode serve``; talk to it with the helpers or ``request()``.

    Endpoints (``@opencode-ai/sdk`` ``dist/gen/types.gen.d.ts``): ``POST /session`` (create),
    ``POST /session/{id}/message`` (prompt, waits for the reply), ``POST
    /session/{id}/prompt_async`` (204), ``GET /session/{id}/message``, ``GET /session/status``,
    ``POST /instance/dispose`` (runs plugin ``dispose`` hooks; SIGTERM does not).
    Every request carries ``?directory=<project>``. ``events`` records ``GET /global/event``.
    """

    def __init__(
        self, process: subprocess.Popen[str], url: str, project: Path, output: Path
    ) -> None:
        self.process = process
        self.url = url
        self.project = project
        self.output = output  # stdout+stderr of the server, including its log lines
        self.events = EventStream(url)
        self.output_pump: threading.Thread | None = None
        self.client = httpx.Client(
            base_url=url,
            params={"directory": str(project)},
            trust_env=False,  # never route loopback calls through a proxy from the test env
            timeout=httpx.Timeout(120.0, connect=5.0),
        )

    def request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        return self.client.request(method, path, **kw)

    def _ok(self, response: httpx.Response) -> httpx.Response:
        if response.status_code >= 400:
            raise AssertionError(
                f"{response.request.method} {response.request.url} -> "
                f"{response.status_code}: {response.text[:2000]}"
            )
        return response

    def create_session(self, title: str | None = None, parent_id: str | None = None) -> str:
        body: dict[str, Any] = {}
        if title is not None:
            body["title"] = title
        if parent_id is not None:
            body["parentID"] = parent_id
        return str(self._ok(self.client.post("/session", json=body)).json()["id"])

    def prompt(
        self,
        session_id: str,
        text: str,
        *,
        timeout: float = 120.0,
        wait_idle: bool = True,
        **body: Any,
    ) -> dict[str, Any]:
        """Send a user turn and wait for the assistant reply (``{"info", "parts"}``).

        With ``wait_idle`` (default) also wait for this turn's ``session.idle`` event, which
        OpenCode publishes slightly after the HTTP reply. Extra ``body`` keys (``agent``,
        ``model``, ``system``, ``tools``, ``noReply``) are passed through.
        """
        mark = self.events.mark()
        payload = {"parts": [{"type": "text", "text": text}], **body}
        response = self.client.post(f"/session/{session_id}/message", json=payload, timeout=timeout)
        result: dict[str, Any] = self._ok(response).json()
        if wait_idle and not body.get("noReply"):
            self.wait_idle(session_id, since=mark, timeout=timeout)
        return result

    def prompt_async(self, session_id: str, text: str, **body: Any) -> int:
        """Queue a user turn (204) and return an event mark for ``wait_idle(sid, since=mark)``."""
        mark = self.events.mark()
        payload = {"parts": [{"type": "text", "text": text}], **body}
        self._ok(self.client.post(f"/session/{session_id}/prompt_async", json=payload))
        return mark

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._ok(
            self.client.get(f"/session/{session_id}/message")
        ).json()
        return result

    def status(self) -> dict[str, Any]:
        """``GET /session/status``: ``{sessionID: {"type": "busy"|"retry"...}}`` (idle = absent)."""
        result: dict[str, Any] = self._ok(self.client.get("/session/status")).json()
        return result

    def wait_idle(self, session_id: str, since: int = 0, timeout: float = 60.0) -> dict[str, Any]:
        """Wait for the end of a turn started after event index ``since`` (e.g. the mark
        returned by ``prompt_async``): a ``session.status`` busy, then ``session.idle``.

        Waiting for "busy first" matters: the previous turn's ``session.idle`` can arrive after
        the mark was taken.
        """
        busy = self.events.wait_for(
            "session.status",
            session_id=session_id,
            since=since,
            timeout=timeout,
            predicate=lambda e: (e["properties"].get("status") or {}).get("type") == "busy",
        )
        return self.events.wait_for(
            "session.idle", session_id=session_id, since=busy["index"], timeout=timeout
        )

    def dispose(self, timeout: float = 30.0) -> None:
        """``POST /instance/dispose`` and wait until it is done.

        Pitfall: the HTTP call returns ``true`` at once while plugin ``dispose`` hooks are still
        running; completion is signalled by ``server.instance.disposed`` on ``/global/event``.
        """
        mark = self.events.mark()
        self._ok(self.client.post("/instance/dispose"))
        self.events.wait_for(
            "server.instance.disposed",
            since=mark,
            timeout=timeout,
            predicate=lambda e: e["properties"].get("directory") == str(self.project),
        )

    def stop(self, *, dispose: bool = True, timeout: float = 15.0) -> int | None:
        """Dispose the instance (optional), then SIGTERM (SIGKILL after ``timeout``)."""
        if self.process.poll() is None and dispose:
            with contextlib.suppress(httpx.HTTPError, AssertionError):
                self.dispose()
        self.client.close()
        self.events.close()
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
        if self.output_pump is not None:  # let the last (buffered) log lines reach the file
            self.output_pump.join(timeout=5)
        return self.process.returncode


def assistant_text(reply: Mapping[str, Any]) -> str:
    """Concatenated text parts of a ``prompt()`` reply or a message from ``messages()``."""
    parts = reply.get("parts") or []
    return "".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")


# --------------------------------------------------------------------------------------------
# The per-test environment


@dataclass
class OpenCode:
    """One hermetic OpenCode environment (temp HOME, fake LLM, netguard).

    ``config`` is written to ``$XDG_CONFIG_HOME/opencode/opencode.json`` before every launch;
    ``extra_env`` is added to the process environment (e.g. paths for probe plugins).
    """

    install: OpenCodeInstall
    root: Path
    llm: FakeLLM
    netguard: NetGuard
    config: dict[str, Any] = field(default_factory=dict)
    extra_env: dict[str, str] = field(default_factory=dict)
    allow_outbound: bool = False  # set True in a test that expects netguard hits
    # (uid, gid) to run OpenCode as (root only): the hardened-mode suite runs it as the agent
    run_as: tuple[int, int] | None = None
    runs: list[RunResult] = field(default_factory=list)
    servers: list[OpenCodeServer] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.config:
            self.config = base_config(self.llm.base_url)
        for d in (self.config_dir, self.data_home, self.cache_home, self.state_home, self.managed):
            d.mkdir(parents=True, exist_ok=True)
        (self.root / "out").mkdir(exist_ok=True)

    # -- paths ------------------------------------------------------------------------------------
    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def config_home(self) -> Path:
        return self.home / ".config"

    @property
    def data_home(self) -> Path:
        return self.home / ".local" / "share"

    @property
    def cache_home(self) -> Path:
        return self.home / ".cache"

    @property
    def state_home(self) -> Path:
        return self.home / ".local" / "state"

    @property
    def config_dir(self) -> Path:
        """``$XDG_CONFIG_HOME/opencode`` (global config, ``plugin/``, ``skills/``, AGENTS.md)."""
        return self.config_home / "opencode"

    @property
    def managed(self) -> Path:
        """Empty stand-in for /etc/opencode (``OPENCODE_TEST_MANAGED_CONFIG_DIR``)."""
        return self.root / "managed-config"

    @property
    def log_dir(self) -> Path:
        return self.data_home / "opencode" / "log"

    # -- building the scene -----------------------------------------------------------------------
    def project(
        self, name: str = "project", *, git: bool = False, files: Mapping[str, str] | None = None
    ) -> Path:
        """Create a project directory (optionally a git repo with one commit)."""
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        for rel, content in (files or {}).items():
            target = path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
        if git:
            env = {
                **self.env(path),
                "GIT_AUTHOR_NAME": "e2e",
                "GIT_COMMITTER_NAME": "e2e",
                "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
                "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
            }
            for cmd in (
                ["git", "init", "-q", "-b", "main"],
                ["git", "add", "-A"],
                ["git", "commit", "-q", "--allow-empty", "-m", "init"],
            ):
                subprocess.run(cmd, cwd=path, env=env, check=True, capture_output=True)
        return path

    def _config_target(self, project: Path | None) -> Path:
        return self.config_dir if project is None else project / ".opencode"

    def add_plugin(self, filename: str, source: str, *, project: Path | None = None) -> Path:
        """Write a plugin file into ``<config dir>/plugin/`` (global, or ``<project>/.opencode``)."""
        path = self._config_target(project) / "plugin" / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        return path

    def add_skill(
        self,
        name: str,
        description: str,
        body: str = "",
        *,
        project: Path | None = None,
        extra_files: Mapping[str, str] | None = None,
    ) -> Path:
        """Write ``<config dir>/skills/<name>/SKILL.md`` (global, or in ``<project>/.opencode``)."""
        skill_dir = self._config_target(project) / "skills" / name
        skill_dir.mkdir(parents=True, exist_ok=True)
        path = skill_dir / "SKILL.md"
        path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
        for rel, content in (extra_files or {}).items():
            (skill_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (skill_dir / rel).write_text(content)
        return path

    def out_path(self, name: str) -> Path:
        """A scratch file path under the test root (for probe plugins to write into)."""
        return self.root / "out" / name

    # -- environment ------------------------------------------------------------------------------
    def env(self, project: Path) -> dict[str, str]:
        """The complete process environment (built from scratch, not inherited)."""
        proxy = self.netguard.url
        env: dict[str, str] = {
            "PATH": _ORIGINAL_ENV.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.config_home),
            "XDG_DATA_HOME": str(self.data_home),
            "XDG_CACHE_HOME": str(self.cache_home),
            "XDG_STATE_HOME": str(self.state_home),
            "PWD": str(project),  # `run` resolves its directory as $PWD ?? cwd
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "HTTP_PROXY": proxy,
            "HTTPS_PROXY": proxy,
            "http_proxy": proxy,
            "https_proxy": proxy,
            "NO_PROXY": LOOPBACK,
            "no_proxy": LOOPBACK,
            "OPENCODE_TEST_MANAGED_CONFIG_DIR": str(self.managed),
        }
        for flag in DISABLE_FLAGS:
            env[flag] = "1"
        # A run with the clock moved (scripts/test-clock-moved): OpenCode and the gate too.
        env.update({k: v for k, v in _ORIGINAL_ENV.items() if k in CLOCK_MOVED_ENV})
        env.update(self.extra_env)
        return env

    def _prepare(self, project: Path) -> None:
        """Write config and seed every config dir OpenCode will npm-install into."""
        self.config_dir.mkdir(parents=True, exist_ok=True)
        (self.config_dir / "opencode.json").write_text(json.dumps(self.config, indent=2) + "\n")
        dirs = [self.config_dir]
        # .opencode dirs OpenCode will scan: the project's and its ancestors' (only those inside
        # the test root: never touch real directories), plus ~/.opencode
        project = project.resolve()
        root = self.root.resolve()
        for current in (project, *project.parents):
            if current != project and not current.is_relative_to(root):
                break
            if (current / ".opencode").is_dir():
                dirs.append(current / ".opencode")
        if (self.home / ".opencode").is_dir():
            dirs.append(self.home / ".opencode")
        for d in dirs:
            seed_config_dir(d, self.install.plugin_deps)

    def _user_kwargs(self) -> dict[str, Any]:
        if self.run_as is None:
            return {}
        uid, gid = self.run_as
        return {"user": uid, "group": gid, "extra_groups": []}

    # -- running ----------------------------------------------------------------------------------
    def run(
        self,
        project: Path,
        message: str,
        *,
        timeout: float = 120.0,
        args: Sequence[str] = (),
        check: bool = False,
    ) -> RunResult:
        """``opencode run --format json <message>`` in ``project``; returns a ``RunResult``.

        ``args`` are extra CLI args (e.g. ``["--session", sid]``, ``["--agent", "plan"]``).
        With ``check=True`` a non-zero exit raises with the debug report.
        """
        self._prepare(project)
        # Pitfall: `run` joins its positional args and wraps any containing a space in double
        # quotes ("say hi" reaches the model as "\"say hi\""). A non-TTY stdin is read and used
        # verbatim instead, so the message goes through stdin.
        cmd = [str(self.install.binary), "run", "--format", "json", *args]
        n = len(self.runs)
        start = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=project,
            env=self.env(project),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            **self._user_kwargs(),
        )
        try:
            stdout, stderr = proc.communicate(message, timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            partial = RunResult(cmd, -9, stdout, stderr)
            partial.duration = time.monotonic() - start
            raise OpenCodeTimeout(
                f"opencode run timed out after {timeout}s\n" + self.debug_report(partial)
            ) from None
        result = RunResult(cmd, proc.returncode, stdout, stderr)
        result.duration = time.monotonic() - start
        (self.root / "out" / f"run{n}.stdout").write_text(stdout)
        (self.root / "out" / f"run{n}.stderr").write_text(stderr)
        self.runs.append(result)
        if check and result.returncode != 0:
            raise AssertionError(
                f"opencode run exited {result.returncode}\n" + self.debug_report(result)
            )
        return result

    @contextlib.contextmanager
    def serve(
        self, project: Path, *, startup_timeout: float = 60.0, dispose: bool = True
    ) -> Iterator[OpenCodeServer]:
        """Start ``opencode serve`` on a free loopback port; stop it (dispose first) on exit."""
        self._prepare(project)
        n = len(self.servers)
        out_file = self.root / "out" / f"serve{n}.out"
        # --port 0 would try 4096 first (OpenCode's default) and only then a random port.
        cmd = [
            str(self.install.binary),
            "serve",
            "--hostname",
            "127.0.0.1",
            "--port",
            str(_free_port()),
        ]
        # --print-logs: the log file is written lazily and loses its tail when serve is killed.
        proc = subprocess.Popen(
            cmd,
            cwd=project,
            env={**self.env(project), "OPENCODE_PRINT_LOGS": "1"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            **self._user_kwargs(),
        )
        url_box: list[str] = []
        ready = threading.Event()

        def pump() -> None:  # copy output to a file, spot the "listening on" line
            assert proc.stdout is not None
            with open(out_file, "w") as fh:
                for line in proc.stdout:
                    fh.write(line)
                    fh.flush()
                    m = re.search(r"listening on (http://\S+)", line)
                    if m and not url_box:
                        url_box.append(m.group(1).rstrip("/"))
                        ready.set()
            ready.set()

        pump_thread = threading.Thread(target=pump, name="opencode-serve-out", daemon=True)
        pump_thread.start()
        server: OpenCodeServer | None = None
        try:
            # Pitfall: a request sent before "listening on" is printed can hang until the
            # client times out, so wait for the line, then poll health with short timeouts.
            if not ready.wait(startup_timeout) or not url_box:
                raise OpenCodeTimeout(
                    f"opencode serve did not report listening within {startup_timeout}s "
                    f"(exit={proc.poll()})\n{out_file.read_text() if out_file.exists() else ''}\n"
                    + self.debug_report()
                )
            server = OpenCodeServer(proc, url_box[0], project, out_file)
            server.output_pump = pump_thread
            deadline = time.monotonic() + startup_timeout
            while True:
                try:
                    if server.client.get("/global/health", timeout=2.0).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise OpenCodeTimeout(
                        "opencode serve never became healthy\n" + self.debug_report()
                    )
                time.sleep(0.1)
            server.events.start()
            self.servers.append(server)
            yield server
        finally:
            if server is not None:
                server.stop(dispose=dispose)
            elif proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)

    # -- debugging --------------------------------------------------------------------------------
    def log_files(self) -> list[Path]:
        return sorted(self.log_dir.glob("*.log")) if self.log_dir.exists() else []

    def log_text(self) -> str:
        """All of OpenCode's log files (``$XDG_DATA_HOME/opencode/log/*.log``)."""
        return "\n".join(p.read_text(errors="replace") for p in self.log_files())

    def debug_report(
        self, result: subprocess.CompletedProcess[str] | None = None, lines: int = 80
    ) -> str:
        """Everything useful when a test fails: run output, fake LLM exchange, netguard, log tail."""
        parts: list[str] = [f"e2e root: {self.root}"]
        if result is not None:
            parts.append(
                f"--- opencode exit {result.returncode}; stdout (tail):\n{_tail(result.stdout or '', 40)}"
            )
            parts.append(f"--- stderr (tail):\n{_tail(result.stderr or '', 40)}")
        parts.append(f"--- fake LLM requests:\n{self.llm.summary()}")
        attempts = self.netguard.attempts
        parts.append(f"--- netguard attempts: {[str(a) for a in attempts] or 'none'}")
        for server in self.servers:
            if server.output.exists():
                parts.append(
                    f"--- {server.output} (serve output + logs, tail):\n"
                    f"{_tail(server.output.read_text(errors='replace'), lines)}"
                )
        for log in self.log_files():
            parts.append(f"--- {log} (tail):\n{_tail(log.read_text(errors='replace'), lines)}")
        return "\n".join(parts)


def run_opencode(oc: OpenCode, project_dir: Path, message: str, **kw: Any) -> RunResult:
    """Function form of ``OpenCode.run`` (``opencode run --format json``)."""
    return oc.run(project_dir, message, **kw)


def serve_opencode(
    oc: OpenCode, project_dir: Path, **kw: Any
) -> contextlib.AbstractContextManager[OpenCodeServer]:
    """Function form of ``OpenCode.serve`` (context manager yielding an ``OpenCodeServer``)."""
    return oc.serve(project_dir, **kw)


# --------------------------------------------------------------------------------------------
