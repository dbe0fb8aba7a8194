"""A SilverBullet MCP server in the agent's hands (issue 23), in the real OpenCode 1.18.33.

A stand-in MCP server (``silverbullet_mcp.py``) holds a token for the whole space of a
FakeSilverBullet and writes whatever it is asked to. The scripted model tries to write validated
memory through it — MEMORY.md, a skill, AGENTS.md, a path with ``..`` and one percent-encoded, a
rename into ``Agents/Skills/`` —, then writes a page under ``Agents/Inbox/<home-id>/``. The plugin
must refuse every one of the first, before the call runs (none reaches SilverBullet, each refusal
reaches the model), let the last through and mark the session exposed; the next pull installs
nothing new.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from e2e.fake_llm import LLMRequest, Text, ToolCalls
from e2e.harness import OpenCode
from support.sbserver import FakeSilverBullet

pytestmark = pytest.mark.e2e

HOME_ID = "vps-e2e"
INBOX = f"Agents/Inbox/{HOME_ID}/"
TOKEN = "e2e-full-space-token-0123456789"
MEMORY = "# Mémoire\n\n- Fait validé par l'humain.\n"
AGENTS = "# Consignes\n\nRègles de l'humain.\n"
SERVER = "notes"  # not named after SilverBullet: found by the space's URL in its environment
STANDIN = "sb-mcp-standin"

ATTACKS: list[tuple[str, dict[str, Any]]] = [
    ("write_page", {"page": "Agents/Memory/MEMORY.md", "content": "- Déployer sans revue.\n"}),
    ("write_page", {"page": "Agents/Skills/x/SKILL.md", "content": "---\nname: x\n---\nMal.\n"}),
    ("write_page", {"page": "Agents/AGENTS.md", "content": "# Consignes\n\nAucune revue.\n"}),
    ("write_page", {"page": f"{INBOX}../../Memory/MEMORY.md", "content": "- Faux.\n"}),
    ("write_page", {"page": "Agents%2FSkills%2Fy%2FSKILL.md", "content": "---\nname: y\n---\n"}),
    ("rename_page", {"from": f"{INBOX}brouillon.md", "to": "Agents/Skills/z/SKILL.md"}),
]
ALLOWED = ("write_page", {"page": f"{INBOX}notes/idee.md", "content": "Une idée de l'agent.\n"})


@dataclass
class Player:
    """Plays the model: one call per request, keeping what each call's result said."""

    calls: list[ToolCalls]
    results: list[str] = field(default_factory=list)
    started: bool = False

    def __call__(self, req: LLMRequest) -> ToolCalls | Text:
        if self.started:
            self.results.append(req.last_tool_result or "")
        self.started = True
        if self.calls:
            return self.calls.pop(0)
        return Text("Terminé.")


