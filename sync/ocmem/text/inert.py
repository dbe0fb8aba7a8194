"""Agent text as SilverBullet Markdown that can be read but never run: rendering by allowlist.

Everything the agent writes can come from a prompt injection, and what ocmem pushes lands in
the human's SilverBullet, where raw HTML, ``${…}`` (Space Lua), ``space-lua``/``space-style``
fences, ``#space-lua [script: …]`` objects and ``#meta/template`` tags are live. Recognising
those constructs (a denylist) fails wherever ocmem's idea of Markdown differs from
SilverBullet's parser, so this module does the opposite: its output can only be

- plain text in which every character that could start a construct is escaped (a CommonMark
  backslash escape, ``<`` as ``&lt;``), so no HTML, link, wiki link, attribute, hashtag,
  directive, anchor, emphasis or block can form — except
- inline code spans whose content holds none of ``< [ ] # { }`` (inert even if a parser
  disagreed about where the span is): the agent's own, and the ones ocmem puts around a
  technical token (``fastcgi_pass``, ``~/.config``, ``--level=3``, ``18:44~6``) instead of
  backslashes, so that the token reads, and greps, as it was written (see :func:`_token_wraps`), and
- fences that ocmem writes itself, at column 0, longer than any run of their character inside,
  with an info string from a fixed list of plain languages.

Three renderings: :func:`inline` (one line: a title, a field), :func:`lines` (a multi-line
field inside a list item), :func:`draft` (a skill draft: a small Markdown subset — headings,
list items, emphasis, code spans, fences — everything else escaped). Their inverses
(:func:`unescape`, :func:`unlines`, :func:`undraft`) give back the text as the agent wrote it
(after :func:`clean`), so files can be parsed and re-rendered without drift.

:func:`active_constructs` is the other side: a conservative scan of Markdown written by a
human (pulled MEMORY.md, AGENTS.md, skills) for the constructs above, so a tampered page is
not installed silently.
"""

# No `from __future__ import annotations`: see ocmem.home.settings (NamedTuples on the hot path).

import re
import unicodedata
from typing import NamedTuple

# --- normalisation --------------------------------------------------------------------------

_NEWLINES = re.compile(r"\r\n|[\r\u2028\u2029\x85\x0b\x0c]")
# C0 controls but tab and newline, DEL and C1 controls: never meaningful in memory text, and
# ESC/OSC sequences would replay on a terminal.
_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f]")


def clean(text: str, *, keep_tabs: bool = False) -> str:
    """The canonical form of agent text: NFC, ``\\n`` line ends, no control characters."""
    text = _CONTROLS.sub("", _NEWLINES.sub("\n", unicodedata.normalize("NFC", text)))
    return text if keep_tabs else text.replace("\t", " ")


def clean_lines(text: str) -> list[str]:
    """A multi-line field as it is stored: each line stripped, no blank line at either end,
    at most one blank line in a row (Markdown would not show more, nor leading spaces)."""
    out: list[str] = []
    for line in clean(text).split("\n"):
        line = line.strip()
        if line or (out and out[-1]):
            out.append(line)
    while out and not out[-1]:
        out.pop()
    return out


# --- escaping -------------------------------------------------------------------------------

_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# Plain text: every character that starts an inline construct of CommonMark or of
# SilverBullet's extensions (wiki link, attribute, hashtag, ${…}, $anchor, ==highlight==,
# ^superscript^, ~subscript~, ~~strike~~, {[command]}, tables, emphasis, entities).
_PLAIN = frozenset("\\`*_[]<>#${}|~=^&")
# A draft keeps emphasis and tables (harmless formatting) and escapes the rest.
_DRAFT = frozenset("\\`[]<>#${}~=^&")
_NOT_IN_SPAN = frozenset("<[]#{}")
# Technical tokens. A token is a run of characters between blanks; its core is the token
# without the punctuation that opens or closes it in prose (`(` … `),` `.` …). A core gets a
# code span when it has a letter or digit, something plain text escapes but a span shows as
# it is (``_TRIGGER``), and nothing a span may not hold. A span stands alone when it is
# bounded like a core: by a blank, the line's ends, an opening mark before or a closing one
# after. A span of the agent's that stands alone and holds such a core gets one backtick more
# on each side, so :func:`unescape` can take one off every such span: the spans ocmem added go,
# the agent's come back as written.
_BLANK = frozenset(" \t\n")
_TOKEN_OPEN = frozenset("(\"'")
_TOKEN_CLOSE = frozenset(")\"'.,;:!?")
_TRIGGER = frozenset("\\*_|~=^&$>")
_NOT_IN_TOKEN = _NOT_IN_SPAN | _BLANK | {"`"}
# ASCII digits only, as CommonMark reads them.
_ORDERED_MARKER = re.compile(r"[0-9]{1,9}[.)]")
# Patterns only some commands need are compiled at their first use (re caches them):
# compiling all of them at import would cost every `ocmem` run about a millisecond.
_ENTITY = r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"


