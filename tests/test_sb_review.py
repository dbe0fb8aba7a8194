"""The SilverBullet review page, run in a real Lua 5.4 (lupa) on what ocmem pushes.

The page performs, ocmem decides (ocmem.formats.gestures, ocmem.services.gestureplans): here
Python renders a pending page as a push does, the page's Lua (sync/ocmem/silverbullet/ocmem.lua)
performs a gesture on an in-memory space (or the test server's files), and the pages it writes
must be exactly what ocmem's own promotion writes, and what the next pull installs. The page's
generic engine is tested on its own: it finds the proposal, refuses when a page no longer holds
what ocmem saw, writes nothing when it refuses, and records the decision last.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

import lupa.lua54 as lupa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import journal_fields
from ocmem.formats import archive, decisionspage, gestures, memorymd, pending, skills
from ocmem.home.settings import Limits
from ocmem.services import gestureplans, promotion
from ocmem.silverbullet import library, merge
from ocmem.text import inert

TODAY = "2026-12-01"
HOME = "vps-prod"
HOME_PAGE = f"Agents/Inbox/{HOME}/pending"
HOME_DECISIONS = f"Agents/Inbox/{HOME}/decisions"
LEGACY_PAGE = "Agents/Inbox/pending"
MEMORY = "Agents/Memory/MEMORY"
ARCHIVE = "Agents/Memory/ARCHIVE"
SOURCES = ("journal 2026-11-20 10:12", "journal 2026-11-29 14:32")
DRAFT = "# Déployer\n\n1. Vérifier les ports libres (`ss -ltn`).\n2. `docker compose up -d`\n\n```sh\ndocker ps\n```"
DESCRIPTION = "Déploie un service sur le VPS. À utiliser avant tout déploiement."


def skill_page(name: str = "deploy-vps") -> str:
    return f"Agents/Skills/{name}/SKILL"


@pytest.fixture(scope="module")
def lua() -> Any:
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    runtime.execute(library.logic_source())
    assert runtime.eval("_VERSION") == "Lua 5.4"
    return runtime


@pytest.fixture(scope="module")
def oc(lua: Any) -> Any:
    """The page's ``ocmem`` table."""
    return lua.globals().ocmem


@dataclass
class Space:
    """An in-memory stand-in for SilverBullet's space (page name → text), as the glue sees it;
    ``folder`` holds what a pull would have installed locally, for ocmem's side."""

    lua: Any
    folder: Path
    pages: dict[str, str] = field(default_factory=dict)
    writes: list[str] = field(default_factory=list)
    pulls: int = 0

    def store(self) -> Any:
        return self.lua.table_from(
            {
                "list": lambda: self.lua.table_from(sorted(self.pages)),
                "read": lambda name: self.pages.get(name),
                "write": self._write,
                "delete": self._delete,
            }
        )

    def _write(self, name: str, text: str) -> None:
        self.writes.append(name)
        self.pages[name] = text

    def _delete(self, name: str) -> None:
        self.writes.append(f"-{name}")
        del self.pages[name]

    def pulled(self, page: str = HOME_PAGE, home: str | None = HOME) -> gestureplans.Space:
        """What ocmem computes against: the space's pages as a pull would install them."""
        self.pulls += 1
        skills_dir = self.folder / f"skills-{self.pulls}"
        skills_dir.mkdir()
        for name, text in self.pages.items():
            if name.startswith("Agents/Skills/") and name.endswith("/SKILL"):
                path = skills_dir / f"{name.removeprefix('Agents/Skills/')}.md"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
        limits = Limits()
        return gestureplans.Space(
            memory=self.pages.get(MEMORY, ""),
            archive=self.pages.get(ARCHIVE, ""),
            installed=skills.list_skills(
                skills_dir, limits.skill_lines, lambda p: p.read_text(encoding="utf-8")
            ),
            skills_dir=skills_dir,
            limits=limits,
            memory_page=MEMORY,
            archive_page=ARCHIVE,
            skills_folder="Agents/Skills/",
            decisions_page=decisionspage.page_beside(page + ".md").removesuffix(".md"),
            home=home,
        )

    def push(self, *proposals: pending.Proposal, page: str = HOME_PAGE) -> None:
        """The pending page as a push writes it: the blocks, then the gestures of those waiting."""
        home = None if page == LEGACY_PAGE else HOME
        decorate = gestureplans.Decorator(lambda: self.pulled(page, home))
        blocks = [(p.id, merge.normalise(p.render())) for p in proposals]
        text = pending.PENDING_HEADER + "".join("\n" + b for _, b in blocks)
        self.pages[page] = gestures.with_fence(text, decorate(blocks))


@pytest.fixture
def space(lua: Any, tmp_path: Path) -> Space:
    return Space(lua, tmp_path)


