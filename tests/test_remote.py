"""The HTTP client's set-up errors, retry policy and token isolation."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import SB_TOKEN, Clock, configure_sync, journal_fields
from ocmem.errors import InputError, OcmemError, Refused
from ocmem.home.settings import load_settings
from ocmem.home.space import load_sync_config
from ocmem.home.workspace import Workspace
from ocmem.services import sync
from ocmem.services.memory import Memory
from ocmem.silverbullet.client import SilverBullet, UnknownOutcome


def client(home: Path) -> SilverBullet:
    return SilverBullet(load_sync_config(load_settings(home)))


def test_a_wrong_token_is_named(home: Path, sb: Any) -> None:
    configure_sync(home, sb.url, token="wrong-token-value")
    with pytest.raises(OcmemError, match="refusé le jeton") as error:
        sync.pull(Workspace(load_settings(home), clock=Clock()))
    assert "wrong-token-value" not in error.value.render()


def test_no_token_against_an_authenticated_server(home: Path, sb: Any) -> None:
    configure_sync(home, sb.url, token=None)
    with pytest.raises(OcmemError, match="refusé le jeton"):
        sync.pull(Workspace(load_settings(home), clock=Clock()))


def test_a_wrong_url_prefix_is_detected_not_mistaken_for_success(home: Path, sb: Any) -> None:
    configure_sync(home, sb.url + "/notes")
    with pytest.raises(OcmemError, match="page HTML"):
        sync.pull(Workspace(load_settings(home), clock=Clock()))


def test_redirects_are_not_followed(home: Path) -> None:
    from support.sbserver import FakeSilverBullet

    with FakeSilverBullet(flavor="go") as go_server:
        configure_sync(home, go_server.url, token=None)
        with client(home) as c:
            c._client.headers.pop("X-Sync-Mode")
            with pytest.raises(OcmemError, match="redirigé"):
                c.list()


def test_reads_retry_and_puts_do_not_retry_after_sending(synced: Path, sb: Any) -> None:
    with client(synced) as c:
        sb.fail_next(502, method="GET", path="/.fs", times=3)
        assert c.list() == []
        sb.fail_next(500, method="PUT", path="Agents/Inbox/x.md")
        with pytest.raises(UnknownOutcome):
            c.put("Agents/Inbox/x.md", b"x")
        assert len(sb.requests_matching("PUT")) == 1
        sb.fail_next(503, method="GET", path="/.fs", times=10)
        with pytest.raises(OcmemError, match="ne répond pas"):
            c.list()


def test_a_put_that_never_left_is_retried(home: Path, tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    configure_sync(home, f"http://127.0.0.1:{port}", timeout_seconds=0.5)
    with client(home) as c, pytest.raises(OcmemError, match="injoignable"):
        c.put("Agents/Inbox/x.md", b"x")
    assert c.requests_sent == 4  # connection refused: provably never sent, so retried


def test_token_file_must_be_private(home: Path, sb: Any) -> None:
    configure_sync(home, sb.url)
    (home / ".ocmem/silverbullet.token").chmod(0o644)
    with pytest.raises(Refused, match="chmod 600"):
        sync.pull(Workspace(load_settings(home), clock=Clock()))


def test_a_relative_token_file_is_the_homes_wherever_ocmem_runs(
    home: Path, sb: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cron runs in $HOME, the plugin in the project, a terminal anywhere: `token_file: sb.token`
    names one file, next to ocmem.yaml."""
    configure_sync(home, sb.url, token=None, token_file="secrets/sb.token")
    (home / "secrets").mkdir()
    (home / "secrets/sb.token").write_text(SB_TOKEN + "\n")
    (home / "secrets/sb.token").chmod(0o600)
    elsewhere = tmp_path / "ailleurs"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert "Pull :" in sync.pull(Workspace(load_settings(home), clock=Clock())).render()


def test_token_in_config_is_refused(home: Path, sb: Any) -> None:
    configure_sync(home, sb.url, token=SB_TOKEN)
    (home / "ocmem.yaml").write_text((home / "ocmem.yaml").read_text() + "  token: abc\n")
    with pytest.raises(InputError, match=r"jamais dans ocmem\.yaml"):
        sync.pull(Workspace(load_settings(home), clock=Clock()))


