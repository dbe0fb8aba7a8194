"""The first hour on a fresh machine (issue 22), as a user lives it: ocmem installed, `ocmem init`
in OpenCode's default config dir, SilverBullet configured the way the Livrable says, cron
installed and run as cron runs it, OpenCode started with no registry reachable, one session that
journals, the push, a pull — and `ocmem doctor` with 0 errors at the end. Then the same set-up
broken in each of the ways users break it: doctor exits non-zero and names it.

`scripts/first-hour` runs this file with an ocmem freshly installed by pip into a new venv
(OCMEM_FIRST_HOUR_OCMEM); without it, the ocmem of this checkout's venv is used.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import FAKE_CRONTAB
from e2e.fake_llm import Text
from e2e.harness import OpenCode
from e2e.test_plugin_e2e import HEADER, Model, bash, play
from support import notsb
from support.sbserver import FakeSilverBullet

TOKEN = "premiere-heure-7c1d9e"
RULES = "# Mes règles\n\nRéponds en français, sois bref.\n"


def ocmem_program() -> Path:
    given = os.environ.get("OCMEM_FIRST_HOUR_OCMEM")
    return Path(given) if given else Path(sys.executable).with_name("ocmem")


@dataclass
class Machine:
    """The user's machine: a HOME, OpenCode's default config dir as the ocmem home, PATH with
    ocmem, OpenCode and crontab as a user has them."""

    root: Path
    home: Path  # OpenCode's config dir = the ocmem home
    env: dict[str, str]
    sb: FakeSilverBullet

    def ocmem(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(ocmem_program()), *args], env=self.env, capture_output=True, text=True
        )
        if check:
            assert done.returncode == 0, f"ocmem {' '.join(args)}: {done.stdout}{done.stderr}"
        return done

    def cron_lines(self) -> list[str]:
        return (self.root / "crontab.txt").read_text().splitlines()

    def run_cron_job(self, job: str) -> subprocess.CompletedProcess[str]:
        """The job's crontab line run as cron runs it: sh, from HOME, with cron's PATH."""
        line = next(x for x in self.cron_lines() if f"# ocmem:{job} " in x)
        command = line.split(" ", 5)[5].replace("\\%", "%")
        env = {"HOME": self.env["HOME"], "PATH": "/usr/bin:/bin", "SHELL": "/bin/sh"}
        return subprocess.run(
            ["/bin/sh", "-c", command],
            cwd=self.env["HOME"],
            env=env,
            capture_output=True,
            text=True,
        )

    def doctor(self) -> subprocess.CompletedProcess[str]:
        return self.ocmem("doctor", check=False)


def first_steps(root: Path, sb: FakeSilverBullet, opencode: Path, user_home: Path) -> Machine:
    """Install, init, SilverBullet as the Livrable says, pull, cron — what a first hour does
    before OpenCode starts."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "crontab").write_text(FAKE_CRONTAB)
    (bin_dir / "crontab").chmod(0o755)
    (bin_dir / "opencode").symlink_to(opencode)
    config = user_home / ".config"
    env = {
        "HOME": str(user_home),
        "XDG_CONFIG_HOME": str(config),
        "XDG_DATA_HOME": str(user_home / ".local/share"),
        "XDG_STATE_HOME": str(user_home / ".local/state"),
        "XDG_CACHE_HOME": str(user_home / ".cache"),
        "PATH": f"{ocmem_program().parent}:{bin_dir}:/usr/bin:/bin",
        "CRONTAB_FILE": str(root / "crontab.txt"),
        "LANG": "C.UTF-8",
    }
    machine = Machine(root, config / "opencode", env, sb)
    init = machine.ocmem("init")
    assert "Ce qu'il te reste à faire" in init.stdout and "relier SilverBullet" in init.stdout
    # The Livrable's first item: the URL in ocmem.yaml, the token in its file (mode 600).
    (machine.home / "ocmem.yaml").write_text(
        f"silverbullet:\n  url: {sb.url}\n  retry_wait_seconds: 0.01\n  quiet_seconds: 0.01\n"
    )
    token = machine.home / ".ocmem/silverbullet.token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    sb.write("Agents/AGENTS.md", RULES)  # the human's rules, without ocmem's section
    pulled = machine.ocmem("pull")
    assert "n'a pas la section" in pulled.stdout  # composed in, and said
    installed = machine.ocmem("cron", "install")
    assert "Crontab mise à jour" in installed.stdout, installed.stdout
    ran = machine.run_cron_job("sync")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return machine


