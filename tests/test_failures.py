"""The fault matrix: the broken environments a new user meets, on every way ocmem writes.

The faults act on writes: every fault meets the commands that together reach each way ocmem
writes (WRITE_PATH_COMMANDS, checked against what every command writes), every other command
meets the read-only home, and each corrupt file the commands that read it. Each case runs a
command through its real entry point (in-process) on a copy of one seeded home, broken in one way: non-UTF-8 input, a read-only home or ``memory/`` (a read-only bind
mount as root, ``chmod a-w`` otherwise), a full disk (a tmpfs filled to its last page), the
lock held by another run, a corrupt state file, a corrupt memory file. Every case must give:
an exit code from the documented set; no Python traceback; a failure said in one message that
names the file and ends with its fix; no file changed except as intended (a refused run
changes nothing, a run that succeeds leaves every memory file parseable); no temp file; and no
empty or partial backup (every copy equals the file it was taken from).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from conftest import SB_TOKEN, Clock, configure_sync, journal_fields
from ocmem.bridge import agentproc
from ocmem.cli import docs
from ocmem.cli.commands import cli
from ocmem.formats import journal, pending, shortterm
from ocmem.home import identity as home_identity
from ocmem.home.atomic import TEMP_SUFFIX
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from ocmem.setup.install import Installer
from support import writesites
from support.faultenv import CAN_MOUNT, IS_ROOT, WHY_NOT, fill, lock_held, read_only, small_disk

DOCUMENTED_CODES = {0, 1, 2, 3, 75}
CLOCK = Clock()  # the seeded home's and every command's: the matrix never reads the machine's
JOURNAL_JSON = json.dumps(journal_fields(titre="Nouvelle entrée"))
ENVELOPE = json.dumps(
    {"session": "ses_1", "user_messages": [], "exposures": [], "args": {"text": "une note"}}
)
PROPOSAL = {
    "type": "fait",
    "titre": "Disques",
    "contenu": "Surveiller les disques.",
    "contradiction": "aucune",
    "remplace": "rien",
}

# Every command of the command line, with arguments that make it do its real work (stdin: the
# JSON it reads; "{refs}" stands for the seeded entries' references).
COMMANDS: dict[str, tuple[list[str], str]] = {
    "ocmem context-size": (["context-size"], ""),
    "ocmem cron print": (["cron", "print"], ""),
    "ocmem curate": (["curate", "--print"], ""),
    "ocmem doctor": (["doctor"], ""),
    "ocmem gate": (["gate"], '{"id": 1, "op": "prompt-context", "session": "ses_1"}\n'),
    "ocmem history": (["history"], ""),
    "ocmem init": (["init"], ""),
    "ocmem journal add": (["journal", "add"], JOURNAL_JSON),
    "ocmem journal archive": (["journal", "archive", "--older-than", "90"], ""),
    "ocmem journal index": (["journal", "index"], ""),
    "ocmem journal recent": (["journal", "recent"], ""),
    "ocmem journal search": (["journal", "search", "docker", "ports"], ""),
    "ocmem note": (["note", "une note de travail"], ""),
    "ocmem pending accept": (["pending", "accept", "P-0001", "--yes"], ""),
    "ocmem pending annuler": (["pending", "annuler"], ""),
    "ocmem pending duplicates": (["pending", "duplicates"], ""),
    "ocmem pending list": (["pending", "list"], ""),
    "ocmem pending merge": (["pending", "merge", "P-0001", "P-0002"], ""),
    "ocmem pending reject": (["pending", "reject", "P-0001", "--reason", "non"], ""),
    "ocmem pending show": (["pending", "show", "P-0001"], ""),
    "ocmem plugin-config": (["plugin-config"], ""),
    "ocmem prompt-context": (["prompt-context", "--session", "ses_1"], ""),
    "ocmem propose": (["propose"], json.dumps({**PROPOSAL, "sources": "{refs}"})),
    "ocmem pull": (["pull"], ""),
    "ocmem push": (["push"], ""),
    "ocmem retire fact": (
        ["retire", "fact", "Le VPS tourne sous Debian 12.", "--reason", "vu"],
        "",
    ),
    "ocmem retire skill": (["retire", "skill", "retrospective", "--reason", "inutile"], ""),
    "ocmem review": (["review"], ""),
    "ocmem status": (["status"], ""),
    "ocmem sync": (["sync"], ""),
    "ocmem tool": (["tool", "memory_note"], ENVELOPE),
}
# They change the user's real crontab: covered by tests/test_schedule.py with a fake crontab.
# `harden` changes owners and /etc/sudoers.d as root: covered by tests/test_harden.py.
# `mcp` is gone: it only says where the space went, reading and writing nothing
# (tests/test_former_mcp.py). `desinstaller` removes cron lines and units: tests/test_uninstall.py.
# `undo` and `uninstall` are the English names of `pending annuler` and `desinstaller`.
# `essai` works in a sandbox of its own and never opens the home: tests/test_essai.py.
NOT_RUN_HERE = {
    "ocmem essai",
    "ocmem cron install",
    "ocmem cron remove",
    "ocmem harden",
    "ocmem mcp",
    "ocmem desinstaller",
    "ocmem uninstall",
    "ocmem pending undo",
}
# Promotion is refused with sync on (it happens in SilverBullet): this one runs without sync.
LOCAL_ONLY = {
    "ocmem pending accept",
    "ocmem pending annuler",
    "ocmem retire fact",
    "ocmem retire skill",
}
# What must keep working when nothing can be written (read-only home, full disk, lock held).
READERS = {
    "ocmem context-size",
    "ocmem cron print",
    "ocmem curate",
    "ocmem gate",  # here it serves prompt-context: the memory for the prompt
    "ocmem history",
    "ocmem journal index",
    "ocmem journal recent",
    "ocmem journal search",
    "ocmem pending duplicates",
    "ocmem pending list",
    "ocmem pending show",
    "ocmem plugin-config",
    "ocmem prompt-context",
    "ocmem review",
    "ocmem status",
}
# Commands that read JSON on standard input.
STDIN_READERS = {"ocmem journal add", "ocmem propose", "ocmem tool"}
SYNC_COMMANDS = {"ocmem pull", "ocmem push", "ocmem sync"}


def test_the_matrix_covers_every_command() -> None:
    every = {path for path, _ in docs.commands(cli, "ocmem", hidden=True)}
    assert every - NOT_RUN_HERE == set(COMMANDS)
    assert {command for command, _ in CASES} == set(COMMANDS)  # each meets a fault at least
    assert set(WRITE_PATH_COMMANDS) <= set(COMMANDS)
    for command in WRITE_PATH_COMMANDS:
        assert {fault for c, fault in CASES if c == command} == set(FAULTS)


# --- the seeded home -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    """One SilverBullet for the module, with a page and a skill for pull to install."""
    from support.sbserver import FakeSilverBullet

    with FakeSilverBullet(token=SB_TOKEN) as sb:
        sb.write("Agents/Memory/MEMORY.md", "# Mémoire\n\n- Le VPS tourne sous Debian 12.\n")
        sb.write(
            "Agents/Skills/sauvegarde/SKILL.md",
            "---\nname: sauvegarde\ndescription: Sauvegarder avant une migration.\n---\n\nFaire une copie.\n",
        )
        yield sb


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home made by init, with two journal entries, two proposals and a note (no sync)."""
    home = tmp_path_factory.mktemp("template") / "home"
    workspace = Workspace(load_settings(home), clock=CLOCK)
    Installer(workspace).run()
    refs = [
        Memory(workspace)
        .add_journal(
            journal_fields(titre=title, piege="disques pleins : sauvegarder et surveiller avant")
        )
        .lines[0]
        .removeprefix("Entrée ajoutée : ")
        for title in ("Ports", "Sauvegardes")
    ]
    for title, content in (
        ("Ports libres", "Vérifier les ports."),
        ("Copies", "Sauvegarder avant."),
    ):
        Proposals(workspace).propose(
            {**PROPOSAL, "titre": title, "contenu": content, "sources": refs}
        )
    Memory(workspace).add_note("une note existante")
    (home / "memory/MEMORY.md").write_text(
        "# Mémoire\n\n- Le VPS tourne sous Debian 12. (2026-11-20, Source : P-0042)\n"
    )
    (home / ".ocmem/refs.json").write_text(json.dumps(refs))
    return home


