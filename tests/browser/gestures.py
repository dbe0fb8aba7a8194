"""The review page's gestures in SilverBullet's real web client, driven in headless Chromium.

By hand, against a real SilverBullet on a **scratch space** (it writes Agents/ and Library/):

1. a human installs the Library page: pastes ``ocmem init --show-library`` into ``Library/ocmem``
   in the editor (the clipboard), and the driver checks the server holds it byte for byte;
2. MEMORY.md already holds two facts; a fresh ocmem home pulls them, writes two journal entries
   and proposes four things (a fact, a fact that replaces one of MEMORY.md's, a skill, a fact to
   refuse), and pushes;
3. the human opens ``ocmem:Revue`` and clicks *Promouvoir* under the fact, the replacement and
   the skill, *Refuser* under the fourth (typing the reason into SilverBullet's prompt), then
   retires the other fact with « ocmem: Retirer un fait ou un skill » (palette, picker, prompt);
   A fifth proposal the human edits in the pending page first (in the editor) must be refused by
   *Promouvoir*, nothing written (ocmem has not read the edit yet); after ``ocmem sync`` it is
   promoted as the human wrote it;
4. ``ocmem sync``: the page now offers *Annuler* under the promotions; the human takes back the
   replacement (the old fact back in its place, its archive entry out) and the skill (its page
   deleted);
5. ``ocmem pull``: MEMORY.md, the skill, ARCHIVE.md and the local statuses must say the same.

Only the standard library and Playwright (imported lazily); ocmem runs as a subprocess. From
``tests/``: ``python -m browser.gestures --sb-url http://127.0.0.1:3117 --user admin:pw
--ocmem-python ../.venv/bin/python`` (``OCMEM_TEST_SILVERBULLET_TOKEN`` holds the token).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from browser.drive import CHROMIUM_ARGS, Space, entry_ref, log

OLD_PORT = "Le port SSH du VPS est 2222. (2026-11-20, Source : à la main ; P-0042)"
TO_RETIRE = "Le serveur de test est arrêté le vendredi. (2026-11-21, Source : à la main ; P-0043)"
MEMORY = f"# Mémoire\n\nFaits stables validés par l'humain.\n\n- {OLD_PORT}\n- {TO_RETIRE}\n"
SKILL_DRAFT = "# Déployer\n\n1. Vérifier les ports libres (`ss -ltn`).\n2. `docker compose up -d`"
PROPOSALS = {
    "fait": {"type": "fait", "titre": "Traefik", "contenu": "Le port 8080 est pris par Traefik."},
    "remplacement": {"type": "fait", "titre": "SSH", "contenu": "Le port SSH du VPS est 2200."},
    "skill": {
        "type": "skill",
        "titre": "Déployer",
        "name": "deploy-vps",
        "description": "Déploie un service sur le VPS. À utiliser avant tout déploiement.",
        "contenu": SKILL_DRAFT,
    },
    "refus": {"type": "fait", "titre": "Sauvegardes", "contenu": "Les sauvegardes tournent à 3 h."},
    "modifiée": {"type": "fait", "titre": "Proxy", "contenu": "Le proxy écoute sur le port 8443."},
}
REASON = "déjà noté dans le runbook"
# The cards of the review page, each after its proposal's heading line: [id, …] in page order.
CARDS_JS = """() => {
  const out = []; let last = null;
  for (const el of document.querySelectorAll('.cm-line, .ocmem-proposal')) {
    if (el.classList.contains('ocmem-proposal')) { out.push(last); continue; }
    const m = el.className.includes('sb-line-h2') && el.textContent.match(/(P-\\d{4,}) · /);
    if (m) last = m[1];
  }
  return out;
}"""


class Home:
    """A fresh ocmem home on the server, configured as a user would."""

    def __init__(self, python: str, url: str, token: str):
        self.python = python
        self.home = Path(tempfile.mkdtemp(prefix="ocmem-gestures-"))
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OCMEM_")}
        token_file = self.home / "sb.token"
        token_file.write_text(token + "\n", encoding="utf-8")
        token_file.chmod(0o600)
        self.run("init", "--id-dossier", "essai").check_returncode()
        section = {"url": url, "token_file": str(token_file)}
        (self.home / "ocmem.yaml").write_text(json.dumps({"silverbullet": section}), "utf-8")

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

    def checked(self, *args: str, stdin: object = None) -> str:
        done = self.run(*args, stdin=stdin)
        if done.returncode != 0:
            raise RuntimeError(f"ocmem {' '.join(args)}: {done.returncode} {done.stderr.strip()}")
        return done.stdout


def prepare(space: Space, home: Home) -> dict[str, str]:
    """MEMORY.md in the space, pulled; four proposals pushed. Returns kind → proposal id."""
    space.write("Agents/Memory/MEMORY.md", MEMORY)
    home.checked("pull")
    refs = []
    for title in ("Ports et déploiement", "Sauvegardes et SSH"):
        entry: dict[str, object] = {
            "titre": title,
            "tags": ["vps"],
            "demande": "déployer le service",
            "fait": "Traefik prend le port 8080 ; le port SSH du VPS est 2200 ; sauvegardes à 3 h",
            "piege": "le port 8080 est pris par Traefik",
            "lecon": "Le port SSH du VPS est 2200. Déployer : vérifier les ports libres (ss -ltn), "
            "puis docker compose up -d. Les sauvegardes tournent à 3 h. Le proxy écoute sur le "
            "port 8443.",
            "resultat": "réussi",
        }
        refs.append(entry_ref(home.run("journal", "add", stdin=entry)))
    ids = {}
    for kind, fields in PROPOSALS.items():
        data: dict[str, object] = {
            "sources": refs,
            "contradiction": "aucune",
            "remplace": "rien",
            **fields,
        }
        out = home.checked("propose", stdin={**data, "retiens_ca": True})
        ids[kind] = re.findall(r"P-\d{4}", out)[0]
    home.checked("push")
    return ids


def notification(tab: Any, gid: str) -> tuple[str, str]:
    """The flash the page showed for ``gid``: (kind, message)."""
    found = tab.wait_for_function(
        """(gid) => { for (const n of document.querySelectorAll('.sb-notifications > div'))
             if (n.textContent.includes(gid)) return [n.className, n.textContent]; return null; }""",
        arg=gid,
        timeout=20_000,
    ).json_value()
    return found[0], found[1]


def palette(tab: Any, command: str) -> None:
    """A command run as a human does: the palette, its name, Enter."""
    tab.locator(".cm-line").first.click(position={"x": 5, "y": 5})
    tab.keyboard.press("Control+/")
    tab.wait_for_selector(".sb-result-list", timeout=10_000)
    tab.keyboard.type(command)
    tab.wait_for_timeout(500)
    tab.keyboard.press("Enter")


def cards(tab: Any) -> list[str]:
    tab.wait_for_timeout(1500)  # the widgets render after the page
    return list(tab.evaluate(CARDS_JS))


def click(tab: Any, pid: str, button: str, reason: str | None) -> tuple[str, str]:
    """The button under ``pid``'s block on the review page; the page reloads itself after."""
    shown = cards(tab)
    if pid not in shown:
        raise RuntimeError(f"no card for {pid} on the review page: {shown}")
    tab.locator(".ocmem-proposal").nth(shown.index(pid)).get_by_role("button", name=button).click()
    if reason is not None:
        tab.wait_for_selector(".sb-prompt-input", timeout=10_000)
        tab.locator(".sb-prompt-input").fill(reason)
        tab.keyboard.press("Enter")
    return notification(tab, pid)