def _escape_char(char: str) -> str:
    return "&lt;" if char == "<" else "\\" + char


def _backtick_runs(line: str, start: int = 0) -> list[tuple[int, int]]:
    runs = []
    i = start
    while i < len(line):
        if line[i] == "`":
            j = i
            while j < len(line) and line[j] == "`":
                j += 1
            runs.append((i, j - i))
            i = j
        else:
            i += 1
    return runs


def _code_spans(line: str) -> dict[int, int]:
    """Code spans ocmem keeps, as {start: end}: each opening run closes at the next run of the
    same length (CommonMark's rule), and only if the content is inert whatever the parser."""
    runs = _backtick_runs(line)
    spans: dict[int, int] = {}
    i = 0
    while i < len(runs):
        start, length = runs[i]
        close = next((k for k in range(i + 1, len(runs)) if runs[k][1] == length), None)
        if close is not None and not _NOT_IN_SPAN.intersection(
            line[start + length : runs[close][0]]
        ):
            spans[start] = runs[close][0] + length
            i = close + 1
        else:
            i += 1
    return spans


def _token_like(content: str) -> bool:
    """Whether ``content`` is a core a code span may be put around (see ``_TRIGGER``)."""
    return (
        not _NOT_IN_TOKEN.intersection(content)
        and not _TRIGGER.isdisjoint(content)
        and any(c.isascii() and c.isalnum() for c in content)
    )


