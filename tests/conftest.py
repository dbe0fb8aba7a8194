"""Shared fixtures: every test runs in its own HOME, XDG dirs and ocmem home (never the real ones)."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from ocmem.config import Settings, load_settings
from ocmem.install import Installer
from ocmem.memory import Memory
from ocmem.proposals import Proposals
from ocmem.workspace import Workspace

# CI is reproducible (a red run is the same on every machine); dev runs explore new examples.
settings.register_profile(
    "ci",
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


HOME_ID = "maison"
"""The id of the test home: its pages are Agents/Inbox/maison/journal.md and …/pending.md."""


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_home = tmp_path / "user-home"
    fake_home.mkdir()
    monkeypatch.setenv("HOME", str(fake_home))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(var, str(fake_home / var.lower()))
    monkeypatch.setenv("OCMEM_HOME", str(tmp_path / "ocmem-home"))
    for var in list(os.environ):
        if var.startswith(("OCMEM_SILVERBULLET", "OCMEM_SESSION")):
            monkeypatch.delenv(var)
    return fake_home


class Clock:
    """An injected clock the tests move by hand."""

    def __init__(self, start: datetime = datetime(2026, 11, 29, 10, 0)):
        self.value = start

    def __call__(self) -> datetime:
        return self.value

    def advance(self, **delta: float) -> None:
        self.value += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def home(tmp_path: Path, clock: Clock) -> Path:
    path = Path(os.environ["OCMEM_HOME"])
    Installer(Workspace(load_settings(path), now=clock), home_id=HOME_ID).run()
    return path


@pytest.fixture
def app_settings(home: Path) -> Settings:
    return load_settings(home)


@pytest.fixture
def workspace(app_settings: Settings, clock: Clock) -> Workspace:
    return Workspace(app_settings, now=clock)


@pytest.fixture
def memory(workspace: Workspace) -> Memory:
    return Memory(workspace)


@pytest.fixture
def proposals(workspace: Workspace) -> Proposals:
    return Proposals(workspace)


def journal_fields(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "titre": "Déployer le service X",
        "tags": ["docker", "vps"],
        "demande": "déployer X sur le VPS",
        "fait": "docker compose up -d",
        "piege": "le port 8080 était déjà pris",
        "lecon": "vérifier les ports libres avant de déployer",
        "resultat": "réussi",
    }
    fields.update(overrides)
    return fields


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def run_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., CliResult]:
    """Run ``ocmem`` in-process through its real entry point (argument parsing, error mapping)."""
    from ocmem.entry import main

    def run(*args: str, stdin: str = "") -> CliResult:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main(list(args))
        captured = capsys.readouterr()
        code = exit_info.value.code
        return CliResult(code if isinstance(code, int) else 1, captured.out, captured.err)

    return run


@pytest.fixture
def files_snapshot(home: Path) -> Callable[[], dict[str, bytes]]:
    """Bytes of every user-visible file under the home (ocmem's own state excluded)."""

    def snapshot() -> dict[str, bytes]:
        return {
            p.relative_to(home).as_posix(): p.read_bytes()
            for p in sorted(home.rglob("*"))
            if p.is_file() and ".ocmem" not in p.relative_to(home).parts
        }

    return snapshot


@pytest.fixture
def unchanged(files_snapshot: Callable[[], dict[str, bytes]]) -> Iterator[None]:
    """Asserts the test body left every memory file byte-identical (refusals write nothing)."""
    before = files_snapshot()
    yield
    assert files_snapshot() == before


# --- SilverBullet ---------------------------------------------------------------------------

SB_TOKEN = "test-token-7f3a9c2e5b1d"


@pytest.fixture
def sb() -> Iterator[Any]:
    """A SilverBullet-faithful server on loopback, with auth on."""
    from support.sbserver import FakeSilverBullet

    with FakeSilverBullet(token=SB_TOKEN) as server:
        yield server


def configure_sync(home: Path, url: str, token: str | None = SB_TOKEN, **extra: Any) -> None:
    """Point the ocmem home at ``url`` through ocmem.yaml and a 0600 token file."""
    import yaml

    section: dict[str, Any] = {
        "url": url,
        "retry_wait_seconds": 0.01,
        "timeout_seconds": 5,
        "quiet_seconds": 0.01,
        "patience_seconds": 5,
    }
    if token is not None:
        token_file = home / ".ocmem" / "silverbullet.token"
        token_file.parent.mkdir(parents=True, exist_ok=True)
        token_file.write_text(token + "\n")
        token_file.chmod(0o600)
    section.update(extra)
    config = home / "ocmem.yaml"
    current = yaml.safe_load(config.read_text()) if config.exists() else {}
    current["silverbullet"] = section
    config.write_text(yaml.safe_dump(current, allow_unicode=True))


@pytest.fixture
def synced(home: Path, sb: Any) -> Path:
    configure_sync(home, sb.url)
    return home