def fact(
    pid: str = "P-0001", content: str = "Le VPS tourne sous Debian 12.", **kw: Any
) -> pending.Proposal:
    values: dict[str, Any] = {
        "title": "Debian",
        "status": pending.STATE_PENDING,
        "created": date(2026, 11, 29),
        "sources": SOURCES,
        "origin": "récurrence (2 épisodes)",
        "replaces": "rien",
        "contradiction": "aucune",
    }
    values.update(kw)
    return pending.Proposal(id=pid, kind="fait", content=content, **values)


def skill(
    pid: str = "P-0002", name: str = "deploy-vps", content: str = DRAFT, **kw: Any
) -> pending.Proposal:
    kw.setdefault("description", DESCRIPTION)
    kw.setdefault("title", "Déployer un service")
    return replace(fact(pid, content, **kw), kind="skill", skill_name=name)


def written(proposal: pending.Proposal, home: str | None = HOME) -> pending.Proposal:
    """The proposal as a promotion names it across homes (its id and sources)."""
    if home is None:
        return proposal
    sources = (f"{home} {' ; '.join(proposal.sources)}",)
    return replace(proposal, id=f"{home}/{proposal.id}", sources=sources)


def promote(oc: Any, space: Space, gid: str) -> Any:
    return oc.promote(space.store(), gid, TODAY)


def refuse(oc: Any, space: Space, gid: str, reason: str) -> Any:
    return oc.refuse(space.store(), gid, reason, TODAY)


def refused(result: Any, *fragments: str) -> str:
    """A refusal: not ok, the fix said, and each fragment in the message."""
    message = str(result.message)
    assert result.ok is False, message
    assert "Correction : " in message or "ne peut pas être promue" in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def statuses(space: Space, page: str = HOME_PAGE) -> dict[str, str]:
    """Each proposal's status as ocmem's pull reads it: its pending page, then its decisions page."""
    found = {p.id: p.status for p in pending.parse(space.pages[page])}
    decided = decisionspage.parse(space.pages.get(HOME_DECISIONS, ""))
    return {pid: decided.get(pid, status) for pid, status in found.items()}


PROPOSAL_TEXT = (
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=60)
    .map(lambda t: " ".join(unicodedata.normalize("NFC", t).split()))
    .filter(bool)
)
SETTINGS = settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])


# --- the engine's primitives ---------------------------------------------------------------------


@given(st.text(max_size=60))
def test_length_and_digest_count_code_points_as_python_does(oc: Any, text: str) -> None:
    assert oc.length(text) == len(text)
    assert oc.digest(text) == gestures.digest(text)


@given(st.lists(st.one_of(st.text(max_size=20), st.just(gestures.Slot("date"))), max_size=6))
def test_a_text_survives_the_push_and_is_filled_as_ocmem_fills_it(
    oc: Any, lua: Any, pieces: list[str | gestures.Slot]
) -> None:
    text = tuple(unicodedata.normalize("NFC", p) if isinstance(p, str) else p for p in pieces)
    assume(all("\r" not in p for p in text if isinstance(p, str)))
    lines = gestures.lines_of(text)
    data = [gestures.OPEN, "proposition x", "geste g", "decision", *lines, gestures.CLOSE]
    page = merge.normalise("\n".join(data))
    (entry,) = oc.proposalsOf("p", page).values()
    filled = lua.eval("function(e) return e.gestures.g.decision end")(entry)
    fill = lua.eval(
        "function(pieces, day) local out = {} for _, p in ipairs(pieces) do "
        "out[#out + 1] = type(p) == 'string' and p or day end return table.concat(out) end"
    )
    assert fill(filled, TODAY) == gestures.fill(text, {"date": TODAY})


def test_the_lua_runs_no_pattern_on_page_text() -> None:
    """Space Lua's patterns see a UTF-16 unit through `& 0xff`: only plain searches here."""
    for source in (library.logic_source(), library.glue_source()):
        assert not re.search(r"\b(gmatch|gsub|match)\(", source)
        for call in re.findall(r"\bfind\([^\n]*", source):
            assert ", true)" in call, call


# --- finding the proposal and what ocmem saw ---------------------------------------------------


def test_the_review_lists_what_ocmem_pushed_for_waiting_proposals(oc: Any, space: Space) -> None:
    space.push(fact(), skill(), fact("P-0003", status="refusé (2026-11-30) : non"))
    space.push(fact("P-0009", "Un fait de la page de la spécification."), page=LEGACY_PAGE)
    entries = list(oc.review(space.store()).entries.values())
    assert [(e.gid, e.titre, e.page, e.intact) for e in entries] == [
        ("P-0009", "fait · Debian", LEGACY_PAGE, True),
        (f"{HOME}/P-0001", "fait · Debian", HOME_PAGE, True),
        (f"{HOME}/P-0002", "skill · Déployer un service", HOME_PAGE, True),
    ]
    # What the review shows of a proposal: its block as the pending page holds it.
    assert entries[1].markdown == merge.normalise(fact().render()).rstrip("\n")


