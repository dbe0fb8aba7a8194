"""What the user set is what runs, in the hardened mode too (issue 36): the gate, started
through sudo, sees none of OpenCode's environment. Each OCMEM_SILVERBULLET_* variable is carried
into ocmem.yaml by `ocmem harden` or refused there, and reported by the session start and doctor
— never silently dropped (ocmem.home.gateenv). And `harden` names the program it misses."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import CliResult, Clock
from ocmem.bridge.gate import Gate
from ocmem.errors import Refused
from ocmem.home import gateenv
from ocmem.home.paths import Paths
from ocmem.setup import harden
from ocmem.setup.hardrecord import sudoers_file
from support.sharedusers import SHARED_USERS

pytestmark = SHARED_USERS

Run = Callable[..., CliResult]
URL = "https://notes.example.org"
LOOPBACK = "http://127.0.0.1:9"  # nothing listens there: doctor's look at the space fails at once
HOME = Path("/home/agent/.config/opencode")


@pytest.mark.parametrize(
    ("env", "section", "expected"),
    [
        ({}, {}, []),
        ({"OCMEM_SILVERBULLET_URL": URL}, {}, [("OCMEM_SILVERBULLET_URL", "carry", URL)]),
        (
            {"OCMEM_SILVERBULLET_URL": URL + "/.fs/"},
            {"url": URL},
            [("OCMEM_SILVERBULLET_URL", "same", URL)],
        ),
        (
            {"OCMEM_SILVERBULLET_URL": URL},
            {"url": "https://autre.example.org"},
            [("OCMEM_SILVERBULLET_URL", "refuse", URL)],
        ),
        (
            {"OCMEM_SILVERBULLET_TOKEN_FILE": f"{HOME}/.ocmem/silverbullet.token"},
            {},
            [("OCMEM_SILVERBULLET_TOKEN_FILE", "same", f"{HOME}/.ocmem/silverbullet.token")],
        ),
        (
            {"OCMEM_SILVERBULLET_TOKEN_FILE": f"{HOME}/.ocmem/sb.token"},
            {},
            [("OCMEM_SILVERBULLET_TOKEN_FILE", "carry", ".ocmem/sb.token")],
        ),
        (
            {"OCMEM_SILVERBULLET_TOKEN_FILE": f"{HOME}/.ocmem/sb.token"},
            {"token_file": ".ocmem/sb.token"},
            [("OCMEM_SILVERBULLET_TOKEN_FILE", "same", f"{HOME}/.ocmem/sb.token")],
        ),
        (
            {"OCMEM_SILVERBULLET_TOKEN_FILE": f"{HOME}/secrets/sb.token"},  # would become 0644
            {},
            [("OCMEM_SILVERBULLET_TOKEN_FILE", "refuse", f"{HOME}/secrets/sb.token")],
        ),
        (
            {"OCMEM_SILVERBULLET_TOKEN_FILE": "/home/agent/sb.token"},  # the agent's own file
            {},
            [("OCMEM_SILVERBULLET_TOKEN_FILE", "refuse", "/home/agent/sb.token")],
        ),
        (
            {"OCMEM_SILVERBULLET_TOKEN": "jeton-secret-1234"},
            {},
            [("OCMEM_SILVERBULLET_TOKEN", "refuse", "")],
        ),
    ],
)
def test_each_variable_is_carried_or_refused(
    env: dict[str, str], section: dict[str, Any], expected: list[tuple[str, str, str]]
) -> None:
    found = gateenv.decide(env, section, Paths(HOME))
    assert [(d.variable, d.action, d.value) for d in found] == expected
    for decision in found:
        assert "jeton-secret" not in decision.why + decision.fix + decision.value
        if decision.action != gateenv.SAME:
            assert decision.variable in decision.why and decision.fix


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", f'silverbullet:\n  url: "{URL}"\n'),
        (
            "limits:\n  memory_chars: 3000\n",
            f'limits:\n  memory_chars: 3000\nsilverbullet:\n  url: "{URL}"\n',
        ),
        (
            "# mes réglages\nsilverbullet:\n  inbox: Boite/\n",
            f'# mes réglages\nsilverbullet:\n  url: "{URL}"\n  inbox: Boite/\n',
        ),
        ("silverbullet: {inbox: Boite/}\n", None),  # flow style: the line is named instead
        ("silverbullet:\n    inbox: Boite/\n", None),  # another indentation
    ],
)
def test_a_carried_setting_keeps_every_other_byte(text: str, expected: str | None) -> None:
    assert gateenv.with_setting(text, "url", URL) == expected


def test_what_the_plugin_reports_is_compared_with_what_the_gate_sees() -> None:
    reported = {
        "OCMEM_SILVERBULLET_URL": URL,
        "OCMEM_SILVERBULLET_TOKEN": gateenv.MASKED,
        "OTHER": "x",
    }
    assert gateenv.unseen(reported, {}) == {
        "OCMEM_SILVERBULLET_URL": URL,
        "OCMEM_SILVERBULLET_TOKEN": gateenv.MASKED,
    }
    own = {"OCMEM_SILVERBULLET_URL": URL, "OCMEM_SILVERBULLET_TOKEN": "jeton"}
    assert gateenv.unseen(reported, own) == {}  # the default mode: the gate inherits them


def hardened_home(home: Path) -> None:
    (home / ".ocmem/hardened.json").write_text('{"agent": "agent", "owner": "ocmem"}\n')


def test_the_session_start_says_what_the_hardened_gate_cannot_see(home: Path, clock: Clock) -> None:
    hardened_home(home)
    gate = Gate(home, {}, clock)  # started by sudo: a clean environment
    request = {"op": "plugin-config", "environment": {"OCMEM_SILVERBULLET_URL": URL}}
    config = json.loads(gate.handle(request).lines[0])
    (warning,) = config["environment_warnings"]
    assert "OCMEM_SILVERBULLET_URL" in warning and "rien n'est synchronisé" in warning
    assert "ocmem.yaml" in warning and "Correction" not in warning
    assert config["sync"] is False
    # Carried by harden into ocmem.yaml: the gate syncs, and nothing is left to say.
    (home / "ocmem.yaml").write_text(f"silverbullet:\n  url: {URL}\n")
    config = json.loads(gate.handle(request).lines[0])
    assert config["environment_warnings"] == [] and config["sync"] is True
    # The default mode: the gate inherits OpenCode's environment, so it sees them itself.
    (home / ".ocmem/hardened.json").unlink()
    (home / "ocmem.yaml").write_text("")
    own = Gate(home, {"OCMEM_SILVERBULLET_URL": URL}, clock)
    assert json.loads(own.handle(request).lines[0])["environment_warnings"] == []


def test_doctor_reports_what_the_hardened_gate_cannot_see(
    home: Path, run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    hardened_home(home)
    monkeypatch.setenv("OCMEM_SILVERBULLET_URL", LOOPBACK)
    monkeypatch.setenv("OCMEM_SILVERBULLET_TOKEN", "jeton-secret-1234")
    said = run_cli("doctor").out
    assert "OCMEM_SILVERBULLET_URL" in said and "rien n'est synchronisé" in said
    assert "OCMEM_SILVERBULLET_TOKEN" in said and "jeton-secret" not in said


def test_harden_names_the_program_it_misses(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock, unchanged: None
) -> None:
    """Observed: root's PATH without /usr/sbin (`su` rather than `su -`) has sudo, not visudo,
    and harden said « sudo n'est pas installé »."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    usr_bin = tmp_path / "usr-bin"
    usr_bin.mkdir()
    (usr_bin / "sudo").write_text("#!/bin/sh\nexit 0\n")
    (usr_bin / "sudo").chmod(0o755)
    monkeypatch.setenv("PATH", str(usr_bin))
    with pytest.raises(Refused) as refused:
        harden.harden(home, "nobody", "daemon", clock)
    said = refused.value.render()
    assert "visudo est introuvable dans le PATH" in said and "/usr/sbin" in said
    assert "sudo n'est pas installé" not in said
    (usr_bin / "sudo").unlink()
    with pytest.raises(Refused, match="sudo est introuvable dans le PATH"):
        harden.harden(home, "nobody", "daemon", clock)