def test_env_overrides(home: Path, sb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCMEM_SILVERBULLET_URL", sb.url)
    monkeypatch.setenv("OCMEM_SILVERBULLET_TOKEN", SB_TOKEN)
    assert "Pull :" in sync.pull(Workspace(load_settings(home), clock=Clock())).render()
    token_file = home / "tok"
    token_file.write_text(SB_TOKEN)
    token_file.chmod(0o600)
    monkeypatch.delenv("OCMEM_SILVERBULLET_TOKEN")
    monkeypatch.setenv("OCMEM_SILVERBULLET_TOKEN_FILE", str(token_file))
    assert "Pull :" in sync.pull(Workspace(load_settings(home), clock=Clock())).render()


def test_the_token_never_leaks(home: Path, sb: Any, clock: Clock, run_cli: Any) -> None:
    """Run everything with a known token, then grep every place ocmem writes."""
    configure_sync(home, sb.url)
    sb.write("Agents/Memory/MEMORY.md", "# Mémoire\n\n- fait\n")
    outputs = []
    for args in [("pull",), ("push",), ("status",), ("context-size",), ("history",)]:
        outputs.append(run_cli(*args))
    memory = Memory(Workspace(load_settings(home), clock=clock, known_secrets=[SB_TOKEN]))
    memory.add_journal(journal_fields())
    with pytest.raises(Refused):
        memory.add_note(f"le jeton est {SB_TOKEN}")
    outputs.append(run_cli("note", f"jeton {SB_TOKEN}"))
    assert outputs[-1].code == 3
    outputs.append(run_cli("push"))
    sb.token = "rotated"
    outputs.append(run_cli("pull", "--full"))
    assert outputs[-1].code == 1
    for result in outputs:
        assert SB_TOKEN not in result.out + result.err
    for path in (home / ".ocmem").rglob("*"):
        if path.is_file() and path.name != "silverbullet.token":
            assert SB_TOKEN.encode() not in path.read_bytes(), path
    for path in home.rglob("*.md"):
        assert SB_TOKEN not in path.read_text()
    git_dir = home / ".ocmem/history.git"
    if git_dir.exists():
        dump = subprocess.run(
            ["git", f"--git-dir={git_dir}", "log", "-p", "--all"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert SB_TOKEN not in dump
    assert SB_TOKEN not in " ".join(os.environ.values())


def test_a_url_with_credentials_is_refused_without_echoing_them(
    home: Path, sb: Any, run_cli: Any
) -> None:
    url = sb.url.replace("http://", "http://admin:hunter2secret@")
    configure_sync(home, url)
    for args in (("pull",), ("push",), ("status",)):
        result = run_cli(*args)
        assert result.code == 2, result
        assert "hunter2secret" not in result.out + result.err and "admin" not in result.err
        assert "***@" in result.err and "Correction :" in result.err
    # the password is a secret all the same: a note holding it is refused
    assert run_cli("note", "le mot de passe de notes est hunter2secret").code == 3


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("http://notes.example.org", True),
        ("http://192.168.1.20:3000", True),
        ("https://notes.example.org", False),
        ("http://127.0.0.1:3000", False),
        ("http://localhost:3000", False),
        ("http://[::1]:3000", False),
        ("http://notes.localhost", False),
    ],
)
def test_a_token_never_goes_over_plain_http_to_another_machine(
    home: Path, url: str, refused: bool
) -> None:
    configure_sync(home, url)
    if refused:
        with pytest.raises(Refused, match="en clair") as error:
            load_sync_config(load_settings(home))
        assert "allow_plain_http" in error.value.render()
        configure_sync(home, url, allow_plain_http=True)
    assert load_sync_config(load_settings(home)).url == url
    (home / ".ocmem/silverbullet.token").unlink()  # an open SilverBullet: no token to leak
    configure_sync(home, url, token=None)
    assert load_sync_config(load_settings(home)).token is None


def test_a_token_file_that_is_not_text_is_named(home: Path, sb: Any) -> None:
    configure_sync(home, sb.url)
    (home / ".ocmem/silverbullet.token").write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match=r"silverbullet\.token n'est pas du texte UTF-8"):
        load_sync_config(load_settings(home))