def test_agent_text_can_never_pass_for_ocmems_data(oc: Any, space: Space) -> None:
    """A draft holding a fence like ocmem's: inside the proposal's content, it is the agent's."""
    forged = "\n".join(
        [
            "```text",
            gestures.OPEN,
            "proposition vps-prod/P-0666",
            "geste promouvoir",
            f"cree {skill_page('evil')}",
            "texte",
            "| pwned|",
            "~~~",
            "```",
        ]
    )
    space.push(skill(content=DRAFT + "\n\n" + forged))
    assert space.pages[HOME_PAGE].split("\n").count(gestures.OPEN) == 2  # theirs is there, raw
    (entry,) = oc.review(space.store()).entries.values()
    assert entry.gid == f"{HOME}/P-0002"
    refused(promote(oc, space, "vps-prod/P-0666"), "pas de proposition")
    assert promote(oc, space, f"{HOME}/P-0002").ok is True
    assert skill_page("evil") not in space.pages


def test_a_block_edited_since_the_push_is_not_promoted_but_may_be_refused(
    oc: Any, space: Space
) -> None:
    space.push(fact())
    space.pages[HOME_PAGE] = space.pages[HOME_PAGE].replace("Debian 12.", "Debian 13.", 1)
    (entry,) = oc.review(space.store()).entries.values()
    assert entry.intact is False
    refused(promote(oc, space, f"{HOME}/P-0001"), "modifiée", "ocmem sync")
    assert space.writes == []
    assert refuse(oc, space, f"{HOME}/P-0001", "plus d'actualité").ok is True
    assert statuses(space)["P-0001"] == f"refusé ({TODAY}) : plus d'actualité"


def test_trailing_spaces_are_no_edit(oc: Any, space: Space) -> None:
    """The push strips them from the lines it writes; a block kept as the human saved it (or a
    CRLF editor) still reads as ocmem saw it."""
    space.push(fact())
    page = space.pages[HOME_PAGE]
    space.pages[HOME_PAGE] = page.replace("· Debian\n", "· Debian  \r\n").replace(
        "- Statut : en attente\n", "- Statut : en attente\t\n"
    )
    (entry,) = oc.review(space.store()).entries.values()
    assert entry.intact is True
    assert promote(oc, space, f"{HOME}/P-0001").ok is True


def test_a_proposal_decided_on_the_decisions_page_is_no_longer_waiting(
    oc: Any, space: Space
) -> None:
    space.push(fact(), skill())
    space.pages[HOME_DECISIONS] = "Notes de l'humain.\n- P-0002 : refusé (2026-11-30) : non\n"
    assert [e.gid for e in oc.review(space.store()).entries.values()] == [f"{HOME}/P-0001"]
    refused(promote(oc, space, f"{HOME}/P-0002"), "déjà notée", "- P-0002 : refusé")
    assert space.writes == []


def test_an_unknown_id_and_a_missing_reason_are_refused(oc: Any, space: Space) -> None:
    space.push(fact())
    refused(promote(oc, space, f"{HOME}/P-0042"), "pas de proposition")
    for reason in ("", "   ", "ligne une\nligne deux"):
        refused(refuse(oc, space, f"{HOME}/P-0001", reason), "raison sur une ligne")
    assert space.writes == []


# --- promotions: exactly what ocmem writes, or a refusal that writes nothing ----------------------


@SETTINGS
@given(content=PROPOSAL_TEXT, title=PROPOSAL_TEXT)
def test_a_fact_is_written_exactly_as_a_local_promotion_writes_it(
    oc: Any, space: Space, content: str, title: str
) -> None:
    space.pages = {MEMORY: memorymd.MEMORY_HEADER + "\n- Un fait d'avant.\n"}
    space.push(fact(content=content, title=title))
    before = space.pages[MEMORY]
    result = promote(oc, space, f"{HOME}/P-0001")
    assert result.ok is True, result.message
    expected = promotion.fact(before, written(fact(content=content)), date(2026, 12, 1), Limits())
    assert space.pages[MEMORY] == expected.text
    assert inert.active_constructs(space.pages[MEMORY]) == []
    assert decisionspage.parse(space.pages[HOME_DECISIONS]) == {"P-0001": f"promu ({TODAY})"}


def test_a_fact_in_a_blank_memory_and_on_the_spec_page(oc: Any, space: Space) -> None:
    space.push(fact(), page=LEGACY_PAGE)
    assert promote(oc, space, "P-0001").ok is True
    expected = promotion.fact("", fact(), date(2026, 12, 1), Limits())
    assert space.pages[MEMORY] == expected.text  # the header, then the line: no home in it
    assert space.writes == [MEMORY, "Agents/Inbox/decisions"]