@pytest.fixture
def sb() -> Iterator[FakeSilverBullet]:
    with FakeSilverBullet(token=TOKEN) as server:
        yield server


def only_the_config(oc: OpenCode) -> None:
    """Start OpenCode on the config dir exactly as ocmem left it (the harness would seed it)."""

    def prepare(project: Path) -> None:
        oc.config_dir.mkdir(parents=True, exist_ok=True)
        (oc.config_dir / "opencode.json").write_text(json.dumps(oc.config))

    oc._prepare = prepare  # type: ignore[method-assign]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.e2e
def test_the_first_hour_works_by_itself(oc: OpenCode, sb: FakeSilverBullet) -> None:
    only_the_config(oc)
    dead_registry = f"http://127.0.0.1:{closed_port()}"
    oc.extra_env.update(
        {"NPM_CONFIG_REGISTRY": dead_registry, "npm_config_registry": dead_registry}
    )
    project = oc.project()
    # The anchor: the same OpenCode, no plugin in its config dir.
    oc.llm.set_script(Text("bonjour"))
    without = oc.run(project, "bonjour")
    assert without.returncode == 0, oc.debug_report(without)

    machine = first_steps(oc.root / "machine", sb, oc.install.binary, oc.home)
    assert machine.home == oc.config_dir
    model = Model(work=[bash(i) for i in range(5)])
    play(oc, model)
    session = oc.run(project, "cinq commandes, puis la rétrospective")
    assert session.returncode == 0, oc.debug_report(session)
    assert "background dependency install failed" not in oc.log_text()  # no registry tried
    journal = (machine.home / "memory/journal.md").read_text()
    assert len(HEADER.findall(journal)) == 1
    # Pushed by the plugin after the session, to the spec's page (a home with the default id).
    page = sb.read("Agents/Inbox/journal.md")
    assert len(HEADER.findall(page)) == 1 and "clé " in page
    machine.ocmem("pull")
    assert machine.run_cron_job("sync").returncode == 0
    doctor = machine.doctor()
    assert doctor.returncode == 0, doctor.stdout
    assert "Bilan : 0 erreur(s)" in doctor.stdout
    ratio = session.duration / without.duration
    figures = (
        f"première heure : OpenCode sans ocmem {without.duration:.2f} s, avec ocmem "
        f"{session.duration:.2f} s (×{ratio:.2f}, session de 5 outils + rétrospective comprise), "
        "aucun accès au registre"
    )
    (oc.root / "out" / "first-hour.txt").write_text(figures + "\n")
    print(figures)


# --- the same set-up, broken as users break it ---------------------------------------------


@pytest.fixture
def not_silverbullet() -> Iterator[str]:
    with notsb.not_silverbullet() as url:
        yield url


def writable(path: Path) -> None:
    path.chmod(path.stat().st_mode | 0o200)


def lose_the_section(m: Machine, extra: str) -> None:
    agents = m.home / "AGENTS.md"
    writable(agents)
    agents.write_text(RULES)


def lose_the_skill(m: Machine, extra: str) -> None:
    skill = m.home / "skills/retrospective/SKILL.md"
    writable(skill.parent)
    skill.unlink()


