"""``ocmem essai`` without OpenCode: the table (pure), the read-only transport of ``--espace``,
and the command run as a user runs it — in a home of their own that must come out untouched,
broken on purpose (it must fail), and against « their » space (only reads may reach it).

The whole run with the real OpenCode is tests/e2e/test_essai_e2e.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ocmem.execution import status_code
from ocmem.silverbullet.client import ForbiddenRequest
from ocmem.trial import schedulers, spectests
from ocmem.trial.agenttests import plugin_refused
from ocmem.trial.opencodeserve import AskedPermission
from ocmem.trial.runner import Window, permissions_told, refused_by_test
from ocmem.trial.sandbox import Sandbox
from ocmem.trial.schedulers import ESCAPE, READ, SANDBOX, Asked
from ocmem.trial.spectests import Scene
from ocmem.trial.standin import Standin
from ocmem.trial.userspace import ReadOnly, default_remote
from ocmem.trial.verdicts import FAILED, NOT_RUN, PARTLY, PASSED, Verdict, outcome, summary
from support import fakeopencode
from support.sbserver import FakeSilverBullet
from support.usermachine import broken, essai, results, snapshot, user_machine

# Disables the guard of the spec's test 10 (an expired note goes at the next write), in every
# Python process of the run (this file on PYTHONPATH): essai must then fail.
BREAK_EXPIRY = (
    "from ocmem.formats import shortterm\nshortterm.Note.expired = lambda self, today: False\n"
)
WITHOUT_OPENCODE = {5, 6, 7, 10}  # the tests that need only ocmem's command line


# -- the table ---------------------------------------------------------------------------------


def verdict(number: int, result: str) -> Verdict:
    return Verdict(number, f"test {number}", result, f"preuve {number}")


@pytest.mark.parametrize(
    ("results", "code"),
    [
        ([PASSED, PASSED], 0),
        ([PASSED, NOT_RUN], 3),
        ([PARTLY, PASSED], 3),
        ([FAILED, NOT_RUN], 1),
        ([PASSED, FAILED, PARTLY], 1),
    ],
)
def test_a_failure_wins_then_what_could_not_run(results: list[str], code: int) -> None:
    done = outcome([verdict(n, r) for n, r in enumerate(results, 1)], [], [], 1.0, as_json=True)
    assert json.loads(done.lines[0])["code"] == code
    assert status_code(done.status) == code


def test_the_table_has_one_row_per_test_in_order_and_wraps_each_cell() -> None:
    long = Verdict(2, "un titre " * 8, PASSED, "une preuve assez longue " * 10)
    done = outcome([long, verdict(1, FAILED)], ["en-tête"], ["remarque"], 12.0, width=100)
    lines = done.lines
    assert lines[0] == "en-tête"
    assert lines[2].split() == ["n°", "test", "résultat", "ce", "qui", "le", "prouve"]
    rows = lines[4 : lines.index("", 4)]
    assert [row[:3].strip() for row in rows if row[:3].strip()] == ["1", "2"]
    assert len(rows) > 3  # the long cells wrapped
    assert max(len(line) for line in rows) <= 100
    assert lines[-3:] == ["remarque", "", "2 tests : 1 réussi, 1 échec — 12 s."]


def test_the_summary_says_each_result_with_its_plural() -> None:
    verdicts = [verdict(1, PASSED), verdict(2, PASSED), verdict(3, NOT_RUN), verdict(4, NOT_RUN)]
    verdicts.append(verdict(5, PARTLY))
    assert summary(verdicts, 4.4) == "5 tests : 2 réussis, 1 en partie, 2 non lancés — 4 s."


# -- --espace: read-only below the client ------------------------------------------------------


def test_the_read_only_transport_sends_reads_and_refuses_every_write_before_sending() -> None:
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.method)
        return httpx.Response(200, text="ok")

    guard = ReadOnly(httpx.MockTransport(answer))
    with httpx.Client(transport=guard, base_url="http://sb.invalid") as client:
        assert client.get("/.fs").status_code == 200
        assert client.head("/.fs/a.md").status_code == 200
        for method in ("PUT", "DELETE", "POST", "PATCH"):
            with pytest.raises(ForbiddenRequest, match="sans jamais l'écrire"):
                client.request(method, "/.fs/Agents/Inbox/journal.md", content=b"x")
    assert sent == ["GET", "HEAD"]
    assert guard.refused[0] == "PUT /.fs/Agents/Inbox/journal.md"


@pytest.mark.parametrize(
    ("local", "remote"),
    [
        ("skills/deploy/SKILL.md", "Agents/Skills/deploy/SKILL.md"),
        ("skills/deploy/notes.md", "Agents/Skills/deploy/notes.md"),
        ("memory/MEMORY.md", "Agents/Memory/MEMORY.md"),
        ("AGENTS.md", "Agents/AGENTS.md"),
        ("memory/journal.md", None),
    ],
)
def test_a_pulled_file_goes_where_a_fresh_homes_pull_takes_it(
    local: str, remote: str | None
) -> None:
    assert default_remote(local) == remote


# -- the sandbox's crontab and systemctl --------------------------------------------------------


@pytest.mark.parametrize(
    ("program", "args", "kind"),
    [
        ("crontab", ["-l"], READ),
        ("crontab", ["-u", "alice", "-l"], READ),
        ("crontab", ["-ualice", "-l"], READ),
        ("crontab", ["-"], SANDBOX),
        ("crontab", ["/tmp/lignes"], SANDBOX),
        ("crontab", ["-r"], SANDBOX),
        ("crontab", ["-u", "alice", "-"], ESCAPE),
        ("crontab", ["-u", "alice", "-r"], ESCAPE),
        ("systemctl", ["--user", "is-enabled", "ocmem-sync.timer"], READ),
        ("systemctl", ["--user", "status"], READ),
        ("systemctl", ["--version"], READ),
        ("systemctl", ["--user", "enable", "--now", "ocmem-sync.timer"], ESCAPE),
        ("systemctl", ["--user", "daemon-reload"], ESCAPE),
    ],
)
def test_a_read_is_a_read_and_only_a_write_aimed_outside_the_sandbox_escapes(
    program: str, args: list[str], kind: str
) -> None:
    if program == "crontab":
        assert schedulers.crontab_kind(schedulers.crontab_request(args)) == kind
    else:
        assert schedulers.systemctl_kind(args) == kind


def test_the_note_counts_as_escapes_only_the_writes_aimed_outside() -> None:
    calls = [
        Asked(READ, "crontab -l"),
        Asked(READ, "crontab -u alice -l"),
        Asked(SANDBOX, "crontab -"),
        Asked(READ, "systemctl --user is-enabled ocmem-sync.timer"),
    ]
    assert schedulers.note(calls) == (
        "Crontab et systemd : les tiens jamais appelés ; la crontab du bac à sable (un fichier "
        "à lui) lue 2 fois, écrite 1 fois, systemctl interrogé 1 fois (sans gestionnaire de "
        "services)."
    )
    escaped = schedulers.note([*calls, Asked(ESCAPE, "crontab -u alice -")])
    assert escaped.startswith(
        "Crontab et systemd : 1 écriture(s) visant une crontab hors du bac à sable ou systemd, "
        "refusée(s) (crontab -u alice -) ;"
    )


@pytest.mark.real_clock
def test_cron_jobs_installed_in_the_sandbox_are_listed_there_and_the_users_crontab_is_never_called(
    tmp_path: Path,
) -> None:
    env, _ = user_machine(tmp_path)  # its crontab and systemctl log any call in appels.log
    sandbox = Sandbox.create()
    try:
        inside = sandbox.env(outer=env)

        def run(*command: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                list(command),
                input=stdin,
                capture_output=True,
                text=True,
                env=inside,
                cwd=sandbox.project,
                timeout=60,
                check=False,
            )

        ocmem = [sys.executable, "-m", "ocmem", "--home", str(sandbox.ocmem_home)]
        assert run(*ocmem, "init").returncode == 0
        installed = run(*ocmem, "cron", "install", "--tache", "review")
        assert installed.returncode == 0, installed.stderr
        listed = run("crontab", "-l")
        assert listed.returncode == 0
        assert "ocmem" in listed.stdout and str(sandbox.ocmem_home) in listed.stdout
        assert sandbox.crontab.read_text(encoding="utf-8") == listed.stdout
        theirs = run("crontab", "-u", "alice", "-l")
        assert (theirs.returncode, theirs.stdout) == (1, "")
        refused = run("crontab", "-u", "alice", "-", stdin="* * * * * true\n")
        assert refused.returncode == 1 and "refusé" in refused.stderr
        assert run("systemctl", "--user", "daemon-reload").returncode == 1
        removed = run(*ocmem, "cron", "remove")
        assert removed.returncode == 0, removed.stderr
        assert run("crontab", "-l").stdout == ""
        calls = sandbox.scheduler_calls()
    finally:
        sandbox.close()
    assert not (tmp_path / "appels.log").exists()
    kinds = {call.command: call.kind for call in calls}
    assert kinds["crontab -l"] == READ and kinds["crontab -u alice -l"] == READ
    assert kinds["crontab -"] == SANDBOX
    escapes = [call.command for call in calls if call.kind == ESCAPE]
    assert escapes == ["crontab -u alice -", "systemctl --user daemon-reload"]


# -- OpenCode's permission prompts, refused and said ------------------------------------------


def test_a_refused_permission_goes_with_the_test_that_opened_its_session_else_the_one_running() -> (
    None
):
    asked = [
        AskedPermission("external_directory", ("/a/*",), "ses_1"),
        AskedPermission("bash", ("rm *",), "ses_sous-agent"),  # a subagent's session
        AskedPermission("webfetch", (), "ses_1"),  # came late, after test 1 ended
    ]
    windows = [Window(1, frozenset({"ses_1"}), 0), Window(9, frozenset({"ses_2"}), 1)]
    assert refused_by_test(asked, windows) == {1: [asked[0], asked[2]], 9: [asked[1]]}


def test_a_refused_permission_is_said_with_its_test_and_in_the_proof_of_a_test_it_may_have_failed() -> (
    None
):
    verdicts = {4: verdict(4, FAILED), 9: verdict(9, PASSED)}
    refused = {
        4: [AskedPermission("external_directory", ("/a/*",))] * 2,
        9: [AskedPermission("bash", ("rm *",)), AskedPermission("webfetch")],
    }
    told, notes = permissions_told(verdicts, refused)
    assert notes == [
        "Permissions d'OpenCode, test 4 : OpenCode a demandé la permission « external_directory » "
        "(/a/*) ; l'essai l'a refusée (personne n'est là pour répondre : comme si tu avais dit non).",
        "Permissions d'OpenCode, test 9 : OpenCode a demandé les permissions « bash » (rm *), "
        "« webfetch » ; l'essai les a refusées (personne n'est là pour répondre : comme si tu "
        "avais dit non).",
    ]
    assert told[4].proof == (
        "preuve 4 ; OpenCode a demandé la permission « external_directory » (/a/*), l'essai l'a "
        "refusée : ce refus a pu changer le résultat"
    )
    assert told[9] == verdicts[9]  # passed: said in the remarks only
    assert permissions_told(verdicts, {}) == (
        verdicts,
        ["Permissions d'OpenCode : aucune demandée pendant les tests de l'agent."],
    )


@pytest.mark.real_clock
def test_an_opencode_that_asks_permissions_is_answered_no_and_each_test_says_so(
    tmp_path: Path,
) -> None:
    fake = tmp_path / "opencode-factice"
    fake.write_text(f"#!{sys.executable}\n" + Path(fakeopencode.__file__).read_text())
    fake.chmod(0o755)
    env, _ = user_machine(tmp_path, fake)
    code, document = essai(env)
    assert code == 1, document
    agent = {1, 2, 3, 4, 8, 9, 11, 12, 13}
    seen = results(document)
    assert {n for n, r in seen.items() if r == FAILED} == agent  # the model was never asked
    said = f"la permission « external_directory » ({fakeopencode.PATTERN})"
    remarks = [r for r in document["remarques"] if r.startswith("Permissions d'OpenCode")]
    assert remarks == [
        f"Permissions d'OpenCode, test {n} : OpenCode a demandé {said} ; l'essai l'a refusée "
        "(personne n'est là pour répondre : comme si tu avais dit non)."
        for n in sorted(agent)
    ]
    for test in document["tests"]:
        if test["numero"] in agent:
            assert test["preuve"].endswith(
                f"{said}, l'essai l'a refusée : ce refus a pu changer le résultat"
            )
    answers = (tmp_path / "réponses.log").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(answers) >= len(agent)
    assert {line.split()[2] for line in answers} == {"reject"}


# -- what the tests count -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "refused"),
    [
        ("Error: ocmem : refusé : /s/home/memory/MEMORY.md est protégé par ocmem.", True),
        ("ocmem : refusé : les écritures d'ocmem passent par les outils memory_note…", True),
        # let through by the plugin, refused by ocmem's command line: not the plugin's refusal
        ("ocmem : `ocmem pending accept` refusé : lancé par l'agent", False),
        ("bash: /tmp/ocmem-essai-x/home/memory/MEMORY.md: refus d'accès", False),
        ("The user rejected permission to use this specific tool call.", False),
    ],
)
def test_only_the_plugins_own_refusal_counts_as_the_plugin_refusing(
    answer: str, refused: bool
) -> None:
    assert plugin_refused(answer) is refused


@pytest.mark.real_clock
def test_the_push_test_counts_the_deletes_of_its_own_push_not_the_runs() -> None:
    sandbox = Sandbox.create()
    try:
        with Standin(sandbox.space, token="jeton") as standin:
            scene = Scene(sandbox, standin)
            spectests.prepare(scene)
            standin.write("Notes/ancienne.md", "à retirer\n")
            gone = httpx.delete(
                f"{standin.url}/.fs/Notes/ancienne.md", headers={"Authorization": "Bearer jeton"}
            )
            assert gone.status_code == 200  # a DELETE earlier in the run, not the push's
            proof = spectests.pushed_without_overwriting(scene)
    finally:
        sandbox.close()
    assert proof.endswith("aucun DELETE")


# -- the command, as a user runs it ------------------------------------------------------------


@pytest.mark.real_clock
def test_without_opencode_it_runs_what_it_can_says_why_not_the_rest_and_touches_nothing(
    tmp_path: Path,
) -> None:
    env, home = user_machine(tmp_path)
    before = snapshot(home)
    code, document = essai(env)
    seen = results(document)
    assert code == 3, document
    assert document["code"] == 3
    assert sorted(seen) == list(range(1, 14))
    assert {n for n, r in seen.items() if r == PASSED} == WITHOUT_OPENCODE
    assert seen[8] == PARTLY  # the sync script's half ran, the agent's tools did not
    assert {n for n, r in seen.items() if r == NOT_RUN} == set(range(1, 14)) - WITHOUT_OPENCODE - {
        8
    }
    heading = " ".join(document["contexte"])
    assert "OpenCode : non lancé — OpenCode est introuvable" in heading
    assert "ocmem essai --opencode CHEMIN" in heading
    assert "aucune tentative de sortie" in " ".join(document["remarques"])
    assert snapshot(home) == before  # HOME, OpenCode's configuration: not a byte, not a date
    assert not (tmp_path / "appels.log").exists()  # neither crontab nor systemctl was run
    assert list((tmp_path / "tmp").iterdir()) == []  # the sandbox is gone


@pytest.mark.real_clock
def test_broken_on_purpose_it_fails_on_the_broken_test_and_says_what_it_saw(
    tmp_path: Path,
) -> None:
    env, _ = user_machine(tmp_path)
    code, document = essai({**env, **broken(tmp_path, BREAK_EXPIRY)})
    assert code == 1
    seen = results(document)
    assert seen[10] == FAILED
    assert {n for n, r in seen.items() if r == PASSED} == WITHOUT_OPENCODE - {10}
    proof = next(t["preuve"] for t in document["tests"] if t["numero"] == 10)
    assert "toujours dans SHORT_TERM.md" in proof


@pytest.mark.real_clock
def test_with_their_space_it_only_reads_it_and_runs_the_tests_on_a_copy(tmp_path: Path) -> None:
    env, home = user_machine(tmp_path)
    theirs = tmp_path / "leur-espace"
    with FakeSilverBullet(theirs, token="jeton-de-l-utilisateur") as space:
        space.write("Agents/AGENTS.md", "# Leurs consignes\n\nTutoie-moi.\n")
        space.write("Agents/Memory/MEMORY.md", "# Mémoire\n\n- Leur serveur est sous Alpine.\n")
        space.write("Agents/Skills/sauvegarde/SKILL.md", "---\nname: sauvegarde\n---\n\nFais-la.\n")
        space.write("Agents/Inbox/journal.md", "# Leur journal\n")
        space.write("Notes/perso.md", "Pas pour ocmem.\n")
        before = snapshot(theirs)
        user_home = home / ".config" / "opencode"
        (user_home / "ocmem.yaml").write_text(f"silverbullet:\n  url: {space.url}\n")
        env = {**env, "OCMEM_SILVERBULLET_TOKEN": "jeton-de-l-utilisateur"}
        code, document = essai(env, "--espace", home=user_home)
        methods = {r.method for r in space.requests}
        read = sorted(r.fs_path or "" for r in space.requests if r.fs_path)
    assert code == 3, document
    assert methods <= {"GET", "HEAD"}, methods
    assert snapshot(theirs) == before
    assert "Notes/perso.md" not in read and "Agents/Inbox/journal.md" not in read
    heading = " ".join(document["contexte"])
    assert "lu sans être écrit" in heading and "ses 3 pages à tirer" in heading
    assert {n for n, r in results(document).items() if r == PASSED} == WITHOUT_OPENCODE
    pulled = next(t["preuve"] for t in document["tests"] if t["numero"] == 5)
    assert "Debian 13" in pulled  # their MEMORY.md, changed in the copy, then pulled


@pytest.mark.real_clock
def test_an_unconfigured_space_is_refused_before_any_sandbox(tmp_path: Path) -> None:
    env, home = user_machine(tmp_path)
    user_home = home / ".config" / "opencode"
    done = subprocess.run(
        [sys.executable, "-m", "ocmem", "--home", str(user_home), "essai", "--espace"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "aucune instance SilverBullet configurée" in done.stderr
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.real_clock
def test_opencode_2_is_recognised_said_and_not_run(tmp_path: Path) -> None:
    fake = tmp_path / "opencode2"
    fake.write_text('#!/bin/sh\n[ "$1" = "--version" ] && echo 2.0.3 && exit 0\nexit 9\n')
    fake.chmod(0o755)
    env, home = user_machine(tmp_path, fake)
    before = snapshot(home)
    code, document = essai(env)
    assert code == 3
    heading = " ".join(document["contexte"])
    assert "OpenCode : non lancé — OpenCode 2.0.3" in heading
    assert "OpenCode 2 ne charge pas les plugins V1" in heading
    assert {n for n, r in results(document).items() if r == "réussi"} == WITHOUT_OPENCODE
    assert snapshot(home) == before


@pytest.mark.real_clock
def test_garder_keeps_the_sandbox_and_says_where(tmp_path: Path) -> None:
    env, _ = user_machine(tmp_path)
    _, document = essai(env, "--garder")
    kept = list((tmp_path / "tmp").iterdir())
    assert len(kept) == 1
    said = " ".join(document["remarques"])
    assert f"Bac à sable gardé : {kept[0]} ; supprime-le" in said
    assert (kept[0] / "home" / ".config" / "opencode" / "memory" / "journal.md").exists()