def test_a_replacement_takes_the_old_facts_place_and_archives_it_as_ocmem_does(
    oc: Any, space: Space
) -> None:
    old = "Le VPS tourne sous Debian 12. (2026-11-20, Source : journal 2026-11-19 10:00 ; P-0042)"
    space.pages[MEMORY] = memorymd.MEMORY_HEADER + f"\n- {old}\n- Le port SSH est 2222.\n"
    replaces = "MEMORY.md « Le VPS tourne sous Debian 12. » — valeur changée : 12 → 13"
    proposal = fact(content="Le VPS tourne sous Debian 13.", replaces=replaces)
    space.push(proposal)
    before = space.pages[MEMORY]
    assert promote(oc, space, f"{HOME}/P-0001").ok is True
    expected = promotion.fact(before, written(proposal), date(2026, 12, 1), Limits())
    assert expected.archived is not None and expected.archived.old == old
    assert space.pages[MEMORY] == expected.text
    assert space.pages[ARCHIVE] == archive.with_entry("", expected.archived)
    assert space.writes == [ARCHIVE, MEMORY, HOME_DECISIONS]


def test_a_replaced_line_gone_since_the_push_is_refused(oc: Any, space: Space) -> None:
    old = "Le VPS tourne sous Debian 12. (2026-11-20, Source : a ; P-0042)"
    space.pages[MEMORY] = memorymd.MEMORY_HEADER + f"\n- {old}\n"
    space.push(fact(content="Debian 13.", replaces="MEMORY.md « Le VPS tourne sous Debian 12. »"))
    space.pages[MEMORY] = memorymd.MEMORY_HEADER + "\n- Édité à la main.\n"
    space.writes.clear()
    refused(promote(oc, space, f"{HOME}/P-0001"), "n'est plus dans", old, "ocmem sync")
    assert space.writes == []


def test_a_fact_over_the_cap_is_refused_by_ocmem_and_by_the_page(oc: Any, space: Space) -> None:
    near = (
        memorymd.MEMORY_HEADER + "\n" + "".join(f"- Fait {n} " + "x" * 80 + "\n" for n in range(21))
    )
    space.pages[MEMORY] = near
    space.push(fact())
    refused(promote(oc, space, f"{HOME}/P-0001"), "plafond", "ne peut pas être promue")
    # ocmem saw room; the human filled MEMORY.md since: the page counts and refuses.
    space.pages[MEMORY] = memorymd.MEMORY_HEADER
    space.push(fact())
    space.pages[MEMORY] = near
    space.writes.clear()
    message = refused(promote(oc, space, f"{HOME}/P-0001"), "dépasserait son plafond")
    assert re.search(r"\d+/2000 caractères", message) and "consolide MEMORY.md" in message
    assert space.writes == []


def test_an_interrupted_promotion_only_records_the_decision_the_second_time(
    oc: Any, space: Space
) -> None:
    space.push(fact())
    assert promote(oc, space, f"{HOME}/P-0001").ok is True
    memory = space.pages[MEMORY]
    del space.pages[HOME_DECISIONS]  # the decision never landed
    result = promote(oc, space, f"{HOME}/P-0001")
    assert result.ok is True and "déjà fait, décision notée" in result.message
    assert space.pages[MEMORY] == memory and HOME_DECISIONS in space.pages


def test_a_skill_is_written_exactly_as_a_local_promotion_writes_it(oc: Any, space: Space) -> None:
    space.push(fact(), skill())
    result = promote(oc, space, f"{HOME}/P-0002")
    assert result.ok is True, result.message
    _, expected = promotion.skill(
        space.folder / "none", [], written(skill()), date(2026, 12, 1), Limits()
    )
    assert space.pages[skill_page()] == expected.text
    assert skills.check_skill_text("deploy-vps", expected.text, Limits().skill_lines)[1] == []
    assert inert.active_constructs(expected.text) == []


def test_a_skill_ocmem_refuses_is_refused_by_the_page(oc: Any, space: Space) -> None:
    space.push(skill(description="Une. Deux. Trois."), skill("P-0003", name="Bad Name"))
    refused(promote(oc, space, f"{HOME}/P-0002"), "3 phrases")
    refused(promote(oc, space, f"{HOME}/P-0003"), "invalide")
    assert space.writes == []


def test_a_sixteenth_skill_is_refused_when_the_space_has_fifteen(oc: Any, space: Space) -> None:
    space.push(skill())
    for n in range(15):  # made by hand since the push
        space.pages[skill_page(f"s{n}")] = skills.render_skill(f"s{n}", "Une.", "x", {})
    message = refused(promote(oc, space, f"{HOME}/P-0002"), "a déjà 15 pages")
    assert "maximum 15" in message and skill_page() not in space.pages


