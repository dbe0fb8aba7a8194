"""The sandbox of ``ocmem essai``: a temporary folder that holds everything the run touches.

``<root>/home`` is HOME, its ``.config`` XDG_CONFIG_HOME, and ``.config/opencode`` both
OpenCode's configuration folder and the ocmem home of the run (``ocmem init`` made there, as a
user does); the XDG data, cache and state folders, TMPDIR, the project OpenCode works in and the
SilverBullet stand-in's space are beside it. Every process of the run (OpenCode, ocmem, the
gate) gets an environment built from scratch for that layout, with the network refused: an HTTP
proxy on the loopback that answers 403 to anything but the loopback and counts the attempts
(``NO_PROXY`` keeps the scripted model, the stand-in and the test page direct), and the
sandbox's own ``crontab`` and ``systemctl`` first on the PATH (ocmem.trial.schedulers). Nothing of
the user's home, OpenCode configuration or crontab is read or written by what runs inside; the
folder goes at the end (``--garder`` keeps it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socketserver
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import ocmem
from ocmem.trial.schedulers import Asked, read_journal

# OpenCode's own fetches and installs, switched off (docs/opencode.md §7; the e2e harness sets
# the same).
DISABLE_FLAGS: tuple[str, ...] = (
    "OPENCODE_DISABLE_AUTOUPDATE",
    "OPENCODE_DISABLE_MODELS_FETCH",  # else it fetches models.opencode.ai
    "OPENCODE_DISABLE_SHARE",
    "OPENCODE_DISABLE_LSP_DOWNLOAD",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    "OPENCODE_DISABLE_CLAUDE_CODE",  # no ~/.claude/CLAUDE.md, no .claude/skills
    "OPENCODE_DISABLE_EXTERNAL_SKILLS",  # no ~/.agents/skills etc.
)
LOOPBACK = "127.0.0.1,localhost"
KEPT_CLOCK = ("TZ", "LD_PRELOAD", "FAKETIME", "FAKETIME_DONT_FAKE_MONOTONIC")


class RefusingProxy:
    """An HTTP(S) proxy on the loopback that refuses every request at once (a refusal, not a
    silence: OpenCode would wait minutes on a proxy that never answers) and keeps its target."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                self.connection.settimeout(10)
                try:
                    line = self.rfile.readline(65537).decode("latin-1").split()
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                except OSError:
                    line = []
                proxy.attempts.append(" ".join(line[:2]) or "?")
                body = b"ocmem essai : aucun acces reseau\n"
                head = f"HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n"
                with contextlib.suppress(OSError):
                    self.wfile.write(head.encode() + body)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def package_root() -> Path:
    """The folder that holds the running ``ocmem`` package: every process of the run imports
    this one (the gate OpenCode starts included), whatever else the machine has installed."""
    return Path(ocmem.__file__).resolve().parents[1]


@dataclass
class Sandbox:
    root: Path
    keep: bool = False
    proxy: RefusingProxy = field(default_factory=RefusingProxy)
    extra_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, keep: bool = False) -> Sandbox:
        root = Path(tempfile.mkdtemp(prefix="ocmem-essai-")).resolve()
        sandbox = cls(root, keep)
        for folder in (
            sandbox.ocmem_home,
            sandbox.home / ".local" / "share",
            sandbox.home / ".local" / "state",
            sandbox.home / ".cache",
            sandbox.tmp,
            sandbox.managed,
            sandbox.project,
            sandbox.space,
            sandbox.out,
            sandbox.bin,
        ):
            folder.mkdir(parents=True, exist_ok=True)
        # `ocmem` on the agent's PATH is this ocmem: a command the plugin lets through would run.
        # The user's crontab and systemctl come first on no PATH of the run: in their place, the
        # sandbox's (ocmem.trial.schedulers), a crontab kept in a file of the sandbox and a
        # systemctl that reaches no service manager, each logging what it was asked.
        stand_in = (
            f'PYTHONPATH="{package_root()}" exec "{sys.executable}" -m ocmem.trial.schedulers '
            f'"{sandbox.schedulers_log}" "{sandbox.crontab}"'
        )
        programs = {
            "ocmem": f'exec "{sys.executable}" -m ocmem "$@"',
            "crontab": f'{stand_in} crontab "$@"',
            "systemctl": f'{stand_in} systemctl "$@"',
        }
        for name, body in programs.items():
            program = sandbox.bin / name
            program.write_text(f"#!/bin/sh\n{body}\n")
            program.chmod(0o755)
        return sandbox

    @property
    def schedulers_log(self) -> Path:
        return self.out / "crontab-systemctl.log"

    @property
    def crontab(self) -> Path:
        """The sandbox's crontab (``crontab -l`` reads it, an install writes it)."""
        return self.root / "crontab"

    def scheduler_calls(self) -> list[Asked]:
        """What the sandbox's crontab and systemctl were asked, in order."""
        return read_journal(self.schedulers_log)

    # -- layout ---------------------------------------------------------------------------
    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def config_home(self) -> Path:
        return self.home / ".config"

    @property
    def ocmem_home(self) -> Path:
        """OpenCode's configuration folder, and the ocmem home of the run."""
        return self.config_home / "opencode"

    @property
    def project(self) -> Path:
        return self.root / "projet"

    @property
    def space(self) -> Path:
        return self.root / "espace"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def managed(self) -> Path:
        """An empty stand-in for /etc/opencode (OpenCode's managed configuration)."""
        return self.root / "opencode-gere"

    @property
    def out(self) -> Path:
        """What OpenCode printed, for a curious user (``--garder``)."""
        return self.root / "sorties"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    # -- processes ------------------------------------------------------------------------
    def env(
        self, cwd: Path | None = None, outer: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """Every process's environment, built from scratch (``outer``: the user's, of which only
        PATH, the Python search path and the clock's settings are kept)."""
        outer = os.environ if outer is None else outer
        python_path = [str(package_root()), *filter(None, [outer.get("PYTHONPATH")])]
        env = {
            "PATH": os.pathsep.join([str(self.bin), outer.get("PATH", os.defpath)]),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.config_home),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "TMPDIR": str(self.tmp),
            "PWD": str(cwd or self.project),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "PYTHONPATH": os.pathsep.join(python_path),
            "HTTP_PROXY": self.proxy.url,
            "HTTPS_PROXY": self.proxy.url,
            "http_proxy": self.proxy.url,
            "https_proxy": self.proxy.url,
            "NO_PROXY": LOOPBACK,
            "no_proxy": LOOPBACK,
            "OPENCODE_TEST_MANAGED_CONFIG_DIR": str(self.managed),
            **{flag: "1" for flag in DISABLE_FLAGS},
        }
        # The clock the user runs essai on (a time zone, libfaketime) is every process's.
        env |= {name: outer[name] for name in KEPT_CLOCK if outer.get(name)}
        return {**env, **self.extra_env}

    def ocmem(
        self, *args: str, home: Path | None = None, stdin: str = ""
    ) -> subprocess.CompletedProcess[str]:
        """``ocmem --home <home> ARGS`` as a user runs it, in the sandbox."""
        return subprocess.run(
            [sys.executable, "-m", "ocmem", "--home", str(home or self.ocmem_home), *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=self.project,
            env=self.env(),
            timeout=120,
            check=False,
        )

    def close(self) -> None:
        self.proxy.stop()
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
