"""Which processes are the agent's (ocmem.bridge.agentproc), and the commands it may not run itself."""

from __future__ import annotations

import ast
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import CliResult, journal_fields
from ocmem.bridge import agentproc
from ocmem.bridge.agentproc import AGENT_ENV, Proc, ancestors, parse_stat, read_proc
from ocmem.formats import operations
from ocmem.home.paths import Paths

REPO = Path(__file__).resolve().parents[1]


def stat_line(pid: int, comm: str, ppid: int, start: int) -> str:
    fields = ["S", str(ppid)] + ["0"] * 17 + [str(start)] + ["0"] * 30
    return f"{pid} ({comm}) " + " ".join(fields)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (stat_line(42, "bash", 7, 1234), Proc(42, 7, 1234, "bash")),
        (stat_line(43, "my prog (x) y", 42, 99), Proc(43, 42, 99, "my prog (x) y")),
        (stat_line(44, ")", 1, 5), Proc(44, 1, 5, ")")),
        ("garbage", None),
        ("12 (short) S", None),
    ],
)
def test_stat_lines(line: str, expected: Proc | None) -> None:
    assert parse_stat(line) == expected


@given(
    st.text(
        alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\n\x00"),
        max_size=15,
    ),
    st.integers(2, 4_000_000),
    st.integers(0, 4_000_000),
    st.integers(0, 2**40),
)
def test_any_process_name_parses_back(comm: str, pid: int, ppid: int, start: int) -> None:
    assert parse_stat(stat_line(pid, comm, ppid, start)) == Proc(pid, ppid, start, comm)


def fake_proc(root: Path, procs: list[Proc]) -> Path:
    for proc in procs:
        (root / str(proc.pid)).mkdir(parents=True)
        (root / str(proc.pid) / "stat").write_text(
            stat_line(proc.pid, proc.comm, proc.ppid, proc.start)
        )
    return root


def test_ancestors_stop_at_init_and_at_what_cannot_be_read(tmp_path: Path) -> None:
    tree = [
        Proc(50, 40, 5, "python3"),
        Proc(40, 30, 4, "bash"),
        Proc(30, 1, 3, "opencode"),
        Proc(1, 0, 1, "init"),
    ]
    proc = fake_proc(tmp_path / "proc", tree)
    assert [p.pid for p in ancestors(50, proc)] == [40, 30]
    assert ancestors(999, proc) == []
    assert read_proc(50, proc) == tree[0]


def test_a_registered_opencode_makes_its_descendants_the_agents(tmp_path: Path) -> None:
    # This process plays OpenCode and a child of its own the gate: the chain the test walks is
    # the one it made, whatever started pytest (a shell, cron, or init after its parent left).
    paths = Paths(tmp_path / "home")
    child = subprocess.Popen(["sleep", "600"])
    try:
        opencode, gate = read_proc(os.getpid()), read_proc(child.pid)
        assert opencode is not None and gate is not None and gate.ppid == opencode.pid
        assert agentproc.agent_reason(paths, env={}, pid=child.pid) is None
        agentproc.register(paths, opencode, gate)
        reason = agentproc.agent_reason(paths, env={}, pid=child.pid)
        assert reason is not None and f"processus {opencode.pid}" in reason
        assert agentproc.gate_of(paths, opencode) == gate.key
        assert agentproc.agent_reason(paths, env={AGENT_ENV: "ses_1"}, pid=child.pid) is not None
    finally:
        child.kill()
        child.wait()