def test_an_existing_skill_is_replaced_only_as_ocmem_saw_it(oc: Any, space: Space) -> None:
    old = skills.render_skill("deploy-vps", DESCRIPTION, "Ancienne version.", {})
    space.pages[skill_page()] = old
    space.push(skill(replaces="skill deploy-vps"), skill("P-0003", replaces="rien"))
    refused(promote(oc, space, f"{HOME}/P-0003"), "existe déjà")
    space.pages[skill_page()] = old + "\nAjout à la main.\n"
    refused(promote(oc, space, f"{HOME}/P-0002"), "a changé depuis le dernier pull")
    space.pages[skill_page()] = old
    assert promote(oc, space, f"{HOME}/P-0002").ok is True
    (entry,) = archive.entries(space.pages[ARCHIVE])
    assert (entry.kind, entry.action, entry.old) == (archive.SKILL, archive.REPLACED, old)
    assert space.pages[skill_page()].startswith("---\nname: deploy-vps\n")


def test_a_refusal_records_the_reason_as_typed_and_touches_nothing_else(
    oc: Any, space: Space
) -> None:
    space.push(fact(), skill())
    assert refuse(oc, space, f"{HOME}/P-0002", "  déjà noté <b>ailleurs</b>  ").ok is True
    assert space.writes == [HOME_DECISIONS]
    assert space.pages[HOME_DECISIONS].startswith(decisionspage.HEADER)
    assert statuses(space) == {
        "P-0001": "en attente",
        "P-0002": f"refusé ({TODAY}) : déjà noté <b>ailleurs</b>",
    }
    refused(refuse(oc, space, f"{HOME}/P-0002", "encore"), "déjà notée")


# --- retirements, from templates generated from ocmem's archive ----------------------------------


def test_retiring_a_fact_and_a_skill_archives_them_as_ocmem_reads_them(
    oc: Any, space: Space
) -> None:
    line = "Le port SSH est 2222. (2026-11-20, Source : journal 2026-11-19 10:00 ; P-0001)"
    space.pages[MEMORY] = memorymd.MEMORY_HEADER + f"\n- {line}\n- Un autre.\n"
    skill_text = skills.render_skill("deploy-vps", DESCRIPTION, "# D\n\n~~~sh\nx\n~~~\n", {})
    space.pages[skill_page()] = skill_text
    assert list(oc.retirable(space.store()).values()) == [
        f"- {line}",
        "- Un autre.",
        "skill deploy-vps",
    ]
    assert oc.retire(space.store(), f"- {line}", "le VPS est réinstallé", TODAY).ok is True
    expected = archive.Entry(
        date(2026, 12, 1),
        archive.FACT,
        archive.RETIRED,
        "à la main",
        line,
        "",
        "le VPS est réinstallé",
    )
    assert space.pages[ARCHIVE] == archive.with_entry("", expected)
    assert space.pages[MEMORY] == memorymd.without_fact(
        memorymd.MEMORY_HEADER + f"\n- {line}\n- Un autre.\n", line
    )
    assert oc.retire(space.store(), "skill deploy-vps", "remplacé par Ansible", TODAY).ok is True
    assert skill_page() not in space.pages
    assert archive.entries(space.pages[ARCHIVE])[1] == archive.Entry(
        date(2026, 12, 1),
        archive.SKILL,
        archive.RETIRED,
        "deploy-vps",
        skill_text,
        "",
        "remplacé par Ansible",
    )


def test_a_retirement_that_cannot_be_written_writes_nothing(oc: Any, space: Space) -> None:
    space.pages[MEMORY] = memorymd.MEMORY_HEADER + "\n- Un fait.\n"
    space.pages[skill_page()] = "---\nname: deploy-vps\n---\n\n" + "~" * 12 + "\n"
    refused(oc.retire(space.store(), "- Pas là.", "x", TODAY), "n'est plus dans")
    refused(oc.retire(space.store(), "skill absent", "x", TODAY), "pas de skill absent")
    refused(oc.retire(space.store(), "skill deploy-vps", "x", TODAY), "archive-le à la main")
    refused(oc.retire(space.store(), "- Un fait.", "", TODAY), "raison")
    assert space.writes == []


# --- the library page -------------------------------------------------------------------------

REPO_PAGE = Path(__file__).resolve().parents[1] / "silverbullet" / "Library" / "ocmem.md"


def test_the_page_embeds_exactly_the_tested_lua(lua: Any) -> None:
    blocks = re.findall(
        r"^```space-lua\n(.*?)^```$", library.library_page(), re.MULTILINE | re.DOTALL
    )
    assert blocks == [library.logic_source(), library.glue_source()]
    # Both are plain Lua 5.4 syntax (Space Lua's extensions would not load here).
    for block in blocks:
        assert lua.eval("function(code) local f, err = load(code); return err end")(block) is None
    assert REPO_PAGE.read_text(encoding="utf-8") == library.library_page()


