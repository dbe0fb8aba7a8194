"""``ocmem essai``: the spec's thirteen tests on the user's machine, in a sandbox.

The run: a sandbox (ocmem.trial.sandbox), the SilverBullet stand-in, the user's first hour in it
(``ocmem init``, the space, the first pull), the tests that need only ocmem's command line, then,
when an OpenCode 1.x is there, one ``opencode serve`` with the scripted model for the tests that
need the agent. OpenCode is found as ``ocmem doctor`` finds it (ocmem.setup.opencodeversion), or
given; without it (or with OpenCode 2, which does not load the plugin) those tests are « non
lancé », with the reason and the fix.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ocmem.setup.opencodedir import CHECKED_OPENCODE
from ocmem.setup.opencodeversion import OPENCODE1_INSTALL, OpenCodeSeen, inspect
from ocmem.trial import agenttests, schedulers, spectests
from ocmem.trial.agenttests import MAIL, MAILBOX_SERVER, Stage, web_page
from ocmem.trial.opencodeserve import AskedPermission, OpenCodeFailed, Serve
from ocmem.trial.sandbox import Sandbox
from ocmem.trial.scriptedmodel import ScriptedModel, opencode_config
from ocmem.trial.spectests import TITLES, Failed, Scene
from ocmem.trial.standin import Standin
from ocmem.trial.userspace import SpaceCopy
from ocmem.trial.verdicts import FAILED, NOT_RUN, PARTLY, PASSED, Verdict

Say = Callable[[str], None]
NEEDS_OPENCODE = "il faut OpenCode 1.x (voir plus haut)"


@dataclass(frozen=True)
class Agentless:
    """Why the agent's tests cannot run, and what to do about it."""

    why: str
    fix: str


def find_opencode(
    given: Path | None, env: Mapping[str, str], home: Path | None, sandboxed: Mapping[str, str]
) -> tuple[Path, str] | Agentless:
    """The OpenCode 1.x to run (its path and version), as doctor finds it, or why not. Its
    ``--version`` runs in the sandbox's environment (``sandboxed``): OpenCode makes its cache
    and data folders under HOME at any start, and the user's HOME is not the run's."""

    def version(command: list[str]) -> str:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=20, check=True, env=dict(sandboxed)
        )
        return done.stdout or done.stderr

    if given is not None:
        try:
            seen = OpenCodeSeen(given, version([str(given), "--version"]))
        except (OSError, subprocess.SubprocessError) as exc:
            seen = OpenCodeSeen(given, failure=str(exc))
    else:
        seen = inspect(env, home, run=version)
    two = seen.opencode2()
    if two is not None and two.blocking:
        return Agentless(two.what, two.fix)
    if seen.program is None:
        return Agentless(
            "OpenCode est introuvable (ni dans le PATH, ni dans ~/.opencode/bin)",
            f"installe-le (`{OPENCODE1_INSTALL}`), ou donne son chemin : "
            "`ocmem essai --opencode CHEMIN`",
        )
    if seen.failure is not None or seen.major is None:
        return Agentless(
            f"{seen.program} ne dit pas sa version ({seen.failure or seen.output.strip()[:60]})",
            f"réinstalle OpenCode : `{OPENCODE1_INSTALL}`",
        )
    return seen.program, seen.version or "?"


def _run(number: int, test: Callable[[], str], say: Say) -> Verdict:
    say(f"essai : test {number} — {TITLES[number]}")
    start = time.monotonic()
    try:
        result, proof = PASSED, test()
    except Failed as failed:
        result, proof = FAILED, failed.proof
    except OpenCodeFailed as exc:
        result, proof = FAILED, f"OpenCode : {exc}"
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        result, proof = FAILED, f"erreur pendant l'essai : {exc}"
    except Exception as exc:  # a bug of this test: its row says it, the other tests still run
        result, proof = (
            FAILED,
            f"erreur inattendue du test ({type(exc).__name__} : {exc}), à signaler",
        )
    return Verdict(number, TITLES[number], result, proof, time.monotonic() - start)