def edit_block(tab: Any, origin: str, page: str, text: str, added: str) -> None:
    """The human types at the end of the line holding ``text`` in ``page``, in the editor."""
    tab.goto(f"{origin}/{page}", wait_until="domcontentloaded")
    line = tab.locator(".cm-line", has_text=text).first
    line.wait_for(timeout=30_000)
    line.click()
    tab.keyboard.press("End")
    tab.keyboard.type(added)
    tab.wait_for_timeout(3000)  # saved a second after the last keystroke


def retire(tab: Any, line: str, reason: str) -> tuple[str, str]:
    """« ocmem: Retirer un fait ou un skill » from the palette: the fact picked, the reason."""
    palette(tab, "ocmem: Retirer un fait")
    tab.wait_for_timeout(800)
    tab.keyboard.type(line[:40])
    tab.wait_for_timeout(500)
    tab.keyboard.press("Enter")
    tab.wait_for_selector(".sb-prompt-input", timeout=10_000)
    tab.locator(".sb-prompt-input").fill(reason)
    tab.keyboard.press("Enter")
    return notification(tab, "retiré")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    token = os.environ["OCMEM_TEST_SILVERBULLET_TOKEN"]
    space = Space(args.sb_url, token)
    for name in space.listing():  # a scratch space: what an earlier run left goes
        if name.startswith("Agents/") or name == "Library/ocmem.md":
            space.delete(name)
    home = Home(args.ocmem_python, args.sb_url, token)
    user, password = args.user.split(":", 1)
    report: dict[str, Any] = {"home": str(home.home), "clicks": {}}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        context = browser.new_context(
            viewport={"width": 1280, "height": 3000},
            permissions=["clipboard-read", "clipboard-write"],
        )
        login = context.request.post(
            f"{args.sb_url}/.auth", form={"username": user, "password": password}
        )
        assert '"ok"' in login.text(), login.text()
        tab = context.new_page()
        messages: list[str] = []
        tab.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
        # 1. The human installs the Library page by pasting it.
        page = home.checked("init", "--show-library")
        tab.goto(f"{args.sb_url}/Library/ocmem", wait_until="domcontentloaded")
        tab.wait_for_selector(".cm-content", timeout=60_000)
        tab.wait_for_timeout(2000)
        tab.locator(".cm-content").first.click()
        tab.keyboard.press("Control+A")
        tab.keyboard.press("Delete")
        tab.evaluate("(t) => navigator.clipboard.writeText(t)", page)
        tab.keyboard.press("Control+V")
        deadline = time.time() + 30
        while space.read("Library/ocmem.md") != page and time.time() < deadline:
            time.sleep(0.5)
        report["library_installed_exactly"] = space.read("Library/ocmem.md") == page
        tab.wait_for_timeout(3000)
        # 2. ocmem proposes and pushes.
        ids = prepare(space, home)
        report["ids"] = ids
        # A fresh client loads space scripts once the space is indexed: a human waits too.
        tab.reload(wait_until="domcontentloaded")
        deadline = time.time() + 120
        while not any("[Lua] Loaded" in m for m in messages[-200:]) and time.time() < deadline:
            tab.wait_for_timeout(500)
        tab.wait_for_timeout(2000)
        # 3. The human decides on the review page.
        try:
            for attempt in range(4):  # the client may still be loading its scripts: again
                palette(tab, "ocmem: Revue des propositions")
                try:
                    tab.wait_for_selector(".ocmem-proposal", timeout=15_000)
                    break
                except Exception:
                    report["review_reopened"] = attempt + 1
            for kind in ("fait", "remplacement", "skill"):
                report["clicks"][kind] = click(tab, ids[kind], "Promouvoir", None)
            report["clicks"]["refus"] = click(tab, ids["refus"], "Refuser", REASON)
            pending = next(n for n in space.listing() if n.endswith("/pending.md"))[:-3]
            edit_block(tab, args.sb_url, pending, "écoute sur le port 8443", " (corrigé)")
            report["edited_on_server"] = "8443. (corrigé)" in (space.read(pending + ".md") or "")
            palette(tab, "ocmem: Revue des propositions")
            tab.wait_for_selector(".ocmem-proposal", timeout=30_000)
            report["clicks"]["modifiée"] = click(tab, ids["modifiée"], "Promouvoir", None)
            report["left_on_review_page"] = cards(tab)
            # ocmem reads the human's edit (pull), computes its gestures again (push): promoted.
            report["sync"] = home.run("sync").returncode
            tab.wait_for_timeout(25_000)  # the client syncs the space every 20 s
            palette(tab, "ocmem: Revue des propositions")
            tab.wait_for_selector(".ocmem-proposal", timeout=30_000)
            report["clicks"]["relue"] = click(tab, ids["modifiée"], "Promouvoir", None)
            report["clicks"]["retrait"] = retire(tab, TO_RETIRE, "plus de serveur de test")
            # 4. ocmem reads the promotions (pull) and offers to take them back (push).
            report["sync_before_undo"] = home.run("sync").returncode
            tab.wait_for_timeout(25_000)
            palette(tab, "ocmem: Revue des propositions")
            tab.wait_for_selector(".ocmem-proposal", timeout=30_000)
            for kind in ("remplacement", "skill"):
                report["clicks"][f"annulation {kind}"] = click(tab, ids[kind], "Annuler", None)
        except Exception:
            if args.out:
                tab.screenshot(path=str(args.out.with_suffix(".png")))
            log("\n".join(m for m in messages if "Now evaluating" not in m)[-3000:])
            raise
        report["console_errors"] = [m for m in messages if m.startswith("error")][:20]
        browser.close()
    # 5. ocmem pulls what the page wrote.
    report["pull"] = home.run("pull").stdout
    memory = (home.home / "memory/MEMORY.md").read_text(encoding="utf-8")
    archive = (home.home / "memory/ARCHIVE.md").read_text(encoding="utf-8")
    skill = home.home / "skills/deploy-vps/SKILL.md"
    statuses = home.checked("pending", "list", "--toutes")
    waiting = [line for line in statuses.splitlines() if "en attente" in line]
    report["checks"] = {
        "fact_in_memory": "Le port 8080 est pris par Traefik." in memory,
        "replacement_undone": "Le port SSH du VPS est 2200." not in memory and OLD_PORT in memory,
        "retired_gone": TO_RETIRE not in memory,
        "skill_undone": not skill.exists(),
        "edited_promoted_once_read": "port 8443. (corrigé)" in memory,
        "archive_replacement_undone": "fait remplacé" not in archive,
        "archive_retired": "fait retiré" in archive and TO_RETIRE in archive,
        "undone_wait_again": all(
            any(ids[k] in line for line in waiting) for k in ("remplacement", "skill")
        ),
    }
    report["statuses"] = statuses
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sb-url", required=True)
    parser.add_argument("--user", required=True, help="user:password (SB_USER)")
    parser.add_argument("--ocmem-python", default=sys.executable)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    report = run(args)
    text = json.dumps(report, ensure_ascii=False, indent=1)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)
    edited_refused = report["clicks"]["modifiée"][0].endswith("error")
    others_done = not any(
        kind.endswith("error") for name, (kind, _) in report["clicks"].items() if name != "modifiée"
    )
    checks = all(report["checks"].values()) and report["library_installed_exactly"]
    ok = checks and edited_refused and others_done
    return 0 if ok else 1


if __name__ == "__main__":
    log("review page gestures in the real web client")
    sys.exit(main())