def snapshot(home: Path) -> dict[str, bytes]:
    """Bytes of every file a user owns (ocmem's own state excluded)."""
    return {
        p.relative_to(home).as_posix(): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and p.relative_to(home).parts[0] != ".ocmem"
    }


def backups(home: Path) -> dict[str, bytes]:
    folder = home / ".ocmem/backups"
    if not folder.is_dir():
        return {}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


# --- running a command -----------------------------------------------------------------------


class Result(NamedTuple):
    code: int
    out: str
    err: str


@pytest.fixture
def run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Result]:
    """``ocmem ARGS`` through its entry point, stdin given as bytes."""
    from ocmem.cli.entry import main

    def run(args: list[str], stdin: bytes = b"") -> Result:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main(args, CLOCK)
        captured = capsys.readouterr()
        code = exit_info.value.code
        return Result(code if isinstance(code, int) else 1, captured.out, captured.err)

    return run


# --- the faults ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Corruption:
    """A file of the home replaced by ``content`` (a folder when ``path`` ends with /);
    ``named_by``: the commands that read it and must say so (name it, with the fix) rather
    than go on as if nothing were wrong. The others must cope (or ignore it)."""

    path: str
    content: bytes
    named_by: frozenset[str]
    name: str = ""

    @property
    def shown(self) -> str:
        return self.name or Path(self.path).name


