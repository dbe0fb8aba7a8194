"""Agent text rendered for SilverBullet can be read but never run (ocmem.text.inert).

The properties are checked with a real CommonMark parser (markdown-it-py): whatever the input,
the rendered Markdown yields no HTML, no link or image, no fence but ocmem's own with a plain
language, and every character that starts a SilverBullet construct (``$ { # [ <``) is escaped
outside code; and what a person reads is what the agent wrote.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from ocmem.text import inert

PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"])

# Text full of what SilverBullet or CommonMark would act on, plus ordinary French prose.
ACTIVE_PIECES = [
    "${",
    "}",
    "$x",
    "<img src=x onerror=alert(1)>",
    "<!--",
    "-->",
    "<!--#lua 1-->",
    "<pre>",
    "<div>",
    "```",
    "~~~",
    "```space-lua",
    "~~~space-style",
    "#space-lua",
    "#meta/template",
    "[script: x]",
    "[[Agents/Memory/MEMORY]]",
    "![[x]]",
    "[a](javascript:alert(1))",
    "![](http://127.0.0.1:9/x.png)",
    "<http://evil>",
    "{[Command]}",
    "==hl==",
    "^sup^",
    "~sub~",
    "**gras**",
    "_it_",
    "`",
    "``",
    "`code ${x}`",
    "`ls -la`",
    "&lt;",
    "&#60;",
    "\\",
    "\\`",
    "|",
    "| a | b |\n|---|---|",
    "- ",
    "+ ",
    "1. ",
    "2) ",
    "> ",
    "# ",
    "===",
    "---",
    "    ",
    "\t",
    "\n",
    "l'apostrophe",
    "« guillemets »",
    "déjà vu",
    "é",
    "https://example.org/a_b?x=1&y=2#frag",
]
active_text = st.lists(
    st.one_of(st.sampled_from(ACTIVE_PIECES), st.text(max_size=8)), max_size=12
).map("".join)
one_line = active_text.map(lambda s: inert.clean(s).replace("\n", " ").strip())

_ESCAPE = re.compile(r"\\[!-/:-@\[-`{-~]")


def code_spans(source: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of each CommonMark code span of one line of ``source``."""
    spans = []
    i = 0
    while i < len(source):
        if _ESCAPE.match(source, i):
            i += 2
            continue
        if source[i] != "`":
            i += 1
            continue
        j = i
        while j < len(source) and source[j] == "`":
            j += 1
        close = re.compile(r"(?<!`)" + "`" * (j - i) + r"(?!`)").search(source, j)
        if close is None:
            i = j
            continue
        spans.append((i, close.end(), source[j : close.start()]))
        i = close.end()
    return spans


def unescaped_specials(source: str) -> list[str]:
    """Characters of ``$ { # [ <`` that are live in ``source`` (not escaped, not in code)."""
    found = []
    for line in source.split("\n"):
        spans = code_spans(line)
        i = 0
        while i < len(line):
            span = next((s for s in spans if s[0] == i), None)
            if span:
                i = span[1]
                continue
            if _ESCAPE.match(line, i):
                i += 2
                continue
            if line[i] in "${#[<":
                found.append(line[i])
            i += 1
    return found


def inline_tokens(tokens: list[Token]) -> list[Token]:
    return [child for t in tokens if t.type == "inline" for child in (t.children or [])]


def code_span_content(raw: str) -> str:
    """What CommonMark shows of a code span's content (one space stripped on each side)."""
    if len(raw) >= 2 and raw[0] == raw[-1] == " " and raw.strip(" "):
        return raw[1:-1]
    return raw


def assert_inert(markdown: str, agent_part: str | None = None) -> list[Token]:
    """``markdown`` parses to nothing active; ``agent_part`` (default: all of it) is the text
    ocmem rendered, where no special character may be live."""
    tokens = PARSER.parse(markdown)
    kinds = {t.type for t in tokens} | {t.type for t in inline_tokens(tokens)}
    assert not kinds & {"html_block", "html_inline", "link_open", "image", "fence", "code_block"}, (
        markdown
    )
    assert unescaped_specials(markdown if agent_part is None else agent_part) == [], markdown
    shown = [t.content for t in inline_tokens(tokens) if t.type == "code_inline"]
    found = [code_span_content(c) for line in markdown.split("\n") for *_, c in code_spans(line)]
    assert shown == found, "the test's code-span finder must agree with the parser"
    for _, _, content in (s for line in markdown.split("\n") for s in code_spans(line)):
        assert not set(content) & set("<[]#{}"), content
    return tokens


