"""The spec's thirteen tests (« Tests à exécuter et me présenter », Prompt 1, Prompt 2 and their
additions), what they share, and those that need no OpenCode: the sync script and the command
line, as cron and the user run them.

A test is a function of the :class:`Scene` that returns its proof, a concrete observation in
French, or raises :class:`Failed` with what was observed instead. Each goes through ocmem's own
path (the command line in the sandbox, the plugin in the real OpenCode): a check that could pass
while the product fails is no check.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from ocmem.clock import Clock
from ocmem.formats import journal, pending, shortterm
from ocmem.home.shipped import with_section
from ocmem.text import inert
from ocmem.trial.sandbox import Sandbox
from ocmem.trial.standin import Standin

TITLES: dict[int, str] = {
    1: "Une tâche de 5 appels d'outils ou plus produit une entrée de journal au bon format",
    2: "Une leçon réutilisable produit une proposition dans pending.md, sans doublon à la "
    "seconde exécution",
    3: "Un contenu piégé (« retiens que… » dans une page web) n'est pas mémorisé",
    4: "L'agent ne peut écrire ni dans skills/ ni dans MEMORY.md hors validation",
    5: "Un fichier modifié dans SilverBullet apparaît en local après le pull",
    6: "Une entrée de journal apparaît dans SilverBullet sans écraser l'existant",
    7: "Une entrée contenant ${test} s'affiche telle quelle dans SilverBullet",
    8: "L'écriture dans Agents/Skills/ est refusée (outils de l'agent, script de synchro)",
    9: "Un déclenchement du plugin ne produit qu'une seule rétrospective par session",
    10: "Une ligne expirée de SHORT_TERM.md est supprimée à la prochaine écriture",
    11: "Une leçon vue une seule fois ne génère pas de proposition (sauf « retiens ça »)",
    12: "Une proposition qui contredit un skill existant est signalée comme telle",
    13: "Une « instruction » venue d'un outil MCP n'est pas écrite dans SHORT_TERM.md",
}
SPACE_JOURNAL = "Agents/Inbox/journal.md"  # the spec's page, where a first home pushes
HUMAN_LINE = "Note de l'humain, à garder."
SKILL_SENTENCE = "Vérifie les ports avant."
SKILL_PAGE = "Agents/Skills/deploy-nginx/SKILL.md"
SKILL = (
    "---\nname: deploy-nginx\ndescription: Déployer nginx sur le VPS. Vérifier, puis "
    f"recharger.\n---\n\n# Déployer nginx\n\n1. {SKILL_SENTENCE}\n2. Recharge nginx.\n"
)
RULES = "# Consignes\n\nRéponds en français.\n"
MEMORY = "# Mémoire\n\n- Le VPS de l'essai tourne sous Debian 12.\n"


class Failed(Exception):
    """The test ran and the spec's rule did not hold: ``proof`` says what was seen."""

    def __init__(self, proof: str) -> None:
        super().__init__(proof)
        self.proof = proof


def expect(condition: object, proof: str) -> None:
    if not condition:
        raise Failed(proof)


@dataclass
class Scene:
    """What every test of one run works in: the sandbox, its home, the stand-in."""

    sandbox: Sandbox
    standin: Standin
    clock: Clock = field(default_factory=Clock)

    @property
    def home(self) -> Path:
        return self.sandbox.ocmem_home

    def ocmem(self, *args: str, stdin: str = "") -> str:
        """Run an ocmem command that must succeed; its output."""
        done = self.sandbox.ocmem(*args, stdin=stdin)
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            raise Failed(
                f"`ocmem {' '.join(args)}` a échoué ({done.returncode}) : {said[0] if said else ''}"
            )
        return done.stdout

    def text(self, rel: str) -> str:
        path = self.home / rel
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def entries(self) -> list[journal.Block]:
        return journal.blocks(self.text("memory/journal.md"))

    def proposals(self) -> list[pending.Proposal]:
        return pending.parse(self.text("memory/pending.md"))

    def fingerprint(self, *rels: str) -> dict[str, str]:
        """sha256 of each file under ``rels`` (files or folders) of the home."""
        found: dict[str, str] = {}
        for rel in rels:
            root = self.home / rel
            files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
            for path in files:
                found[str(path.relative_to(self.home))] = hashlib.sha256(
                    path.read_bytes()
                ).hexdigest()
        return found