def test_harden_refuses_a_token_it_cannot_keep_from_the_agent(
    home: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock, unchanged: None
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(harden.Hardener, "_check_program", lambda self: None)
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    monkeypatch.setenv("OCMEM_SILVERBULLET_TOKEN", "jeton-secret-1234")
    monkeypatch.setenv("OCMEM_SILVERBULLET_TOKEN_FILE", str(home.parent / "sb.token"))
    with pytest.raises(Refused) as refused:
        harden.harden(home, "nobody", "daemon", clock)
    said = refused.value.render()
    assert "OCMEM_SILVERBULLET_TOKEN est dans l'environnement" in said
    assert "OCMEM_SILVERBULLET_TOKEN_FILE" in said and "jeton-secret" not in said
    assert "rien n'a été modifié" in said
    # A token file below the home but outside .ocmem/ would be given to everyone to read.
    monkeypatch.delenv("OCMEM_SILVERBULLET_TOKEN")
    monkeypatch.delenv("OCMEM_SILVERBULLET_TOKEN_FILE")
    (home / "ocmem.yaml").write_text(
        "silverbullet:\n  url: https://x.example\n  token_file: sb.token\n"
    )
    with pytest.raises(Refused, match="lisible par tous"):
        harden.harden(home, "nobody", "daemon", clock)
    (home / "ocmem.yaml").unlink()


def test_harden_carries_the_url_into_ocmem_yaml_and_says_so(
    home: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """As root with real users only (it sets the hardened mode up): see test_harden.py."""
    import pwd

    if os.geteuid() != 0:
        pytest.skip("changes owners and /etc/sudoers.d: root only (CI)")
    owner_name = os.environ.get("OCMEM_E2E_OWNER", "ocmem-e2e")
    agent_name = os.environ.get("OCMEM_E2E_AGENT", "ocmem-e2e-agent")
    try:
        owner, agent = pwd.getpwnam(owner_name), pwd.getpwnam(agent_name)
    except KeyError:
        pytest.skip(f"users {owner_name} and {agent_name} missing (.ci/run creates them)")
    monkeypatch.setattr(harden.Hardener, "_check_owner_runs_it", lambda self: None)
    for path in [home.parent, home, *home.rglob("*")]:
        os.chown(path, agent.pw_uid, agent.pw_gid, follow_symlinks=False)
    home.parent.parent.chmod(0o755)
    (home / "ocmem.yaml").write_text("# mes réglages\nlimits:\n  memory_chars: 3000\n")
    monkeypatch.setenv("OCMEM_SILVERBULLET_URL", URL)
    rule = sudoers_file(agent.pw_name)
    try:
        done = harden.harden(home, agent.pw_name, owner.pw_name, clock).render()
        assert "OCMEM_SILVERBULLET_URL" in done and "écrit dans" in done and URL in done
        assert yaml.safe_load((home / "ocmem.yaml").read_text())["silverbullet"] == {"url": URL}
        assert (home / "ocmem.yaml").read_text().startswith("# mes réglages\n")
        assert (home / "ocmem.yaml").stat().st_uid == owner.pw_uid
        again = harden.harden(home, agent.pw_name, owner.pw_name, clock).render()
        assert "écrit dans" not in again  # already there: nothing carried twice
    finally:
        harden.harden(home, None, "ocmem", clock, undo=True)
        rule.unlink(missing_ok=True)
