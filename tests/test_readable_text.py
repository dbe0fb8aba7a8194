"""Agent text stays inert in SilverBullet and reads as written everywhere else (issue 22, item 8).

``ocmem.text.inert`` puts a technical token (``fastcgi_pass``, ``~/.config``, ``--level=3``,
``18:44~6``) in a code span instead of backslash-escaping it: a code span is inert in CommonMark
and in SilverBullet (lezer's ``InlineCode`` consumes the span before any of SilverBullet's
inline parsers, ``${…}`` included, see shared/reference/silverbullet-api.md §5), and the token
stays greppable in memory/journal.md and memory/pending.md. The readers (the model's prompt,
``pending show``, journal search) show the text as written, without the spans ocmem added. The
SilverBullet review page writes the lines ocmem renders (ocmem.formats.gestures).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import lupa.lua54 as lupa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from conftest import CliResult, Clock, journal_fields
from ocmem.bridge.tools import prompt_context
from ocmem.formats import gestures, memorymd, pending
from ocmem.home.settings import Limits
from ocmem.home.workspace import Workspace
from ocmem.services import gestureplans
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from ocmem.silverbullet import library
from ocmem.text import inert
from test_inert import assert_inert, code_spans, shown_text

TOKEN = "fastcgi_pass"
PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"])


@pytest.fixture(scope="module")
def lua() -> Any:
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    runtime.execute(library.logic_source())
    return runtime


@pytest.fixture(scope="module")
def oc(lua: Any) -> Any:
    """The SilverBullet page's ``ocmem`` table, in a real Lua 5.4."""
    return lua.globals().ocmem


# --- the rendering ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        (TOKEN, f"`{TOKEN}`"),
        (f"le proxy passe par {TOKEN}.", f"le proxy passe par `{TOKEN}`."),
        ("journal 2026-12-01 18:44~6", "journal 2026-12-01 `18:44~6`"),
        ("voir ~/.config/opencode (et $HOME)", "voir `~/.config/opencode` (et `$HOME`)"),
        ("lancer avec --level=3 ou -x_y", "lancer avec `--level=3` ou `-x_y`"),
        ("C:\\temp\\a", "`C:\\temp\\a`"),
        ("« nginx_conf »", "« `nginx_conf` »"),
        # The agent's own span is kept as written (one backtick more when it could be taken
        # for one of ocmem's, so that reading it back gives the agent's span again).
        ("`ls -la` puis `max_conn`", "`ls -la` puis ``max_conn``"),
        # What a span may not hold stays escaped, and so does punctuation standing alone.
        (
            "${HOME} et Vec<u8> et a[0] et #include",
            "\\$\\{HOME\\} et Vec&lt;u8\\> et a\\[0\\] et \\#include",
        ),
        ("a = b & c", "a \\= b \\& c"),
        ("- a_b", "\\- `a_b`"),
    ],
)
def test_technical_tokens_are_code_spans_not_escapes(text: str, rendered: str) -> None:
    assert inert.inline(text) == rendered
    assert inert.unescape(rendered) == text
    assert_inert(f"- Fait : {rendered}", rendered)
    assert inert.active_constructs(rendered) == []


def test_skill_drafts_read_their_tokens_too() -> None:
    draft = "# Réglages\n\n- mettre `client_max_body_size` à 10m\n- éditer ~/.config/x et $PATH"
    assert inert.draft(draft) == (
        "# Réglages\n\n- mettre ``client_max_body_size`` à 10m\n- éditer `~/.config/x` et `$PATH`"
    )
    assert inert.undraft(inert.draft(draft)) == draft


# Text made of what the token rule looks at: words, triggers, marks around tokens, backticks,
# what a span may not hold, list markers, blanks; and SilverBullet's constructs.
PIECES = st.sampled_from(
    [
        *list("ab9_*~=^&$>|\\`()\"'.,;:!?<[]#{}- "),
        "``",
        "```",
        "~~~",
        "1. ",
        "- ",
        TOKEN,
        "`max_conn`",
        "``a_b``",
        "18:44~6",
        "~/.config",
        "--level=3",
        "${x}",
        "[[Page]]",
        "#space-lua",
        "<img src=x onerror=alert(1)>",
        "&lt;",
        "é",
        "\u00a0",
    ]
)
TOKEN_TEXT = st.lists(PIECES, max_size=24).map("".join)
ONE_LINE = TOKEN_TEXT.map(lambda s: inert.clean(s).replace("\n", " ").strip())