def _stands_alone(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is bounded as a token's core is."""
    return (start == 0 or text[start - 1] in _BLANK or text[start - 1] in _TOKEN_OPEN) and (
        end == len(text) or text[end] in _BLANK or text[end] in _TOKEN_CLOSE
    )


def _laddered(text: str, start: int, end: int, step: int) -> str:
    """The code span ``text[start:end]``, with ``step`` backticks more (or fewer) on each side
    if it stands alone and holds a token's core; as written otherwise."""
    length = 1
    while text[start + length] == "`":  # the closing run follows: never out of range
        length += 1
    content = text[start + length : end - length]
    if _token_like(content) and _stands_alone(text, start, end):
        ticks = "`" * (length + step)
        return ticks + content + ticks
    return text[start:end]


def _token_wraps(line: str, spans: dict[int, int], escaped: frozenset[str]) -> dict[int, int]:
    """The cores of ``line`` ocmem puts in a code span, as {start: end}: tokens that hold no
    backtick (so no code span either) and something ``escaped`` would escape."""
    wraps: dict[int, int] = {}
    i, n = 0, len(line)
    while i < n:
        if line[i] in _BLANK:
            i += 1
            continue
        start, ticked = i, False
        while i < n and line[i] not in _BLANK:
            if i in spans:
                i, ticked = spans[i], True
            else:
                ticked = ticked or line[i] == "`"
                i += 1
        if ticked:
            continue
        first, last = start, i
        while first < last and line[first] in _TOKEN_OPEN:
            first += 1
        while last > first and line[last - 1] in _TOKEN_CLOSE:
            last -= 1
        core = line[first:last]
        if _token_like(core) and not escaped.isdisjoint(core):
            wraps[first] = last
    return wraps


def _escape_line(line: str, escaped: frozenset[str], *, line_start: bool) -> str:
    """One line of text with every active character escaped, code spans kept, technical
    tokens in code spans.

    ``line_start``: the line begins a Markdown line (a continuation line), so a leading
    ``-``/``+`` or ``1.`` would open a list: escape it too (a token in a span opens nothing).
    """
    out: list[str] = []
    spans = _code_spans(line)
    wraps = _token_wraps(line, spans, escaped)
    i = 0
    if line_start and 0 not in wraps:
        marker = _ORDERED_MARKER.match(line)
        if marker:
            out.append(line[: marker.end() - 1] + "\\" + line[marker.end() - 1])
            i = marker.end()
        elif line[:1] in ("-", "+"):
            out.append("\\" + line[0])
            i = 1
    while i < len(line):
        if i in spans:
            out.append(_laddered(line, i, spans[i], 1))
            i = spans[i]
            continue
        if i in wraps:
            out.append(f"`{line[i : wraps[i]]}`")
            i = wraps[i]
            continue
        char = line[i]
        out.append(_escape_char(char) if char in escaped else char)
        i += 1
    return "".join(out)


def inline(text: str) -> str:
    """One line of agent text, inert wherever inline Markdown is parsed (heading, list item),
    and at the start of a line too."""
    text = clean(text).strip()
    if "\n" in text:
        raise ValueError("inline() takes one line")
    return _escape_line(text, _PLAIN, line_start=True)


def lines(text: str, indent: str = "  ") -> str:
    """A multi-line field: the first line inline, the next ones indented by ``indent`` (the
    content offset of the list item the field sits in), each unable to open a block."""
    parts = clean_lines(text)
    if not parts:
        return ""
    rendered = [indent + _escape_line(p, _PLAIN, line_start=True) if p else "" for p in parts]
    rendered[0] = rendered[0][len(indent) :]
    return "\n".join(rendered)


def unescape(text: str) -> str:
    """Rendered text back to what the agent wrote: escapes and entities undone, the code
    spans ocmem put around tokens removed, the agent's own left as written (CommonMark's order
    of precedence, for one line)."""
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        char = text[i]
        if char == "\\" and i + 1 < n and text[i + 1] in _ASCII_PUNCTUATION:
            out.append(text[i + 1])
            i += 2
        elif char == "`":
            j = i
            while j < n and text[j] == "`":
                j += 1
            closing = next((s for s, length in _backtick_runs(text, j) if length == j - i), None)
            if closing is None:
                out.append(text[i:j])
                i = j
            else:
                end = closing + (j - i)
                out.append(_laddered(text, i, end, -1))
                i = end
        elif char == "&" and (entity := re.compile(_ENTITY).match(text, i)):
            import html  # lazy: only reading entities back needs it

            out.append(html.unescape(entity.group(0)))
            i = entity.end()
        else:
            out.append(char)
            i += 1
    return "".join(out)


def unlines(text: str) -> str:
    """Inverse of :func:`lines` (continuation lines lose their indentation)."""
    return "\n".join(unescape(line.strip()) for line in text.split("\n"))


# --- fences -------------------------------------------------------------------------------

# Info strings SilverBullet shows as code and nothing else (no space-lua, space-style,
# space-config, nor anything a space could register as a code widget by default).
PLAIN_LANGUAGES = frozenset(
    """text txt plaintext markdown md bash sh shell zsh console powershell python py
    javascript js typescript ts json yaml yml toml ini conf sql diff patch dockerfile nginx
    lua css html xml go rust c cpp java php ruby makefile log csv""".split()
)


def fence_for(content: str, char: str = "~") -> str:
    """A fence longer than any run of ``char`` inside ``content`` (so it cannot be closed early)."""
    longest = max((len(m.group(0)) for m in re.finditer(re.escape(char) + "+", content)), default=0)
    return char * max(3, longest + 1)


def fence(content: str, info: str = "text") -> str:
    """``content`` verbatim in a tilde fence at column 0 that nothing inside can close."""
    if info not in PLAIN_LANGUAGES:
        raise ValueError(f"fence info {info!r} is not a plain language")
    marker = fence_for(content)
    body = content.rstrip("\n")
    return f"{marker}{info}\n{body}\n{marker}" if body else f"{marker}{info}\n{marker}"


# --- drafts -------------------------------------------------------------------------------

# A fence opening anywhere a parser could see one: after spaces, list markers or quote marks.
_FENCE_OPEN = r"^((?:[ ]*(?:[-*+]|[0-9]{1,9}[.)]|>)[ ]+|[ ]*>)*[ ]*)(`{3,}|~{3,})(.*)$"
_HEADING = r"#{1,6}(?: |$)"
_BULLET = r"(?:[-*+]|[0-9]{1,9}[.)]) "
_RULE_LIKE = r"^[ ]*[-*_=]+[ \-*_=]*$"


def _draft_text_line(line: str) -> str:
    indent = len(line) - len(line.lstrip(" "))
    body = line[indent:]
    prefix = ""
    if re.compile(_RULE_LIKE).match(body):
        return " " * indent + "\\" + body[0] + _escape_line(body[1:], _DRAFT, line_start=False)
    heading = re.compile(_HEADING).match(body)
    if heading:
        prefix, body = body[: heading.end()], body[heading.end() :]
    else:
        while bullet := re.compile(_BULLET).match(body):  # nested markers: "- 1. text"
            prefix, body = prefix + bullet.group(0), body[bullet.end() :]
    return " " * indent + prefix + _escape_line(body, _DRAFT, line_start=True)


def _info_word(info: str) -> str:
    word = info.strip().split(" ")[0].lower() if info.strip() else ""
    return word if word in PLAIN_LANGUAGES else "text"


def draft(markdown: str) -> str:
    """A Markdown draft (a skill, a procedure) in a form that stays inert once a human copies
    it anywhere in SilverBullet: headings, list items, emphasis, tables and safe code spans are
    kept; fences are rewritten by ocmem at column 0 with a plain language; everything else
    that could be active is escaped, visibly."""
    source = clean(markdown, keep_tabs=True).split("\n")
    out: list[str] = []
    i = 0
    while i < len(source):
        opening = re.compile(_FENCE_OPEN).match(source[i].replace("\t", "    "))
        if opening and not (opening.group(2)[0] == "`" and "`" in opening.group(3)):
            marker, column = opening.group(2), len(opening.group(1))
            content: list[str] = []
            i += 1
            while i < len(source):
                stripped = source[i].strip()
                if len(stripped) >= len(marker) and set(stripped) == {marker[0]}:
                    i += 1
                    break
                line = source[i]
                strip = min(column, len(line) - len(line.lstrip(" ")))
                content.append(line[strip:])
                i += 1
            out.append(fence("\n".join(content), _info_word(opening.group(3))))
            continue
        out.append(_draft_text_line(source[i].replace("\t", "    ").rstrip()))
        i += 1
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)


