"""The attack corpus against the hardened mode (`ocmem harden`), in the real OpenCode run as a
non-root agent user: no trick may change the home (owners and modes included), read the token
or promote, whether OpenCode's plugin is there to refuse it or not.

Needs root (to create the set-up) and two users, the owner and the agent: ``OCMEM_E2E_OWNER``
(default ``ocmem-e2e``) and ``OCMEM_E2E_AGENT`` (default ``ocmem-e2e-agent``); ``.ci/run``
creates them. Skipped when not root; under ``OCMEM_E2E_REQUIRED`` a missing user is a failure.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.attacks import CORPUS, Ctx
from e2e.fake_llm import FakeLLM, ToolCalls
from e2e.harness import OpenCode, OpenCodeInstall, require_e2e
from e2e.netguard import NetGuard
from e2e.trust import TOKEN, Outcome, differences, play_corpus, report, seed_home, snapshot
from support.sharedusers import SHARED_USERS

pytestmark = [pytest.mark.e2e, SHARED_USERS]

REPO = Path(__file__).resolve().parents[2]
BATCH = 13


def _user(variable: str, default: str) -> pwd.struct_passwd:
    name = os.environ.get(variable, default)
    try:
        return pwd.getpwnam(name)
    except KeyError:
        require_e2e(
            f"no user {name} for the hardened-mode suite (useradd --system {name}; {variable})"
        )


def _runs_as(program: Path, user: pwd.struct_passwd) -> bool:
    try:
        done = subprocess.run(
            [str(program), "--version"],
            user=user.pw_uid,
            group=user.pw_gid,
            extra_groups=[],
            env={"PATH": "/usr/bin:/bin"},
            cwd="/",
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:  # the interpreter lives where the user cannot go (under /root)
        return False
    return done.returncode == 0


def _program(root: Path, owner: pwd.struct_passwd) -> Path:
    """An ocmem the owner can run and the agent cannot change: this virtualenv's, or a root-owned
    one next to the test made from the system Python (when this one lives under /root)."""
    own = Path(sys.executable).with_name("ocmem")
    if own.is_file() and _runs_as(own, owner):
        return own
    system = Path("/usr/bin/python3")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    probe = (
        subprocess.run(
            [
                str(system),
                "-c",
                "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if system.exists()
        else None
    )
    if probe is None or probe.stdout.strip() != version:
        require_e2e(
            f"{own} cannot run as {owner.pw_name} and no system Python {version} to build one"
        )
    venv = root / "venv"
    subprocess.run([str(system), "-m", "venv", "--without-pip", str(venv)], check=True)
    site = venv / "lib" / f"python{version}" / "site-packages"
    deps = [p for p in map(Path, sys.path) if p.name == "site-packages" and p.is_dir()]
    (site / "ocmem-e2e.pth").write_text("\n".join([*map(str, deps), str(REPO / "sync")]) + "\n")
    script = venv / "bin" / "ocmem"
    script.write_text(
        f"#!{venv}/bin/python3\nimport sys\nfrom ocmem.cli.entry import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    assert _runs_as(script, owner), f"{script} does not run as {owner.pw_name}"
    return script


def _chown(top: Path, user: pwd.struct_passwd) -> None:
    for path in [top, *top.rglob("*")]:
        os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)


@pytest.fixture
def hardened(
    opencode_install: OpenCodeInstall, fake_llm: FakeLLM, netguard: NetGuard
) -> Iterator[tuple[OpenCode, Ctx, Path]]:
    if os.geteuid() != 0:
        pytest.skip(
            "the hardened-mode suite sets up users, owners and a sudoers rule: run it as root (CI does)"
        )
    if shutil.which("sudo") is None:
        require_e2e("sudo is not installed (apt-get install sudo)")
    owner, agent = (
        _user("OCMEM_E2E_OWNER", "ocmem-e2e"),
        _user("OCMEM_E2E_AGENT", "ocmem-e2e-agent"),
    )
    # No "ocmem" in the paths: the plugin's text patterns would catch what the OS must stop.
    root = Path(tempfile.mkdtemp(prefix="trust-hardened-"))
    root.chmod(0o755)  # the agent and the owner walk through it (pytest's tmp_path is 0700)
    program = _program(root, owner)
    oc = OpenCode(install=opencode_install, root=root / "e2e", llm=fake_llm, netguard=netguard)
    (root / "e2e").chmod(0o755)
    oc.config["permission"] = "allow"  # OpenCode's own prompts must not be what stops a trick
    project = oc.project()
    # Only the config: no node_modules, no package.json (the plugin imports nothing), and a
    # config dir OpenCode cannot write must still start, offline, without hanging.
    oc.config_dir.mkdir(parents=True, exist_ok=True)
    (oc.config_dir / "opencode.json").write_text(json.dumps(oc.config, indent=2) + "\n")
    _chown(oc.home, agent)
    _chown(project, agent)
    home = seed_home(oc, [str(program)])
    done = subprocess.run(
        [
            str(program),
            "--home",
            str(home),
            "harden",
            "--agent",
            agent.pw_name,
            "--owner",
            owner.pw_name,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        assert done.returncode == 0, done.stdout + done.stderr
        oc.run_as = (agent.pw_uid, agent.pw_gid)
        oc._prepare = lambda project: None  # type: ignore[method-assign]
        yield (
            oc,
            Ctx(home=home, project=project, program=str(program), owner=owner.pw_name),
            program,
        )
    finally:
        subprocess.run(
            [str(program), "--home", str(home), "harden", "--undo"],
            capture_output=True,
            check=False,
        )
        Path(f"/etc/sudoers.d/ocmem-{agent.pw_name}").unlink(missing_ok=True)
        shutil.rmtree(root, ignore_errors=True)
    netguard.assert_no_attempts()


def test_no_trick_changes_the_home_reads_the_token_or_promotes(
    hardened: tuple[OpenCode, Ctx, Path], tmp_path: Path
) -> None:
    oc, ctx, _ = hardened
    before = snapshot(ctx.home, owners=True)
    pending_before = (ctx.home / "memory/pending.md").read_text()
    attacks = list(CORPUS)
    outcomes: list[Outcome] = []
    for start in range(0, len(attacks), BATCH):
        outcomes += play_corpus(oc, ctx, attacks[start : start + BATCH], owners=True)
    report("hardened mode, through OpenCode", outcomes, tmp_path / "corpus-hardened.txt")
    assert len(CORPUS) >= 30
    assert [o.attack.name for o in outcomes if o.changed] == []
    assert [o.attack.name for o in outcomes if o.leaked] == []
    assert differences(before, snapshot(ctx.home, owners=True)) == []
    assert (ctx.home / "memory/pending.md").read_text() == pending_before  # P-0001 still pending
    assert not Path("/tmp/ocmem-evil-ran").exists()
    sudo = next(o for o in outcomes if o.attack.name == "sudo-anything")
    assert not any("SUDO-OK" in out for out in sudo.outputs), sudo.outputs
    # The same shell tricks straight from the agent's user, with no OpenCode and no plugin (no
    # guard, no no_new_privs): the OS alone holds.
    shell = [(a, args["command"]) for a in attacks for tool, args in a.calls(ctx) if tool == "bash"]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(oc.home), "LANG": "C.UTF-8"}
    agent = pwd.getpwuid(oc.run_as[0]) if oc.run_as else None
    assert agent is not None
    for attack, command in shell:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=ctx.project,
            env=env,
            user=agent.pw_uid,
            group=agent.pw_gid,
            extra_groups=[],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert TOKEN not in done.stdout + done.stderr, attack.name
        assert differences(before, snapshot(ctx.home, owners=True)) == [], attack.name
    assert (ctx.home / "memory/pending.md").read_text() == pending_before


def test_the_gate_serves_the_plugin_and_never_promotes(
    hardened: tuple[OpenCode, Ctx, Path],
) -> None:
    oc, ctx, _ = hardened
    oc.llm.set_script(
        ToolCalls.one("memory_note", text="le service tourne sous Podman", days=None),
        ToolCalls.one("memory_accept", id="P-0001"),
        ToolCalls.one(
            "bash",
            command='grep NoNewPrivs /proc/$$/status; s=su""do; $s -n true; echo rc=$?',
            description="x",
        ),
        final_text="Fin.",
    )
    result = oc.run(ctx.project, "note que le service tourne sous Podman, puis valide P-0001")
    assert result.returncode == 0, oc.debug_report(result)
    outputs = {
        u["tool"]: u["state"].get("output") or u["state"].get("error") or ""
        for u in result.tool_uses
    }
    assert "Note ajoutée" in outputs["memory_note"], outputs
    assert "en mode durci, la promotion ne passe jamais par l'agent" in outputs["memory_accept"], (
        outputs
    )
    assert "NoNewPrivs:\t1" in outputs["bash"] and "rc=1" in outputs["bash"], outputs
    assert "le service tourne sous Podman" in (ctx.home / "memory/SHORT_TERM.md").read_text()
    assert (ctx.home / "memory/SHORT_TERM.md").stat().st_uid != oc.run_as[0]  # type: ignore[index]
    assert "## P-0001" in (ctx.home / "memory/pending.md").read_text()
    assert "en attente" in (ctx.home / "memory/pending.md").read_text()


def test_the_space_tools_answer_through_the_gate_and_the_agent_never_holds_the_token(
    hardened: tuple[OpenCode, Ctx, Path],
) -> None:
    """The space tools in the hardened mode: the plugin asks the owner's gate, which alone reads
    the token. Validated memory is read, a write of MEMORY.md is refused by ocmem, a page in the
    inbox is written, and the token reaches neither the model nor the agent's shell."""
    from ocmem.home import identity
    from ocmem.home.paths import Paths
    from support.sbserver import FakeSilverBullet

    oc, ctx, _ = hardened
    memory = "# Mémoire\n\n- Fait validé, lu par les outils du plugin.\n"
    with FakeSilverBullet(token=TOKEN) as sb:
        sb.write("Agents/Memory/MEMORY.md", memory)
        config = ctx.home / "ocmem.yaml"
        existing = config.read_text() if config.exists() else ""
        config.write_text(
            existing + f"silverbullet:\n  url: {sb.url}\n  retry_wait_seconds: 0.01\n"
        )
        found = identity.read(Paths(ctx.home))
        assert found is not None
        inbox = f"Agents/Inbox/{found.id}/"
        oc.llm.set_script(
            ToolCalls.one("space_read", page="Agents/Memory/MEMORY"),
            ToolCalls.one("space_write", page="Agents/Memory/MEMORY.md", content="- Faux.\n"),
            ToolCalls.one("space_write", page=f"{inbox}notes/durci", content="Une idée.\n"),
            ToolCalls.one(
                "bash",
                command=f"cat {ctx.home}/.ocmem/silverbullet.token; echo rc=$?",
                description="x",
            ),
            final_text="Fin.",
        )
        result = oc.run(ctx.project, "lis ma mémoire SilverBullet")
        assert result.returncode == 0, oc.debug_report(result)
        said = [u["state"].get("output") or u["state"].get("error") or "" for u in result.tool_uses]
        assert len(said) == 4, said
        assert "Fait validé, lu par les outils du plugin" in said[0], said
        assert said[1].startswith("REFUSÉ (code 3) : refusé :") and inbox in said[1], said
        assert "écrite" in said[2], said
        assert TOKEN not in said[3], said  # the plugin refuses it; the OS would too:
        agent = pwd.getpwuid(oc.run_as[0]) if oc.run_as else None
        assert agent is not None
        direct = subprocess.run(
            ["cat", str(ctx.home / ".ocmem/silverbullet.token")],
            user=agent.pw_uid,
            group=agent.pw_gid,
            extra_groups=[],
            capture_output=True,
            text=True,
            check=False,
        )
        assert direct.returncode != 0 and TOKEN not in direct.stdout
        puts = [r.fs_path for r in sb.requests if r.method in ("PUT", "DELETE")]
        assert puts == [f"{inbox}notes/durci.md"], puts
        assert sb.read("Agents/Memory/MEMORY.md") == memory
        assert all(TOKEN not in json.dumps(r.body) for r in oc.llm.requests), "token sent"