def _all(*names: str) -> frozenset[str]:
    return frozenset(f"ocmem {n}" for n in names)


# The gate is a server: it stays open and answers each request with its own code (test_gate).
EVERY = frozenset(COMMANDS) - {"ocmem gate"}
PENDING_USERS = _all(
    "pending list",
    "pending show",
    "pending accept",
    "pending merge",
    "pending reject",
    "pending duplicates",
    "propose",
    "status",
    "doctor",
    "review",
)
CORRUPT_STATE: dict[str, Corruption] = {
    "ocmem.yaml": Corruption("ocmem.yaml", b"silverbullet: [unbalanced\n", EVERY),
    "ocmem.yaml non UTF-8": Corruption(
        "ocmem.yaml", b"limits:\n  memory_chars: \xff\n", EVERY, "ocmem.yaml"
    ),
    "sync-state.json": Corruption(
        ".ocmem/sync-state.json", b"{not json", _all("status", "doctor", "pull", "push", "sync")
    ),
    "plugin.json": Corruption(".ocmem/plugin.json", b"\x00\x01 not json", _all("doctor")),
    "plugin.json non UTF-8": Corruption(
        ".ocmem/plugin.json", b'{"command": ["\xff"]}', _all("doctor"), "plugin.json"
    ),
    "ses_1.json": Corruption(
        ".ocmem/sessions/ses_1.json", b'{"journal": 5}', _all("prompt-context")
    ),
    "ses_1.json non UTF-8": Corruption(
        ".ocmem/sessions/ses_1.json", b'{"journal": ["\xff"]}', _all("prompt-context"), "ses_1.json"
    ),
    "note-recurrence.json": Corruption(
        ".ocmem/note-recurrence.json", b'{"notes": 3}', _all("note", "review", "tool")
    ),
    "note-recurrence.json non UTF-8": Corruption(
        ".ocmem/note-recurrence.json",
        b'{"notes": [{"text": "\xff", "days": ["2026-11-29"]}]}',
        _all("note", "review", "tool"),
        "note-recurrence.json",
    ),
    "index de recherche": Corruption(
        ".ocmem/journal-index.sqlite3", b"SQLite format 3\x00" + b"\xff" * 4000, frozenset()
    ),
    "skill-usage.jsonl": Corruption(
        ".ocmem/skill-usage.jsonl", b'{"ts": 5}\n\xff\xfe\nnot json\n', frozenset()
    ),
    "log.jsonl": Corruption(".ocmem/log.jsonl", b"\xff\xfe garbage without newline", frozenset()),
    "silverbullet.token non UTF-8": Corruption(
        ".ocmem/silverbullet.token",
        b"\xff\xfe",
        _all("pull", "push", "sync", "status"),
        "silverbullet.token",
    ),
    "ocmem.lock": Corruption(".ocmem/ocmem.lock/", b"", frozenset(), "ocmem.lock"),
    "backups": Corruption(".ocmem/backups", b"not a folder", frozenset(), "backups"),
    "sessions": Corruption(".ocmem/sessions", b"not a folder", frozenset(), "sessions"),
}
CORRUPT_MEMORY: dict[str, Corruption] = {
    "MEMORY.md non UTF-8": Corruption(
        "memory/MEMORY.md",
        b"# M\xe9moire\n\n- fait\n",
        _all(
            "status",
            "context-size",
            "review",
            "prompt-context",
            "propose",
            "pending accept",
            "doctor",
        ),
        "MEMORY.md",
    ),
    "SHORT_TERM.md mal formé": Corruption(
        "memory/SHORT_TERM.md",
        b"note sans date\n",
        _all("note", "status", "doctor", "tool"),
        "SHORT_TERM.md",
    ),
    "SHORT_TERM.md non UTF-8": Corruption(
        "memory/SHORT_TERM.md",
        b"[2026-01-01 \xe2 expire 2026-01-02] x\n",
        _all("note", "status", "doctor", "tool", "prompt-context", "context-size"),
        "SHORT_TERM.md",
    ),
    "journal.md non UTF-8": Corruption(
        "memory/journal.md",
        b"# Journal\n\n## 2026-01-01 10:00 \xb7 x \xb7 #t\n- Demande : \xff\n",
        # status counts entries from the index or the headers' bytes (issue 34: it never reads a
        # 100 000-entry journal whole), so it no longer sees the bad bytes; doctor does
        _all("journal recent", "propose", "doctor", "review", "journal archive"),
        "journal.md",
    ),
    "journal.md illisible": Corruption(
        "memory/journal.md",
        b"n'importe quoi\n## sans format\n\x00\x01\n",
        frozenset(),
        "journal.md",
    ),
    "journal.md coupé": Corruption(
        "memory/journal.md", b"", frozenset(), "journal.md"
    ),  # see _torn
    "pending.md mal formé": Corruption(
        "memory/pending.md",
        b"# Propositions\n\n## P-0001 \xc2\xb7 fait \xc2\xb7 t\n- Statut : en attente\n",
        PENDING_USERS,
        "pending.md",
    ),
    "pending.md non UTF-8": Corruption(
        "memory/pending.md", b"# Propositions \xff\n", PENDING_USERS, "pending.md"
    ),
    "SKILL.md mal formé": Corruption(
        "skills/retrospective/SKILL.md",
        b"---\nname: [unbalanced\n---\n",
        _all("status", "doctor"),
        "retrospective",
    ),
    "SKILL.md non UTF-8": Corruption(
        "skills/retrospective/SKILL.md",
        b"---\nname: retrospective\ndescription: \xff\n---\n",
        frozenset(),
        "SKILL.md",
    ),
    "AGENTS.md non UTF-8": Corruption(
        "AGENTS.md", b"# Agents \xff\n", _all("doctor", "context-size"), "AGENTS.md"
    ),
}