@given(ONE_LINE)
@example("`a_b` c_d `e`")
@example("(`a_b`), x_y.")
@example("-`a_b`")
@example("x` `a_b`")
@example("``` `a_b`")
def test_rendering_is_inert_and_reads_back_as_written(text: str) -> None:
    rendered = inert.inline(text)
    assert inert.unescape(rendered) == text
    assert inert.active_constructs(rendered) == []
    for context in (f"- Fait : {rendered}", f"## 2026-11-30 10:00 · {rendered} · #tag", rendered):
        assert_inert(context, rendered)
    if "`" not in text:  # what a reader of the rendered page sees is the text
        assert shown_text(assert_inert(f"- Fait : {rendered}")) == f"Fait : {text}".strip()


@given(TOKEN_TEXT.map(lambda s: s.replace(" ", "\n", 3)))
def test_multiline_fields_and_drafts_read_back_too(text: str) -> None:
    rendered = inert.lines(text)
    assert inert.unlines(rendered) == "\n".join(inert.clean_lines(text))
    assert inert.active_constructs(rendered) == []
    drafted = inert.draft(text)
    assert inert.draft(inert.undraft(drafted)) == drafted
    assert inert.active_constructs(drafted) == []


TECHNICAL = st.text(alphabet="ab9_*~=^&$>|\\/:.-", min_size=1, max_size=10).filter(
    lambda w: any(c in "ab9" for c in w) and any(c in "_*~=^&$>|\\" for c in w)
)


@given(st.lists(TECHNICAL, min_size=1, max_size=6).map(" ".join))
def test_technical_tokens_need_no_backslash(text: str) -> None:
    rendered = inert.inline(text)
    for word in text.split(" "):
        assert word.rstrip(".:") in rendered  # as written, so grep finds it
    outside = rendered
    for start, end, _ in reversed(code_spans(rendered)):
        outside = outside[:start] + outside[end:]
    assert "\\" not in outside and "&" not in outside, rendered
    assert inert.unescape(rendered) == text


def test_readable_keeps_fenced_code_as_it_is() -> None:
    page = "- `fastcgi_pass` \\#1\n\n```bash\necho \\$HOME `a_b`\n```\n- après \\*"
    assert (
        inert.readable(page) == "- fastcgi_pass #1\n\n```bash\necho \\$HOME `a_b`\n```\n- après *"
    )


# --- the readers -----------------------------------------------------------------------------


def episodes(memory: Memory, lesson: str) -> list[str]:
    """Two journal entries in the same minute (the second is « ~2 »): what a proposal cites."""
    found = []
    for i in range(2):
        done = memory.add_journal(journal_fields(titre=f"Proxy PHP {i}", lecon=lesson))
        found.append(done.lines[0].removeprefix("Entrée ajoutée : "))
    return found


LESSON = f"le proxy PHP passe par {TOKEN} vers php-fpm, pas par proxy_pass"


@pytest.fixture
def proposed(home: Path, memory: Memory, proposals: Proposals) -> pending.Proposal:
    refs = episodes(memory, LESSON)
    assert refs[1].endswith("~2"), refs
    proposals.propose(
        {
            "type": "fait",
            "titre": f"Proxy PHP par {TOKEN}",
            "contenu": f"Le proxy PHP du VPS passe par {TOKEN} vers php-fpm.",
            "sources": refs,
            "contradiction": "aucune",
            "remplace": "rien",
        }
    )
    (proposal,) = pending.parse((home / "memory/pending.md").read_text())
    return proposal


def grep(path: Path, word: str) -> list[str]:
    """The lines of ``path`` that ``grep -F word`` prints (Python's own search if no grep)."""
    if shutil.which("grep"):
        done = subprocess.run(
            ["grep", "-F", word, str(path)], capture_output=True, text=True, check=False
        )
        return done.stdout.splitlines()
    return [line for line in path.read_text().splitlines() if word in line]


def test_a_promoted_fact_reads_its_token_in_memory_and_in_the_prompt(
    home: Path, workspace: Workspace, proposals: Proposals, proposed: pending.Proposal
) -> None:
    assert proposed.content == f"Le proxy PHP du VPS passe par {TOKEN} vers php-fpm."
    assert grep(home / "memory/pending.md", TOKEN)
    proposals.accept(proposed.id)
    memory_md = (home / "memory/MEMORY.md").read_text()
    (line,) = memorymd.fact_lines(memory_md)
    assert line.startswith(f"Le proxy PHP du VPS passe par `{TOKEN}` vers php-fpm. (")
    assert "\\" not in memory_md
    assert grep(home / "memory/MEMORY.md", TOKEN)
    assert inert.active_constructs(memory_md) == []
    (facts, *_) = prompt_context(workspace)["system"]
    assert f"Le proxy PHP du VPS passe par {TOKEN} vers php-fpm. (" in facts
    assert "\\" not in facts and f"`{TOKEN}`" not in facts


