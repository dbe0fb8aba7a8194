"""The SilverBullet review page's logic, run in a real Lua 5.4 (lupa) against ocmem's Python.

The page's functions (sync/ocmem/silverbullet/ocmem.lua) are plain Lua: here they run in a
standard interpreter, with an in-memory stand-in for SilverBullet's ``space`` (a dict, or the
test server's files). Three kinds of test: the Lua ports agree with the Python they copy
(escaping, drafts, counting) on arbitrary strings; every rule that ocmem enforces is refused
by the page too, writing nothing; what the page writes carries no active construct and is
installed by ``ocmem pull`` as it is.
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
import yaml
from hypothesis import assume, example, given
from hypothesis import strategies as st

from conftest import journal_fields
from ocmem.formats import archive, decisionspage, memorymd, pending, skills
from ocmem.formats.fill import Fill
from ocmem.home.settings import Limits
from ocmem.services import supersession
from ocmem.silverbullet import library
from ocmem.text import inert

TODAY = "2026-12-01"


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
    """An in-memory stand-in for SilverBullet's space (page name → text), as the glue sees it."""

    lua: Any
    pages: dict[str, str] = field(default_factory=dict)
    writes: list[str] = field(default_factory=list)

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


@pytest.fixture
def space(lua: Any) -> Space:
    return Space(lua)


def nfc_line(text: str) -> str:
    return " ".join(inert.clean(text).split("\n"))


# --- the ports agree with ocmem.text.inert -------------------------------------------------------

# Characters that matter to the escapers, so that short examples hit every branch.
MARKDOWN = st.sampled_from(
    [
        *list("ab1 -*+_.)>`~#[]<>${}=^&|\\!\t\n\r:;é·…١"),
        "```",
        "~~~",
        "1. ",
        "- ",
        "# ",
        "## ",
        "&lt;",
        "&#36;",
        "&#x7B;",
        "\u2028",
        "\x85",
        "\x00",
        "\xa0",
    ]
)
TEXT = st.one_of(st.lists(MARKDOWN, max_size=40).map("".join), st.text(max_size=80))


@given(TEXT)
def test_clean_agrees_with_python(oc: Any, text: str) -> None:
    text = unicodedata.normalize("NFC", text)
    assert oc.clean(text) == inert.clean(text)
    assert oc.clean(text, True) == inert.clean(text, keep_tabs=True)


@given(TEXT)
@example("١. x")
@example("12345678901. x")
@example("``a`` `b<` ${c} <!-- [[d]] #e {[f]}")
def test_inline_agrees_with_python(oc: Any, text: str) -> None:
    line = nfc_line(text)
    assert oc.inline(line) == inert.inline(line)


@given(TEXT)
def test_inline_without_nfc_is_still_inert_and_reversible(oc: Any, text: str) -> None:
    line = " ".join(oc.clean(text).split("\n"))
    rendered = oc.inline(line)
    assert inert.active_constructs(f"- {rendered}") == []
    assert oc.unescape(rendered) == oc.strip(line)


def test_inline_refuses_two_lines(oc: Any) -> None:
    with pytest.raises(lupa.LuaError, match="one line"):
        oc.inline("a\nb")


_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_LUA_ENTITIES = {"&lt;", "&gt;", "&amp;", "&quot;", "&apos;", "&nbsp;"}


def _lua_decodes_like_python(entity: str) -> bool:
    if entity in _LUA_ENTITIES:
        return True
    if not entity.startswith("&#"):
        return False
    num = int(entity[3:-1], 16) if entity[2] in "xX" else int(entity[2:-1])
    return (
        0x20 <= num <= 0x10FFFF
        and not 0x7F <= num <= 0x9F
        and not 0xD800 <= num <= 0xDFFF
        and not 0xFDD0 <= num <= 0xFDEF
        and num % 0x10000 < 0xFFFE
    )


@given(TEXT)
def test_unescape_agrees_with_python(oc: Any, text: str) -> None:
    line = nfc_line(text)
    assert oc.unescape(inert.inline(line)) == inert.unescape(inert.inline(line))
    # Raw text: references Python decodes specially (controls, most named ones) stay as
    # written in Lua, which shows them literally; everything else agrees.
    assume(all(_lua_decodes_like_python(m.group(0)) for m in _ENTITY.finditer(line)))
    assert oc.unescape(line) == inert.unescape(line)


def test_unescape_keeps_unknown_references_as_written(oc: Any) -> None:
    assert oc.unescape("&eacute; &#0; &#x1F600; &lt;") == "&eacute; &#0; \U0001f600 <"


@given(TEXT)
@example("١. x\n  ```Ma\u212aefile\n  code\n  ```\n### h\n***\n- 1. ~~~\n~~~~")
@example("> - ```js `x`\n\t* item\n####### seven\n#\n=== \n")
def test_draft_and_undraft_agree_with_python(oc: Any, text: str) -> None:
    text = unicodedata.normalize("NFC", text)
    rendered = inert.draft(text)
    assert oc.draft(text) == rendered
    assert oc.undraft(rendered) == inert.undraft(rendered)
    assert oc.draft(oc.undraft(rendered)) == rendered


@given(st.text(max_size=40))
def test_strip_and_length_agree_with_python(oc: Any, text: str) -> None:
    assert oc.strip(text) == text.strip()
    assert oc.length(text) == len(text)


def test_whitespace_is_pythons(oc: Any) -> None:
    python = {cp for cp in range(0x3001) if chr(cp).isspace()}
    lua = {cp for cp in range(0x3001) if oc.isSpace(cp)}
    assert lua == python


@given(
    st.lists(
        st.sampled_from(
            [
                *list("ab .!?…\xa0\u2003\nXÉ1«»\"'()[]\u212a\u00d7"),
                "Fait.",
                " x",
                "M",
                "p",
                "ex",
                "C.-À-D",
                "v1.2.3",
                "n°",
                "Mme",
            ]
        ),
        max_size=20,
    ).map("".join)
)
def test_sentence_count_agrees_with_python(oc: Any, text: str) -> None:
    assert oc.sentenceCount(text) == skills.sentence_count(text)


@pytest.mark.parametrize(
    "used", [0, 3, 5, 15, 999, 1000, 1474, 1999, 2000, 2001, 2010, 2034, 12345]
)
def test_fill_is_printed_as_ocmem_prints_it(oc: Any, used: int) -> None:
    assert oc.fill(used, 2000) == str(Fill(used, 2000))


@given(
    st.lists(
        st.sampled_from([*list("ab -().,:0123456789"), "2026-11-29", "Source : ", " ; "]),
        max_size=20,
    ).map("".join)
)
def test_fact_statement_agrees_with_python(oc: Any, line: str) -> None:
    assert oc.factStatement(line) == memorymd.fact_statement(line)


