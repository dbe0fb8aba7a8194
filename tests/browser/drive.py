"""Push the hostile corpus through the ocmem CLI into a real SilverBullet and open it in Chromium.

For every payload of ``payloads.py``, in isolation (a clean inbox, a fresh ocmem home and a fresh
browser context, so one payload cannot hide or cause another's effects):

1. a human creates the inbox page with two lines of their own (one a live ``${...}`` widget);
2. ocmem writes the payload (``journal add`` or ``propose``) and pushes: a refusal (exit 2 or 3)
   is recorded as "refused by ocmem" and the payload is done;
3. the human types a line right under the agent's entry (no blank line), ocmem adds and pushes a
   second, benign entry, and the human adds a last line at the end;
4. headless Chromium logs in, opens the page, waits for it to render, reloads once (space scripts
   indexed on the first load run on the second) and waits again; nothing is clicked;
5. every channel is read: the beacon (another origin on the loopback), page and service-worker
   requests, console, dialogs, a DOM mutation log, stylesheets, main-frame navigations, the
   human lines in the rendered editor, and the server's pages.

The controls (``CONTROLS``) are raw pages PUT by this driver, bypassing ocmem; each must be caught
by its detector, which proves the rig can see what it claims to count.

Only the standard library and Playwright (imported lazily) are needed; ocmem runs as a
subprocess (``--ocmem-python``). Run ``python -m browser.drive --help`` from ``tests/``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from browser.payloads import BASE_JOURNAL, CONTROLS, PAYLOADS, Control, Payload, expand

CATEGORIES = ("execution", "style", "other_origin", "redirect", "hidden")
INFO = ("latent_link", "refused")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Line classes that mean a human line was turned into something else by what precedes it.
ALTERING_LINE_CLASSES = (
    "sb-line-fenced-code",
    "sb-line-code",
    "sb-line-comment",
    "sb-line-frontmatter",
    "sb-line-table",
    "sb-line-tbl",
    "sb-line-h",
    "sb-line-hr",
    "sb-line-blockquote",
    "sb-line-task",
)
# A readable mix for --showcase: a benign entry, then visible kinds of damage.
SHOWCASE = (
    "jd-benign",
    "jt-img",
    "jf-md-img",
    "jd-bt-autolink",
    "jd-lua-heading",
    "jl-table-img",
    "jl-div-last",  # last: its <div> takes the human's line typed under it
)
PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
)

# Runs in every frame before any of the page's scripts: keeps every "PWNED-…" text that ever
# enters the DOM (a flash notification is gone a few seconds later).
INIT_SCRIPT = r"""
(() => {
  const marks = (window.__ocmemMarks = window.__ocmemMarks || []);
  const scan = (text) => {
    if (text && text.indexOf("PWNED-") >= 0) {
      for (const m of text.match(/PWNED-[A-Za-z0-9_-]+/g) || []) marks.push(m);
    }
  };
  const observer = new MutationObserver((mutations) => {
    for (const m of mutations) {
      if (m.type === "characterData") scan(m.target.data);
      for (const n of m.addedNodes || []) scan(n.textContent);
    }
  });
  observer.observe(document, { subtree: true, childList: true, characterData: true });
})();
"""

# Where does each human line stand in the rendered editor?
CHECK_LINES_JS = r"""
async ([lines, widget, altering]) => {
  // Bring a node into view first: a long page is taller than the window.
  const reveal = async (node) => {
    node.parentElement.scrollIntoView({ block: "center" });
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  };
  const content = document.querySelector("#sb-editor .cm-content") || document.querySelector(".cm-content");
  const out = {};
  // Markup a human's plain line can only be inside if something before it left it open.
  const wrappers = /widget|sb-comment|sb-code|sb-html|sb-lua|sb-frontmatter|sb-strikethrough|sb-meta/;
  const visible = (el, range) => {
    const rects = range.getClientRects();
    if (!rects.length) return "no box";
    const r = rects[0];
    if (r.width < 1 || r.height < 1) return "empty box";
    let opacity = 1;
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.visibility !== "visible") return "visibility " + s.visibility;
      if (s.display === "none") return "display none";
      opacity *= parseFloat(s.opacity);
    }
    if (opacity < 0.5) return "opacity " + opacity.toFixed(2);
    const s = getComputedStyle(el);
    const rgba = s.color.match(/[\d.]+/g) || [];
    if (rgba.length === 4 && parseFloat(rgba[3]) < 0.5) return "transparent text";
    if (parseFloat(s.fontSize) < 6) return "font-size " + s.fontSize;
    const x = r.left + Math.min(r.width / 2, 20), y = r.top + r.height / 2;
    if (x < 0 || y < 0 || x > innerWidth || y > innerHeight) return "off screen";
    const hit = document.elementFromPoint(x, y);
    if (!hit || !(hit === el || el.contains(hit) || hit.contains(el))) {
      return "covered by " + (hit ? hit.tagName.toLowerCase() + "." + String(hit.className).slice(0, 40) : "nothing");
    }
    return "";
  };
  const textNodes = (needle) => {
    const found = [];
    if (!content) return found;
    const walker = document.createTreeWalker(content, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      if (walker.currentNode.data.indexOf(needle) >= 0) found.push(walker.currentNode);
    }
    return found;
  };
  for (const [key, text] of lines) {
    const problems = [];
    let ok = false;
    const nodes = textNodes(key);
    if (!content) problems.push("no editor");
    else if (!nodes.length) problems.push("not in the editor");
    for (const node of nodes) {
      const el = node.parentElement;
      const line = el.closest(".cm-line");
      const why = [];
      if (!line) why.push("outside any editor line");
      else {
        if (line.textContent !== text) why.push("line reads " + JSON.stringify(line.textContent.slice(0, 80)));
        const cls = Array.from(line.classList).filter((c) => altering.some((a) => c.startsWith(a)));
        if (cls.length) why.push("line styled " + cls.join(" "));
        for (let e = el; e && e !== line; e = e.parentElement) {
          const cls = String(e.className);
          if (
            e.getAttribute("contenteditable") === "false" ||
            wrappers.test(cls) ||
            /^(pre|code|textarea|s|del|template|noscript|xmp|style|script)$/i.test(e.tagName)
          ) {
            why.push("inside " + e.tagName.toLowerCase() + "." + cls.slice(0, 50));
            break;
          }
        }
      }
      await reveal(node);
      const range = document.createRange();
      range.selectNodeContents(node);
      const v = visible(el, range);
      if (v) why.push(v);
      if (!why.length) { ok = true; break; }
      problems.push(why.join(", "));
    }
    out[key] = { ok, problems };
  }
  // The human's own widget: its rendered value must be visible (it is a widget by nature).
  const [wkey, wtext] = widget;
  const wnodes = textNodes(wtext);
  let wok = false;
  const wproblems = [];
  if (!wnodes.length) wproblems.push("widget value not rendered");
  for (const node of wnodes) {
    await reveal(node);
    const range = document.createRange();
    range.selectNodeContents(node);
    const v = visible(node.parentElement, range);
    if (!v) { wok = true; break; }
    wproblems.push(v);
  }
  out[wkey] = { ok: wok, problems: wproblems };
  return out;
}
"""

PROBE_JS = r"""
() => {
  const sheets = [];
  const collect = (list) => {
    for (const sheet of list) {
      try { for (const rule of sheet.cssRules) sheets.push(rule.cssText); } catch (e) {}
    }
  };
  collect(document.styleSheets);
  collect(document.adoptedStyleSheets || []);
  const links = [];
  for (const a of document.querySelectorAll("a[href], area[href], [xlink\\:href]")) {
    const href = (a.getAttribute("href") || a.getAttribute("xlink:href") || "").trim().toLowerCase();
    if (/^(javascript|data|vbscript):/.test(href.replace(/[\s\x00-\x1f]/g, ""))) links.push(href.slice(0, 80));
  }
  const text = document.body ? document.body.innerText : "";
  return {
    marks: window.__ocmemMarks || [],
    styleMarks: sheets.filter((t) => t.indexOf("pwned-") >= 0).map((t) => t.slice(0, 120)),
    domMarks: text.match(/PWNED-[A-Za-z0-9_-]+/g) || [],
    dangerousLinks: links,
    url: location.href,
  };
}
"""


# --- small helpers ------------------------------------------------------------------------------------


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Beacon:
    """Another origin on the loopback: every request any payload makes ends up here."""

    def __init__(self, port: int):
        hits: list[tuple[float, str, str]] = []  # (time, method, path)
        self.hits = hits
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                with lock:
                    hits.append((time.time(), self.command, self.path))
                path = self.path.split("?")[0]
                if path.endswith(".png"):
                    body, kind = PNG_1X1, "image/png"
                elif path.endswith(".css"):
                    body, kind = b"/* beacon */", "text/css"
                else:
                    body, kind = b"<!doctype html><title>beacon</title>", "text/html"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_POST = do_HEAD = do_PUT = _answer

            def do_OPTIONS(self) -> None:
                self._answer()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def since(self, start: float) -> list[tuple[float, str, str]]:
        return [h for h in list(self.hits) if h[0] >= start]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Space:
    """The ``/.fs`` API, as a human's client or a test fixture uses it (Bearer token)."""

    def __init__(self, url: str, token: str | None):
        self.url = url.rstrip("/")
        self.headers = {"X-Sync-Mode": "true"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def _call(self, method: str, name: str = "", body: bytes | None = None) -> tuple[int, bytes]:
        path = "/.fs" + ("/" + quote(name, safe="/") if name else "")
        request = urllib.request.Request(
            self.url + path, data=body, method=method, headers=self.headers
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def read(self, name: str) -> str | None:
        status, body = self._call("GET", name)
        if status == 404:
            return None
        if status != 200:
            raise RuntimeError(f"GET {name}: HTTP {status}")
        return body.decode("utf-8")

    def write(self, name: str, text: str) -> None:
        status, _ = self._call("PUT", name, text.encode("utf-8"))
        if status not in (200, 201, 204):
            raise RuntimeError(f"PUT {name}: HTTP {status}")

    def delete(self, name: str) -> None:
        self._call("DELETE", name)

    def listing(self) -> dict[str, int]:
        status, body = self._call("GET")
        if status != 200:
            raise RuntimeError(f"GET /.fs: HTTP {status} (token?)")
        return {item["name"]: item.get("lastModified", 0) for item in json.loads(body)}


@dataclass
class Sentinels:
    """The human's lines on one page; random so no payload can forge them."""

    nonce: str = field(default_factory=lambda: secrets.token_hex(4))

    @property
    def before(self) -> str:
        return f"HUMAN-{self.nonce}-A note de l'humain avant les entrées"

    @property
    def widget_source(self) -> str:
        return f'Compteur de l\'humain : ${{string.upper("human-{self.nonce}-w")}}'

    @property
    def widget_value(self) -> str:
        return f"HUMAN-{self.nonce.upper()}-W"

    @property
    def under(self) -> str:
        return f"HUMAN-{self.nonce}-B ligne tapée sous l'entrée"

    @property
    def last(self) -> str:
        return f"HUMAN-{self.nonce}-C dernière ligne de l'humain"

    def lines(self) -> list[tuple[str, str]]:
        """(key, full line) of the plain human lines."""
        return [(line.split(" ")[0], line) for line in (self.before, self.under, self.last)]

    def source_lines(self) -> list[str]:
        return [self.before, self.widget_source, self.under, self.last]

    def preamble(self, title: str) -> str:
        return f"# {title}\n\n{self.before}\n\n{self.widget_source}\n"


PAGE_TITLES = {"journal": "Journal", "pending": "Propositions en attente"}
# How an ocmem block starts on each page: a payload is judged only once its block is there.
BLOCK_HEADERS = {
    "journal": re.compile(r"^## \d{4}-\d{2}-\d{2} \d{2}:\d{2}", re.M),
    "pending": re.compile(r"^## P-\d{4} ", re.M),
}


class Ocmem:
    """The ocmem CLI in a fresh home, configured for the server like a user would."""

    def __init__(self, python: str, root: Path, url: str, token: str | None, inbox: str):
        self.python = python
        self.home = Path(tempfile.mkdtemp(prefix="ocmem-home-", dir=root))
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OCMEM_")}
        self.run("init")
        # The pages the browser opens, not this home's own Agents/Inbox/<home-id>/ pages.
        section: dict[str, Any] = {
            "url": url,
            "push": [
                {"local": f"memory/{page}.md", "remote": f"{inbox}{page}.md"}
                for page in PAGE_TITLES
            ],
        }
        if token:
            token_file = self.home / ".ocmem" / "silverbullet.token"
            token_file.parent.mkdir(parents=True, exist_ok=True)
            token_file.write_text(token + "\n", encoding="utf-8")
            token_file.chmod(0o600)
            section["token_file"] = str(token_file)
        # JSON is valid YAML: no YAML library needed here.
        (self.home / "ocmem.yaml").write_text(
            json.dumps({"silverbullet": section}, indent=1), encoding="utf-8"
        )

    def run(self, *args: str, stdin: object = None) -> subprocess.CompletedProcess[str]:
        data = None if stdin is None else json.dumps(stdin, ensure_ascii=False)
        return subprocess.run(
            [self.python, "-m", "ocmem", "--home", str(self.home), *args],
            input=data,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
        )

    def journal(self, fields: object) -> subprocess.CompletedProcess[str]:
        return self.run("journal", "add", stdin=fields)

    def push(self) -> None:
        result = self.run("push")
        if result.returncode not in (0, 3):
            raise RuntimeError(f"ocmem push failed ({result.returncode}): {result.stderr.strip()}")

    def cleanup(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)


def lesson_words(fields: dict[str, object]) -> str:
    """The words of a proposal's title, content and description, without any markup."""
    text = " ".join(str(fields.get(k, "")) for k in ("titre", "contenu", "description"))
    return " ".join(re.findall(r"[^\W_]{2,}", text))[:400] or "vérifier"


def entry_ref(result: subprocess.CompletedProcess[str]) -> str:
    match = re.search(r"journal \d{4}-\d{2}-\d{2} \d{2}:\d{2}(?:~\d+)?", result.stdout)
    if not match:
        raise RuntimeError(f"no journal reference in {result.stdout!r} / {result.stderr!r}")
    return match.group(0)


# --- one run ------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    id: str
    target: str
    kind: str
    failure: str
    status: str = "pushed"  # pushed | refused | error | control
    refusal: str = ""
    flags: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(CATEGORIES + INFO, False))
    evidence: dict[str, list[str]] = field(default_factory=dict)

    def flag(self, category: str, detail: str) -> None:
        self.flags[category] = True
        self.evidence.setdefault(category, []).append(detail[:300])

    @property
    def failed(self) -> list[str]:
        return [c for c in CATEGORIES if self.flags[c]]


def show_whole_page(tab: Any) -> None:
    """The editor scrolls inside the page: grow the window to the whole page."""
    height = tab.evaluate(
        "() => Math.max(document.documentElement.scrollHeight, "
        "...Array.from(document.querySelectorAll('.cm-scroller'), "
        "(e) => e.scrollHeight + 120))"
    )
    tab.set_viewport_size({"width": 1280, "height": min(int(height), 12_000)})
    tab.evaluate("() => document.querySelector('.cm-scroller')?.scrollTo(0, 0)")
    tab.wait_for_timeout(800)


class Rig:
    def __init__(self, args: argparse.Namespace, browser: Any, beacon: Beacon):
        self.args = args
        self.browser = browser
        self.beacon = beacon
        self.space = Space(args.sb_url, args.token)
        self.origin = "{0.scheme}://{0.netloc}".format(urlsplit(args.sb_url))
        self.inbox = args.inbox.strip("/") + "/"
        self.work = Path(tempfile.mkdtemp(prefix="ocmem-browser-"))
        user, _, password = args.user.partition(":")
        self.user, self.password = user, password
        self.baseline = self.space.listing()
        self.memory_page = "Agents/Memory/MEMORY.md"
        self.memory_text = f"# Mémoire\n\n- HUMAN-{secrets.token_hex(4)} fait validé par l'humain\n"

    # -- space state --
    def reset_space(self) -> None:
        """Back to the baseline: only pages this run created (or changed, for the inbox) go."""
        for name in self.space.listing():
            if name not in self.baseline or name.startswith(self.inbox):
                self.space.delete(name)
        self.space.write(self.memory_page, self.memory_text)
        self.baseline_after_reset = self.space.listing()

    def check_inbox_is_free(self) -> None:
        taken = [n for n in self.baseline if n.startswith(self.inbox)]
        if taken and not self.args.force:
            raise SystemExit(
                f"{self.inbox} already holds {len(taken)} file(s) on this server ({taken[:3]}…): "
                "run the corpus against a scratch space (or pass --force to let it delete them)"
            )

    def page_name(self, page: str) -> str:
        return f"{self.inbox}{page}.md"

    def require_landed(self, page: str) -> None:
        """A page without ocmem's block would pass every check: that is an error, not a pass."""
        name = self.page_name(page)
        if not BLOCK_HEADERS[page].search(self.space.read(name) or ""):
            raise RuntimeError(f"ocmem's push left no block on {name}: nothing to judge")

    def human_appends(self, page: str, line: str, blank_line: bool) -> None:
        name = self.page_name(page)
        text = self.space.read(name) or ""
        text = text.rstrip("\n") + ("\n\n" if blank_line else "\n") + line + "\n"
        self.space.write(name, text)

    # -- ocmem side --
    def write_payload(self, payload: Payload, outcome: Outcome) -> Sentinels | None:
        beacon = self.beacon.origin
        sentinels = Sentinels()
        for page in ("journal", "pending"):
            self.space.write(self.page_name(page), sentinels.preamble(PAGE_TITLES[page]))
        cli = Ocmem(
            self.args.ocmem_python, self.work, self.args.sb_url, self.args.token, self.inbox
        )
        try:
            if payload.page == "journal":
                result = cli.journal(payload.journal_fields(beacon))
            else:
                fields = payload.proposal_fields(beacon)
                # A source must show the lesson (ocmem refuses one that shares too few of its
                # keywords): the entry's lesson repeats the proposal's words, as plain words.
                source = entry_ref(cli.journal(dict(BASE_JOURNAL, lecon=lesson_words(fields))))
                fields.update(sources=[source], retiens_ca=True)
                result = cli.run("propose", stdin=fields)
            if result.returncode in (2, 3):
                outcome.status = "refused"
                outcome.refusal = (result.stderr or result.stdout).strip()[:300]
                outcome.flags["refused"] = True
                return None
            if result.returncode != 0:
                raise RuntimeError(f"ocmem exit {result.returncode}: {result.stderr.strip()}")
            cli.push()
            self.require_landed(payload.page)
            self.human_appends(payload.page, sentinels.under, blank_line=False)
            if payload.page == "journal":
                second = dict(BASE_JOURNAL, titre="Sauvegarde nocturne vérifiée", tags=["backup"])
                second.update(demande="vérifier la sauvegarde", fait="rsync relancé à la main")
                cli.journal(second).check_returncode()
            else:
                source2 = entry_ref(
                    cli.journal(dict(BASE_JOURNAL, titre="Rotation des journaux", tags=["logs"]))
                )
                cli.run(
                    "propose",
                    stdin={
                        "type": "fait",
                        "titre": "La rotation des journaux garde quatorze archives",
                        "contenu": "logrotate conserve quatorze archives compressées.",
                        "sources": [source2],
                        "retiens_ca": True,
                        "contradiction": "aucune",
                        "remplace": "rien",
                    },
                ).check_returncode()
            cli.push()
            self.human_appends(payload.page, sentinels.last, blank_line=True)
            return sentinels
        finally:
            cli.cleanup()

    def write_control(self, control: Control) -> Sentinels:
        sentinels = Sentinels()
        agent = expand(control.markdown, control.id, self.beacon.origin)
        drop_last = "@DROP-C@" in agent
        agent = agent.replace("@DROP-C@\n", "")
        for page in ("journal", "pending"):
            text = sentinels.preamble(PAGE_TITLES[page]) + "\n" + agent + sentinels.under + "\n"
            if not drop_last:
                text += "\n" + sentinels.last + "\n"
            self.space.write(self.page_name(page), text)
        return sentinels

    # -- browser side --
    def visit(self, page: str, sentinels: Sentinels, outcome: Outcome, shot: Path | None) -> None:
        from playwright.sync_api import Error as PlaywrightError

        url = f"{self.origin}/{quote(self.page_name(page)[: -len('.md')], safe='/')}"
        before = self.space.listing()
        start = time.time()
        requests: list[str] = []
        console: list[str] = []
        dialogs: list[str] = []
        navigations: list[str] = []
        popups: list[str] = []
        context = self.browser.new_context(
            viewport={"width": 1280, "height": 2400}, service_workers="allow"
        )
        context.add_init_script(INIT_SCRIPT)
        context.on("request", lambda r: requests.append(r.url))
        probes: list[dict[str, Any]] = []
        lines: dict[str, Any] = {}
        try:
            login = context.request.post(
                f"{self.origin}/.auth", form={"username": self.user, "password": self.password}
            )
            if '"ok"' not in login.text():
                raise RuntimeError(f"browser login refused: {login.text()[:200]}")
            tab = context.new_page()
            tab.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            tab.on("pageerror", lambda e: console.append(f"pageerror: {e}"))

            def on_dialog(dialog: Any) -> None:
                dialogs.append(f"{dialog.type}: {dialog.message}")
                dialog.dismiss()

            tab.on("dialog", on_dialog)
            tab.on(
                "framenavigated",
                lambda f: navigations.append(f.url) if f == tab.main_frame else None,
            )
            context.on("page", lambda p: popups.append(p.url) if p != tab else None)
            wait_js = (
                "(t) => Array.from(document.querySelectorAll('.cm-line'))"
                ".some((l) => l.textContent.includes(t))"
            )
            for attempt in ("load", "reload"):
                try:
                    if attempt == "load":
                        tab.goto(url, wait_until="domcontentloaded", timeout=30_000)
                    else:
                        tab.reload(wait_until="domcontentloaded", timeout=30_000)
                    # The human's widget renders once plugs, scripts and the page are in; a page
                    # whose widgets were turned off never shows it (the timeout is the finding).
                    tab.wait_for_function(
                        wait_js, arg=sentinels.widget_value, timeout=self.args.render_timeout * 1000
                    )
                except PlaywrightError as error:
                    console.append(f"rig: {attempt}: {str(error).splitlines()[0][:200]}")
                tab.wait_for_timeout(self.args.settle * 1000)
                try:
                    probes.append(tab.evaluate(PROBE_JS))
                except PlaywrightError as error:
                    console.append(f"rig: probe after {attempt}: {str(error).splitlines()[0]}")
            with contextlib.suppress(PlaywrightError):
                # CodeMirror renders only the lines near the viewport: show the whole page, or a
                # human line below the fold (after ocmem's gestures, at the page's end) would
                # read as hidden.
                show_whole_page(tab)
            try:
                lines = tab.evaluate(
                    CHECK_LINES_JS,
                    [
                        sentinels.lines(),
                        [sentinels.widget_value, sentinels.widget_value],
                        list(ALTERING_LINE_CLASSES),
                    ],
                )
            except PlaywrightError as error:
                lines = {"rig": {"ok": False, "problems": [str(error).splitlines()[0]]}}
            if shot:
                with contextlib.suppress(PlaywrightError):
                    tab.screenshot(path=str(shot), full_page=True)
        finally:
            context.close()
        time.sleep(0.3)  # last beacon hits in flight
        self.judge(
            outcome,
            page,
            url,
            start,
            requests,
            console,
            dialogs,
            navigations,
            popups,
            probes,
            lines,
            sentinels,
            before,
        )

    def judge(
        self,
        outcome: Outcome,
        page: str,
        url: str,
        start: float,
        requests: list[str],
        console: list[str],
        dialogs: list[str],
        navigations: list[str],
        popups: list[str],
        probes: list[dict[str, Any]],
        lines: dict[str, Any],
        sentinels: Sentinels,
        before: dict[str, int],
    ) -> None:
        # Executions: beacon /h/, markers, dialogs, pages written, Lua evaluation errors.
        for _, method, path in self.beacon.since(start):
            outcome.flag("other_origin", f"beacon {method} {path}")
            if path.startswith("/h/"):
                outcome.flag("execution", f"beacon {method} {path}")
            elif path.startswith("/c/"):
                outcome.flag("style", f"beacon {method} {path}")
        for text in console:
            if "PWNED-" in text:
                outcome.flag("execution", "console " + text)
            elif re.search(r"Error evaluating script|LuaRuntimeError|Lua error", text) and (
                self.inbox in text or outcome.id in text
            ):
                outcome.flag("execution", "lua evaluation " + text)
        for dialog in dialogs:
            outcome.flag("execution", "dialog " + dialog)
        for probe in probes:
            for mark in sorted(set(probe.get("marks", []) + probe.get("domMarks", []))):
                outcome.flag("execution", "DOM " + mark)
            for rule in probe.get("styleMarks", []):
                outcome.flag("style", "stylesheet " + rule)
            for link in probe.get("dangerousLinks", []):
                outcome.flag("latent_link", "link " + link)
        after = self.space.listing()
        for name, modified in after.items():
            if name in (self.page_name("journal"), self.page_name("pending")):
                continue
            if name not in before:
                outcome.flag("execution", f"page created: {name}")
            elif before[name] != modified:
                outcome.flag("execution", f"page modified: {name}")
        # Requests to another origin, from the page, its frames or the service worker.
        for request_url in requests:
            parts = urlsplit(request_url)
            if parts.scheme in ("data", "blob", "about", "javascript", "chrome-extension"):
                continue
            if f"{parts.scheme}://{parts.netloc}" != self.origin:
                outcome.flag("other_origin", request_url)
        # Redirects: the tab (or a new one) left the page.
        expected = urlsplit(url)
        for nav in navigations:
            parts = urlsplit(nav)
            if (parts.scheme, parts.netloc, parts.path) != (
                expected.scheme,
                expected.netloc,
                expected.path,
            ):
                outcome.flag("redirect", "navigated to " + nav)
        for popup in popups:
            outcome.flag("redirect", "new tab " + popup)
        # Hidden or altered human lines: in the editor, then byte for byte on the server.
        for key, result in lines.items():
            if not result.get("ok"):
                outcome.flag("hidden", f"{page} {key}: " + "; ".join(result.get("problems", [])))
        text = self.space.read(self.page_name(page)) or ""
        present = text.split("\n")
        for line in sentinels.source_lines():
            if line not in present:
                outcome.flag("hidden", f"{page}: server page lacks {line[:40]!r}")
        outcome.evidence.setdefault("console_tail", []).extend(
            [c[:200] for c in console if c.startswith(("error", "pageerror", "rig"))][-8:]
        )

    def run_payload(self, payload: Payload, shot: Path | None) -> Outcome:
        outcome = Outcome(payload.id, payload.target, payload.kind, payload.failure)
        self.reset_space()
        try:
            sentinels = self.write_payload(payload, outcome)
            if sentinels is not None:
                self.visit(payload.page, sentinels, outcome, shot)
        except Exception as error:  # one broken run must not stop the corpus
            outcome.status = "error"
            outcome.evidence.setdefault("error", []).append(repr(error)[:300])
        return outcome

    def run_control(self, control: Control) -> Outcome:
        outcome = Outcome(control.id, "raw page", "control", control.channel, status="control")
        self.reset_space()
        try:
            sentinels = self.write_control(control)
            self.visit("journal", sentinels, outcome, None)
        except Exception as error:
            outcome.status = "error"
            outcome.evidence.setdefault("error", []).append(repr(error)[:300])
        return outcome

    def run_showcase(self, payloads: list[Payload], shot: Path) -> Outcome:
        """All the given journal payloads as entries in a row on one page, for a screenshot."""
        outcome = Outcome("showcase", "journal", "showcase", "what the human sees")
        self.reset_space()
        sentinels = Sentinels()
        self.space.write(self.page_name("journal"), sentinels.preamble(PAGE_TITLES["journal"]))
        cli = Ocmem(
            self.args.ocmem_python, self.work, self.args.sb_url, self.args.token, self.inbox
        )
        try:
            for payload in payloads:
                if payload.page == "journal":
                    result = cli.journal(payload.journal_fields(self.beacon.origin))
                    if result.returncode:
                        outcome.flag("refused", payload.id)
            cli.push()
            self.require_landed("journal")
            self.human_appends("journal", sentinels.under, blank_line=False)
            self.human_appends("journal", sentinels.last, blank_line=True)
            self.visit("journal", sentinels, outcome, shot)
        finally:
            cli.cleanup()
        return outcome

    def close(self) -> None:
        self.reset_space()
        if self.memory_page not in self.baseline:
            self.space.delete(self.memory_page)
        shutil.rmtree(self.work, ignore_errors=True)


# --- report -------------------------------------------------------------------------------------------


def select(items: Sequence[Any], only: str) -> list[Any]:
    """Items named in ``only``: ids, kinds, or id prefixes ending with ``*`` (``jt-*``)."""
    if not only:
        return list(items)
    wanted = [w.strip() for w in only.split(",") if w.strip()]

    def chosen(item: Any) -> bool:
        for w in wanted:
            if w.endswith("*") and item.id.startswith(w[:-1]):
                return True
            if item.id == w or getattr(item, "kind", "") == w:
                return True
        return False

    return [item for item in items if chosen(item)]


def summarise(payloads: list[Outcome], controls: list[Outcome]) -> dict[str, Any]:
    def count(outcomes: Iterable[Outcome]) -> dict[str, int]:
        outcomes = list(outcomes)
        counts = {c: sum(o.flags[c] for o in outcomes) for c in CATEGORIES + INFO}
        counts["payloads"] = len(outcomes)
        counts["pushed"] = sum(o.status == "pushed" for o in outcomes)
        counts["errors"] = sum(o.status == "error" for o in outcomes)
        counts["any_failure"] = sum(bool(o.failed) for o in outcomes)
        return counts

    by_target = {
        t: count(o for o in payloads if o.target == t) for t in sorted({o.target for o in payloads})
    }
    by_kind = {
        k: count(o for o in payloads if o.kind == k) for k in sorted({o.kind for o in payloads})
    }
    expected = {c.id: c.expect for c in CONTROLS}
    missed = [
        o.id
        for o in controls
        if (expected[o.id] and not o.flags[expected[o.id]]) or (not expected[o.id] and o.failed)
    ]
    return {
        "totals": count(payloads),
        "by_target": by_target,
        "by_kind": by_kind,
        "controls_missed": missed,
    }


def print_table(summary: dict[str, Any], out: Any = sys.stdout) -> None:
    columns = ("payloads", "refused", "pushed", *CATEGORIES, "any_failure", "latent_link", "errors")
    width = max(len(k) for k in [*summary["by_target"], *summary["by_kind"], "TOTAL"]) + 2
    header = "".ljust(width) + "".join(c[:12].rjust(13) for c in columns)
    for title, rows in (
        ("per target field", summary["by_target"]),
        ("per kind", summary["by_kind"]),
    ):
        print(f"\n{title}\n{header}", file=out)
        for name, row in rows.items():
            print(name.ljust(width) + "".join(str(row[c]).rjust(13) for c in columns), file=out)
    total = summary["totals"]
    print("TOTAL".ljust(width) + "".join(str(total[c]).rjust(13) for c in columns), file=out)
    missed = summary["controls_missed"]
    print(f"\ncontrols missed: {', '.join(missed) if missed else 'none'}", file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sb-url", required=True, help="the SilverBullet server, e.g. http://127.0.0.1:3000"
    )
    parser.add_argument(
        "--token", default=os.environ.get("OCMEM_TEST_SILVERBULLET_TOKEN"), help="its SB_AUTH_TOKEN"
    )
    parser.add_argument(
        "--token-file", type=Path, help="a file holding the token (instead of --token)"
    )
    parser.add_argument(
        "--user", required=True, help="user:password of its SB_USER (the browser logs in)"
    )
    parser.add_argument(
        "--beacon-port",
        type=int,
        default=0,
        help="port of the other-origin beacon (0: any free port)",
    )
    parser.add_argument(
        "--out", type=Path, required=True, help="folder for report.json (and screenshots)"
    )
    parser.add_argument(
        "--ocmem-python", default=sys.executable, help="a Python that can run `-m ocmem`"
    )
    parser.add_argument(
        "--chromium", default=os.environ.get("OCMEM_TEST_CHROMIUM", "/usr/bin/chromium")
    )
    parser.add_argument("--inbox", default="Agents/Inbox/", help="the inbox folder ocmem pushes to")
    parser.add_argument(
        "--only", default="", help="comma-separated ids, kinds or id prefixes (jt-*)"
    )
    parser.add_argument("--no-controls", action="store_true", help="skip the raw controls")
    parser.add_argument("--controls-only", action="store_true")
    parser.add_argument(
        "--settle", type=float, default=3.0, help="seconds to wait after each render"
    )
    parser.add_argument(
        "--render-timeout", type=float, default=25.0, help="seconds to wait for the page to render"
    )
    parser.add_argument("--screenshots", action="store_true", help="a PNG per run in --out")
    parser.add_argument(
        "--showcase",
        action="store_true",
        help="instead of the corpus: the selected journal payloads (--only, default "
        f"{','.join(SHOWCASE)}) as entries in a row on one page, screenshot in --out/showcase.png",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 if a payload got through or a control was missed",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="run even if the inbox already holds files (they are deleted)",
    )
    args = parser.parse_args(argv)
    if args.token_file:
        args.token = args.token_file.read_text(encoding="utf-8").strip()

    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    payloads = [] if args.controls_only else select(PAYLOADS, args.only)
    controls = [] if args.no_controls else select(CONTROLS, args.only if args.controls_only else "")
    beacon = Beacon(args.beacon_port)
    results: list[Outcome] = []
    control_results: list[Outcome] = []
    with sync_playwright() as pw:
        # launch() gives the browser a fresh temporary profile; each run also gets its own
        # context (own cookies, IndexedDB and service worker).
        browser = pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        rig = Rig(args, browser, beacon)
        rig.check_inbox_is_free()
        if args.showcase:
            try:
                by_id = {p.id: p for p in PAYLOADS}
                chosen = select(PAYLOADS, args.only) if args.only else [by_id[i] for i in SHOWCASE]
                outcome = rig.run_showcase(chosen, args.out / "showcase.png")
            finally:
                rig.close()
                browser.close()
                beacon.close()
            print(json.dumps(asdict(outcome), indent=1, ensure_ascii=False))
            print(f"screenshot: {args.out / 'showcase.png'}")
            return 0
        try:
            for control in controls:
                outcome = rig.run_control(control)
                control_results.append(outcome)
                log(
                    f"control {control.id:<22} expect {control.expect or '-':<13} got {','.join(outcome.failed) or '-'}"
                )
            for number, payload in enumerate(payloads, 1):
                shot = args.out / f"{payload.id}.png" if args.screenshots else None
                outcome = rig.run_payload(payload, shot)
                results.append(outcome)
                shown = (
                    outcome.status
                    if outcome.status != "pushed"
                    else (",".join(outcome.failed) or "ok")
                )
                log(f"[{number}/{len(payloads)}] {payload.id:<22} {payload.target:<22} {shown}")
        finally:
            rig.close()
            browser.close()
            beacon.close()
    summary = summarise(results, control_results)
    report = {
        "sb_url": args.sb_url,
        "beacon": beacon.origin,
        "settle_seconds": args.settle,
        "summary": summary,
        "controls": [asdict(o) for o in control_results],
        "payloads": [asdict(o) for o in results],
    }
    (args.out / "report.json").write_text(
        json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8"
    )
    print_table(summary)
    print(f"report: {args.out / 'report.json'}")
    if args.strict and (summary["totals"]["any_failure"] or summary["controls_missed"]):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
