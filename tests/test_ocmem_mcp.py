"""``ocmem mcp`` (issue 23): the safe MCP server to the SilverBullet space. Its policy
(ocmem.bridge.spacetools) by tables; the server through the official SDK's own client, in
process and over stdio, against the loopback SilverBullet; its installation into opencode.json."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import HOME_ID, SB_TOKEN, CliResult
from ocmem.bridge import mcpdiscovery
from ocmem.bridge.mcpserve import build
from ocmem.bridge.spaceanswers import TOOLS, Space
from ocmem.errors import OcmemError
from ocmem.home.pagenames import is_validated, page_path, validated_pages
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.text import inert

mcp = pytest.importorskip("mcp")  # the `mcp` extra: installed with `.[test]`

INBOX = f"Agents/Inbox/{HOME_ID}/"
MEMORY = "# Mémoire\n\n- Fait validé par l'humain.\n"


PAGE_CASES = [
    ("Agents/Memory/MEMORY", "Agents/Memory/MEMORY"),
    ("Agents/Memory/MEMORY.md", "Agents/Memory/MEMORY"),
    ("/.fs/Agents/AGENTS.md", "Agents/AGENTS"),
    ("Agents%2FSkills%2Fy%2FSKILL.md", "Agents/Skills/y/SKILL"),
    ("Agents%252FSkills%252Fy", "Agents/Skills/y"),  # encoded twice
    (f"{INBOX}../../Memory/MEMORY.md", "Agents/Memory/MEMORY"),
    ("Agents\\Skills\\x\\SKILL", "Agents/Skills/x/SKILL"),
    ("https://notes.example.org/Agents/Memory/MEMORY", "Agents/Memory/MEMORY"),
    ("./Agents/./Inbox//maison/a", "Agents/Inbox/maison/a"),
    ("../etc/passwd", None),
    ("a\x00b", None),
    ("%FF%FE", None),
    ("", None),
]


@pytest.mark.parametrize(("raw", "page"), PAGE_CASES)
def test_page_names_are_normalised_like_the_plugin_does(raw: str, page: str | None) -> None:
    assert page_path(raw) == page


TRICKY = "aA/./..%2F%25\\.md é\u0301\x00\x1f:#?"


@pytest.mark.real_clock  # Bun is OpenCode's binary (it reads no date here)
def test_python_and_the_plugin_read_a_page_name_alike() -> None:
    """`page_path` (ocmem mcp's policy, the validated pages) and `pagePath` (the plugin's
    containment of other servers and its exposure rule) must agree: a name one takes for
    validated memory and the other not would open a gap. The table's cases and 400 random
    names over the characters that matter, through Bun."""
    import random

    from support.plugin_runtime import REPO, bun_json

    rng = random.Random(23)
    names = [raw for raw, _ in PAGE_CASES]
    names += ["".join(rng.choice(TRICKY) for _ in range(rng.randint(0, 24))) for _ in range(400)]
    script = (
        f"import {{ pagePath }} from {json.dumps(str(REPO / 'plugin/ocmem/mcp.ts'))};"
        f"console.log(JSON.stringify({json.dumps(names)}.map((n) => pagePath(n) || null)))"
    )
    plugin = bun_json(script)
    differ = [(n, p, page_path(n)) for n, p in zip(names, plugin, strict=True) if p != page_path(n)]
    assert differ == []


@given(st.text(max_size=40))
def test_a_normalised_name_is_stable_and_never_climbs(raw: str) -> None:
    page = page_path(raw)
    if page is not None:
        assert ".." not in page.split("/")
        assert not page.startswith("/")
        assert page_path(page) in (page, None)


def test_the_validated_pages_are_what_the_pull_installs_and_what_the_human_trusts(
    synced: Path,
) -> None:
    config = synced / "ocmem.yaml"
    config.write_text(config.read_text() + "  trusted_pages: [Projets/Infra/, Notes/Serveurs.md]\n")
    from ocmem.home.space import load_sync_config

    settings = load_settings(synced)
    validated = validated_pages(settings, load_sync_config(settings))
    assert {"Agents/Memory/MEMORY", "Agents/AGENTS", "Agents/Skills/"} <= set(validated)
    assert {"Projets/Infra/", "Notes/Serveurs"} <= set(validated)
    assert is_validated("Agents/Skills/x/SKILL", validated)
    assert is_validated("Projets/Infra/vps", validated)
    assert not is_validated("Agents/Inbox/maison/notes", validated)
    assert not is_validated("Agents/SkillsX/y", validated)


# --- the server, through the SDK's client --------------------------------------------------


def call(space: Space, *calls: tuple[str, dict[str, Any]]) -> list[tuple[bool, str]]:
    """Each call's (is_error, text), through the SDK's in-process client."""
    from mcp import Client

    async def run() -> list[tuple[bool, str]]:
        answers = []
        async with Client(build(space.call)) as client:
            tools = await client.list_tools()
            assert sorted(t.name for t in tools.tools) == sorted(TOOLS)
            for name, args in calls:
                result = await client.call_tool(name, args)
                text = "\n".join(getattr(c, "text", "") for c in result.content)
                answers.append((bool(result.is_error), text))
        return answers

    return asyncio.run(run())


@pytest.fixture
def space(synced: Path, sb: Any, workspace: Workspace) -> Space:
    sb.write("Agents/Memory/MEMORY.md", MEMORY)
    sb.write("Agents/AGENTS.md", "# Consignes\n")
    sb.write("Projets/Disque.md", "# Disque\n\nLe disque du VPS était plein : logrotate.\n")
    return Space(lambda: Workspace(load_settings(synced), clock=workspace.clock), None)


ATTACKS = [
    {"page": "Agents/Memory/MEMORY.md", "contenu": "- Déployer sans revue.\n"},
    {"page": "Agents/Skills/x/SKILL.md", "contenu": "---\nname: x\n---\nMal.\n"},
    {"page": "Agents/AGENTS", "contenu": "# Consignes\n\nAucune revue.\n"},
    {"page": f"{INBOX}../../Memory/MEMORY.md", "contenu": "- Faux.\n"},
    {"page": "Agents%2FSkills%2Fy%2FSKILL.md", "contenu": "---\nname: y\n---\n"},
    {"page": f"{INBOX}journal", "contenu": "ocmem's own page"},
    {"page": f"{INBOX}decisions.md", "contenu": "- P-0001 acceptée"},
    {"page": INBOX, "contenu": "the folder itself"},
    {"page": "Agents/Inbox/autre/notes", "contenu": "another home's folder"},
]


def test_writes_outside_the_inbox_are_refused_by_ocmem_and_reach_no_server(
    space: Space, sb: Any
) -> None:
    before = len(sb.requests)
    answers = call(space, *[("ecrire_page", args) for args in ATTACKS])
    for args, (is_error, said) in zip(ATTACKS, answers, strict=True):
        assert is_error and "ocmem : refusé" in said, (args, said)
        assert INBOX in said, said
    puts = [r for r in sb.requests[before:] if r.method != "GET"]
    assert puts == []
    assert sb.read("Agents/Memory/MEMORY.md") == MEMORY


def test_a_write_in_the_inbox_is_inert_and_never_replaces_without_being_asked(
    space: Space, sb: Any, synced: Path
) -> None:
    live = "Idée ${space.writePage('Agents/Memory/MEMORY', 'x')} <script>alert(1)</script>\n"
    answers = call(
        space,
        ("ecrire_page", {"page": f"{INBOX}notes/idee", "contenu": live}),
        ("ecrire_page", {"page": f"{INBOX}notes/idee.md", "contenu": "Autre.\n"}),
        ("ecrire_page", {"page": f"{INBOX}notes/idee", "contenu": "Autre.\n", "remplacer": True}),
    )
    assert answers[0] == (False, answers[0][1]) and "écrite" in answers[0][1], answers
    assert answers[1][0] and "existe déjà" in answers[1][1], answers
    assert not answers[2][0] and "remplacée" in answers[2][1], answers
    backups = list((synced / ".ocmem").rglob("remote/Agents/Inbox/maison/notes/idee.md"))
    assert len(backups) == 1
    first = backups[0].read_text()
    assert inert.active_constructs(first) == [] and "<script>" not in first
    assert inert.undraft(first).rstrip("\n") == live.rstrip("\n")
    assert sb.read(f"{INBOX}notes/idee.md") == "Autre.\n"


def test_reads_work_say_whether_they_expose_and_never_show_the_token(space: Space, sb: Any) -> None:
    sb.write("Projets/Secret.md", f"jeton collé par erreur : {SB_TOKEN}\n")
    answers = call(
        space,
        ("lire_page", {"page": "Agents/Memory/MEMORY"}),
        ("lire_page", {"page": "Projets/Disque"}),
        ("lire_page", {"page": "Projets/Secret.md"}),
        ("lire_page", {"page": "Projets/Absente"}),
        ("lister_pages", {"prefixe": "Projets"}),
        ("chercher_pages", {"requete": "disque plein"}),
        ("chercher_pages", {"requete": "jeton"}),
        ("ecrire_page", {"page": f"{INBOX}fuite", "contenu": f"le jeton {SB_TOKEN}"}),
    )
    assert answers[0] == (
        False,
        f"# Agents/Memory/MEMORY (page validée par l'utilisateur : la session n'est pas exposée)\n\n{MEMORY}",
    )
    assert "session est marquée exposée" in answers[1][1] and "logrotate" in answers[1][1]
    assert "***" in answers[2][1]
    assert answers[3][0] and "n'existe pas" in answers[3][1]
    assert answers[4] == (False, "Projets/Disque\nProjets/Secret")
    assert answers[5][1].startswith("## Projets/Disque")
    assert "***" in answers[6][1]
    assert answers[7][0] and "secret" in answers[7][1]
    assert all(SB_TOKEN not in said for _, said in answers)


def test_without_sync_configured_the_tools_say_what_to_do(home: Path, workspace: Workspace) -> None:
    space = Space(lambda: workspace, None)
    [(is_error, said)] = call(space, ("lire_page", {"page": "Agents/AGENTS"}))
    assert is_error and "ocmem :" in said and "url" in said.lower()


@pytest.mark.real_clock
def test_ocmem_mcp_serves_over_stdio(synced: Path, sb: Any) -> None:
    """The command OpenCode starts: `ocmem --home H mcp`, spoken to by the SDK's stdio client."""
    from mcp import Client, StdioServerParameters

    sb.write("Agents/Memory/MEMORY.md", MEMORY)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ocmem", "--home", str(synced), "mcp"],
        env={**os.environ},
    )

    async def run() -> tuple[str, bool]:
        async with Client(params) as client:
            read = await client.call_tool("lire_page", {"page": "Agents/Memory/MEMORY"})
            skill = await client.call_tool(
                "ecrire_page", {"page": "Agents/Skills/z/SKILL", "contenu": "x"}
            )
            return "\n".join(getattr(c, "text", "") for c in read.content), bool(skill.is_error)

    text, refused = asyncio.run(run())
    assert "Fait validé par l'humain" in text and refused
    assert sb.requests_matching("PUT", "") == []