def shown_text(tokens: list[Token]) -> str:
    """The text a reader sees, one line per line break or paragraph."""
    paragraphs = []
    for block in (t for t in tokens if t.type == "inline"):
        parts = []
        for child in block.children or []:
            if child.type in ("softbreak", "hardbreak"):
                parts.append("\n")
            elif child.type in ("text", "code_inline"):
                parts.append(child.content)
            else:
                raise AssertionError(f"unexpected token {child.type}")
        paragraphs.append("".join(parts))
    return "\n".join(paragraphs)


@given(one_line)
def test_inline_output_is_inert_in_every_inline_context(text: str) -> None:
    rendered = inert.inline(text)
    assert "\n" not in rendered
    for context in (f"- Fait : {rendered}", f"## 2026-11-30 10:00 · {rendered} · #tag", rendered):
        assert_inert(context, rendered)


@given(one_line)
def test_inline_round_trips_to_what_the_agent_wrote(text: str) -> None:
    assert inert.unescape(inert.inline(text)) == text


@given(one_line.filter(lambda s: "`" not in s))
def test_a_reader_sees_exactly_the_text(text: str) -> None:
    tokens = assert_inert(f"- Fait : {inert.inline(text)}")
    assert shown_text(tokens) == f"Fait : {text}".strip()


@given(active_text)
def test_multiline_fields_open_no_block(text: str) -> None:
    rendered = inert.lines(text)
    tokens = assert_inert(f"- Leçon : {rendered}\n- Résultat : réussi\n")
    blocks = [t.type for t in tokens if t.type.endswith("_open")]
    assert blocks.count("bullet_list_open") == 1
    assert blocks.count("list_item_open") == 2
    assert not {"blockquote_open", "heading_open", "ordered_list_open", "table_open"} & set(blocks)
    assert inert.unlines(rendered) == "\n".join(inert.clean_lines(text))


@given(active_text.filter(lambda s: "`" not in s))
def test_multiline_fields_show_every_line_as_typed(text: str) -> None:
    tokens = PARSER.parse(f"- Leçon : {inert.lines(text)}\n")
    wanted = "\n".join(line for line in inert.clean_lines(text) if line)
    assert shown_text(tokens) == f"Leçon : {wanted}".strip()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "déjà fait : l'apostrophe, « guillemets » !",
            "déjà fait : l'apostrophe, « guillemets » !",
        ),
        ("${editor.flashNotification('x')}", "\\$\\{editor.flashNotification('x')\\}"),
        ("<img src=x onerror=alert(1)>", "&lt;img `src=x` `onerror=alert(1)>`"),
        ("#space-lua [script: 1]", "\\#space-lua \\[script: 1\\]"),
        ("lancer `docker compose up -d`", "lancer `docker compose up -d`"),
        ("`${x}` reste du code", "\\`\\$\\{x\\}\\` reste du code"),
        ("a `b", "a \\`b"),
        ("C:\\temp", "`C:\\temp`"),
        ("1. pas une liste", "1\\. pas une liste"),
        ("- pas une liste", "\\- pas une liste"),
    ],
)
def test_inline_examples(text: str, expected: str) -> None:
    assert inert.inline(text) == expected


def test_continuation_lines_cannot_start_blocks() -> None:
    text = "un\n- deux\n+ trois\n2026. quatre\n> cinq\n# six\n```space-lua\n    sept"
    assert inert.lines(text) == (
        "un\n  \\- deux\n  \\+ trois\n  2026\\. quatre\n  \\> cinq\n  \\# six\n"
        "  \\`\\`\\`space-lua\n  sept"
    )


def test_clean_drops_control_characters_and_normalises() -> None:
    assert inert.clean("a\x00b\x1b[31mc\u0085d\r\ne\tf\u200bg") == "ab[31mc\nd\ne f\u200bg"
    assert inert.clean("e\u0301") == "é"


# --- drafts --------------------------------------------------------------------------------


@given(active_text)
def test_draft_output_is_inert_and_stable(text: str) -> None:
    rendered = inert.draft(text)
    tokens = PARSER.parse(rendered)
    for token in tokens:
        assert token.type not in ("html_block", "html_inline"), rendered
        if token.type == "fence":
            assert token.info in inert.PLAIN_LANGUAGES, rendered
    for child in inline_tokens(tokens):
        assert child.type not in ("html_inline", "link_open", "image"), rendered
    outside_fences = re.sub(r"(?ms)^(~{3,})[a-z]*\n.*?^\1$", "", rendered)
    # A heading marker ("# " or a lone "#") is not a hashtag.
    outside_fences = re.sub(r"(?m)^ *#{1,6}(?= |$)", "", outside_fences)
    assert unescaped_specials(outside_fences) == [], rendered
    assert inert.draft(inert.undraft(rendered)) == rendered
    assert inert.active_constructs(rendered) == []