ENVIRONMENTS = [
    "argument non UTF-8",
    "entrée non UTF-8",
    "home en lecture seule",
    "memory/ en lecture seule",
    "disque plein",
    "verrou tenu",
]
FAULTS = (
    ENVIRONMENTS
    + [f"état : {k}" for k in CORRUPT_STATE]
    + [f"mémoire : {k}" for k in CORRUPT_MEMORY]
)

# The faults act on the ways ocmem writes (tests/support/writesites.py names them: the atomic
# replace with its backup, an append, a removal, the state files, the log, the writes journal,
# the lock, the search index, the history of pulls). Each of these commands reaches some, and
# together they reach every one any command reaches (test_the_write_path_commands_reach_every_write):
# they meet every fault.
WRITE_PATH_COMMANDS = {
    "ocmem retire skill": "atomic replace and backup, removals, state files, log, writes journal, lock",
    "ocmem pending accept": "a promotion: two files changed as one",
    "ocmem note": "the short-term notes, the command run most",
    "ocmem journal add": "the journal's append",
    "ocmem journal search": "the search index (SQLite)",
    "ocmem pull": "pages installed from the space, the history of pulls (git)",
}
# Every other command meets the fault that stops every write, and each corrupt file is given to
# the commands that read it (they must name it, with its fix).
REPRESENTATIVE = "home en lecture seule"