def test_pending_show_prints_the_proposal_as_written(
    home: Path, run_cli: Callable[..., CliResult], proposed: pending.Proposal
) -> None:
    stored = (home / "memory/pending.md").read_text()
    assert "~2" in stored and "`" in stored  # the stamp is in a span there, not escaped
    assert "\\~" not in stored and "\\_" not in stored
    shown = run_cli("pending", "show", proposed.id)
    assert shown.code == 0, shown.err
    assert f"## {proposed.id} · fait · Proxy PHP par {TOKEN}\n" in shown.out
    assert f"- Sources : {proposed.sources[0]} ; {proposed.sources[1]}\n" in shown.out
    assert proposed.sources[1].endswith("~2") and "\\" not in shown.out and "`" not in shown.out
    assert f"~~~text\nLe proxy PHP du VPS passe par {TOKEN} vers php-fpm.\n~~~" in shown.out


def test_pending_show_side_by_side_reads_the_old_fact_as_written(
    home: Path, memory: Memory, proposals: Proposals, run_cli: Callable[..., CliResult]
) -> None:
    old = f"Le proxy PHP du VPS passe par `{TOKEN}` sur le port 9000."
    (home / "memory/MEMORY.md").write_text(
        memorymd.MEMORY_HEADER
        + f"\n- {old} (2026-11-01, Source : journal 2026-11-01 10:00 ; P-0042)\n"
    )
    refs = episodes(memory, f"{TOKEN} sur le port 9001 maintenant")
    proposals.propose(
        {
            "type": "fait",
            "titre": "Port de php-fpm",
            "contenu": f"Le proxy PHP du VPS passe par {TOKEN} sur le port 9001.",
            "sources": refs,
            "contradiction": "aucune",
            "remplace": f"MEMORY.md « {old} »",
        }
    )
    shown = run_cli("pending", "show", "P-0001").out
    assert f"avant (MEMORY.md) : Le proxy PHP du VPS passe par {TOKEN} sur le port 9000. (" in shown
    proposals.accept("P-0001")
    (line,) = memorymd.fact_lines((home / "memory/MEMORY.md").read_text())
    assert line.startswith(f"Le proxy PHP du VPS passe par `{TOKEN}` sur le port 9001. (")


def test_the_journal_greps_for_the_token_and_its_search_reads_it(
    home: Path, run_cli: Callable[..., CliResult], clock: Clock
) -> None:
    fields = journal_fields(
        titre=f"Réglage de {TOKEN}",
        fait=f"remplacé proxy_pass par {TOKEN} dans /etc/nginx/sites-enabled/app.conf",
        lecon="php-fpm écoute sur 127.0.0.1:9000, ~/.config n'y est pour rien",
    )
    added = run_cli("journal", "add", stdin=json.dumps(fields))
    assert added.code == 0, added.err
    journal_md = home / "memory/journal.md"
    hits = grep(journal_md, TOKEN)
    assert len(hits) == 2 and any(h.startswith("## ") for h in hits), hits
    assert grep(journal_md, "proxy_pass") and grep(journal_md, "~/.config")
    assert "\\_" not in journal_md.read_text() and "\\~" not in journal_md.read_text()
    found = run_cli("journal", "search", TOKEN)
    assert found.code == 0, found.err
    assert f"remplacé proxy_pass par {TOKEN} dans /etc/nginx/sites-enabled/app.conf" in found.out
    assert "`" not in found.out and "\\" not in found.out