@given(st.text(alphabet="ab-\n# ", max_size=30))
def test_with_fact_agrees_with_python(oc: Any, text: str) -> None:
    assert oc.withFact(text, "Un fait.") == memorymd.with_fact(text, "Un fait.")
    assert list(oc.factLines(text).values()) == memorymd.fact_lines(text)


@given(st.text(alphabet="abz09-_A é", max_size=70))
def test_skill_name_rule_agrees_with_python(oc: Any, name: str) -> None:
    assert (oc.nameProblem(name) is None) == (skills.name_problems(name) == [])


@given(TEXT)
def test_yaml_scalars_load_back_and_hold_no_active_construct(oc: Any, text: str) -> None:
    value = nfc_line(text).strip()
    assume(value)
    scalar = oc.yamlScalar(value)
    assert yaml.safe_load(f"v: {scalar}") == {"v": value}
    assert inert.active_constructs(f"v: {scalar}") == []


def test_constants_are_ocmems(oc: Any) -> None:
    limits = Limits()
    assert oc.limits.memoryChars == limits.memory_chars
    assert oc.limits.skillsMax == limits.skills_max
    assert oc.limits.skillLines == limits.skill_lines
    assert oc.limits.descriptionChars == skills.MAX_DESCRIPTION
    assert oc.limits.descriptionSentences == skills.MAX_SENTENCES
    assert oc.MEMORY_HEADER == memorymd.MEMORY_HEADER
    assert set(oc.PLAIN_LANGUAGES.keys()) == set(inert.PLAIN_LANGUAGES)


# --- proposals as ocmem pushes them ---------------------------------------------------------

HOME_PAGE = "Agents/Inbox/vps-prod/pending"
LEGACY_PAGE = "Agents/Inbox/pending"
MEMORY = "Agents/Memory/MEMORY"
SOURCES = ("journal 2026-11-20 10:12", "journal 2026-11-29 14:32")
DRAFT = "# Déployer\n\n1. Vérifier les ports libres (`ss -ltn`).\n2. `docker compose up -d`\n\n```sh\ndocker ps\n```"
DESCRIPTION = "Déploie un service sur le VPS. À utiliser avant tout déploiement."


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


def seed(space: Space, *proposals: pending.Proposal, page: str = HOME_PAGE) -> None:
    space.pages[page] = pending.render(list(proposals))


def promote(oc: Any, space: Space, gid: str) -> Any:
    return oc.promote(space.store(), gid, TODAY)


def refuse(oc: Any, space: Space, gid: str, reason: str) -> Any:
    return oc.refuse(space.store(), gid, reason, TODAY)


def decisions_of(page: str) -> str:
    return page.removesuffix("pending") + "decisions"


HOME_DECISIONS = decisions_of(HOME_PAGE)
LEGACY_DECISIONS = decisions_of(LEGACY_PAGE)


def statuses(space: Space, page: str = HOME_PAGE) -> dict[str, str]:
    """Each proposal's status as ocmem's pull reads it: its pending page, then the decisions
    page beside it (read by the Python reader: the Lua writes it, Python reads it)."""
    found = {p.id: p.status for p in pending.parse(space.pages[page])}
    decided = decisionspage.parse(space.pages.get(decisions_of(page), ""))
    return {
        pid: decided.get(pid, status) if status == pending.STATE_PENDING else status
        for pid, status in found.items()
    }


def refused(result: Any, *fragments: str) -> str:
    """A refusal: not ok, one message that names the problem and ends with the fix."""
    assert result.ok is False
    message = str(result.message)
    assert "Correction : " in message
    for fragment in fragments:
        assert fragment in message
    return message


# --- parsing --------------------------------------------------------------------------------

PROPOSAL_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=60
).map(lambda t: unicodedata.normalize("NFC", t))


@given(title=PROPOSAL_TEXT, content=PROPOSAL_TEXT, replaces=PROPOSAL_TEXT)
def test_blocks_read_as_ocmem_reads_them(oc: Any, title: str, content: str, replaces: str) -> None:
    title, content, replaces = (
        nfc_line(title).strip(),
        nfc_line(content).strip(),
        nfc_line(replaces).strip(),
    )
    assume(title and content and replaces)
    text = pending.render(
        [fact("P-0007", content, title=title, replaces=replaces), skill("P-0008", content=content)]
    )
    (python_fact, python_skill), (lua_fact, lua_skill) = (
        pending.parse(text),
        list(oc.parsePending(text).values()),
    )
    for python, parsed in ((python_fact, lua_fact), (python_skill, lua_skill)):
        assert (parsed.id, parsed.kind, parsed.title, parsed.status) == (
            python.id,
            python.kind,
            python.title,
            python.status,
        )
        assert parsed.state == "en attente" and parsed.problem is None
        assert list(parsed.sources.values()) == list(python.sources)
    assert lua_fact.field["Remplace"] == python_fact.replaces
    assert oc.unlines(lua_fact.content) == python_fact.content
    assert oc.undraft(lua_skill.content) == python_skill.content
    assert (
        lua_skill.field["Skill"] == "deploy-vps" and lua_skill.field["Description"] == DESCRIPTION
    )


def test_unknown_labels_and_human_text_are_kept_and_shown(oc: Any, space: Space) -> None:
    text = pending.render([fact()]).replace(
        "- Origine :",
        "Une remarque de l'humain.\n- Exposition : shell (sortie de commande)\n- Origine :",
    )
    space.pages[HOME_PAGE] = text
    review = oc.review(space.store())
    (entry,) = review.entries.values()
    labels = [f.label for f in entry.fields.values()]
    assert "Exposition" in labels and "Origine" in labels
    assert entry.gid == "vps-prod/P-0001"
    assert review.memory == "MEMORY.md 0/2 000 (0 %)" and review.skills == "skills 0/15"


def test_pending_pages_of_every_home_and_the_legacy_page(oc: Any, lua: Any) -> None:
    names = lua.table_from(
        [
            "Agents/Inbox/vps-prod/pending",
            "Agents/Inbox/laptop/pending",
            "Agents/Inbox/pending",
            "Agents/Inbox/vps-prod/journal",
            "Agents/Inbox/Bad_Home/pending",
            "Agents/Inbox/a/b/pending",
            "Notes/pending",
        ]
    )
    found = [(p.name, p.home) for p in oc.pendingPages(names).values()]
    assert found == [
        ("Agents/Inbox/laptop/pending", "laptop"),
        ("Agents/Inbox/pending", None),
        ("Agents/Inbox/vps-prod/pending", "vps-prod"),
    ]


# --- promoting a fact -----------------------------------------------------------------------


