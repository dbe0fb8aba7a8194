"""The sandbox's ``crontab`` and ``systemctl`` (first on every PATH of an ``ocmem essai`` run, in
place of the user's), and what they were asked.

``crontab`` keeps the sandbox's own crontab, a file of the sandbox: ``-l`` reads it, installing
(a file or ``-``) writes it, ``-r`` removes it, so a test that installs its cron jobs then lists
them sees them. Naming a user (``-u USER``) aims at a crontab outside the sandbox: a read is
answered « no crontab » and reads nothing of theirs, anything else is refused. ``systemctl``
reaches no service manager: a query (``status``, ``is-enabled``…) is answered that there is none,
anything else is refused.

Each call is logged with its kind: a read, a write into the sandbox's crontab, or a refused
write aimed outside the sandbox — the only escapes (ocmem.trial.runner says them).

usage: python -m ocmem.trial.schedulers JOURNAL CRONTAB crontab|systemctl ARGS...
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

READ = "lecture"
SANDBOX = "bac à sable"  # a write into the sandbox's crontab
ESCAPE = "refusée"  # a write aimed at a crontab or a service manager outside the sandbox
SANDBOX_USER = "essai"
SYSTEMCTL_QUERIES = frozenset(
    {
        "status",
        "show",
        "cat",
        "is-active",
        "is-enabled",
        "is-failed",
        "is-system-running",
        "list-units",
        "list-timers",
        "list-unit-files",
        "list-sockets",
        "list-dependencies",
        "list-jobs",
        "help",
    }
)


@dataclass(frozen=True)
class Asked:
    """One call of a stand-in: its kind (READ, SANDBOX, ESCAPE) and its command line."""

    kind: str
    command: str


@dataclass(frozen=True)
class CrontabRequest:
    user: str | None  # -u USER: someone's crontab, not the sandbox's
    action: str  # "list", "remove", "edit", "install", or "invalid"
    source: str = "-"  # what "install" reads


def crontab_request(args: Sequence[str]) -> CrontabRequest:
    """``crontab [-u USER] {-l | -r | -e | FILE | -}`` (``-i`` only asks before ``-r``)."""
    user: str | None = None
    actions: list[str] = []
    sources: list[str] = []
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "-u":
            user = rest.pop(0) if rest else ""
        elif arg.startswith("-u"):
            user = arg[2:]
        elif arg in ("-l", "-r", "-e"):
            actions.append({"-l": "list", "-r": "remove", "-e": "edit"}[arg])
        elif arg == "-i":
            continue
        elif arg == "-" or not arg.startswith("-"):
            sources.append(arg)
        else:
            actions.append("invalid")
    if len(actions) + len(sources) > 1 or user == "":
        return CrontabRequest(user, "invalid")
    if sources or not actions:
        return CrontabRequest(user, "install", sources[0] if sources else "-")
    return CrontabRequest(user, actions[0])


def crontab_kind(request: CrontabRequest) -> str:
    if request.action == "list":
        return READ
    return SANDBOX if request.user is None else ESCAPE


def systemctl_kind(args: Sequence[str]) -> str:
    """A query (without a verb: the list of units) is a read; any other verb acts."""
    verb = next((arg for arg in args if not arg.startswith("-")), None)
    return READ if verb is None or verb in SYSTEMCTL_QUERIES else ESCAPE


def crontab(args: Sequence[str], table: Path, stdin: str) -> tuple[int, str, str]:
    """The sandbox's crontab: (exit code, stdout, stderr)."""
    request = crontab_request(args)
    if request.action == "invalid":
        return 1, "", "usage: crontab [-u USER] {-l | -r | FICHIER | -}\n"
    if request.user is not None:
        if request.action == "list":
            return 1, "", f"no crontab for {request.user}\n"
        return 1, "", f"crontab de {request.user} : hors du bac à sable d'ocmem essai, refusé\n"
    if request.action == "list":
        if not table.exists():
            return 1, "", f"no crontab for {SANDBOX_USER}\n"
        return 0, table.read_text(encoding="utf-8"), ""
    if request.action == "remove":
        if not table.exists():
            return 1, "", f"no crontab for {SANDBOX_USER}\n"
        table.unlink()
        return 0, "", ""
    if request.action == "edit":
        return 1, "", "crontab -e : aucun éditeur dans le bac à sable d'ocmem essai\n"
    text = stdin if request.source == "-" else Path(request.source).read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        return 1, "", "crontab : il manque le saut de ligne final, crontab non installée\n"
    partial = table.with_name(table.name + ".partiel")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, table)
    return 0, "", ""


def systemctl(args: Sequence[str]) -> tuple[int, str, str]:
    if systemctl_kind(args) == READ:
        return (
            1,
            "",
            "systemctl : aucun gestionnaire de services dans le bac à sable d'ocmem essai\n",
        )
    return 1, "", "systemctl : refusé dans le bac à sable d'ocmem essai\n"


def record(journal: Path, asked: Asked) -> None:
    """One line per call (appended whole: calls may come from several processes at once)."""
    line = f"{asked.kind}\t{asked.command}\n".encode()
    fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_journal(journal: Path) -> list[Asked]:
    if not journal.exists():
        return []
    lines = journal.read_text(encoding="utf-8").splitlines()
    return [Asked(*line.split("\t", 1)) for line in lines if "\t" in line]


def note(calls: Sequence[Asked]) -> str:
    """What the run's remarks say of them: the escapes first, then the sandbox's own crontab."""
    escapes = [call.command for call in calls if call.kind == ESCAPE]
    reads = sum(c.kind == READ and c.command.startswith("crontab") for c in calls)
    writes = sum(c.kind == SANDBOX for c in calls)
    queries = sum(c.kind == READ and c.command.startswith("systemctl") for c in calls)
    said = (
        f"Crontab et systemd : {len(escapes)} écriture(s) visant une crontab hors du bac à "
        f"sable ou systemd, refusée(s) ({', '.join(escapes[:5])})"
        if escapes
        else "Crontab et systemd : les tiens jamais appelés"
    )
    said += (
        f" ; la crontab du bac à sable (un fichier à lui) lue {reads} fois, écrite {writes} fois"
    )
    if queries:
        said += f", systemctl interrogé {queries} fois (sans gestionnaire de services)"
    return said + "."


def main(argv: Sequence[str]) -> int:
    journal, table, program, *args = argv
    command = " ".join([program, *args])
    if program == "crontab":
        request = crontab_request(args)
        kind = crontab_kind(request)
        reads_stdin = request == CrontabRequest(None, "install", "-")
        code, out, err = crontab(args, Path(table), sys.stdin.read() if reads_stdin else "")
    else:
        kind = systemctl_kind(args)
        code, out, err = systemctl(args)
    record(Path(journal), Asked(kind, command))
    sys.stdout.write(out)
    sys.stderr.write(err)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
