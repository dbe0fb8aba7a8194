"""A third-party SilverBullet MCP server's write call, judged before it runs (issue 23): the
plugin picks the call's page arguments (plugin/ocmem/mcp.ts, its own tests) and the gate judges
them by the rule space_write applies (``ocmem.bridge.spacetools.mcp_write_refusal``): read as a
space tool reads a page name, only strictly under this home's inbox, never one of ocmem's pages
nor a name that passes for one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import HOME_ID
from ocmem.bridge import contract
from ocmem.bridge.spacetools import mcp_write_refusal
from ocmem.clock import Clock
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from test_gate import GateProcess

INBOX = f"Agents/Inbox/{HOME_ID}/"
OUTSIDE = "est hors de"
UNREADABLE = "n'est pas un nom de page"
MIMICS = "se lit comme"

# The pages a write names (raw, as the model gave them) and why they are refused.
REFUSED: list[tuple[list[str], str]] = [
    (["Agents/Memory/MEMORY.md"], OUTSIDE),
    (["Agents/Skills/x/SKILL.md"], OUTSIDE),
    (["Agents/AGENTS.md"], OUTSIDE),
    (["/Agents/Memory/MEMORY"], OUTSIDE),
    ([f"{INBOX}../../Memory/MEMORY.md"], OUTSIDE),
    (["Agents%2FInbox%2Fmaison%2F..%2F..%2FSkills%2Fx%2FSKILL.md"], OUTSIDE),
    (["Agents%2FSkills%2Fx%2FSKILL.md"], OUTSIDE),
    (["Agents%252FAGENTS.md"], OUTSIDE),  # encoded twice
    (["Agents\\Inbox\\maison\\..\\..\\AGENTS.md"], OUTSIDE),
    (["http://127.0.0.1:3000/.fs/Agents/Skills/x/SKILL.md?raw=1"], OUTSIDE),
    (["Agents/Inbox/autre/x.md"], OUTSIDE),  # another home's inbox
    (["Agents/Inbox/maisonette/x.md"], OUTSIDE),  # a prefix of the name, not the folder
    ([INBOX], OUTSIDE),  # the inbox itself
    ([f"{INBOX}a.md", "Agents/Skills/z/SKILL.md"], OUTSIDE),  # a rename out of the inbox
    (["../Agents/AGENTS.md"], UNREADABLE),  # above the root
    (["Agents/\x00x"], UNREADABLE),
    (["%E0%A4%A"], UNREADABLE),  # an encoding that is not one
    (["%25" * 8 + "41"], UNREADABLE),  # an encoding that never settles
    ([f"{INBOX}.cache/x"], UNREADABLE),  # a hidden folder: no page SilverBullet holds
    ([f"{INBOX}pending.md"], MIMICS),
    ([f"{INBOX}Decisions"], MIMICS),
    ([f"{INBOX}journal.conflicted:1764400000000"], MIMICS),  # a forged conflict copy
    ([f"{INBOX}Pending.md.md"], MIMICS),
    ([f"{INBOX}ｄecisions"], MIMICS),  # fullwidth
    ([f"{INBOX}jour\u200bnal"], MIMICS),  # an invisible character
    ([f"{INBOX}journal%2Econflicted%3A1"], MIMICS),  # percent-encoded
    ([f"{INBOX}a.md", f"{INBOX}Pending.md"], MIMICS),  # a move onto ocmem's page
    ([], "ne trouve pas dans ses arguments"),
]
ALLOWED: list[list[str]] = [
    [f"{INBOX}notes/idee.md"],
    [f"{INBOX}notes/idee"],
    [f"{INBOX}./note.MD"],
    [f"/.fs/{INBOX}a.md"],
    [f"{INBOX}journalisme"],
    [f"{INBOX}brouillon.md", f"{INBOX}notes/brouillon.md"],
    ["Agents%2FInbox%2Fmaison%2Fnotes%2Fidee.md"],
]


@pytest.mark.parametrize(("pages", "why"), REFUSED)
def test_a_write_outside_the_inbox_or_onto_ocmems_pages_is_refused(
    workspace: Workspace, pages: list[str], why: str
) -> None:
    said = mcp_write_refusal(workspace, "notes", "notes_write_page", pages)
    assert said.startswith(
        "refusé : l'outil notes_write_page du serveur MCP SilverBullet « notes »"
    )
    assert why in said, said
    assert INBOX in said and "memory_propose" in said, said  # the rule, and where a fact goes


@pytest.mark.parametrize("pages", ALLOWED)
def test_a_write_under_the_inbox_may_run(workspace: Workspace, pages: list[str]) -> None:
    assert mcp_write_refusal(workspace, "notes", "notes_write_page", pages) == ""


def test_the_refusal_shows_the_page_as_given(workspace: Workspace) -> None:
    raw = "Agents%2FSkills%2Fx%2FSKILL.md"
    said = mcp_write_refusal(workspace, "notes", "notes_write_page", [f"{INBOX}a", raw])
    assert f'vise "{raw}" : Agents/Skills/x/SKILL est hors de {INBOX}' in said


def test_a_home_without_an_id_may_write_nowhere(tmp_path: Path, clock: Clock) -> None:
    ws = Workspace(load_settings(tmp_path / "fresh"), clock=clock)
    said = mcp_write_refusal(ws, "notes", "notes_write_page", [f"{INBOX}notes/idee"])
    assert said.startswith("refusé : ") and "identifiant" in said and "ocmem init" in said


@pytest.mark.real_clock  # a child process
def test_the_gate_answers_one_verdict_per_call(home: Path) -> None:
    gate = GateProcess(home)
    try:
        gate.hello()
        call = {"op": "mcp-write", "server": "notes", "tool": "notes_write_page"}
        refused = gate.ask(**call, pages=["Agents/Memory/MEMORY.md"])
        allowed = gate.ask(**call, pages=[f"{INBOX}notes/idee.md"])
        malformed = gate.ask(**call, pages="Agents/Memory/MEMORY.md")
    finally:
        gate.close()
    assert refused["code"] == 0 and allowed["code"] == 0, (refused, allowed)
    for answer in (refused, allowed):
        assert contract.problems(json.loads(answer["out"]), "McpWriteVerdict") == []
    assert OUTSIDE in json.loads(refused["out"])["refusal"]
    assert json.loads(allowed["out"]) == {"refusal": ""}
    assert malformed["code"] == 2 and "« pages »" in malformed["err"]