def _cases() -> list[tuple[str, str]]:
    cases = {(c, f) for c in WRITE_PATH_COMMANDS for f in FAULTS}
    cases |= {(c, REPRESENTATIVE) for c in COMMANDS}
    for kind, corruptions in (("état", CORRUPT_STATE), ("mémoire", CORRUPT_MEMORY)):
        cases |= {(c, f"{kind} : {k}") for k, v in corruptions.items() for c in v.named_by}
    return sorted(cases)


CASES = _cases()


def torn(home: Path) -> bytes:
    """The journal as a killed `journal add` leaves it: a prefix of the appended entry."""
    text = (home / "memory/journal.md").read_bytes()
    entry = journal.entry_from_fields(
        journal_fields(titre="Interrompue"), datetime(2026, 1, 2, 3, 4), 10
    )
    return text + ("\n" + entry.render()).encode()[:57]


def corrupt(home: Path, corruption: Corruption) -> None:
    target = home / corruption.path
    if corruption.path.endswith("/"):
        target.unlink(missing_ok=True)
        target.mkdir(parents=True)
        return
    if target.is_dir():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(corruption.content or torn(home))


# --- the assertions every case shares -------------------------------------------------------


def check_message(command: str, result: Result) -> None:
    said = result.err + result.out
    assert "Traceback" not in said, said
    assert "erreur inattendue" not in said, said
    assert result.code in DOCUMENTED_CODES, (result.code, said)
    if result.code == 0 or (command == "ocmem doctor" and not result.err):
        return
    if result.err:
        lines = result.err.rstrip("\n").split("\n")
        assert lines[0].startswith("ocmem : ") and lines[-1].startswith("Correction : "), result.err
        assert len(lines) == 2, result.err  # one message, one fix
    else:
        assert result.code in (1, 3) and result.out.strip(), result  # an outcome that says why


def check_files(
    home: Path,
    before: dict[str, bytes],
    old_backups: dict[str, bytes],
    after: dict[str, bytes],
    result: Result,
) -> None:
    assert not list(home.rglob(f"*{TEMP_SUFFIX}")), "temp file left behind"
    for name, data in backups(home).items():
        if name in old_backups:
            assert data == old_backups[name]
            continue
        rel = name.split("/", 1)[1]
        assert data, f"empty backup {name}"
        if not rel.endswith(".interrompue"):
            assert before.get(rel) == data, f"backup {name} differs from the file it copies"
    if result.code != 0:
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        # pull installs pages one by one, each whole, before a later step may fail
        allowed = {"memory/MEMORY.md", "skills/sauvegarde/SKILL.md"}
        pending_before = before.get("memory/pending.md", b"")
        if result.code == 3 and after.get("memory/pending.md", b"").startswith(pending_before):
            allowed.add("memory/pending.md")  # a proposal added next to a damaged block (exit 3)
        assert changed <= allowed, changed
        return
    for rel, data in after.items():  # what a successful run leaves is whole
        if before.get(rel) == data:
            continue
        if rel == "memory/journal.md":
            assert journal.torn_end(data) is None
        elif rel == "memory/pending.md":
            pending.parse(data.decode("utf-8"))
        elif rel == "memory/SHORT_TERM.md":
            shortterm.parse(data.decode("utf-8"))


# --- the matrix ------------------------------------------------------------------------------


def _corruption(fault: str) -> Corruption | None:
    if fault.startswith("état : "):
        return CORRUPT_STATE[fault.removeprefix("état : ")]
    if fault.startswith("mémoire : "):
        return CORRUPT_MEMORY[fault.removeprefix("mémoire : ")]
    return None