def test_a_fact_is_appended_with_its_date_and_source_and_marked_promoted(
    oc: Any, space: Space
) -> None:
    seed(space, fact(), skill())
    result = promote(oc, space, "vps-prod/P-0001")
    assert result.ok is True, result.message
    assert space.pages[MEMORY] == (
        memorymd.MEMORY_HEADER
        + "\n- Le VPS tourne sous Debian 12. (2026-12-01, Source : vps-prod journal 2026-11-20 10:12 ; "
        "journal 2026-11-29 14:32 ; vps-prod/P-0001)\n"
    )
    assert statuses(space) == {"P-0001": "promu (2026-12-01)", "P-0002": "en attente"}
    # One writer per page: the decision goes to the human's decisions page, never to the
    # pending page ocmem pushes.
    assert space.writes == [MEMORY, HOME_DECISIONS]
    assert space.pages[HOME_DECISIONS] == (
        decisionspage.HEADER + "\n- P-0001 : promu (2026-12-01)\n"
    )
    assert "2 000" in result.message


@given(content=PROPOSAL_TEXT)
def test_a_legacy_page_gives_the_line_a_local_promotion_writes(
    oc: Any, lua: Any, content: str
) -> None:
    content = nfc_line(content).strip()
    assume(content)
    space = Space(
        lua,
        {
            MEMORY: "# Mémoire\n\n- Un fait plus ancien. (2026-01-01, Source : journal 2026-01-01 09:00 ; P-0009)\n"
        },
    )
    seed(space, fact(content=content), page=LEGACY_PAGE)
    before = space.pages[MEMORY]
    result = promote(oc, space, "P-0001")
    assert result.ok is True, result.message
    python_line = f"{inert.inline(content)} ({TODAY}, Source : {' ; '.join(SOURCES)} ; P-0001)"
    assert space.pages[MEMORY] == memorymd.with_fact(before, python_line)
    assert inert.active_constructs(space.pages[MEMORY]) == []
    assert inert.active_constructs(space.pages[LEGACY_PAGE]) == []


def test_a_fact_over_the_cap_is_refused_with_the_fill_and_nothing_written(
    oc: Any, space: Space
) -> None:
    space.pages[MEMORY] = (
        memorymd.MEMORY_HEADER
        + "\n"
        + "".join(f"- Fait numéro {i:03d} à garder tel quel.\n" for i in range(50))
    )
    assert 1900 < len(space.pages[MEMORY]) <= 2000
    seed(space, fact())
    message = refused(
        promote(oc, space, "vps-prod/P-0001"), "MEMORY.md dépasserait son plafond", "consolide"
    )
    after = len(space.pages[MEMORY]) + len(
        "- Le VPS tourne sous Debian 12. (2026-12-01, Source : vps-prod journal 2026-11-20 10:12 ; journal 2026-11-29 14:32 ; vps-prod/P-0001)\n"
    )
    assert str(Fill(after, 2000)) in message
    assert space.writes == []


def test_a_fact_already_in_memory_is_refused(oc: Any, space: Space) -> None:
    space.pages[MEMORY] = (
        "# Mémoire\n\n- Le VPS tourne sous Debian 12. (2026-10-01, Source : à la main)\n"
    )
    seed(space, fact())
    refused(promote(oc, space, "vps-prod/P-0001"), "déjà dans MEMORY.md")
    assert space.writes == []


def test_a_promotion_interrupted_before_the_status_only_marks_it_the_second_time(
    oc: Any, space: Space
) -> None:
    seed(space, fact())
    assert promote(oc, space, "vps-prod/P-0001").ok is True
    memory_after = space.pages[MEMORY]
    del space.pages[HOME_DECISIONS]  # the decision's write was lost
    result = promote(oc, space, "vps-prod/P-0001")
    assert result.ok is True and "déjà dans MEMORY.md" in result.message
    assert space.pages[MEMORY] == memory_after
    assert statuses(space)["P-0001"] == "promu (2026-12-01)"


@pytest.mark.parametrize(
    ("status", "shown"),
    [
        ("promu (2026-11-30)", "promu"),
        ("refusé (2026-11-30) : non", "refusé"),
        ("fusionné dans P-0002 (2026-11-30)", "fusionné"),
    ],
)
def test_a_proposal_no_longer_waiting_is_refused(
    oc: Any, space: Space, status: str, shown: str
) -> None:
    seed(space, fact(status=status))
    refused(promote(oc, space, "vps-prod/P-0001"), "n'est plus en attente", shown)
    refused(refuse(oc, space, "vps-prod/P-0001", "non"), "n'est plus en attente")
    assert space.writes == []


def test_an_unknown_or_doubled_id_is_refused(oc: Any, space: Space) -> None:
    seed(space, fact())
    refused(promote(oc, space, "vps-prod/P-0042"), "pas de proposition vps-prod/P-0042")
    refused(promote(oc, space, "P-0001"), "pas de proposition P-0001")  # the home is part of the id
    space.pages[HOME_PAGE] += "\n" + fact().render()
    refused(promote(oc, space, "vps-prod/P-0001"), "apparaît deux fois")
    assert space.writes == []


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda t: t.replace("~~~text\n", "").replace("\n~~~\n", "\n"), "pas de bloc de code"),
        (lambda t: t.replace("\n~~~\n", "\n"), "non refermé"),
        (
            lambda t: t.replace("Le VPS tourne sous Debian 12.", "Ligne un.\nLigne deux."),
            "une ligne",
        ),
        (
            lambda t: t.replace(
                "- Sources : journal 2026-11-20 10:12 ; journal 2026-11-29 14:32\n", ""
            ),
            "aucune source",
        ),
        (lambda t: t.replace("- Contenu proposé :", "- Contenu :"), "Contenu proposé"),
    ],
)
def test_a_block_the_human_broke_is_not_promoted(
    oc: Any, space: Space, edit: Callable[[str], str], why: str
) -> None:
    seed(space, fact())
    space.pages[HOME_PAGE] = edit(space.pages[HOME_PAGE])
    refused(promote(oc, space, "vps-prod/P-0001"), why)
    assert space.writes == []


def test_fact_text_stays_data_even_if_edited_by_hand(oc: Any, space: Space) -> None:
    seed(space, fact(content="placeholder"))
    space.pages[HOME_PAGE] = space.pages[HOME_PAGE].replace(
        "placeholder", "Lancer ${os.execute('x')} <img src=x onerror=y> [[Lien]] #space-lua"
    )
    assert promote(oc, space, "vps-prod/P-0001").ok is True
    memory = space.pages[MEMORY]
    assert inert.active_constructs(memory) == []
    assert (
        "Lancer \\$\\{os.execute('x')\\} &lt;img `src=x` `onerror=y>` \\[\\[Lien\\]\\] \\#space-lua ("
        in memory
    )


# --- promoting a skill ----------------------------------------------------------------------


def skill_page(name: str = "deploy-vps") -> str:
    return f"Agents/Skills/{name}/SKILL"