def _agent_config(model: ScriptedModel, sandbox: Sandbox) -> dict[str, object]:
    mail = sandbox.root / "courriel.txt"
    mail.write_text(MAIL, encoding="utf-8")
    config: dict[str, object] = opencode_config(model.base_url)
    config["snapshot"] = False  # OpenCode's undo of the project's files: a git commit per step
    config["mcp"] = {
        MAILBOX_SERVER: {
            "type": "local",
            "command": [sys.executable, "-m", "ocmem.trial.mailbox", str(mail)],
            "enabled": True,
        }
    }
    return config


def _git_project(sandbox: Sandbox) -> None:
    """A git project (OpenCode then stops at its root looking for configuration), when git is
    there; without it, a plain folder."""
    git = shutil.which("git", path=sandbox.env()["PATH"])
    if git is None:
        return
    env = {**sandbox.env(), "GIT_AUTHOR_NAME": "essai", "GIT_COMMITTER_NAME": "essai"}
    env |= {"GIT_AUTHOR_EMAIL": "essai@ocmem.invalid", "GIT_COMMITTER_EMAIL": "essai@ocmem.invalid"}
    (sandbox.project / "LISEZ-MOI.md").write_text("Projet de l'essai ocmem.\n", encoding="utf-8")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "essai"]):
        subprocess.run([git, *args], cwd=sandbox.project, env=env, capture_output=True, check=False)


@dataclass(frozen=True)
class Window:
    """One agent test in the run: the sessions it opened, and how many permissions OpenCode had
    asked for when it started."""

    number: int
    sessions: frozenset[str]
    first: int


def _mark(serve: Serve) -> tuple[int, int]:
    return len(serve.sessions), len(serve.refused_permissions)


def _window(serve: Serve, number: int, mark: tuple[int, int]) -> Window:
    return Window(number, frozenset(serve.sessions[mark[0] :]), mark[1])


def refused_by_test(
    asked: Sequence[AskedPermission], windows: Sequence[Window]
) -> dict[int, list[AskedPermission]]:
    """Each refused permission with its test: the one that opened its session, else (a
    subagent's session) the one that ran when it was asked."""
    owner = {session: window.number for window in windows for session in window.sessions}
    found: dict[int, list[AskedPermission]] = {}
    for index, permission in enumerate(asked):
        during = [window.number for window in windows if window.first <= index]
        number = owner.get(permission.session, during[-1] if during else None)
        if number is not None:
            found.setdefault(number, []).append(permission)
    return found


def permissions_told(
    verdicts: Mapping[int, Verdict], refused: Mapping[int, Sequence[AskedPermission]]
) -> tuple[dict[int, Verdict], list[str]]:
    """What OpenCode asked for and the essai refused (nobody is at the keyboard), said: one
    remark per test, and in the proof of a test that did not pass, as what may have failed it."""
    told = dict(verdicts)
    notes: list[str] = []
    for number in sorted(refused):
        asked = list(dict.fromkeys(permission.said() for permission in refused[number]))
        if not asked:
            continue
        which, them = (
            (f"la permission {asked[0]}", "l'a refusée")
            if len(asked) == 1
            else (f"les permissions {', '.join(asked)}", "les a refusées")
        )
        notes.append(
            f"Permissions d'OpenCode, test {number} : OpenCode a demandé {which} ; l'essai "
            f"{them} (personne n'est là pour répondre : comme si tu avais dit non)."
        )
        verdict = told.get(number)
        if verdict is not None and verdict.result != PASSED:
            proof = (
                f"{verdict.proof} ; OpenCode a demandé {which}, l'essai {them} : ce refus a pu "
                "changer le résultat"
            )
            told[number] = replace(verdict, proof=proof)
    return told, notes or ["Permissions d'OpenCode : aucune demandée pendant les tests de l'agent."]