def test_the_library_is_printed_by_init(run_cli: Callable[..., Any]) -> None:
    result = run_cli("init", "--show-library")
    assert result.code == 0
    assert result.out == library.library_page()


# --- the glue, with SilverBullet's APIs stubbed -----------------------------------------------

SB_STUBS = """
PAGES, FLASHES, COMMANDS, OPTIONS, CURRENT = {}, {}, {}, nil, "ocmem:Revue"
space = {
  listPages = function()
    local out = {}
    for name in pairs(PAGES) do out[#out + 1] = { name = name } end
    return out
  end,
  pageExists = function(name) return PAGES[name] ~= nil end,
  readPage = function(name) return PAGES[name] end,
  writePage = function(name, text) PAGES[name] = text end,
  deletePage = function(name) PAGES[name] = nil end,
}
sync = { performFileSync = function(path) SYNCED = path end }
editor = {
  flashNotification = function(message, kind) FLASHES[#FLASHES + 1] = { message = message, kind = kind } end,
  filterBox = function(label, options) OPTIONS = options; return options[PICK] end,
  prompt = function() return ANSWER end,
  navigate = function(page) NAVIGATED = page end,
  getCurrentPage = function() return CURRENT end,
  reloadPage = function() RELOADED = (RELOADED or 0) + 1 end,
}
command = { define = function(def) COMMANDS[def.name] = def end }
virtualPage = { define = function(def) VIRTUAL = def end }
dom = setmetatable({}, { __index = function(_, tag) return function(spec) return { tag = tag, spec = spec } end end })
widget = { htmlBlock = function(node) return { block = node } end }
widgets = { button = function(text, run) return { button = text, run = run } end }
"""


@pytest.fixture
def sbui() -> Any:
    """A fresh Lua with the page loaded over stubs of the SilverBullet APIs the glue calls."""
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    runtime.execute(SB_STUBS)
    runtime.execute(library.logic_source())
    runtime.execute(library.glue_source())
    return runtime.globals()


def run_command(ui: Any, name: str) -> None:
    ui.COMMANDS[name].run()


def walk(node: Any) -> Iterator[Any]:
    yield node
    if lupa.lua_type(node) == "table":
        for value in node.values():
            yield from walk(value)


def test_the_commands_promote_refuse_and_retire_the_picked_item(sbui: Any, space: Space) -> None:
    space.push(fact(), skill(), fact("P-0003", "Un troisième fait."))
    sbui.PAGES[HOME_PAGE] = space.pages[HOME_PAGE]
    assert sorted(sbui.COMMANDS.keys()) == [
        "ocmem: Annuler une promotion",
        "ocmem: Promouvoir une proposition",
        "ocmem: Refuser une proposition",
        "ocmem: Retirer un fait ou un skill",
        "ocmem: Revue des propositions",
    ]
    sbui.PICK = 2
    run_command(sbui, "ocmem: Promouvoir une proposition")
    assert [o.name for o in sbui.OPTIONS.values()] == [
        f"{HOME}/P-0001 · fait · Debian",
        f"{HOME}/P-0002 · skill · Déployer un service",
        f"{HOME}/P-0003 · fait · Debian",
    ]
    assert skill_page() in sbui.PAGES
    sbui.PICK, sbui.ANSWER = 2, "doublon de P-0001"
    run_command(sbui, "ocmem: Refuser une proposition")  # P-0002 is gone from the list: P-0003
    sbui.PICK, sbui.ANSWER = 1, "remplacé"
    run_command(sbui, "ocmem: Retirer un fait ou un skill")
    assert [o.name for o in sbui.OPTIONS.values()] == ["skill deploy-vps"]
    flashes = [(f.message, f.kind) for f in sbui.FLASHES.values()]
    assert flashes[0][1] == "info" and flashes[0][0].startswith(f"{HOME}/P-0002 promue")
    assert flashes[1] == (f"{HOME}/P-0003 refusée", "info")
    assert flashes[2] == (f"« skill deploy-vps » retiré, gardé dans {ARCHIVE}", "info")
    decided = decisionspage.parse(sbui.PAGES[HOME_DECISIONS])
    assert decided == {
        "P-0002": f"promu ({date.today()})",
        "P-0003": f"refusé ({date.today()}) : doublon de P-0001",
    }
    assert sbui.PAGES[HOME_PAGE] == space.pages[HOME_PAGE]  # ocmem's page: untouched
    assert sbui.RELOADED == 3 and skill_page() not in sbui.PAGES
    # The real client sends a deletion at its next full sync only: the glue asks for it now.
    assert f"{skill_page()}.md" == sbui.SYNCED