def test_a_skill_becomes_a_valid_skill_md_and_is_marked_promoted(oc: Any, space: Space) -> None:
    seed(space, fact(), skill())
    result = promote(oc, space, "vps-prod/P-0002")
    assert result.ok is True, result.message
    text = space.pages[skill_page()]
    description, problems = skills.check_skill_text("deploy-vps", text, Limits().skill_lines)
    assert problems == [] and description == DESCRIPTION
    front, body = text.split("\n---\n\n", 1)
    assert yaml.safe_load(front.removeprefix("---\n")) == {
        "name": "deploy-vps",
        "description": DESCRIPTION,
        "metadata": {
            "source": "vps-prod " + " ; ".join(SOURCES),
            "promu": TODAY,
            "proposition": "vps-prod/P-0002",
        },
    }
    assert (
        body
        == inert.draft(DRAFT)
        + f"\n\nSource : vps-prod {' ; '.join(SOURCES)} (promu le {TODAY}, vps-prod/P-0002)\n"
    )
    assert inert.active_constructs(text) == []
    assert statuses(space) == {"P-0001": "en attente", "P-0002": "promu (2026-12-01)"}
    assert "1/15 skills" in result.message


@given(content=st.text(max_size=300), description=PROPOSAL_TEXT)
def test_a_legacy_skill_is_the_one_a_local_promotion_writes(
    oc: Any, lua: Any, content: str, description: str
) -> None:
    content = unicodedata.normalize("NFC", inert.clean(content)).strip()
    description = nfc_line(description).strip()
    assume(content and description and not skills.description_problems(description))
    space = Space(lua)
    seed(space, skill(content=content, description=description), page=LEGACY_PAGE)
    python = skills.render_skill(
        "deploy-vps",
        description,
        f"{inert.draft(content)}\n\nSource : {' ; '.join(SOURCES)} (promu le {TODAY}, P-0002)",
        {"source": " ; ".join(SOURCES), "promu": TODAY, "proposition": "P-0002"},
    )
    result = promote(oc, space, "P-0002")
    if len(python.splitlines()) > Limits().skill_lines:
        refused(result, "lignes (maximum 60)")
        return
    assert result.ok is True, result.message
    text = space.pages[skill_page()]
    lua_front, lua_body = text.split("\n---\n\n", 1)
    python_front, python_body = python.split("\n---\n\n", 1)
    assert lua_body == python_body
    assert yaml.safe_load(lua_front[4:]) == yaml.safe_load(python_front[4:])
    assert skills.check_skill_text("deploy-vps", text, Limits().skill_lines)[1] == []
    assert inert.active_constructs(text) == []


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"name": "Deploy_VPS"}, "nom « Deploy_VPS » invalide"),
        ({"name": "a--b"}, "invalide"),
        ({"description": "Une. Deux. Trois."}, "description de 3 phrases (maximum 2)"),
        ({"description": "Très longue " + "x" * 1020 + "."}, "caractères (maximum 1024)"),
        ({"content": "\n".join(f"- étape {i}" for i in range(60))}, "lignes (maximum 60)"),
    ],
)
def test_a_skill_breaking_a_rule_is_refused(
    oc: Any, space: Space, changes: dict[str, str], why: str
) -> None:
    seed(space, skill(**changes))
    refused(promote(oc, space, "vps-prod/P-0002"), "ne respecterait pas les règles", why)
    assert space.writes == []


def test_a_skill_without_description_is_refused(oc: Any, space: Space) -> None:
    seed(space, skill())
    space.pages[HOME_PAGE] = re.sub(r"- Description : .*\n", "", space.pages[HOME_PAGE])
    refused(promote(oc, space, "vps-prod/P-0002"), "description absente")
    assert space.writes == []


def test_a_sixteenth_skill_is_refused(oc: Any, space: Space) -> None:
    for i in range(15):
        space.pages[skill_page(f"skill-{i}")] = f"---\nname: skill-{i}\n---\n"
    seed(space, skill())
    refused(promote(oc, space, "vps-prod/P-0002"), "15 skills déjà installés (maximum 15)")
    assert space.writes == []


def test_an_existing_skill_is_replaced_only_when_the_proposal_names_it(
    oc: Any, space: Space
) -> None:
    space.pages[skill_page()] = (
        "---\nname: deploy-vps\ndescription: Ancienne version.\n---\n\nAncien.\n"
    )
    for i in range(14):
        space.pages[skill_page(f"skill-{i}")] = f"---\nname: skill-{i}\n---\n"
    seed(space, skill())
    refused(promote(oc, space, "vps-prod/P-0002"), "le skill deploy-vps existe déjà")
    seed(space, skill(replaces="deploy-vpsx (une autre)"))
    refused(promote(oc, space, "vps-prod/P-0002"), "existe déjà")
    assert space.writes == []
    seed(space, skill(replaces="le skill deploy-vps (étape des ports ajoutée)"))
    result = promote(oc, space, "vps-prod/P-0002")
    assert result.ok is True, result.message
    assert "15/15 skills" in result.message
    assert "Ancien." not in space.pages[skill_page()]


def test_a_skill_promotion_interrupted_before_the_status_only_marks_it(
    oc: Any, space: Space
) -> None:
    seed(space, skill())
    assert promote(oc, space, "vps-prod/P-0002").ok is True
    written = space.pages[skill_page()]
    del space.pages[HOME_DECISIONS]  # the decision's write was lost
    result = promote(oc, space, "vps-prod/P-0002")
    assert result.ok is True and "déjà dans" in result.message
    assert space.pages[skill_page()] == written
    assert statuses(space)["P-0002"] == "promu (2026-12-01)"


def test_a_draft_edited_by_hand_is_written_inert(oc: Any, space: Space) -> None:
    seed(space, skill(content="placeholder"))
    hostile = "```space-lua\nos.execute('x')\n```\n${danger} <script>x</script> [script: y]"
    space.pages[HOME_PAGE] = space.pages[HOME_PAGE].replace("placeholder", hostile)
    assert promote(oc, space, "vps-prod/P-0002").ok is True
    text = space.pages[skill_page()]
    assert inert.active_constructs(text) == []
    assert "~~~text\nos.execute('x')\n~~~" in text


# --- refusing -------------------------------------------------------------------------------


def test_a_refusal_writes_the_reason_inert_and_touches_nothing_else(oc: Any, space: Space) -> None:
    seed(space, fact(), skill())
    space.pages[HOME_PAGE] += "\nNote de l'humain, gardée telle quelle.\n"
    before = space.pages[HOME_PAGE]
    result = refuse(oc, space, "vps-prod/P-0002", "  déjà couvert par ${x} <b>deploy</b> #tag  ")
    assert result.ok is True, result.message
    after = space.pages[HOME_PAGE]
    assert (
        statuses(space)["P-0002"]
        == "refusé (2026-12-01) : déjà couvert par ${x} <b>deploy</b> #tag"
    )
    assert after == before  # the pending page is ocmem's: the decision is written beside it
    decided = space.pages[HOME_DECISIONS]
    assert decided.endswith(
        "\n- P-0002 : refusé (2026-12-01) : déjà couvert par \\$\\{x\\} &lt;b\\>deploy&lt;/b\\> \\#tag\n"
    )
    assert inert.active_constructs(decided) == []
    assert space.writes == [HOME_DECISIONS]