def _agent_tests(
    scene: Scene, binary: Path, say: Say
) -> tuple[dict[int, Verdict], str | None, list[str], dict[int, list[AskedPermission]]]:
    """Tests 1–4, 9, 11–13 and the agent's half of 8 in one ``opencode serve``; the permissions
    OpenCode asked for during each."""
    sandbox = scene.sandbox
    model = ScriptedModel().start()
    verdicts: dict[int, Verdict] = {}
    space_half: str | None = None
    refused: dict[int, list[AskedPermission]] = {}
    try:
        config = _agent_config(model, sandbox)
        (scene.home / "opencode.json").write_text(
            json.dumps(config, indent=2) + "\n", encoding="utf-8"
        )
        _git_project(sandbox)
        with web_page() as page:
            say("essai : démarrage d'OpenCode (opencode serve)")
            serve = Serve(
                binary, sandbox.project, sandbox.env(), sandbox.out / "opencode-serve.txt"
            )
            windows: list[Window] = []
            try:
                stage = Stage(scene, model, serve, page)
                for number, test in agenttests.AGENT_TESTS.items():
                    mark = _mark(serve)
                    verdicts[number] = _run(number, lambda t=test: t(stage), say)  # type: ignore[misc]
                    windows.append(_window(serve, number, mark))
                mark = _mark(serve)
                try:
                    space_half = agenttests.space_tools_refuse_skills(stage)
                except (Failed, OpenCodeFailed) as exc:
                    verdicts[8] = Verdict(8, TITLES[8], FAILED, str(exc))
                windows.append(_window(serve, 8, mark))
                serve.dispose()
            finally:
                serve.stop()
                refused = refused_by_test(serve.refused_permissions, windows)
    except OpenCodeFailed as exc:
        for number in [*agenttests.AGENT_TESTS, 8]:
            verdicts.setdefault(
                number, Verdict(number, TITLES[number], FAILED, f"OpenCode : {exc}")
            )
    finally:
        model.stop()
    return verdicts, space_half, [f"modèle scripté : {e}" for e in model.errors], refused