def test_a_dismissed_prompt_or_picker_changes_nothing(sbui: Any, space: Space) -> None:
    space.push(fact())
    sbui.PAGES[HOME_PAGE] = before = space.pages[HOME_PAGE]
    sbui.PICK = 5  # dismissed: the picker returns nil
    run_command(sbui, "ocmem: Promouvoir une proposition")
    sbui.PICK, sbui.ANSWER = 1, None
    run_command(sbui, "ocmem: Refuser une proposition")
    run_command(sbui, "ocmem: Retirer un fait ou un skill")  # nothing to retire: said so
    assert dict(sbui.PAGES) == {HOME_PAGE: before}
    assert [f.message for f in sbui.FLASHES.values()] == ["Rien à retirer"]


def test_the_review_shows_each_block_and_its_card_of_text_nodes(sbui: Any, space: Space) -> None:
    hostile = "Lancer ${os.execute('x')} <img src=x onerror=y> [[Lien]]"
    exposed = "quarantaine : webfetch http://127.0.0.1:8000/doc"
    space.push(fact(content=hostile, title="<b>titre</b>", exposure=exposed), skill())
    sbui.PAGES[HOME_PAGE] = space.pages[HOME_PAGE]
    markdown = sbui.VIRTUAL.run()
    assert markdown.startswith("# Propositions de l'agent\n\n2 proposition(s) en attente.\n")
    # One directive per card, unique to this rendering: SilverBullet caches a widget by its text,
    # and a card reused under another proposal would act on the wrong one (seen in the client).
    directives = re.findall(r"\$\{ocmem\.sb\.card\([^)]*\)\}", markdown)
    assert directives == [
        f'${{ocmem.sb.card("{HOME}/P-0001", 1)}}',
        f'${{ocmem.sb.card("{HOME}/P-0002", 1)}}',
    ]
    assert '${ocmem.sb.card("vps-prod/P-0001", 2)}' in sbui.VIRTUAL.run()
    assert markdown.count(gestures.OPEN) == 0  # the data stays in the pending page
    outside = markdown
    for directive in directives:
        outside = outside.replace(directive, "")
    assert inert.active_constructs(outside) == []
    card = sbui.ocmem.sb.card(f"{HOME}/P-0001")
    nodes = [n for n in walk(card) if lupa.lua_type(n) == "table" and n.tag]
    for node in nodes:  # no string is ever given to dom as a child (it would be Markdown)
        assert all(lupa.lua_type(v) == "table" for k, v in node.spec.items() if isinstance(k, int))
    texts = [n.spec["__rawText"] for n in nodes if n.spec["__rawText"] is not None]
    assert texts[0].startswith(f"⚠ Exposée : {exposed}") and texts[1].startswith(
        "Promouvoir : MEMORY.md"
    )
    buttons = [n for n in walk(card) if lupa.lua_type(n) == "table" and n.button]
    assert [b.button for b in buttons] == ["Promouvoir", "Refuser"]
    buttons[0].run()
    assert "- Lancer \\$\\{os.execute('x')\\} &lt;img" in sbui.PAGES[MEMORY]
    assert inert.active_constructs(sbui.PAGES[MEMORY]) == []
    assert sbui.ocmem.sb.card(f"{HOME}/P-0007") == ""


def test_an_id_that_could_break_out_of_a_directive_gets_no_card(sbui: Any, space: Space) -> None:
    space.push(fact())
    edited = space.pages[HOME_PAGE].replace(f"proposition {HOME}/P-0001", 'proposition x")} ${y')
    sbui.PAGES[HOME_PAGE] = edited  # a human's hand in ocmem's data
    markdown = sbui.VIRTUAL.run()
    assert "${" not in markdown and "(identifiant illisible" in markdown


def test_the_glue_calls_only_functions_the_logic_defines(oc: Any) -> None:
    called = set(re.findall(r"\bocmem\.(\w+)\(", library.glue_source()))
    assert called and all(lupa.lua_type(oc[name]) == "function" for name in called)


# --- round trip: ocmem push → the page's Lua on the test server → ocmem pull --------------------


@dataclass
class ServerSpace:
    """The test server's files seen as SilverBullet pages (name without .md), as the glue does."""

    lua: Any
    sb: Any

    def store(self) -> Any:
        return self.lua.table_from(
            {
                "list": lambda: self.lua.table_from(
                    [f.name[:-3] for f in self.sb.listing() if f.name.endswith(".md")]
                ),
                "read": lambda name: (
                    self.sb.read(name + ".md") if self.sb.exists(name + ".md") else None
                ),
                "write": lambda name, text: self.sb.write(name + ".md", text),
            }
        )