@pytest.mark.parametrize("reason", ["", "   ", "ligne une\nligne deux"])
def test_a_refusal_needs_a_one_line_reason(oc: Any, space: Space, reason: str) -> None:
    seed(space, fact())
    refused(refuse(oc, space, "vps-prod/P-0001", reason), "raison")
    assert space.writes == []


def test_a_broken_block_can_still_be_refused(oc: Any, space: Space) -> None:
    seed(space, fact())
    space.pages[HOME_PAGE] = space.pages[HOME_PAGE].replace("~~~text\n", "")
    assert refuse(oc, space, "vps-prod/P-0001", "illisible").ok is True
    assert "- P-0001 : refusé (2026-12-01) : illisible\n" in space.pages[HOME_DECISIONS]


@given(reason=st.text(max_size=80))
def test_refused_status_agrees_with_the_python_escaper(oc: Any, reason: str) -> None:
    line = nfc_line(reason)
    result = oc.refusedStatus(TODAY, line)
    if not line.strip():
        assert result == (None, "donne une raison")
    else:
        assert result == f"refusé ({TODAY}) : {inert.inline(line)}"


def test_the_status_is_set_on_the_page_as_it_is_when_writing(
    oc: Any, space: Space, lua: Any
) -> None:
    """A push that lands between the read and the write keeps its blocks."""
    seed(space, fact())
    plan = oc.planRefuse(oc.snapshot(space.store()), "vps-prod/P-0001", "non", TODAY)
    space.pages[HOME_PAGE] += "\n" + fact("P-0003", "Un autre fait.").render()
    assert oc.apply(space.store(), plan).ok is True
    assert statuses(space) == {"P-0001": "refusé (2026-12-01) : non", "P-0003": "en attente"}


# --- the page -------------------------------------------------------------------------------

REPO_PAGE = Path(__file__).resolve().parents[1] / "silverbullet" / "Library" / "ocmem.md"


def test_the_page_embeds_exactly_the_tested_lua(lua: Any) -> None:
    blocks = re.findall(
        r"^```space-lua\n(.*?)^```$", library.library_page(), re.MULTILINE | re.DOTALL
    )
    assert blocks == [library.logic_source(), library.glue_source()]
    # Both are plain Lua 5.4 syntax (Space Lua's extensions would not load here).
    for block in blocks:
        assert lua.eval("function(code) local f, err = load(code); return err end")(block) is None


def test_the_library_is_printed_by_init(run_cli: Callable[..., Any]) -> None:
    result = run_cli("init", "--show-library")
    assert result.code == 0
    assert result.out == library.library_page()


# --- the glue, with SilverBullet's APIs stubbed -----------------------------------------------