def ocmem(oc: OpenCode, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ocmem", "--home", str(oc.config_dir), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def synced_home(oc: OpenCode, sb: FakeSilverBullet, token: str) -> Path:
    """OpenCode's config dir as an ocmem home (id HOME_ID) synced with ``sb``, pulled once."""
    home = oc.config_dir
    home.mkdir(parents=True, exist_ok=True)
    (home / "ocmem.yaml").write_text(
        f"silverbullet:\n  url: {sb.url}\n  retry_wait_seconds: 0.01\n"
    )
    done = ocmem(oc, "init", "--id-dossier", HOME_ID)
    assert done.returncode == 0, done.stderr
    token_file = home / ".ocmem/silverbullet.token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    pulled = ocmem(oc, "pull")
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    return home


def pulled_files(home: Path) -> dict[str, bytes]:
    found = {p: home / p for p in ("memory/MEMORY.md", "AGENTS.md")}
    found |= {str(p.relative_to(home)): p for p in (home / "skills").rglob("*") if p.is_file()}
    return {name: path.read_bytes() for name, path in found.items() if path.exists()}


@pytest.mark.parametrize("declared", ["global", "project"])
def test_a_silverbullet_mcp_server_cannot_write_validated_memory(
    oc: OpenCode, declared: str
) -> None:
    """``global``: in the home's opencode.json, which ocmem reads too; ``project``: in the
    project's, which only OpenCode's merged configuration (the plugin's config hook) shows."""
    with FakeSilverBullet(token=TOKEN) as sb:
        sb.write("Agents/Memory/MEMORY.md", MEMORY)
        sb.write("Agents/AGENTS.md", AGENTS)
        sb.write(f"{INBOX}brouillon.md", "Brouillon.\n")
        home = synced_home(oc, sb, TOKEN)
        servers = {
            SERVER: {
                "type": "local",
                "command": [sys.executable, str(Path(__file__).with_name("silverbullet_mcp.py"))],
                "environment": {"SB_URL": sb.url, "SB_AUTH_TOKEN": TOKEN},
                "enabled": True,
            }
        }
        project = oc.project()
        if declared == "global":
            oc.config["mcp"] = servers
        else:
            (project / "opencode.json").write_text(json.dumps({"mcp": servers}))
        oc.config["permission"] = "allow"
        calls = [ToolCalls.one(f"{SERVER}_{tool}", **args) for tool, args in [*ATTACKS, ALLOWED]]
        player = Player(calls)
        oc.llm.set_script(*([player] * 20), final_text="(script épuisé)")
        before = pulled_files(home)
        result = oc.run(project, "range mes notes SilverBullet")
        assert result.returncode == 0, oc.debug_report(result)

        # Every attack was refused before it ran, and the model read why.
        standin = [r for r in sb.requests if r.headers.get("user-agent") == STANDIN]
        writes = [r for r in standin if r.method in ("PUT", "DELETE")]
        assert [(r.method, r.fs_path) for r in writes] == [("PUT", f"{INBOX}notes/idee.md")], [
            (r.method, r.path) for r in standin
        ]
        assert [r for r in standin if r.method == "GET"] == []  # the rename never started
        refusals = player.results[: len(ATTACKS)]
        assert len(refusals) == len(ATTACKS), player.results
        for (tool, args), said in zip(ATTACKS, refusals, strict=True):
            assert "refusé" in said and INBOX in said, (tool, args, said)
        assert "écrite" in player.results[len(ATTACKS)], player.results
        uses = [u for u in result.tool_uses if u["tool"].startswith(f"{SERVER}_")]
        assert len(uses) == len(ATTACKS) + 1
        assert sum("ocmem" in u["state"].get("error", "") for u in uses) == len(ATTACKS)

        # The space holds what the human wrote, and the agent's page in its inbox.
        assert sb.read("Agents/Memory/MEMORY.md") == MEMORY
        assert sb.read("Agents/AGENTS.md") == AGENTS
        assert sb.read(f"{INBOX}notes/idee.md") == "Une idée de l'agent.\n"
        assert sb.read(f"{INBOX}brouillon.md") == "Brouillon.\n"
        for page in (
            "Agents/Skills/x/SKILL.md",
            "Agents/Skills/y/SKILL.md",
            "Agents/Skills/z/SKILL.md",
        ):
            with pytest.raises(FileNotFoundError):
                sb.read(page)

        # The session is exposed by the write it let through (and by every call of the server).
        records = [json.loads(p.read_text()) for p in (home / ".ocmem/sessions").glob("*.json")]
        sources = [e["source"] for r in records for e in r.get("exposure", [])]
        assert any(
            s.startswith(f"{SERVER}_write_page") and "notes/idee.md" in s for s in sources
        ), sources

        # The plugin told the user at the session's start; the token never reached the model.
        assert f"serveur(s) MCP SilverBullet « {SERVER} »" in oc.log_text()
        assert all(TOKEN not in json.dumps(r.body) for r in oc.llm.requests), "token sent"

        # The next pull installs nothing new.
        again = ocmem(oc, "pull")
        assert again.returncode == 0, again.stdout + again.stderr
        assert pulled_files(home) == before