@dataclass
class Essai:
    opencode: Path | None = None
    keep: bool = False
    say: Say = lambda _line: None
    space: SpaceCopy | None = None  # --espace: the pages read from the user's space

    def run(
        self, env: Mapping[str, str], user_home: Path | None
    ) -> tuple[list[Verdict], list[str], list[str], float]:
        """The verdicts, the heading lines, the notes, and the run's seconds."""
        start = time.monotonic()
        sandbox = Sandbox.create(self.keep)
        notes: list[str] = []
        try:
            found = find_opencode(self.opencode, env, user_home, sandbox.env(outer=env))
            with Standin(sandbox.space, token=secrets.token_hex(16)) as standin:
                self.say(f"essai : bac à sable {sandbox.root}")
                verdicts = self._tests(Scene(sandbox, standin), found, notes)
            # The sandbox's HOME is the run's ~: its paths read shorter, as the user's would.
            verdicts = {
                n: replace(v, proof=v.proof.replace(str(sandbox.home), "~"))
                for n, v in verdicts.items()
            }
            notes = [note.replace(str(sandbox.home), "~") for note in notes]
        finally:
            attempts = list(sandbox.proxy.attempts)
            asked = sandbox.scheduler_calls()
            sandbox.close()
        heading = self._heading(found, sandbox)
        if attempts:
            notes.append(
                f"Réseau : {len(attempts)} tentative(s) de sortie refusée(s) : {', '.join(attempts[:5])}"
            )
        else:
            # Only what goes through the sandbox's proxy is seen: a raw socket would not be.
            notes.append(
                "Réseau : aucune tentative de sortie par le proxy du bac à sable "
                "(tout ce qui l'a utilisé est resté sur 127.0.0.1)."
            )
        notes.append(schedulers.note(asked))
        if self.keep:
            shown = (
                " (ce qu'OpenCode a affiché : sorties/opencode-serve.txt)"
                if (sandbox.out / "opencode-serve.txt").exists()
                else ""
            )
            notes.append(
                f"Bac à sable gardé : {sandbox.root}{shown} ; supprime-le quand tu n'en as "
                "plus besoin."
            )
        return list(verdicts.values()), heading, notes, time.monotonic() - start

    def _tests(
        self, scene: Scene, found: tuple[Path, str] | Agentless, notes: list[str]
    ) -> dict[int, Verdict]:
        say = self.say
        try:
            spectests.prepare(scene, self.space.pages if self.space else None)
        except Failed as failed:  # the user's first hour did not go through: nothing to test
            why = f"préparation du bac à sable : {failed.proof}"
            return {n: Verdict(n, TITLES[n], FAILED, why) for n in TITLES}
        verdicts: dict[int, Verdict] = {}
        for number, test in spectests.CLI_TESTS.items():
            verdicts[number] = _run(number, lambda t=test: t(scene), say)  # type: ignore[misc]
        script = _run(8, lambda: spectests.script_refuses_skills(scene), say)
        if isinstance(found, Agentless):
            for number in agenttests.AGENT_TESTS:
                verdicts[number] = Verdict(number, TITLES[number], NOT_RUN, NEEDS_OPENCODE)
            result = script.result if script.result == FAILED else PARTLY
            proof = f"{script.proof} ; outils de l'agent non lancés, {NEEDS_OPENCODE}"
            verdicts[8] = Verdict(8, TITLES[8], result, proof)
            return verdicts
        agent, space_half, errors, refused = _agent_tests(scene, found[0], say)
        verdicts |= agent
        notes += errors
        if 8 not in verdicts:
            both_ok = script.result == PASSED and space_half is not None
            proof = f"{space_half} ; {script.proof}" if space_half else script.proof
            verdicts[8] = Verdict(8, TITLES[8], PASSED if both_ok else FAILED, proof)
        verdicts, said = permissions_told(verdicts, refused)
        notes += said
        return verdicts

    def _heading(self, found: tuple[Path, str] | Agentless, sandbox: Sandbox) -> list[str]:
        where = "gardé" if self.keep else "supprimé à la fin"
        lines = [
            "Essai des 13 tests de la spécification, dans un bac à sable "
            f"({sandbox.root}, {where}) : rien de ton dossier personnel, de ta configuration "
            "d'OpenCode ni de ta crontab n'est touché"
            + (" ; ton espace SilverBullet est seulement lu." if self.space else "."),
        ]
        if self.space is None:
            lines.append(
                "SilverBullet : serveur de substitution sur 127.0.0.1 (l'API /.fs de SilverBullet)."
            )
        else:
            left = (
                f", {len(self.space.left_out)} au-delà des limites du pull laissée(s) de côté"
                if self.space.left_out
                else ""
            )
            lines.append(
                f"SilverBullet : ton espace ({self.space.url}) lu sans être écrit "
                f"({self.space.requests} lectures, toute écriture refusée par ocmem avant envoi) ; "
                f"ses {len(self.space.pages)} pages à tirer{left} copiées dans un serveur de "
                "substitution sur 127.0.0.1, où les tests écrivent."
            )
        if isinstance(found, Agentless):
            lines.append(
                f"OpenCode : non lancé — {found.why}. Pour les tests de l'agent, {found.fix}."
            )
        else:
            binary, version = found
            checked = (
                ""
                if version == CHECKED_OPENCODE
                else f", ocmem est vérifié avec {CHECKED_OPENCODE}"
            )
            lines.append(
                f"OpenCode {version} ({binary}{checked}), le plugin d'ocmem chargé, et un modèle "
                "scripté sur 127.0.0.1 qui joue l'agent."
            )
        return lines