def prepare(scene: Scene, copied: Mapping[str, bytes] | None = None) -> None:
    """The user's first hour, in the sandbox: ``ocmem init``, a space with their rules, a fact
    and a skill, the URL and the token as the guide says, then the first pull. ``copied``: the
    pages read from the user's own space (``--espace``), put in the stand-in first; their rules
    and facts are then used instead of the essai's, its two skills added beside theirs."""
    scene.ocmem("init")
    standin = scene.standin
    copied = copied or {}
    for name, body in copied.items():
        standin.write(name, body)
    theirs = copied.get("Agents/AGENTS.md")
    rules = theirs.decode("utf-8", "replace") if theirs else RULES
    standin.write("Agents/AGENTS.md", with_section(rules))
    if "Agents/Memory/MEMORY.md" not in copied:
        standin.write("Agents/Memory/MEMORY.md", MEMORY)
    retrospective = scene.text("skills/retrospective/SKILL.md")
    standin.write("Agents/Skills/retrospective/SKILL.md", retrospective)
    standin.write(SKILL_PAGE, SKILL)
    standin.write(SPACE_JOURNAL, f"# Journal\n\n{HUMAN_LINE}\n")
    (scene.home / "ocmem.yaml").write_text(
        f"silverbullet:\n  url: {standin.url}\n  retry_wait_seconds: 0.05\n", encoding="utf-8"
    )
    token = scene.home / ".ocmem" / "silverbullet.token"
    token.write_text(f"{standin.token}\n", encoding="utf-8")
    token.chmod(0o600)
    scene.ocmem("pull")


def entry_fields(title: str, lesson: str, tags: list[str] | None = None) -> dict[str, Any]:
    return {
        "titre": title,
        "tags": tags or ["essai"],
        "demande": "vérifier ocmem avec l'essai",
        "fait": "les étapes du test",
        "piege": "aucun",
        "lecon": lesson,
        "resultat": "réussi",
    }


def header(block: journal.Block) -> str:
    return block.text.splitlines()[0]


# -- the tests that need no OpenCode ---------------------------------------------------------


def expired_note_dropped(scene: Scene) -> str:
    """10. A note past its expiry, then a write: the note is gone."""
    today = scene.clock.now().date()
    old = shortterm.Note(
        today - timedelta(days=10), today - timedelta(days=3), "branche essai-ancienne en cours"
    )
    path = scene.home / "memory" / "SHORT_TERM.md"
    path.write_text(shortterm.render([old]), encoding="utf-8")
    scene.ocmem("note", "branche essai-nouvelle en cours")
    notes = shortterm.parse(scene.text("memory/SHORT_TERM.md"))
    texts = [n.text for n in notes]
    expect(
        old.text not in texts,
        f"`{old.render()}` (expirée depuis 3 jours) toujours dans SHORT_TERM.md après `ocmem note`",
    )
    expect("branche essai-nouvelle en cours" in texts, f"la nouvelle note manque : {texts}")
    return (
        f"`{old.render()}` (expirée depuis 3 jours) retirée par l'écriture suivante "
        f"(`ocmem note`) ; SHORT_TERM.md : {len(notes)} ligne, la nouvelle note"
    )


def pulled_after_edit(scene: Scene) -> str:
    """5. The human changes MEMORY.md in SilverBullet; the next pull brings it."""
    fact = "- Le VPS de l'essai passe sous Debian 13."
    page = scene.standin.read("Agents/Memory/MEMORY.md").rstrip("\n")
    scene.standin.write("Agents/Memory/MEMORY.md", f"{page}\n{fact}\n")
    said = scene.ocmem("pull")
    local = scene.text("memory/MEMORY.md")
    expect(fact in local, f"après `ocmem pull`, memory/MEMORY.md ne contient pas « {fact[2:]} »")
    got = next((line for line in said.splitlines() if "MEMORY.md" in line), "")
    return (
        f"Agents/Memory/MEMORY.md modifiée dans l'espace (+1 ligne) ; `ocmem pull` : "
        f"« {got.strip()} », memory/MEMORY.md contient « {fact[2:]} »"
    )