def test_a_space_set_in_opencodes_environment_is_said_then_carried_by_harden(
    hardened: tuple[OpenCode, Ctx, Path],
) -> None:
    """Observed on main: OCMEM_SILVERBULLET_URL in OpenCode's environment, the gate started by
    sudo never sees it — no pull, no push, and nothing said. Now the session start says it,
    and `harden` run with the variable carries it into ocmem.yaml: the gate then syncs."""
    from support.sbserver import FakeSilverBullet

    oc, ctx, program = hardened
    with FakeSilverBullet(token=TOKEN) as sb:
        sb.write("Agents/Memory/MEMORY.md", "# Mémoire\n\n- Fait de l'espace.\n")
        oc.extra_env["OCMEM_SILVERBULLET_URL"] = sb.url
        oc.llm.set_script(final_text="Fin.")
        result = oc.run(ctx.project, "bonjour")
        assert result.returncode == 0, oc.debug_report(result)
        log = oc.log_text()
        assert "OCMEM_SILVERBULLET_URL" in log and "ne le voit pas" in log, oc.debug_report(result)
        assert sb.requests == []  # the gate cannot reach the space it was not given
        agent = pwd.getpwuid(oc.run_as[0]) if oc.run_as else None
        assert agent is not None and ctx.owner is not None
        command = [str(program), "--home", str(ctx.home), "harden"]
        carried = subprocess.run(
            [*command, "--agent", agent.pw_name, "--owner", ctx.owner],
            env={**os.environ, "OCMEM_SILVERBULLET_URL": sb.url},
            capture_output=True,
            text=True,
            check=False,
        )
        assert carried.returncode == 0, carried.stdout + carried.stderr
        assert "OCMEM_SILVERBULLET_URL de ton environnement écrit dans" in carried.stdout
        assert f"url: {json.dumps(sb.url)}" in (ctx.home / "ocmem.yaml").read_text()
        for log_file in oc.log_files():
            log_file.unlink()
        oc.llm.set_script(final_text="Fin.")
        result = oc.run(ctx.project, "bonjour")
        assert result.returncode == 0, oc.debug_report(result)
        assert "ne le voit pas" not in oc.log_text()
        read = [r.fs_path for r in sb.requests if r.method == "GET"]
        assert "Agents/Memory/MEMORY.md" in read, oc.debug_report(result)  # the session's pull