def seed_home(
    home: Path, template: Path, command: str, server: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], bytes]:
    """``home``, a copy of the template made ready for ``command``: its arguments and stdin."""
    monkeypatch.setenv("OCMEM_HOME", str(home))
    shutil.copytree(template, home, symlinks=True)
    # Made for this folder, not a copy of another home: its own id and claim (every test's
    # home pushes to the module's one server).
    identity = home / ".ocmem/home.json"
    folder = home.resolve()
    identity.write_text(
        json.dumps(
            {
                **json.loads(identity.read_text()),
                "folder": str(folder),
                "id": home_identity.default_id(folder),
                "pages": home_identity.OWN_FOLDER,
            }
        )
    )
    if command not in LOCAL_ONLY:
        configure_sync(home, server.url)
    if command == "ocmem pending annuler":  # a promotion to take back, made before the fault
        Proposals(Workspace(load_settings(home), clock=CLOCK)).accept("P-0001")
    if command == "ocmem gate":
        # The gate serves the process that started it, found among its ancestors: pytest's
        # parent may be anything (a shell, cron, init once that shell has gone). This process
        # stands for OpenCode, whatever started it.
        opencode = agentproc.read_proc(os.getpid())
        assert opencode is not None
        monkeypatch.setattr(agentproc, "ancestors", lambda pid, proc_root=None: [opencode])
    args, stdin_text = COMMANDS[command]
    refs = json.loads((home / ".ocmem/refs.json").read_text())
    return list(args), stdin_text.replace('"{refs}"', json.dumps(refs)).encode()