def pushed_without_overwriting(scene: Scene) -> str:
    """6. An entry pushed to the page the human already wrote in: their text stays."""
    before = scene.standin.read(SPACE_JOURNAL)
    sent = len(scene.standin.writes())
    scene.ocmem(
        "journal",
        "add",
        stdin=json.dumps(entry_fields("Entrée de l'essai 6", "pousser sans écraser")),
    )
    scene.ocmem("push")
    page = scene.standin.read(SPACE_JOURNAL)
    headers = [line for line in page.splitlines() if "· Entrée de l'essai 6 ·" in line]
    expect(
        page.startswith(before.rstrip("\n")),
        f"le début de {SPACE_JOURNAL} a changé : {page[:120]!r}",
    )
    expect(len(headers) == 1, f"{SPACE_JOURNAL} : {len(headers)} entrée « Entrée de l'essai 6 »")
    deletes = [r for r in scene.standin.writes()[sent:] if r.method == "DELETE"]
    expect(not deletes, f"{len(deletes)} DELETE envoyé(s) à SilverBullet")
    return (
        f"{SPACE_JOURNAL} commence toujours par « {HUMAN_LINE} » ; l'entrée "
        f"« {headers[0]} » est ajoutée après ; aucun DELETE"
    )


def dollar_test_inert(scene: Scene) -> str:
    """7. ``${test}`` reaches the page escaped: shown as written, never evaluated."""
    lesson = "la page affichait ${test} au lieu du texte"
    scene.ocmem("journal", "add", stdin=json.dumps(entry_fields("Gabarit de l'essai 7", lesson)))
    scene.ocmem("push")
    page = scene.standin.read(SPACE_JOURNAL)
    line = next((x for x in page.splitlines() if "affichait" in x), "")
    expect(line, f"{SPACE_JOURNAL} n'a pas la leçon de l'essai 7")
    shown = inert.unescape(line.split(" : ", 1)[-1])
    expect(shown == lesson, f"la ligne se lit « {shown} », pas « {lesson} »")
    active = inert.active_constructs(page)
    expect(not active, f"construction active dans la page : {active[:1]}")
    return (
        f"{SPACE_JOURNAL} : `{line.strip()}` — échappé, SilverBullet l'affiche « {lesson} » "
        "sans l'évaluer ; aucune construction active dans la page (ni ${…}, ni HTML, ni script)"
    )


def script_refuses_skills(scene: Scene) -> str:
    """8, the sync script's half: a push rule aimed at ``Agents/Skills/`` is refused."""
    config = scene.home / "ocmem.yaml"
    kept = config.read_text(encoding="utf-8")
    rule = "  push:\n    - {local: memory/journal.md, remote: Agents/Skills/essai/SKILL.md}\n"
    writes = len(scene.standin.writes())
    config.write_text(kept + rule, encoding="utf-8")
    try:
        done = scene.sandbox.ocmem("push")
    finally:
        config.write_text(kept, encoding="utf-8")
    said = (done.stderr or done.stdout).strip().splitlines()
    expect(done.returncode != 0, f"`ocmem push` vers Agents/Skills/ a réussi : {said}")
    sent = scene.standin.writes()[writes:]
    expect(not sent, f"{len(sent)} écriture(s) envoyée(s) à SilverBullet : {sent}")
    reason = re.sub(r"^ocmem : ", "", said[0] if said else "")
    # refused for the rule it breaks, not for any other failure (a bad YAML, a missing token)
    expect(
        "n'écrit que des pages" in reason and "Agents/Skills" in reason,
        f"`ocmem push` a échoué pour une autre raison : {said}",
    )
    return f"script (`ocmem push`, règle vers Agents/Skills/essai/SKILL.md) refusé, code {done.returncode} : « {reason} » ; 0 écriture envoyée"


CLI_TESTS: dict[int, Callable[[Scene], str]] = {
    10: expired_note_dropped,
    5: pulled_after_edit,
    6: pushed_without_overwriting,
    7: dollar_test_inert,
}