def _propose(
    memory: Any, proposals: Any, clock: Any, *contents: tuple[str, dict[str, Any]]
) -> None:
    refs = []
    for title in ("Ports", "Déploiement"):
        clock.advance(minutes=1)
        fields = journal_fields(
            titre=title, piege="les sauvegardes tournent à 3 h, pendant le déploiement"
        )
        refs.append(memory.add_journal(fields).lines[0].removeprefix("Entrée ajoutée : "))
    for title, data in contents:
        common = {"sources": refs, "contradiction": "aucune", "remplace": "rien", "titre": title}
        proposals.propose({**common, **data})


def _workspace(home: Path, clock: Any) -> Any:
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace

    return Workspace(load_settings(home), clock=clock)


PORTS = (
    "Ports",
    {
        "type": "fait",
        "contenu": "Le port 8080 est pris par Traefik ; vérifier `ss -ltn` avant ${deploy}.",
    },
)
DEPLOY = (
    "Déployer",
    {"type": "skill", "name": "deploy-vps", "description": DESCRIPTION, "contenu": DRAFT},
)
BACKUPS = ("Sauvegardes", {"type": "fait", "contenu": "Les sauvegardes tournent à 3 h."})


def test_round_trip_push_promote_refuse_in_silverbullet_then_pull(
    synced: Path, sb: Any, memory: Any, proposals: Any, clock: Any, lua: Any, oc: Any
) -> None:
    from ocmem.services import sync
    from ocmem.services.proposals import Proposals

    _propose(memory, proposals, clock, PORTS, DEPLOY, BACKUPS)
    sync.push(_workspace(synced, clock))
    store = ServerSpace(lua, sb).store()
    gids = {e.titre.split(" · ")[1]: e.gid for e in oc.review(store).entries.values()}
    assert set(gids) == {"Ports", "Déployer", "Sauvegardes"}
    today = date.today().isoformat()
    assert oc.promote(store, gids["Ports"], today).ok is True
    assert oc.promote(store, gids["Déployer"], today).ok is True
    assert oc.refuse(store, gids["Sauvegardes"], "déjà noté ailleurs", today).ok is True
    report = sync.pull(_workspace(synced, clock)).render()  # no --accept-active
    assert "⚠" not in report, report
    fact_line = memorymd.fact_lines((synced / "memory/MEMORY.md").read_text())[-1]
    assert fact_line.startswith(
        "Le port 8080 est pris par Traefik ; vérifier `ss -ltn` avant \\$\\{deploy\\}. ("
    )
    assert fact_line.endswith(f"; {gids['Ports']})")
    skill_text = (synced / "skills/deploy-vps/SKILL.md").read_text()
    assert skills.check_skill_text("deploy-vps", skill_text, Limits().skill_lines) == (
        DESCRIPTION,
        [],
    )
    listed = Proposals(_workspace(synced, clock)).list_pending(show_all=True).render()
    assert "Ports — promu (" in listed and "Déployer — promu (" in listed
    assert "Sauvegardes — refusé (" in listed
    # The next push writes the decisions on ocmem's page, without gestures: nothing waits.
    sync.push(_workspace(synced, clock))
    assert list(oc.review(store).entries.values()) == []


def test_round_trip_a_replacement_and_a_retirement_reach_the_local_archive(
    synced: Path, sb: Any, memory: Any, proposals: Any, clock: Any, lua: Any, oc: Any
) -> None:
    from ocmem.services import sync

    old = "Le port SSH du VPS est 2222. (2026-11-20, Source : journal 2026-11-19 10:00 ; P-0042)"
    sb.write("Agents/Memory/MEMORY.md", memorymd.MEMORY_HEADER + f"\n- {old}\n")
    sync.pull(_workspace(synced, clock))
    content = "Le port SSH du VPS est 2200."
    _propose(memory, proposals, clock, ("SSH", {"type": "fait", "contenu": content}))
    (waiting,) = pending.parse((synced / "memory/pending.md").read_text())
    assert waiting.replaces.startswith("MEMORY.md « Le port SSH du VPS est 2222. »"), (
        waiting.replaces
    )
    sync.push(_workspace(synced, clock))
    store = ServerSpace(lua, sb).store()
    (entry,) = oc.review(store).entries.values()
    assert oc.promote(store, entry.gid, TODAY).ok is True
    sync.pull(_workspace(synced, clock))
    (replaced,) = archive.entries((synced / "memory/ARCHIVE.md").read_text())
    assert (replaced.action, replaced.old, replaced.new) == (archive.REPLACED, old, content)
    (line,) = oc.retirable(store).values()
    assert oc.retire(store, line, "plus utile", TODAY).ok is True
    sync.pull(_workspace(synced, clock))
    assert memorymd.fact_lines((synced / "memory/MEMORY.md").read_text()) == []
    assert archive.entries((synced / "memory/ARCHIVE.md").read_text())[1].reason == "plus utile"