def test_draft_keeps_a_readable_procedure() -> None:
    source = (
        "# Renouveler un certificat\n\n"
        "1. Vérifier la date : `openssl x509 -enddate -noout -in cert.pem`\n"
        "2. Lancer :\n"
        "   ```bash\n"
        "   certbot renew && echo ${HOME}\n"
        "   ```\n"
        "- **Attention** : recharger nginx\n"
    )
    assert inert.draft(source) == (
        "# Renouveler un certificat\n\n"
        "1. Vérifier la date : `openssl x509 -enddate -noout -in cert.pem`\n"
        "2. Lancer :\n"
        "~~~bash\n"
        "certbot renew && echo ${HOME}\n"
        "~~~\n"
        "- **Attention** : recharger nginx"
    )


@pytest.mark.parametrize(
    "source",
    [
        "- ```space-lua\n  editor.flashNotification('x')\n  ```",
        "> ```space-style\n> body { display: none }\n> ```",
        "\t```space-lua\nx()\n```",
        "~~~space-lua\nx()",
        "text\n```space-config\na: 1\n```",
    ],
)
def test_draft_active_fences_become_plain_code(source: str) -> None:
    rendered = inert.draft(source)
    assert "space-" not in re.findall(r"(?m)^~{3,}(\S*)$", rendered)
    assert all(info == "text" for info in re.findall(r"(?m)^~{3,}(\S+)$", rendered))
    assert inert.active_constructs(rendered) == []


@given(st.text(max_size=60))
def test_fence_for_is_longer_than_any_run_inside(text: str) -> None:
    assert inert.fence_for(text, "~") not in text


def test_fence_cannot_be_closed_by_its_content() -> None:
    content = "~~~\n~~~~~\n```"
    fenced = inert.fence(content)
    assert fenced.startswith("~~~~~~text\n") and fenced.endswith("\n~~~~~~")
    with pytest.raises(ValueError):
        inert.fence("x", "space-lua")


# --- tags ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "ok"),
    [
        ("docker", True),
        ("déploiement", True),
        ("2fa", True),
        ("k8s-prod", True),
        ("123", False),
        ("meta", False),
        ("meta/template", False),
        ("Meta", False),
        ("metadata", False),
        ("template", False),
        ("space-lua", False),
        ("space-style", False),
        ("a/b", False),
        ("a b", False),
        ("<x>", False),
        ("-x", False),
        ("_x", False),
        ("x" * 41, False),
    ],
)
def test_tags(tag: str, ok: bool) -> None:
    assert (inert.tag_problem(tag) is None) is ok


# --- active constructs in a human's page -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Faits : ${space.writePage('x', 'y')}", "expression"),
        ("- ```space-lua\n  x()\n  ```", "bloc space-lua"),
        ("> ~~~space-style\n> body {}\n> ~~~", "bloc space-style"),
        ("#space-lua [script: 'x()']", "tag système"),
        ("une ligne [script: x]", "attribut"),
        ("#meta/template", "tag système"),
        ('<img src=x onerror="alert(1)">', "HTML <img>"),
        ('<details open ontoggle="x()">', "HTML <details>"),
        ("<iframe src=javascript:x>", "HTML <iframe>"),
        ('<span style="display:none">caché</span>', "HTML <span>"),
        ("<!-- la suite disparaît", "commentaire"),
        ("<!--#lua 1 -->", "section précalculée"),
        ("{[Page: Delete]}", "bouton"),
        ("- item\n  ```bash\n${x}\n  ```", "expression"),
        ("\\\\${x}", "expression"),
    ],
)
def test_active_constructs_are_found(text: str, kind: str) -> None:
    found = inert.active_constructs(text)
    assert any(kind in a.kind for a in found), found


@pytest.mark.parametrize(
    "text",
    [
        "<!-- ocmem:begin -->\n## Mémoire\nSilverBullet interprète `${...}`.\n<!-- ocmem:end -->",
        "```bash\necho ${HOME}\n```",
        "~~~lua\nspace.writePage()\n~~~",
        "\\${x} et \\#space-lua",
        "prix : 10 $ {hors taxe}",
        "<b>gras</b> <br> <details><summary>x</summary></details>",
        "- [ ] une tâche\n- [x] faite",
        "# Titre\n\n[lien](https://example.org)",
    ],
)
def test_ordinary_human_pages_are_not_flagged(text: str) -> None:
    assert inert.active_constructs(text) == []


@given(active_text)
def test_everything_ocmem_renders_passes_its_own_check(text: str) -> None:
    assert inert.active_constructs(inert.lines(text)) == []
    line = inert.clean(text).replace("\n", " ").strip()
    assert inert.active_constructs(inert.inline(line)) == []