@pytest.mark.parametrize(("command", "fault"), CASES)
def test_fault_matrix(
    command: str,
    fault: str,
    template: Path,
    server: Any,
    run: Callable[..., Result],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if (fault == "disque plein" or (IS_ROOT and "lecture seule" in fault)) and not CAN_MOUNT:
        if os.environ.get("OCMEM_FAULTS_REQUIRED"):
            pytest.fail(f"OCMEM_FAULTS_REQUIRED is set but this case {WHY_NOT}")
        pytest.skip(WHY_NOT)
    corruption = _corruption(fault)
    errno_name = ""
    with contextlib.ExitStack() as disk:
        if fault == "disque plein":
            home = disk.enter_context(small_disk(tmp_path / "disk")) / "home"
        else:
            home = tmp_path / "home"
        args, stdin = seed_home(home, template, command, server, monkeypatch)
        if corruption:
            corrupt(home, corruption)
        if fault == "argument non UTF-8":
            args = [*args, "\udcff"]  # how Python hands over the byte 0xff of argv
        elif fault == "entrée non UTF-8":
            stdin = b'{"titre": "\xff\xfe"}'
        elif fault == "verrou tenu":
            args = [*args, "--wait", "0"]
        before, old_backups = snapshot(home), backups(home)
        with contextlib.ExitStack() as broken:  # read-only mounts undone, lock released here
            if fault == "home en lecture seule":
                errno_name = broken.enter_context(read_only(home))
            elif fault == "memory/ en lecture seule":
                errno_name = broken.enter_context(read_only(home / "memory"))
            elif fault == "disque plein":
                fill(home.parent / "filler")
            elif fault == "verrou tenu":
                broken.enter_context(lock_held(home / ".ocmem/ocmem.lock"))
            result = run(args, stdin)
        after = snapshot(home)
        check_message(command, result)
        check_files(home, before, old_backups, after, result)

    said = result.err + result.out
    if fault == "argument non UTF-8":
        assert result.code == 2 and "non UTF-8" in result.err
    elif fault == "entrée non UTF-8":
        if command in STDIN_READERS:
            assert result.code == 2 and "UTF-8" in result.err
    elif fault in ("home en lecture seule", "memory/ en lecture seule", "disque plein"):
        if command in READERS:
            assert result.code == 0, said
        elif command == "ocmem doctor":  # it diagnoses what the others ran into
            assert (
                "presque plein" if fault == "disque plein" else "n'est pas inscriptible"
            ) in said, said
        elif result.code != 0:
            words = {"EROFS": "lecture seule", "EACCES": "permission refusée"}
            assert ("disque plein" if fault == "disque plein" else words[errno_name]) in said, said
            assert "rien n'a été modifié" in said or command in SYNC_COMMANDS, said
    elif fault == "verrou tenu":
        if command in READERS:
            assert result.code == 0, said
        elif command == "ocmem doctor":
            assert "verrou tenu" in said
        else:
            assert result.code == 75 and "verrou" in result.err, said
    elif corruption is not None and command in corruption.named_by:
        assert corruption.shown in said, (command, said)
        assert "Correction :" in said or "→" in said, said  # doctor lists the fix under →
        if command != "ocmem doctor":
            # an overview, and the journal's readers, show the rest and name what they skip
            assert result.code != 0 or command in ("ocmem status", "ocmem journal recent"), said
            # propose adds its proposal next to a damaged block, kept byte for byte (exit 3)
            if command == "ocmem propose" and corruption.path == "memory/pending.md":
                assert after["memory/pending.md"].startswith(before["memory/pending.md"])
            else:
                assert after == before


def test_a_permission_refused_names_the_file_and_the_folder_to_fix(
    home: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a non-root user meets on a folder they cannot write (EACCES, not EROFS)."""
    import errno

    from ocmem.home import workspace

    before = snapshot(home)

    def refused(path: Path, data: object, **kw: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(workspace, "atomic_write", refused)
    result = run(["note", "une note", "--wait", "0"])
    assert result.code == 1
    assert result.err.splitlines() == [
        "ocmem : permission refusée : impossible d'écrire memory/SHORT_TERM.md : rien n'a été modifié",
        f"Correction : donne les droits d'écriture sur {home / 'memory'} à cet utilisateur (`ls -ld {home / 'memory'}`), "
        "ou lance ocmem avec le compte propriétaire",
    ]
    assert snapshot(home) == before


def test_the_retrospective_tool_writes_the_entry_and_the_session_record_together_or_neither(
    home: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from ocmem.home import atomic, workspace

    envelope = {
        "session": "ses_9",
        "user_messages": [],
        "exposures": [],
        "args": journal_fields(titre="Rétrospective"),
    }
    journal_before = (home / "memory/journal.md").read_bytes()
    real = atomic.atomic_write

    def full_on_sessions(path: Path, data: object, **kw: Any) -> None:
        if path.parent.name == "sessions":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, data, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(workspace, "atomic_write", full_on_sessions)
    failed = run(["tool", "memory_journal"], json.dumps(envelope).encode())
    assert (
        failed.code == 1 and "disque plein" in failed.err and "rien n'a été modifié" in failed.err
    )
    assert (home / "memory/journal.md").read_bytes() == journal_before  # the append was undone
    monkeypatch.setattr(workspace, "atomic_write", real)
    done = run(["tool", "memory_journal"], json.dumps(envelope).encode())
    assert done.code == 0, done.err
    assert (
        run(["tool", "memory_journal"], json.dumps(envelope).encode()).code == 3
    )  # one per session
    assert (home / "memory/journal.md").read_text().count("Rétrospective") == 1


def test_the_write_path_commands_reach_every_write(
    template: Path,
    server: Any,
    run: Callable[..., Result],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every way of writing any command uses is used by a command that meets every fault: a new
    write path (or a command that starts writing differently) fails here until one does."""
    reached: dict[str, set[str]] = {}
    for command in sorted(COMMANDS):
        home = tmp_path / command.replace(" ", "-")
        args, stdin = seed_home(home, template, command, server, monkeypatch)
        with writesites.recorded() as sites:
            result = run(args, stdin)
        assert result.code == 0, (command, result)
        reached[command] = sites
    covered = set().union(*(reached[c] for c in WRITE_PATH_COMMANDS))
    missed = {
        site: sorted(c for c, sites in reached.items() if site in sites)
        for site in set().union(*reached.values()) - covered
    }
    assert not missed, f"add one of these commands to WRITE_PATH_COMMANDS: {missed}"
    # the recorder sees what it claims: the journal's append, the lock, the history of pulls
    assert "home/workspace.py::append → open_file" in reached["ocmem journal add"]
    assert "home/runlock.py::run_lock" in reached["ocmem note"]
    assert "silverbullet/history.py::_git" in reached["ocmem pull"]
