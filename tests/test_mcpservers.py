"""SilverBullet MCP servers in OpenCode's configuration (issue 23): found by name, by the space's
URL or token in their command, arguments, environment or remote URL, never an unrelated one;
where OpenCode reads them; what doctor says; what the plugin receives."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from ocmem.bridge import mcpdiscovery
from ocmem.bridge.mcpdiscovery import Source, silverbullet_servers
from ocmem.bridge.tools import plugin_config
from ocmem.home.settings import load_settings
from ocmem.setup.mcpchecks import init_notes, mcp_problems
from ocmem.setup.setupchecks import ERROR, WARNING
from support.plugin_runtime import bun_json

URL = "https://notes.example.org/sb"
TOKEN = "sb-token-0123456789abcdef"


def local(*command: str, **environment: str) -> dict[str, object]:
    entry: dict[str, object] = {"type": "local", "command": list(command)}
    if environment:
        entry["environment"] = environment
    return entry


FOUND = [
    ("by name", "silverbullet", local("node", "server.js")),
    ("by name, spaced", "Silver-Bullet notes", local("node", "server.js")),
    ("by name, sb-mcp", "sb-mcp", local("node", "server.js")),
    ("by package", "notes", local("npx", "-y", "mcp-server-silverbullet")),
    (
        "by URL in environment",
        "notes",
        local("node", "x.js", NOTES_URL="https://notes.example.org/sb/"),
    ),
    (
        "by URL in arguments",
        "wiki",
        local("uvx", "some-mcp", "--base", "https://notes.example.org/sb"),
    ),
    ("by URL with the /.fs API", "wiki", local("x", "--api=http://notes.example.org/sb/.fs")),
    ("by remote URL", "remote", {"type": "remote", "url": "https://notes.example.org/sb/mcp"}),
    ("by token in environment", "notes", local("node", "x.js", AUTH=TOKEN)),
    (
        "by token in headers",
        "r",
        {
            "type": "remote",
            "url": "https://x.example/mcp",
            "headers": {"Authorization": f"Bearer {TOKEN}"},
        },
    ),
    ("by an SB_ variable", "notes", local("node", "x.js", SB_AUTH_TOKEN="{env:MY}")),
    ("by ocmem's variable", "notes", local("node", "x.js", T="{env:OCMEM_SILVERBULLET_TOKEN}")),
    (
        "by ocmem's token file",
        "notes",
        local("node", "x.js", T="{file:~/.config/opencode/.ocmem/silverbullet.token}"),
    ),
]
NOT_FOUND = [
    (
        "github",
        "github",
        local("npx", "-y", "@modelcontextprotocol/server-github", GITHUB_TOKEN="ghp_x"),
    ),
    (
        "filesystem",
        "fs",
        local("npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/project"),
    ),
    ("another host", "wiki", local("x", "--url", "https://notes.example.org.evil.test/sb")),
    ("a longer host", "wiki", local("x", "--url", "https://notes.example.org2/sb")),
    ("another path", "wiki", local("x", "--url", "https://notes.example.org/sbx")),
    ("a subdomain", "wiki", local("x", "--url", "https://a.notes.example.org/sb")),
    ("remote elsewhere", "docs", {"type": "remote", "url": "https://mcp.context7.com/mcp"}),
    ("usb in a name", "usb_mcp_tools", local("x")),
    ("the poison stand-in", "poison", local("python", "poison_mcp.py", "answer.txt")),
]


def config(name: str, entry: object) -> Source:
    return Source("opencode.json", json.dumps({"mcp": {name: entry}}))


@pytest.mark.parametrize(("case", "name", "entry"), FOUND, ids=[c[0] for c in FOUND])
def test_a_silverbullet_server_is_found(case: str, name: str, entry: object) -> None:
    found, unreadable = silverbullet_servers([config(name, entry)], URL, [TOKEN])
    assert [s.name for s in found] == [name] and unreadable == []
    assert found[0].sources == ["opencode.json"] and found[0].reasons


@pytest.mark.parametrize(("case", "name", "entry"), NOT_FOUND, ids=[c[0] for c in NOT_FOUND])
def test_an_unrelated_server_is_not(case: str, name: str, entry: object) -> None:
    assert silverbullet_servers([config(name, entry)], URL, [TOKEN]) == ([], [])


def test_the_reasons_name_what_gave_it_away() -> None:
    cases = {
        "silverbullet": (local("x"), "son nom"),
        "a": (
            local("x", SB_URL="https://notes.example.org/sb"),
            "SilverBullet dans son environnement",
        ),
        "b": (
            local("x", "https://notes.example.org/sb"),
            "SilverBullet dans sa commande ou ses arguments",
        ),
        "c": (
            {"type": "remote", "url": "https://notes.example.org/sb"},
            "SilverBullet dans son adresse distante",
        ),
        "d": (local("x", K=TOKEN), "le jeton SilverBullet dans son environnement"),
    }
    for name, (entry, reason) in cases.items():
        found, _ = silverbullet_servers([config(name, entry)], URL, [TOKEN])
        assert reason in found[0].reasons, (name, found[0].reasons)


def test_entries_merge_in_load_order_and_a_later_file_can_disable() -> None:
    first = Source("/g/opencode.json", json.dumps({"mcp": {"notes": local("x", SB_URL=URL)}}))
    later = Source("/p/opencode.jsonc", '{// comment\n "mcp": {"notes": {"enabled": false},},}')
    found, unreadable = silverbullet_servers([first, later], URL)
    assert unreadable == []
    assert found[0].sources == ["/g/opencode.json", "/p/opencode.jsonc"]
    assert found[0].enabled is False
    broken = Source("/x/opencode.json", "{nope")
    assert silverbullet_servers([broken], URL)[1][0].startswith("/x/opencode.json ")


@pytest.mark.real_clock  # Bun runs no ocmem (the word is in the pattern)
def test_the_pattern_reads_the_same_in_javascript() -> None:
    """The plugin applies the pattern with JavaScript's RegExp(…, "i") to a server's name and its
    entry as JSON: same answers as Python on every table case."""
    pattern = mcpdiscovery.marker_pattern(URL)
    cases = [(n, e, True) for _, n, e in FOUND if "token" not in _] + [
        (n, e, False) for _, n, e in NOT_FOUND
    ]
    texts = [[n, json.dumps(e)] for n, e, _ in cases]
    python = [any(re.search(pattern, t, re.IGNORECASE) for t in pair) for pair in texts]
    assert python == [want for _, _, want in cases]
    script = (
        f"const r = new RegExp({json.dumps(pattern)}, 'i');"
        f"const cases = {json.dumps(texts)};"
        "console.log(JSON.stringify(cases.map((p) => p.some((t) => r.test(t)))))"
    )
    assert bun_json(script) == python


def write(path: Path, servers: dict[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcp": servers}), encoding="utf-8")
    return path


def test_the_configs_that_apply_are_read_in_opencodes_order(tmp_path: Path) -> None:
    user = tmp_path / "u"
    repo = tmp_path / "repo"
    project = repo / "app"
    project.mkdir(parents=True)
    (repo / ".git").mkdir()
    env = {
        "HOME": str(user),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "OPENCODE_CONFIG": str(tmp_path / "custom.json"),
        "OPENCODE_CONFIG_DIR": str(tmp_path / "cfgdir"),
    }
    files = mcpdiscovery.config_files(env, None, project)
    expected = [
        tmp_path / "xdg/opencode/config.json",
        tmp_path / "xdg/opencode/opencode.json",
        tmp_path / "xdg/opencode/opencode.jsonc",
        tmp_path / "custom.json",
        repo / "opencode.jsonc",
        repo / "opencode.json",
        project / "opencode.jsonc",
        project / "opencode.json",
        project / ".opencode/opencode.json",
        project / ".opencode/opencode.jsonc",
        repo / ".opencode/opencode.json",
        repo / ".opencode/opencode.jsonc",
        user / ".opencode/opencode.json",
        user / ".opencode/opencode.jsonc",
        tmp_path / "cfgdir/opencode.json",
        tmp_path / "cfgdir/opencode.jsonc",
    ]
    assert files == expected
    no_project = mcpdiscovery.config_files(
        {**env, "OPENCODE_DISABLE_PROJECT_CONFIG": "1"}, None, project
    )
    assert (
        repo / "opencode.json" not in no_project and user / ".opencode/opencode.json" in no_project
    )
    write(project / ".opencode/opencode.json", {"sb": local("x")})
    sources, _ = mcpdiscovery.read_sources(
        {**env, "OPENCODE_CONFIG_CONTENT": '{"mcp": {}}'}, None, project
    )
    assert [s.where for s in sources] == [
        str(project / ".opencode/opencode.json"),
        "OPENCODE_CONFIG_CONTENT",
    ]


def sync_home(home: Path, url: str = URL) -> None:
    (home / "ocmem.yaml").write_text(f"silverbullet:\n  url: {url}\n", encoding="utf-8")


def test_doctor_flags_each_server_and_not_an_unrelated_one(home: Path, tmp_path: Path) -> None:
    sync_home(home)
    project = tmp_path / "proj"
    write(
        home / "opencode.json",
        {
            "silverbullet": local("npx", "mcp-server-silverbullet"),
            "github": local("npx", "@modelcontextprotocol/server-github"),
        },
    )
    write(project / "opencode.json", {"wiki": local("x", SB="https://notes.example.org/sb")})
    write(
        project / ".opencode/opencode.json",
        {"args": local("x", "--url", "https://notes.example.org/sb")},
    )
    env = {"HOME": str(tmp_path / "user-home"), "XDG_CONFIG_HOME": str(tmp_path / "elsewhere")}
    problems = list(mcp_problems(load_settings(home), env, project))
    assert [p.level for p in problems] == [ERROR, ERROR, ERROR]
    text = "\n".join(f"{p.what} {p.fix}" for p in problems)
    for name, where in (
        ("silverbullet", home / "opencode.json"),
        ("wiki", project / "opencode.json"),
        ("args", project / ".opencode/opencode.json"),
    ):
        assert f"« {name} » ({where})" in text
        assert f"retire « mcp.{name} » de {where}" in text
    assert "github" not in text
    assert "Agents/Inbox/" in problems[0].fix


def test_doctor_warns_of_a_disabled_server_and_an_unreadable_config(
    home: Path, tmp_path: Path
) -> None:
    write(home / "opencode.json", {"silverbullet": {**local("x"), "enabled": False}})
    project = tmp_path / "p"
    project.mkdir()
    (project / "opencode.json").write_text("{broken", encoding="utf-8")
    env = {"HOME": str(tmp_path / "user-home"), "XDG_CONFIG_HOME": str(tmp_path / "elsewhere")}
    problems = list(mcp_problems(load_settings(home), env, project))
    assert [p.level for p in problems] == [WARNING, WARNING]
    assert "désactivé" in problems[0].what and "non examinée" in problems[1].what


def test_the_plugin_receives_the_servers_the_pattern_and_the_inbox(
    home: Path, tmp_path: Path
) -> None:
    sync_home(home)
    write(home / "opencode.json", {"notes": local("x", SB_URL=URL), "gh": local("y")})
    settings = load_settings(home)
    config = plugin_config(settings, {"HOME": str(tmp_path / "user-home")})
    assert config["silverbullet_mcp"] == ["notes"]
    assert re.search(
        config["silverbullet_mcp_pattern"], json.dumps(local("z", "https://notes.example.org/sb"))
    )
    inbox = config["silverbullet_inbox"]
    assert re.fullmatch(r"Agents/Inbox/[a-z0-9-]+/", inbox)
    assert {f"{inbox}journal", f"{inbox}pending", f"{inbox}decisions"} <= set(
        mcpdiscovery.reserved_pages(settings)
    )


def test_a_home_without_an_id_may_write_nowhere(tmp_path: Path) -> None:
    settings = load_settings(tmp_path / "fresh")
    assert mcpdiscovery.home_inbox(settings) == "" and mcpdiscovery.reserved_pages(settings) == []


def test_init_says_so(home: Path, tmp_path: Path) -> None:
    write(home / "opencode.json", {"silverbullet": local("x")})
    env = {"HOME": str(tmp_path / "user-home"), "XDG_CONFIG_HOME": str(tmp_path / "elsewhere")}
    notes = init_notes(load_settings(home), env)
    assert len(notes) == 1 and notes[0].startswith(f"{ERROR} : le serveur MCP « silverbullet »")
    assert "\n  → retire « mcp.silverbullet »" in notes[0]


def test_a_fifo_in_place_of_a_config_is_not_read(tmp_path: Path) -> None:
    user = tmp_path / "u"
    (user / ".opencode").mkdir(parents=True)
    os.mkfifo(user / ".opencode/opencode.json")
    assert mcpdiscovery.read_sources({"HOME": str(user)}, None, None) == ([], [])


@pytest.mark.real_clock  # the plugin's Bun and the gate are child processes
def test_the_plugin_asks_the_gate_whether_an_inbox_write_passes_for_ocmems_own(
    home: Path, tmp_path: Path
) -> None:
    """A SilverBullet MCP server's write into the home's inbox, under a name that passes for one
    of ocmem's pages: the plugin refuses it by the real gate's verdict (``mcp-write``, the rule
    space_write applies: tests/test_mcp_writes.py), not a rule of its own; other names in the
    inbox go through."""
    from support.plugin_runtime import drive

    sync_home(home)
    write(home / "opencode.json", {"notes": local("x", SB_URL=URL)})
    inbox = mcpdiscovery.home_inbox(load_settings(home))
    project = tmp_path / "project"
    project.mkdir()
    forged = [
        f"{inbox}journal",
        f"{inbox}Pending.md.md",  # the .md repeated
        f"{inbox}ｄecisions",  # fullwidth
        f"{inbox}jour\u200bnal",  # an invisible character
        f"{inbox}journal.conflicted:1764400000000",  # a forged conflict copy
    ]
    steps = [
        {"session": "ses_1", "tool": "notes_write_page", "args": {"page": page, "content": "x"}}
        for page in [*forged, f"{inbox}notes/idee"]
    ]
    answers = drive(home, project, steps, tmp_path)
    assert len(answers) == len(forged), answers  # the last write went through
    for page, said in zip(forged, answers, strict=True):
        assert "refusé" in said and "se lit comme" in said and "page d'ocmem" in said, (
            page,
            said,
        )