def test_records_of_dead_processes_are_dropped(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home")
    me = read_proc(os.getpid())
    assert me is not None
    ghost = Proc(me.pid, me.ppid, me.start + 1, "opencode")  # same pid, another start time
    paths.agents_dir.mkdir(parents=True)
    (paths.agents_dir / f"{ghost.key}.json").write_text(json.dumps({"gate": "1-1"}))
    assert not agentproc.alive(ghost.key)
    agentproc.register(paths, me, me)
    assert agentproc.registered(paths) == {me.key}


WRITES = {
    "pending accept": (["pending", "accept", "P-0001", "--yes"], ""),
    "note": (["note", "une note"], ""),
    "journal add": (["journal", "add"], json.dumps(journal_fields())),
    "propose": (["propose"], json.dumps({"type": "fait", "titre": "t", "contenu": "c"})),
    "tool": (
        ["tool", "memory_note"],
        json.dumps(
            {
                "session": "ses_1",
                "user_messages": [],
                "exposures": [],
                "args": {"text": "x"},
            }
        ),
    ),
    "pending annuler": (["pending", "annuler", "P-0001"], ""),
    "pending undo": (["pending", "undo"], ""),
    "retire": (["retire", "fact", "un fait", "--reason", "périmé"], ""),
    "init": (["init"], ""),
    "doctor --reparer": (["doctor", "--reparer"], ""),
    "doctor --fix": (["doctor", "--fix"], ""),
    "harden": (["harden", "--agent", "nobody"], ""),
    "cron install": (["cron", "install"], ""),
    "cron remove": (["cron", "remove"], ""),
    "desinstaller": (["desinstaller", "--oui"], ""),
    "uninstall": (["uninstall", "--yes"], ""),
}
# The gate refuses a model's shell by itself (tests/test_gate.py): it is a server, not a command.
SERVERS = {"gate"}
# English spellings of a refused form, still accepted by the command line (ocmem.cli.options).
ALIASES = {
    "doctor --fix": "doctor --reparer",
    "pending undo": "pending annuler",
    "uninstall": "desinstaller",
}


def test_every_command_the_agent_may_not_run_is_tried_here() -> None:
    assert set(WRITES) | SERVERS == set(operations.AGENT_REFUSED)


def test_the_command_lines_human_only_commands_are_the_ones_the_plugin_refuses() -> None:
    """Each `human_workspace("…")` of the command line names a command of AGENT_REFUSED (or one of
    its forms), and each of those but the gate is guarded so: the plugin's guard and the command
    line cannot drift apart."""
    guarded = set()
    for source in (REPO / "sync/ocmem/cli").glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "human_workspace"
            ):
                first = node.args[0]
                text = first.value if isinstance(first, ast.Constant) else first.values[0].value  # type: ignore[attr-defined]
                guarded.add(str(text).strip())
    refused = set(operations.AGENT_REFUSED)
    assert all(any(g == r or g.startswith(r + " ") for r in refused) for g in guarded), guarded
    assert refused - SERVERS - set(ALIASES) <= guarded
    assert set(ALIASES) <= refused and set(ALIASES.values()) <= guarded


@pytest.mark.parametrize("command", sorted(WRITES))
def test_the_agent_cannot_write_or_decide_from_its_shell(
    home: Path,
    run_cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
    crontab: Path,
    command: str,
) -> None:
    table = crontab.read_bytes()
    before = {
        p: p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and ".ocmem" not in p.parts
    }
    monkeypatch.setenv(AGENT_ENV, "ses_model")
    args, stdin = WRITES[command]
    result = run_cli(*args, stdin=stdin)
    assert result.code == 3, result
    assert (
        "refusé" in result.err and "shell du modèle" in result.err and "Correction :" in result.err
    )
    assert {p: p.read_bytes() for p in before} == before
    assert crontab.read_bytes() == table


@pytest.mark.parametrize(
    "args", [["note", "--list"], ["pending", "list"], ["status"], ["journal", "recent"]]
)
def test_reading_stays_open_to_the_agent(
    home: Path, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.setenv(AGENT_ENV, "ses_model")
    assert run_cli(*args).code == 0


def test_the_agent_records_the_humans_no(
    home: Path, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    refs = [
        run_cli("journal", "add", stdin=json.dumps(journal_fields(titre=t)))
        .out.splitlines()[0]
        .removeprefix("Entrée ajoutée : ")
        for t in ("A", "B")
    ]
    proposal = {
        "type": "fait",
        "titre": "Ports",
        "contenu": "Vérifier les ports.",
        "sources": refs,
        "contradiction": "aucune",
        "remplace": "rien",
    }
    assert run_cli("propose", stdin=json.dumps(proposal)).code == 0
    monkeypatch.setenv(AGENT_ENV, "ses_model")  # « valide pending », the human said no
    assert run_cli("pending", "reject", "P-0001", "--reason", "déjà couvert").code == 0
    assert "refusé" in (home / "memory/pending.md").read_text()