_OCMEM_FENCE = r"^(~{3,})([a-z]*)$"


def undraft(rendered: str) -> str:
    """Inverse of :func:`draft`: ocmem's fences kept as written, other lines unescaped."""
    out: list[str] = []
    lines_ = rendered.split("\n")
    i = 0
    while i < len(lines_):
        opening = re.compile(_OCMEM_FENCE).match(lines_[i])
        if opening:
            out.append(lines_[i])
            i += 1
            while i < len(lines_) and lines_[i] != opening.group(1):
                out.append(lines_[i])
                i += 1
            if i < len(lines_):
                out.append(lines_[i])
                i += 1
            continue
        out.append(unescape(lines_[i]))
        i += 1
    return "\n".join(out)


def readable(markdown: str) -> str:
    """A Markdown page (MEMORY.md) as a reader should get it outside SilverBullet (the
    model's prompt): every line unescaped, but in fenced code, which is shown as it is."""
    out: list[str] = []
    marker = ""
    for line in markdown.split("\n"):
        if marker:
            stripped = line.strip().lstrip("> ").strip()
            if len(stripped) >= len(marker) and set(stripped) == {marker[0]}:
                marker = ""
            out.append(line)
            continue
        opening = re.compile(_FENCE_OPEN).match(line)
        if opening and not (opening.group(2)[0] == "`" and "`" in opening.group(3)):
            marker = opening.group(2)
            out.append(line)
            continue
        out.append(unescape(line))
    return "\n".join(out)


# --- tags ---------------------------------------------------------------------------------

_TAG = re.compile(r"^(?=[\w-]*[^\W\d_])[^\W_][\w-]{0,39}$")
# Tags SilverBullet gives a meaning to (object types, templates, scripts, styles).
SYSTEM_TAGS = frozenset(
    """meta template page tag task item paragraph header link attribute anchor table data
    config query widget library plug command comment footnote""".split()
)


def tag_problem(tag: str) -> str | None:
    """Why ``tag`` cannot be written as a SilverBullet hashtag (None when it can)."""
    if not _TAG.match(tag):
        return "un tag est un mot de 40 caractères au plus (lettres, chiffres, - et _), sans « / »"
    folded = tag.lower()
    if folded in SYSTEM_TAGS or folded.startswith(("space-", "meta")):
        return f"« {tag} » est un tag système de SilverBullet"
    return None


# --- what a human page must not carry silently ------------------------------------------


class Active(NamedTuple):
    kind: str
    line: int

    def describe(self) -> str:
        return f"ligne {self.line} : {self.kind}"


_CONTAINER_PREFIX = r"^((?:[ \t]*(?:[-*+]|\d{1,9}[.)]|>)[ \t]+|[ \t]*>)*[ \t]*)"
_ANY_FENCE = r"^(`{3,}|~{3,})[ \t]*([^\s`]*)"
_ACTIVE_INFO = r"(?i)^space-"
_TAG_OPEN = r"<(/?)([A-Za-z][A-Za-z0-9-]*)([^>]*)>?"
_HARMLESS_TAGS = frozenset(
    """b i em strong code kbd sub sup u s mark small br hr p span div ul ol li dl dt dd
    table thead tbody tr th td blockquote summary details abbr cite q""".split()
)
_RISKY_ATTRIBUTE = (
    r"(?i)\bon[a-z]+\s*=|\b(?:style|src|srcdoc|href|action|formaction|http-equiv|xlink:href|"
    r"background|poster|data)\s*=|javascript:|vbscript:"
)
_UNESCAPED = r"(?<!\\)(?:\\\\)*"
_DIRECTIVE = _UNESCAPED + r"\$\{"
_SYSTEM_HASHTAG = r"(?i)" + _UNESCAPED + r"#(?:space-[\w-]*|meta(?:/[\w/-]*)?|template)\b"
_SCRIPT_ATTRIBUTE = r"(?i)" + _UNESCAPED + r"\[\s*(?:script|style)\s*:"
_COMMAND_BUTTON = _UNESCAPED + r"\{\["