def another_home_with_this_id(m: Machine, extra: str) -> None:
    # A second user of the machine, installed the same way (the default id, so the spec's pages):
    # their first push claims the pages this home has not written yet.
    other = m.root / "autre-utilisateur"
    env = {**m.env, "HOME": str(other)}
    run = [str(ocmem_program()), "--home", str(other / "h")]
    subprocess.run([*run, "init"], env=env, check=True, capture_output=True)
    (other / "h/ocmem.yaml").write_text((m.home / "ocmem.yaml").read_text())
    token = other / "h/.ocmem/silverbullet.token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    subprocess.run(
        [*run, "journal", "add"],
        env=env,
        check=True,
        capture_output=True,
        input=json.dumps(
            {
                "titre": "Tâche de l'autre",
                "tags": ["x"],
                "demande": "d",
                "fait": "f",
                "piege": "aucun",
                "lecon": "l",
                "resultat": "réussi",
            }
        ),
        text=True,
    )
    pushed = subprocess.run([*run, "push"], env=env, capture_output=True, text=True)
    assert pushed.returncode == 0, pushed.stderr  # the other home wrote first: the page is its


def wrong_url(m: Machine, extra: str) -> None:
    (m.home / "ocmem.yaml").write_text(f"silverbullet:\n  url: {extra}\n")


def corrupt_identity(m: Machine, extra: str) -> None:
    (m.home / ".ocmem/home.json").write_text("{coupé")


def memory_linked_outside(m: Machine, extra: str) -> None:
    outside = m.root / "ailleurs.md"
    outside.write_text("# Mémoire\n")
    memory = m.home / "memory/MEMORY.md"
    writable(memory.parent)
    memory.unlink()
    memory.symlink_to(outside)


def no_opencode(m: Machine, extra: str) -> None:
    (m.root / "bin/opencode").unlink()


def seed_removed(m: Machine, extra: str) -> None:
    (m.home / "package-lock.json").unlink()


def token_revoked_under_cron(m: Machine, extra: str) -> None:
    m.sb.token = "jeton-change-sur-le-serveur"
    m.run_cron_job("sync")


def token_rejected(m: Machine, extra: str) -> None:
    token = m.home / ".ocmem/silverbullet.token"
    token.write_text("mauvais-jeton\n")


def plugin_setting_wrong(m: Machine, extra: str) -> None:
    with (m.home / "ocmem.yaml").open("a") as config:
        config.write("plugin:\n  pull_timeout_seconds: vite\n")


BROKEN: dict[str, tuple[Callable[[Machine, str], None], str]] = {
    "section perdue": (lose_the_section, "AGENTS.md n'a pas la section"),
    "skill perdu": (lose_the_skill, "le skill retrospective n'est pas installé"),
    "deux dossiers, un identifiant": (another_home_with_this_id, "tenue par un autre dossier"),
    "URL d'un autre serveur": (wrong_url, "n'est pas l'API /.fs de SilverBullet"),
    "home.json abîmé": (corrupt_identity, "identité du dossier ocmem illisible"),
    "mémoire en lien hors du dossier": (memory_linked_outside, "MEMORY.md est un lien symbolique"),
    "OpenCode absent": (no_opencode, "OpenCode est introuvable"),
    "graine hors ligne retirée": (seed_removed, "registre npm"),
    "cron qui échoue": (token_revoked_under_cron, "la synchronisation planifiée échoue"),
    "jeton refusé": (token_rejected, "a refusé le jeton"),
    "réglage du plugin invalide": (plugin_setting_wrong, "plugin.pull_timeout_seconds"),
}


@pytest.mark.real_clock
@pytest.mark.parametrize("broken", list(BROKEN))
def test_a_broken_set_up_makes_doctor_fail_and_name_it(
    broken: str, tmp_path: Path, sb: FakeSilverBullet, not_silverbullet: str
) -> None:
    from e2e.harness import ensure_opencode

    machine = first_steps(tmp_path, sb, ensure_opencode(), tmp_path / "user")
    healthy = machine.doctor()
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    breaks, named = BROKEN[broken]
    breaks(machine, not_silverbullet)
    doctor = machine.doctor()
    said = doctor.stdout + doctor.stderr
    assert doctor.returncode != 0, said
    assert named in said, said
