"""Local git history of the pulled tree: SilverBullet keeps no page history, so ocmem does.

The repository lives in ``<home>/.ocmem/history.git`` with the home as work tree, and only ever
tracks the files the pull writes (AGENTS.md, memory/MEMORY.md, skills/). Each pull that changed
something is one commit, so any promotion made in SilverBullet can be inspected and undone; its
message holds the change the pull showed (``ocmem.silverbullet.changes``), which ``log`` prints.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ocmem.errors import InputError, OcmemError
from ocmem.home.paths import Paths
from ocmem.outcome import Outcome


class History:
    def __init__(self, paths: Paths):
        self.paths = paths
        self.git_dir = paths.history_git

    @property
    def available(self) -> bool:
        return shutil.which("git") is not None

    def _env(self) -> dict[str, str]:
        return {
            **os.environ,
            "GIT_DIR": str(self.git_dir),
            "GIT_WORK_TREE": str(self.paths.home),
            "GIT_AUTHOR_NAME": "ocmem",
            "GIT_AUTHOR_EMAIL": "ocmem@localhost",
            "GIT_COMMITTER_NAME": "ocmem",
            "GIT_COMMITTER_EMAIL": "ocmem@localhost",
            "GIT_CONFIG_NOSYSTEM": "1",
        }

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["git", *args], env=self._env(), capture_output=True, text=True, check=False
        )
        if check and done.returncode != 0:
            raise OcmemError(
                f"git {args[0]} a échoué : {done.stderr.strip()[:300]}", fix="voir `ocmem doctor`"
            )
        return done

    def _ensure(self) -> None:
        if not (self.git_dir / "HEAD").exists():
            self.git_dir.parent.mkdir(parents=True, exist_ok=True)
            self._git("init", "--quiet", "--initial-branch=pulled")
            self._git("config", "core.quotePath", "false")

    def commit(
        self,
        present: Sequence[str],
        removed: Sequence[str],
        message: str,
        details: Sequence[str] = (),
    ) -> str | None:
        """Record the pulled files' current state; returns the short commit id, or None.
        ``details``: the body of the message, kept as is (the change the pull showed)."""
        if not self.available or not (present or removed):
            return None
        self._ensure()
        if present:
            self._git("add", "--force", "--", *present)
        if removed:
            self._git("rm", "--cached", "--quiet", "--ignore-unmatch", "--", *removed)
        if self._git("diff", "--cached", "--quiet", check=False).returncode == 0:
            return None
        body = "\n\n" + "\n".join(details) if details else ""
        self._git("commit", "--quiet", "--no-verify", "--cleanup=verbatim", "-m", message + body)
        return self._git("rev-parse", "--short", "HEAD").stdout.strip()

    def versions(self, path: str | None = None, limit: int = 20) -> list[tuple[str, str, str]]:
        """(short id, date, message) of the latest commits, newest first."""
        if (
            not self.available
            or self._git("rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0
        ):
            return []
        out = self._git(
            "log",
            f"-n{limit}",
            "--date=format:%Y-%m-%d %H:%M",
            "--format=%h%x09%ad%x09%s",
            *(["--", path] if path else []),
        ).stdout
        rows = (line.split("\t", 2) for line in out.splitlines() if line.count("\t") == 2)
        return [(rev, date, message) for rev, date, message in rows]

    def log(self, path: str | None = None, limit: int = 20) -> str:
        """Human-readable versions with the files each one changed, and the change the pull
        showed (its message's body)."""
        if not self.versions(path, 1):
            return ""
        args = [
            "log",
            f"-n{limit}",
            "--date=format:%Y-%m-%d %H:%M",
            "--format=%h %ad %s%n%b",
            "--name-status",
        ]
        out = self._git(*args, *(["--", path] if path else [])).stdout.strip()
        # A body ends in a newline, then git puts a blank line before the files: one is enough
        # (the body holds no blank line: a diff's blank context line is a space).
        return re.sub(r"\n{3,}", "\n\n", out)

    def blob(self, rev: str, path: str) -> bytes | None:
        """The bytes of ``path`` at ``rev``, or None (no history, no such file)."""
        if not self.available or not (self.git_dir / "HEAD").exists():
            return None
        done = subprocess.run(
            ["git", "cat-file", "blob", f"{rev}:{path}"],
            env=self._env(),
            capture_output=True,
            check=False,
        )
        return done.stdout if done.returncode == 0 else None

    def show(self, rev: str, path: str) -> str:
        if not rev.replace("~", "").replace("^", "").isalnum():
            raise InputError(f"version invalide : {rev!r}", fix="un identifiant de `ocmem history`")
        known = self._git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        if not (self.git_dir / "HEAD").exists() or known.returncode != 0:
            raise InputError(
                f"pas de version {rev} dans l'historique des pulls",
                fix="`ocmem history` liste les versions et les fichiers",
            )
        done = self._git("show", f"{rev}:{path}", check=False)
        if done.returncode != 0:
            raise InputError(
                f"{path} n'existe pas dans la version {rev}",
                fix="`ocmem history` liste les versions et les fichiers",
            )
        return done.stdout


PULLED_FILES = ("AGENTS.md", "memory/MEMORY.md")  # and all of skills/
PULLED_FOLDER = "skills/"


def pulled_file(paths: Paths, given: str) -> str:
    """``given`` (relative to the home, or absolute) as the history names it; refused when it
    is outside the home or not a file the pull writes (the history holds nothing else)."""
    example = "par ex. `ocmem history memory/MEMORY.md` (chemin relatif au dossier ocmem)"
    raw = Path(given).expanduser()
    rel: str | None = None
    if raw.is_absolute():
        full = Path(os.path.abspath(raw))
        for home in (Path(os.path.abspath(paths.home)), paths.home.resolve()):
            if full == home or home in full.parents:
                rel = full.relative_to(home).as_posix()
                break
    else:
        rel = os.path.normpath(given).replace(os.sep, "/")
    if rel is None or rel in (".", "..") or rel.startswith("../"):
        raise InputError(
            f"{given} est hors du dossier ocmem ({paths.home}) : l'historique ne tient que les "
            "fichiers tirés de SilverBullet",
            fix=example,
        )
    if rel not in PULLED_FILES and not rel.startswith(PULLED_FOLDER):
        raise InputError(
            f"{rel} n'est pas un fichier tiré de SilverBullet : l'historique ne tient que "
            "AGENTS.md, memory/MEMORY.md et skills/",
            fix=f"ses versions d'avant chaque écriture d'ocmem sont dans .ocmem/backups "
            f"(`ls {paths.backups_dir}/*/{rel}`)",
        )
    return rel


UNDO_HINT = [
    "",
    "Pour annuler une promotion : `ocmem history FICHIER --voir VERSION` affiche l'ancienne version ;",
    "recopie-la dans la page SilverBullet correspondante, le prochain pull la réinstallera.",
]


def history(paths: Paths, given: str | None, rev: str | None) -> Outcome:
    """``ocmem history [FICHIER] [--voir VERSION]``, each answer true to what the history
    holds."""
    log = History(paths)
    if not log.available:
        raise OcmemError(
            "git est introuvable : ocmem ne tient pas d'historique des pulls sans lui",
            fix="installe git (`apt-get install git`) : les prochains pulls y seront enregistrés",
        )
    path = pulled_file(paths, given) if given is not None else None
    if rev is not None:
        if path is None:
            raise InputError(
                "--voir demande aussi le chemin du fichier",
                fix="par ex. `ocmem history memory/MEMORY.md --voir VERSION`",
            )
        text = log.show(rev, path)
        return Outcome([text.rstrip("\n")])
    if not log.versions(None, 1):
        return Outcome(["aucune version enregistrée : aucun pull n'a encore rien changé"])
    text = log.log(path)
    if not text:
        return Outcome([f"aucune version de {path} : aucun pull ne l'a encore changé"])
    return Outcome([text, *UNDO_HINT])