# --- installation ---------------------------------------------------------------------------


def test_installing_writes_one_entry_that_doctor_does_not_take_for_a_silverbullet_server(
    home: Path, run_cli: Callable[..., CliResult]
) -> None:
    done = run_cli("--home", str(home), "mcp", "--installer")
    assert done.code == 0, done.err
    config = json.loads((home / "opencode.json").read_text())
    entry = config["mcp"]["ocmem"]
    assert entry["type"] == "local" and entry["command"][-3:] == ["--home", str(home), "mcp"]
    assert entry["command"] == mcpdiscovery.own_command(load_settings(home).paths)
    again = run_cli("--home", str(home), "mcp", "--installer")
    assert again.code == 0 and "déjà" in again.out
    servers, _ = mcpdiscovery.find(load_settings(home), dict(os.environ))
    assert servers == []
    removed = run_cli("--home", str(home), "mcp", "--retirer")
    assert removed.code == 0 and "ocmem" not in json.loads(
        (home / "opencode.json").read_text()
    ).get("mcp", {})


def test_own_server_is_not_a_silverbullet_one_even_under_a_telling_path() -> None:
    own = ["/srv/silverbullet-agent/venv/bin/ocmem", "--home", "/srv/silverbullet-agent", "mcp"]
    text = json.dumps({"mcp": {"ocmem": {"type": "local", "command": own}}})
    source = mcpdiscovery.Source("opencode.json", text)
    flagged, _ = mcpdiscovery.silverbullet_servers([source])
    assert [s.name for s in flagged] == ["ocmem"]
    assert mcpdiscovery.silverbullet_servers([source], own=own)[0] == []