SB_STUBS = """
PAGES, FLASHES, COMMANDS, OPTIONS = {}, {}, {}, nil
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
editor = {
  flashNotification = function(message, kind) FLASHES[#FLASHES + 1] = { message = message, kind = kind } end,
  filterBox = function(label, options) OPTIONS = options; return options[PICK] end,
  prompt = function()
    if ANSWERS and #ANSWERS > 0 then return table.remove(ANSWERS, 1) end
    return ANSWER
  end,
  navigate = function(page) NAVIGATED = page end,
}
function answers(...) ANSWERS = { ... } end
command = { define = function(def) COMMANDS[def.name] = def end }
virtualPage = { define = function(def) VIRTUAL = def end }
codeWidget = { refreshAll = function() REFRESHED = (REFRESHED or 0) + 1 end }
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


def test_the_commands_promote_and_refuse_the_picked_proposal(sbui: Any) -> None:
    sbui.PAGES[HOME_PAGE] = pending.render([fact(), skill(), fact("P-0003", "Un troisième fait.")])
    assert sorted(sbui.COMMANDS.keys()) == [
        "ocmem: Promouvoir une proposition",
        "ocmem: Refuser une proposition",
        "ocmem: Retirer un fait ou un skill",
        "ocmem: Revue des propositions",
    ]
    sbui.PICK = 2
    run_command(sbui, "ocmem: Promouvoir une proposition")
    assert [o.name for o in sbui.OPTIONS.values()] == [
        "vps-prod/P-0001 · fait · Debian",
        "vps-prod/P-0002 · skill · Déployer un service",
        "vps-prod/P-0003 · fait · Debian",
    ]
    assert "Agents/Skills/deploy-vps/SKILL" in sbui.PAGES
    sbui.PICK, sbui.ANSWER = 2, "doublon de P-0001"
    run_command(sbui, "ocmem: Refuser une proposition")  # P-0002 is gone from the list: P-0003
    flashes = [(f.message, f.kind) for f in sbui.FLASHES.values()]
    assert flashes[0][1] == "info" and flashes[0][0].startswith("vps-prod/P-0002 promue")
    assert flashes[1] == ("vps-prod/P-0003 refusée", "info")
    parsed = {p.id: p.status for p in pending.parse(sbui.PAGES[HOME_PAGE])}
    decided = decisionspage.parse(sbui.PAGES[HOME_DECISIONS])
    assert set(parsed.values()) == {"en attente"}  # ocmem's page: untouched
    assert {pid: decided.get(pid, status) for pid, status in parsed.items()} == {
        "P-0001": "en attente",
        "P-0002": f"promu ({date.today().isoformat()})",
        "P-0003": f"refusé ({date.today().isoformat()}) : doublon de P-0001",
    }
    assert sbui.REFRESHED == 2


def test_a_dismissed_prompt_or_picker_changes_nothing(sbui: Any) -> None:
    sbui.PAGES[HOME_PAGE] = before = pending.render([fact()])
    sbui.PICK = 5  # dismissed: the picker returns nil
    run_command(sbui, "ocmem: Promouvoir une proposition")
    sbui.PICK, sbui.ANSWER = 1, None
    run_command(sbui, "ocmem: Refuser une proposition")
    assert sbui.PAGES[HOME_PAGE] == before and len(sbui.FLASHES) == 0


def test_a_refusal_is_flashed_as_an_error(sbui: Any) -> None:
    sbui.PAGES[HOME_PAGE] = pending.render([skill(description="Une. Deux. Trois.")])
    sbui.PICK = 1
    run_command(sbui, "ocmem: Promouvoir une proposition")
    (flash,) = sbui.FLASHES.values()
    assert (
        flash.kind == "error" and "3 phrases" in flash.message and "Correction : " in flash.message
    )


def test_the_review_shows_proposal_text_only_as_text_nodes(sbui: Any) -> None:
    hostile = "Lancer ${os.execute('x')} <img src=x onerror=y> [[Lien]]"
    sbui.PAGES[HOME_PAGE] = pending.render([fact(content=hostile, title="<b>titre</b>")])
    sbui.PAGES[LEGACY_PAGE] = pending.render([skill()])
    assert sbui.VIRTUAL.run() == "# Propositions de l'agent\n\n${ocmem.sb.reviewWidget()}\n"
    tree = sbui.ocmem.sb.reviewWidget()
    nodes = [n for n in walk(tree) if lupa.lua_type(n) == "table" and n.tag]
    # No string is ever given to dom as a child (those would be rendered as Markdown).
    for node in nodes:
        assert all(lupa.lua_type(v) == "table" for k, v in node.spec.items() if isinstance(k, int))
    texts = [n.spec["__rawText"] for n in nodes if n.spec["__rawText"] is not None]
    assert texts[0] == "2 proposition(s) en attente · MEMORY.md 0/2 000 (0 %) · skills 0/15"
    assert "P-0002 · skill · Déployer un service" in texts
    assert "vps-prod/P-0001 · fait · <b>titre</b>" in texts
    assert hostile in texts
    buttons = [n for n in walk(tree) if lupa.lua_type(n) == "table" and n.button]
    assert [b.button for b in buttons] == ["Promouvoir", "Refuser"] * 2
    buttons[2].run()  # pages are sorted: the legacy page's P-0002 first, then vps-prod/P-0001
    assert "- Lancer \\$\\{os.execute('x')\\} &lt;img" in sbui.PAGES[MEMORY]
    assert inert.active_constructs(sbui.PAGES[MEMORY]) == []
    buttons[0].run()
    assert "Agents/Skills/deploy-vps/SKILL" in sbui.PAGES


def test_the_glue_calls_only_functions_the_logic_defines(oc: Any) -> None:
    called = set(re.findall(r"\bocmem\.(\w+)\(", library.glue_source()))
    assert called and all(lupa.lua_type(oc[name]) == "function" for name in called)


# --- round trip: ocmem push → the page's logic in the space → ocmem pull --------------------


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


def _propose_three(memory: Any, proposals: Any, clock: Any) -> None:
    refs = []
    for title in ("Ports", "Déploiement"):
        clock.advance(minutes=1)
        # each entry also speaks of the third lesson: a source must show what it proves
        fields = journal_fields(
            titre=title, piege="les sauvegardes tournent à 3 h, pendant le déploiement"
        )
        added = memory.add_journal(fields).lines[0]
        refs.append(added.removeprefix("Entrée ajoutée : "))
    common = {"sources": refs, "contradiction": "aucune", "remplace": "rien"}
    proposals.propose(
        {
            "type": "fait",
            "titre": "Ports",
            "contenu": "Le port 8080 est pris par Traefik ; vérifier `ss -ltn` avant ${deploy}.",
            **common,
        }
    )
    proposals.propose(
        {
            "type": "skill",
            "titre": "Déployer",
            "name": "deploy-vps",
            "description": DESCRIPTION,
            "contenu": DRAFT,
            **common,
        }
    )
    proposals.propose(
        {
            "type": "fait",
            "titre": "Sauvegardes",
            "contenu": "Les sauvegardes tournent à 3 h.",
            **common,
        }
    )


def _decide_in_silverbullet(lua: Any, oc: Any, sb: Any) -> dict[str, str]:
    """The human's three gestures, through the page's functions, on the pushed pages."""
    space = ServerSpace(lua, sb)
    gids = {entry.title: entry.gid for entry in oc.review(space.store()).entries.values()}
    assert set(gids) == {"Ports", "Déployer", "Sauvegardes"}
    today = date.today().isoformat()
    for result in (
        oc.promote(space.store(), gids["Ports"], today),
        oc.promote(space.store(), gids["Déployer"], today),
        oc.refuse(space.store(), gids["Sauvegardes"], "déjà noté ailleurs <b>${x}</b>", today),
    ):
        assert result.ok is True, result.message
    return gids


def _workspace(home: Path, clock: Any) -> Any:
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace

    return Workspace(load_settings(home), clock=clock)


def test_round_trip_push_promote_in_silverbullet_then_pull(
    synced: Path, sb: Any, memory: Any, proposals: Any, clock: Any, lua: Any, oc: Any
) -> None:
    from ocmem.services import sync

    _propose_three(memory, proposals, clock)
    sync.push(_workspace(synced, clock))
    gids = _decide_in_silverbullet(lua, oc, sb)
    for name in [
        f.name for f in sb.listing() if f.name.startswith(("Agents/Memory/", "Agents/Skills/"))
    ]:
        assert inert.active_constructs(sb.read(name)) == [], name
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
    # The next push keeps the human's decisions in the page.
    sync.push(_workspace(synced, clock))
    pages = [
        f.name
        for f in sb.listing()
        if f.name.startswith("Agents/Inbox/") and f.name.endswith("pending.md")
    ]
    decided = {p.title: p.status for page in pages for p in pending.parse(sb.read(page))}
    today = date.today().isoformat()
    assert decided == {
        "Ports": f"promu ({today})",
        "Déployer": f"promu ({today})",
        "Sauvegardes": f"refusé ({today}) : déjà noté ailleurs <b>${{x}}</b>",
    }


def test_round_trip_decisions_flow_back_to_the_home(
    synced: Path, sb: Any, memory: Any, proposals: Any, clock: Any, lua: Any, oc: Any
) -> None:
    from ocmem.services import sync
    from ocmem.services.proposals import Proposals

    _propose_three(memory, proposals, clock)
    sync.push(_workspace(synced, clock))
    _decide_in_silverbullet(lua, oc, sb)
    sync.pull(_workspace(synced, clock))
    listed = Proposals(_workspace(synced, clock)).list_pending(show_all=True).render()
    assert "Ports — promu (" in listed
    assert "Déployer — promu (" in listed
    assert "Sauvegardes — refusé (" in listed


# --- an exposed session's proposal (issue 12) -------------------------------------------------

EXPOSED = "quarantaine : webfetch http://127.0.0.1:8000/doc"


def test_the_exposure_is_read_as_ocmem_writes_it(oc: Any, space: Space) -> None:
    seed(space, fact(exposure=EXPOSED), fact("P-0002", "Un autre fait.", title="Autre"))
    exposed, clean = list(oc.review(space.store()).entries.values())
    assert exposed.exposure == EXPOSED and clean.exposure is None
    warning = oc.exposureWarning(exposed)
    assert warning.startswith(f"⚠ Exposée : {EXPOSED} — ") and "contenu externe" in warning
    assert oc.exposureWarning(clean) is None


def test_the_review_shows_the_exposure_first_and_the_picker_too(sbui: Any) -> None:
    sbui.PAGES[HOME_PAGE] = pending.render(
        [fact(exposure=EXPOSED), fact("P-0002", "Autre.", title="Autre")]
    )
    tree = sbui.ocmem.sb.reviewWidget()
    boxes = [
        n
        for n in walk(tree)
        if lupa.lua_type(n) == "table" and n.tag == "div" and n.spec["class"] == "ocmem-proposal"
    ]
    first = [boxes[0].spec[i].spec["__rawText"] for i in (1, 2)]
    assert first[0] == "vps-prod/P-0001 · fait · Debian" and first[1].startswith(
        f"⚠ Exposée : {EXPOSED}"
    )
    assert boxes[1].spec[2].spec["__rawText"] == f"page {HOME_PAGE}"  # no warning for a clean one
    items = [
        n.spec["__rawText"] for n in walk(boxes[0]) if lupa.lua_type(n) == "table" and n.tag == "li"
    ]
    assert not any(i.startswith("Exposition") for i in items)  # said once, at the top
    sbui.PICK = 1
    run_command(sbui, "ocmem: Promouvoir une proposition")
    assert next(o.description for o in sbui.OPTIONS.values()).startswith("⚠ Exposée : ")


def test_a_promotion_in_silverbullet_keeps_the_exposure_on_the_page(oc: Any, space: Space) -> None:
    seed(space, fact(exposure=EXPOSED))
    assert promote(oc, space, "vps-prod/P-0001").ok is True
    (done,) = pending.parse(space.pages[HOME_PAGE])
    assert done.exposure == EXPOSED and statuses(space)["P-0001"].startswith("promu (")


def test_round_trip_an_exposed_proposal_is_marked_in_silverbullet_and_back(
    synced: Path, sb: Any, memory: Any, proposals: Any, clock: Any, lua: Any, oc: Any
) -> None:
    from ocmem.guards.exposure import Taint
    from ocmem.services import sync
    from ocmem.services.proposals import Proposals

    refs = []
    for i in range(2):
        clock.advance(minutes=5)
        added = memory.add_journal(journal_fields(titre=f"Déploiement {i}"))
        refs.append(added.lines[0].removeprefix("Entrée ajoutée : "))
    data = {
        "type": "fait",
        "titre": "Ports libres",
        "contenu": "Vérifier les ports libres avant de déployer.",
        "sources": refs,
        "contradiction": "aucune",
        "remplace": "rien",
    }
    Proposals(_workspace(synced, clock)).propose(data, Taint("webfetch http://127.0.0.1:8000/doc"))
    sync.push(_workspace(synced, clock))
    space = ServerSpace(lua, sb)
    (entry,) = oc.review(space.store()).entries.values()
    assert entry.exposure == EXPOSED
    assert oc.promote(space.store(), entry.gid, date.today().isoformat()).ok is True
    sync.pull(_workspace(synced, clock))
    (back,) = pending.parse((synced / "memory/pending.md").read_text())
    assert back.status.startswith("promu (") and back.exposure == EXPOSED


# --- facts that change: replacement and retirement (issue 21) -----------------------------------

ARCHIVE = "Agents/Memory/ARCHIVE"
OLD_LINE = "Le VPS tourne sous Debian 12. (2026-11-20, Source : vps-prod journal 2026-11-19 10:00 ; vps-prod/P-0042)"


def test_a_replacement_takes_the_old_facts_place_and_archives_it_as_ocmem_does(
    oc: Any, space: Space
) -> None:
    space.pages[MEMORY] = memorymd.MEMORY_HEADER + f"\n- {OLD_LINE}\n- Le port SSH est 2222.\n"
    replaces = "MEMORY.md « Le VPS tourne sous Debian 12. » — valeur changée : 12 → 13"
    seed(space, fact(content="Le VPS tourne sous Debian 13.", replaces=replaces))
    review = oc.review(space.store())
    (entry,) = review.entries.values()
    assert entry.replacedLine == OLD_LINE  # shown next to the new fact
    result = promote(oc, space, "vps-prod/P-0001")
    assert result.ok is True, result.message
    facts = memorymd.fact_lines(space.pages[MEMORY])
    assert facts[0].startswith("Le VPS tourne sous Debian 13. (2026-12-01") and len(facts) == 2
    assert facts[1] == "Le port SSH est 2222."  # every other line as it was
    expected = archive.with_entry(
        "",
        archive.Entry(
            date(2026, 12, 1),
            archive.FACT,
            archive.REPLACED,
            "vps-prod/P-0001",
            OLD_LINE,
            "Le VPS tourne sous Debian 13.",
            "valeur changée : 12 → 13",
        ),
    )
    assert space.pages[ARCHIVE] == expected
    assert space.writes == [ARCHIVE, MEMORY, HOME_DECISIONS]
    assert archive.entries(space.pages[ARCHIVE])[0].old == OLD_LINE


def test_the_fact_a_replacement_names_may_be_gone_then_it_is_added(oc: Any, space: Space) -> None:
    space.pages[MEMORY] = memorymd.MEMORY_HEADER + "\n- Le port SSH est 2222.\n"
    seed(space, fact(replaces="MEMORY.md « Le VPS tourne sous Debian 11. »"))
    result = promote(oc, space, "vps-prod/P-0001")
    assert result.ok is True and "n'est plus dans MEMORY.md" in str(result.message)
    assert len(memorymd.fact_lines(space.pages[MEMORY])) == 2 and ARCHIVE not in space.pages


def test_the_review_retires_a_fact_and_a_skill_into_the_archive(sbui: Any) -> None:
    sbui.PAGES[MEMORY] = memorymd.MEMORY_HEADER + f"\n- {OLD_LINE}\n"
    skill_text = skills.render_skill("deploy-vps", DESCRIPTION, "# D\n", {})
    sbui.PAGES["Agents/Skills/deploy-vps/SKILL"] = skill_text
    sbui.answers(OLD_LINE, "le VPS est réinstallé")
    run_command(sbui, "ocmem: Retirer un fait ou un skill")
    sbui.answers("skill deploy-vps", "remplacé par Ansible")
    run_command(sbui, "ocmem: Retirer un fait ou un skill")
    assert memorymd.fact_lines(sbui.PAGES[MEMORY]) == []
    assert sbui.PAGES["Agents/Skills/deploy-vps/SKILL"] is None
    fact_entry, skill_entry = archive.entries(sbui.PAGES[ARCHIVE])
    assert (fact_entry.action, fact_entry.old, fact_entry.reason) == (
        archive.RETIRED,
        OLD_LINE,
        "le VPS est réinstallé",
    )
    assert skill_entry.kind == archive.SKILL and skill_entry.old == skill_text
    assert [f.kind for f in sbui.FLASHES.values()] == ["info", "info"]
    sbui.answers("Un fait qui n'existe pas.", "x")
    run_command(sbui, "ocmem: Retirer un fait ou un skill")
    assert sbui.FLASHES[3].kind == "error" and "Correction" in sbui.FLASHES[3].message


@given(TEXT, TEXT)
def test_a_named_replacement_reads_back_as_ocmem_reads_it(
    oc: Any, statement: str, why: str
) -> None:
    for replaces in (
        f"MEMORY.md « {statement} » — {why}",
        f"MEMORY.md « {statement} »",
        statement,
    ):
        shown = inert.inline(nfc_line(replaces))  # as the pushed page holds it
        python = supersession.replacement(inert.unescape(shown))
        found = oc.replacedStatement(shown)
        assert python == (tuple(found) if isinstance(found, tuple) else found)


@given(TEXT, TEXT)
def test_the_archive_entries_are_written_as_ocmem_writes_them(
    oc: Any, lua: Any, old: str, why: str
) -> None:
    old, why = nfc_line(old).strip(), nfc_line(why).strip()
    for kind in (archive.FACT, archive.SKILL):
        entry = archive.Entry(date(2026, 12, 1), kind, archive.RETIRED, "x", old, "", why)
        table = lua.table_from(
            {
                "when": "2026-12-01",
                "kind": kind,
                "action": archive.RETIRED,
                "about": "x",
                "old": old,
                "new": "",
                "reason": why,
            }
        )
        assert oc.archiveEntry(table) == entry.render()
        assert oc.withArchiveEntry("", table) == archive.with_entry("", entry)


@given(st.lists(TEXT, min_size=1, max_size=4), st.data())
def test_a_fact_line_is_replaced_or_removed_as_ocmem_does(
    oc: Any, lines: list[str], data: st.DataObject
) -> None:
    facts = [nfc_line(line).strip() for line in lines]
    assume(all(facts))
    text = memorymd.MEMORY_HEADER + "\n" + "".join(f"- {f}\n" for f in facts)
    old = data.draw(st.sampled_from(memorymd.fact_lines(text)))
    assert oc.replacedFact(text, old, "nouveau") == memorymd.replaced_fact(text, old, "nouveau")
    assert oc.withoutFact(text, old) == memorymd.without_fact(text, old)
    assert oc.squash(old) == " ".join(old.split())


# --- the decisions page: one writer per page (issue 24) ---------------------------------------

DECISION_PIECE = st.one_of(
    st.sampled_from(
        [
            "- P-0001 : ",
            "- P-0002 : ",
            "- P-00003 : ",
            "- P-001 : ",
            "- P-0001~agent-ab12 : ",
            "- P-0001~ : ",
            "-  P-0001 : ",
            "- P-0001: ",
            "promu (2026-12-01)",
            "refusé (2026-12-01) : ",
            "fusionné",
            "en attente",
            "promue",
            " ",
            "\t",
            "\r",
            "\n",
            "\\#",
            "&lt;",
            "`x`",
            "١",
        ]
    ),
    st.text(max_size=12),
)


@given(st.lists(DECISION_PIECE, max_size=30).map("".join))
@example("- P-0001 : promu (2026-12-01)")  # no newline: not yet a decision
@example("- P-0001 : promu (x) \r\n- P-0001 : refusé (y) : non\n")  # the last line wins
def test_decisions_are_read_as_ocmem_reads_them(oc: Any, text: str) -> None:
    text = unicodedata.normalize("NFC", text)
    # Statuses as a human or the Lua writes them (inert); raw entities are the escapers' case.
    assume(all(_lua_decodes_like_python(m.group(0)) for m in _ENTITY.finditer(text)))
    lua_found = {k: v for k, v in oc.parseDecisions(text).items()}
    assert lua_found == decisionspage.parse(text)


@given(reason=PROPOSAL_TEXT)
def test_a_decision_the_lua_writes_is_the_one_python_reads(oc: Any, reason: str) -> None:
    line = nfc_line(reason).strip()
    assume(line)
    status = oc.refusedStatus(TODAY, line)
    text = oc.withDecision("", "P-0007", status)
    assert text.startswith(decisionspage.HEADER)
    assert decisionspage.parse(text) == {
        "P-0007": f"refusé ({TODAY}) : {inert.unescape(inert.inline(line))}"
    }
    again = oc.withDecision(text, "P-0008", f"promu ({TODAY})")
    assert again.startswith(text)
    assert decisionspage.parse(again)["P-0008"] == f"promu ({TODAY})"
    assert oc.withDecision(again, "P-0007", f"promu ({TODAY})")[0] is None  # decided once


def test_the_decisions_page_is_beside_each_pending_page(oc: Any) -> None:
    assert oc.decisionsPage(HOME_PAGE) == HOME_DECISIONS == "Agents/Inbox/vps-prod/decisions"
    assert oc.decisionsPage(LEGACY_PAGE) == LEGACY_DECISIONS == "Agents/Inbox/decisions"
    assert decisionspage.page_beside(HOME_PAGE + ".md") == HOME_DECISIONS + ".md"
    assert decisionspage.page_beside(LEGACY_PAGE + ".md") == LEGACY_DECISIONS + ".md"


def test_a_proposal_decided_on_the_decisions_page_is_no_longer_waiting(
    oc: Any, space: Space
) -> None:
    seed(space, fact(), skill())
    space.pages[HOME_DECISIONS] = "Notes de l'humain.\n- P-0002 : refusé (2026-11-30) : non\n"
    review = oc.review(space.store())
    assert [p.id for p in review.entries.values()] == ["P-0001"] and review.decided == 1
    refused(refuse(oc, space, "vps-prod/P-0002", "encore"), "n'est plus en attente")
    assert space.writes == []


def test_a_status_line_left_in_the_pending_page_is_still_read(oc: Any, space: Space) -> None:
    """Migration: what the review page wrote into pending.md before the decisions page."""
    seed(space, fact(status="refusé (2026-11-30) : ancien"), skill())
    refused(promote(oc, space, "vps-prod/P-0001"), "n'est plus en attente")
    assert promote(oc, space, "vps-prod/P-0002").ok is True
    assert statuses(space) == {
        "P-0001": "refusé (2026-11-30) : ancien",
        "P-0002": "promu (2026-12-01)",
    }


def test_a_decision_lands_even_if_a_push_rewrote_the_pending_page_meanwhile(
    oc: Any, space: Space
) -> None:
    seed(space, fact())
    plan = oc.planRefuse(oc.snapshot(space.store()), "vps-prod/P-0001", "non", TODAY)
    space.pages[HOME_PAGE] = pending.render([fact(), fact("P-0003", "Un autre fait.")])
    assert oc.apply(space.store(), plan).ok is True
    assert space.writes == [HOME_DECISIONS]
    assert statuses(space) == {"P-0001": "refusé (2026-12-01) : non", "P-0003": "en attente"}


def test_another_fact_under_the_same_id_is_not_this_proposal(oc: Any, space: Space) -> None:
    # Found by hand in the real web client: a reinstalled home numbers from P-0001 again; the
    # review page took the old fact's « ; vps-prod/P-0001) » for this proposal already promoted
    # and marked it « promu » without writing it.
    seed(space, fact(), skill())
    old = "- Un autre fait, d'avant. (2026-01-01, Source : journal 2026-01-01 09:00 ; vps-prod/P-0001)\n"
    space.pages[MEMORY] = memorymd.MEMORY_HEADER + "\n" + old
    result = promote(oc, space, "vps-prod/P-0001")
    assert result.ok is True, result.message
    assert "Le VPS tourne sous Debian 12." in space.pages[MEMORY]
    assert old in space.pages[MEMORY]