def _unescaped_runs(line: str) -> list[tuple[int, int]]:
    """Backtick runs not opened by a backslash escape (``\\``` is a literal backtick)."""
    runs = []
    for start, length in _backtick_runs(line):
        backslashes = len(line[:start]) - len(line[:start].rstrip("\\"))
        if backslashes % 2:
            start, length = start + 1, length - 1
        if length:
            runs.append((start, length))
    return runs


def _without_code_spans(line: str) -> str:
    """The line with the code spans a CommonMark parser would see blanked out."""
    runs = _unescaped_runs(line)
    out = list(line)
    i = 0
    while i < len(runs):
        start, length = runs[i]
        close = next((k for k in range(i + 1, len(runs)) if runs[k][1] == length), None)
        if close is None:
            i += 1
            continue
        for k in range(start, runs[close][0] + length):
            out[k] = " "
        i = close + 1
    return "".join(out)


def active_constructs(markdown: str) -> list[Active]:
    """Constructs of ``markdown`` that SilverBullet would run, load or use to hide text.

    Conservative: code blocks and code spans are skipped only where a parser surely sees
    them, and a fence's content that falls out of its container is scanned like any text.
    """
    found: list[Active] = []
    fence_marker: str | None = None
    fence_column = 0
    fence_quoted = False
    text = clean(markdown).split("\n")
    comment_open = False
    for number, raw in enumerate(text, start=1):
        prefix = re.compile(_CONTAINER_PREFIX).match(raw)
        column = len(prefix.group(1)) if prefix else 0
        rest = raw[column:]
        if fence_marker is not None:
            stripped = raw.strip().lstrip("> ").strip()
            left_container = raw.strip() and (
                (fence_quoted and not raw.lstrip().startswith(">"))
                or (not fence_quoted and len(raw) - len(raw.lstrip()) < fence_column)
            )
            if len(stripped) >= len(fence_marker) and set(stripped) == {fence_marker[0]}:
                fence_marker = None
                continue
            if not left_container:
                continue
            fence_marker = None  # the container ended: the fence closed, this line is text
        opening = re.compile(_ANY_FENCE).match(rest)
        if opening and not ("`" in opening.group(1) and "`" in rest[len(opening.group(1)) :]):
            if re.compile(_ACTIVE_INFO).match(opening.group(2)):
                found.append(Active(f"bloc {opening.group(2)} (exécuté par SilverBullet)", number))
            fence_marker = opening.group(1)
            fence_column = column
            fence_quoted = ">" in raw[:column]
            continue
        line = _without_code_spans(raw)
        if comment_open:
            if "-->" in line:
                comment_open = False
                line = line[line.index("-->") + 3 :]
            else:
                continue
        if re.compile(_DIRECTIVE).search(line):
            found.append(Active("expression ${…} (évaluée à l'ouverture de la page)", number))
        if "<!--#" in line:
            found.append(Active("section précalculée <!--#…--> (évaluée par SilverBullet)", number))
        if re.compile(_SYSTEM_HASHTAG).search(line):
            found.append(Active("tag système de SilverBullet (#space-…, #meta…)", number))
        if re.compile(_SCRIPT_ATTRIBUTE).search(line):
            found.append(
                Active("attribut [script:]/[style:] (chargé comme script ou style)", number)
            )
        if re.compile(_COMMAND_BUTTON).search(line):
            found.append(Active("bouton de commande {[…]}", number))
        for tag in re.compile(_TAG_OPEN).finditer(line):
            if line[max(0, tag.start() - 1)] == "\\" and tag.start() > 0:
                continue
            name, attributes = tag.group(2).lower(), tag.group(3)
            if name not in _HARMLESS_TAGS or re.compile(_RISKY_ATTRIBUTE).search(attributes):
                found.append(Active(f"HTML <{name}> (balise ou attribut actif)", number))
        start = line.rfind("<!--")
        if start >= 0 and "-->" not in line[start:]:
            comment_open = True
            found.append(Active("commentaire HTML qui masque la suite", number))
    return found