def test_a_review_page_promotion_replaces_a_fact_with_a_token(
    lua: Any, oc: Any, tmp_path: Path
) -> None:
    """The fact a proposal names is found as MEMORY.md holds it (token spans and all), as the
    local promotion does; the review page writes what ocmem computed."""
    old = f"PHP passe par `{TOKEN}` sur le port 9000."
    memory_page = memorymd.MEMORY_HEADER + f"\n- {old} (2026-11-01, Source : journal ; P-0042)\n"
    proposal = pending.Proposal(
        id="P-0001",
        kind="fait",
        title="Port",
        status=pending.STATE_PENDING,
        created=date(2026, 11, 29),
        sources=("journal 2026-11-20 10:12", "journal 2026-11-20 10:12~2"),
        origin="récurrence (2 épisodes)",
        replaces=f"MEMORY.md « {old} » — valeur changée : 9000 → 9001",
        contradiction="aucune",
        content=f"PHP passe par {TOKEN} sur le port 9001.",
    )
    pulled = gestureplans.Space(
        memory=memory_page,
        archive="",
        installed=[],
        skills_dir=tmp_path,
        limits=Limits(),
        memory_page="Agents/Memory/MEMORY",
        archive_page="Agents/Memory/ARCHIVE",
        skills_folder="Agents/Skills/",
        decisions_page="Agents/Inbox/vps-prod/decisions",
        home="vps-prod",
    )
    pages = {
        "Agents/Memory/MEMORY": memory_page,
        "Agents/Inbox/vps-prod/pending": gestures.with_fence(
            proposal.render(),
            gestureplans.Decorator(lambda: pulled)([("P-0001", proposal.render())]),
        ),
    }
    store = lua.table_from(
        {
            "list": lambda: lua.table_from(sorted(pages)),
            "read": lambda name: pages.get(name),
            "write": lambda name, text: pages.__setitem__(name, text),
            "delete": lambda name: pages.pop(name),
        }
    )
    result = oc.promote(store, "vps-prod/P-0001", "2026-12-01")
    assert result.ok is True, result.message
    (line,) = memorymd.fact_lines(pages["Agents/Memory/MEMORY"])
    assert line == (
        f"PHP passe par `{TOKEN}` sur le port 9001. (2026-12-01, Source : vps-prod journal "
        "2026-11-20 10:12 ; journal 2026-11-20 10:12~2 ; vps-prod/P-0001)"
    )
    assert old in pages["Agents/Memory/ARCHIVE"]
    assert inert.active_constructs(pages["Agents/Memory/MEMORY"]) == []


# --- the browser corpus, offline -----------------------------------------------------------

# tests/browser runs these payloads in a real SilverBullet (by hand: its client is in no
# registry). Here each one is rendered as ocmem writes it and parsed back, so a change of the
# rendering is checked against the whole corpus on every run.
BEACON = "http://127.0.0.1:9"


def _corpus_text(payload: Any) -> str:
    from ocmem.errors import InputError
    from ocmem.formats import journal

    if payload.page == "journal":
        data = payload.journal_fields(BEACON)
        try:
            entry = journal.entry_from_fields(data, Clock().now(), max_lines=50)
        except InputError:
            return ""  # refused at the write: nothing reaches SilverBullet
        (block,) = journal.blocks(entry.render())
        assert journal.parse_entry(block) == entry
        return entry.render()
    data = payload.proposal_fields(BEACON)
    kind = str(data.get("type", "fait"))
    values = {k: str(v) for k, v in data.items() if isinstance(v, str)}
    if any(
        "\n" in values.get(k, "") for k in ("titre", "contradiction", "remplace", "description")
    ):
        return ""  # refused at the write (a one-line field)
    proposal = pending.Proposal(
        id="P-0001",
        kind=kind,
        title=inert.clean(values["titre"]).strip(),
        status=pending.STATE_PENDING,
        created=date(2026, 11, 29),
        sources=("journal 2026-11-20 10:12", "journal 2026-11-20 10:12~2"),
        origin="récurrence (2 épisodes)",
        replaces=inert.clean(values["remplace"]).strip(),
        contradiction=inert.clean(values["contradiction"]).strip(),
        content=values["contenu"],
        skill_name=inert.clean(values["name"]).strip() if kind == "skill" else None,
        description=inert.clean(values["description"]).strip() if kind == "skill" else None,
    )
    text = proposal.render()
    (back,) = pending.parse(text)
    assert back.render() == text
    return text


def test_every_corpus_payload_is_written_inert() -> None:
    from browser.payloads import PAYLOADS

    rendered = 0
    for payload in PAYLOADS:
        text = _corpus_text(payload)
        if not text:
            continue
        rendered += 1
        assert inert.active_constructs(text) == [], (payload.id, text)
        tokens = PARSER.parse(text)
        for token in tokens:
            assert token.type not in ("html_block", "html_inline"), (payload.id, text)
            if token.type == "fence":
                assert token.info in inert.PLAIN_LANGUAGES, (payload.id, text)
        for child in (c for t in tokens if t.type == "inline" for c in t.children or []):
            assert child.type not in ("html_inline", "link_open", "image"), (payload.id, text)
    assert rendered > 150


def test_another_fact_under_the_same_id_does_not_stop_a_promotion(
    home: Path, proposals: Proposals, proposed: pending.Proposal
) -> None:
    memory = home / "memory/MEMORY.md"
    memory.chmod(0o644)
    other = f"- Un autre fait, d'avant. (2026-01-01, Source : journal 2026-01-01 09:00 ; {proposed.id})\n"
    memory.write_text(memory.read_text().rstrip("\n") + "\n" + other)
    proposals.accept(proposed.id)
    text = memory.read_text()
    assert other in text and f"passe par `{TOKEN}` vers php-fpm." in text