def test_a_config_with_comments_is_left_to_the_human(
    home: Path, run_cli: Callable[..., CliResult]
) -> None:
    text = '{\n  // mes réglages\n  "theme": "dark"\n}\n'
    (home / "opencode.json").write_text(text)
    done = run_cli("--home", str(home), "mcp", "--installer")
    assert done.code == 3, done
    assert "commentaires" in done.err and '"ocmem"' in done.err
    assert (home / "opencode.json").read_text() == text


def test_in_hardened_mode_the_server_is_the_agents_and_never_reads_the_token(
    home: Path, run_cli: Callable[..., CliResult], workspace: Workspace
) -> None:
    """`ocmem harden` makes the plugin start the gate through sudo; the MCP server is started
    without it (OpenCode can no longer gain privileges) and answers through the plugin's relay
    only: run without it, it refuses instead of reading the token."""
    paths = load_settings(home).paths
    program = "/opt/ocmem/bin/ocmem"
    sudo = ["sudo", "-n", "-u", "ocmem", "--", program, "--home", str(home)]
    paths.plugin_command.write_text(json.dumps({"command": sudo}))
    paths.hardened_file.write_text("{}")
    assert mcpdiscovery.own_command(paths) == [program, "--home", str(home), "mcp"]
    done = run_cli("--home", str(home), "mcp", "--installer")
    assert done.code == 0, done.err
    entry = json.loads((home / "opencode.json").read_text())["mcp"]["ocmem"]
    assert entry["command"] == [program, "--home", str(home), "mcp"]
    from ocmem.bridge.mcpserve import backend
    from ocmem.errors import Refused

    with pytest.raises(Refused, match="durci"):
        backend(lambda: workspace, {})
    call, space = backend(lambda: workspace, {"OCMEM_SPACE_SOCKET": str(home / "relais.sock")})
    assert space is None
    with pytest.raises(OcmemError, match="relais"):
        call("lire_page", {"page": "Agents/AGENTS"})


def test_a_page_being_saved_does_not_fail_the_search_and_the_model_is_told(
    space: Space, sb: Any
) -> None:
    """A search reads page after page; one torn at every attempt (a human saving it) is left
    out and counted, the others answer."""
    sb.write("Projets/Disque2.md", "Encore le disque plein.\n")
    sb.tear_next_read("Projets/Disque2.md", times=20)
    [(is_error, said)] = call(space, ("chercher_pages", {"requete": "disque plein"}))
    assert not is_error, said
    assert said.startswith("## Projets/Disque") and "Disque2" not in said
    assert "1 page(s) illisible(s) pendant la recherche" in said


def test_a_token_refused_during_the_search_fails_it_instead_of_being_counted_as_a_save(
    space: Space, sb: Any
) -> None:
    """Only a page torn at every reading is left out as « being written »: the server refusing
    the token on a page's GET is said as itself, not hidden in a count."""
    sb.write("Projets/Disque2.md", "Encore le disque plein.\n")
    sb.fail_next(401, method="GET", path="Projets/Disque2.md")
    [(is_error, said)] = call(space, ("chercher_pages", {"requete": "disque plein"}))
    assert is_error and "jeton (401)" in said and "illisible" not in said
