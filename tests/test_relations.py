"""Facts that change (issue 21), on a labelled corpus (tests/data/relations.yaml): the relation
rules alone (ocmem.text.relations), then each case through a real proposal against a MEMORY.md
fact, a skill or a waiting proposal. Its figures are the ones docs/benchmarks.md quotes."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from conftest import Clock, journal_fields
from ocmem.errors import Refused
from ocmem.formats import memorymd, pending, skills
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from ocmem.setup.install import Installer
from ocmem.text import relations

REPO = Path(__file__).resolve().parents[1]
CORPUS: dict[str, list[dict[str, str]]] = yaml.safe_load(
    (REPO / "tests/data/relations.yaml").read_text(encoding="utf-8")
)
CASES = [c for section in ("changes", "controls", "heldout") for c in CORPUS[section]]
CHANGED = {relations.REPLACES, relations.REFINES, relations.CONTRADICTS, relations.NEAR}


def expected(case: dict[str, str], kind: str) -> bool:
    label = case["label"]
    return {
        "change": kind in CHANGED,
        "opposite": kind == relations.CONTRADICTS,
        "same": kind == relations.SAME,
        "unrelated": kind == relations.UNRELATED,
    }[label]


def test_the_corpus_is_what_the_issue_asks() -> None:
    labels = Counter(c["label"] for c in CASES)
    assert labels["change"] + labels["opposite"] >= 30
    assert labels["same"] + labels["unrelated"] >= 30
    languages = {bool(re.search(r"\b(le|la|les|du|est)\b", c["old"])) for c in CASES}
    assert languages == {True, False}  # French and English


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['label']}: {c['new'][:40]}")
def test_each_relation_is_found_by_the_rules(case: dict[str, str]) -> None:
    relation = relations.relate(case["new"], case["old"])
    assert expected(case, relation.kind), relation


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['label']}: {c['new'][:40]}")
def test_the_relation_holds_both_ways(case: dict[str, str]) -> None:
    there, back = (
        relations.relate(case["new"], case["old"]),
        relations.relate(case["old"], case["new"]),
    )
    same_class = {relations.REPLACES, relations.REFINES, relations.NEAR}
    assert there.kind == back.kind or {there.kind, back.kind} <= same_class


@given(st.text(max_size=200))
def test_any_text_relates_to_itself_as_the_same_or_not_at_all(text: str) -> None:
    kind = relations.relate(text, text).kind
    assert kind in (relations.SAME, relations.UNRELATED)


@given(st.text(max_size=120), st.text(max_size=120))
def test_relating_any_two_texts_gives_a_known_relation(a: str, b: str) -> None:
    assert relations.relate(a, b).kind in relations.KINDS


# --- through a proposal ------------------------------------------------------------------------

ITEM_SOURCE = "(2026-11-20, Source : journal 2026-11-19 10:00 ; P-0042)"


def _home(tmp: Path, clock: Clock, case: dict[str, str]) -> tuple[Workspace, str]:
    """A home holding ``case['old']`` where the case says (a fact, a skill, a waiting
    proposal), and the name ocmem gives that item in its messages."""
    Installer(Workspace(load_settings(tmp), clock=clock), home_id="corpus").run()
    workspace = Workspace(load_settings(tmp), clock=clock)
    where = case.get("where", "fait")
    old = case["old"]
    if where == "fait":
        (tmp / "memory/MEMORY.md").write_text(
            f"{memorymd.MEMORY_HEADER}\n- {old} {ITEM_SOURCE}\n", encoding="utf-8"
        )
        return workspace, f"MEMORY.md « {old} »"
    if where == "skill":
        target = tmp / "skills/service/SKILL.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(skills.render_skill("service", old, "# Service\n", {}), encoding="utf-8")
        return workspace, "skill service"
    proposal = pending.Proposal(
        id="P-0001",
        kind="fait",
        title=old[:60].rstrip("."),
        status=pending.STATE_PENDING,
        created=clock.today(),
        sources=("journal 2026-11-19 10:00", "journal 2026-11-20 10:00"),
        origin="récurrence (2 épisodes)",
        replaces="rien",
        contradiction="aucune",
        content=old,
    )
    (tmp / "memory/pending.md").write_text(
        pending.PENDING_HEADER + "\n" + proposal.render(), encoding="utf-8"
    )
    return workspace, "P-0001 « "


def outcome_of(tmp: Path, case: dict[str, str]) -> str:
    """What ocmem did with the case's ``new`` proposed against its ``old``: « flagged » (the
    old item quoted in « Remplace », « Contradiction » or « À vérifier »), « asked » (refused
    until the agent says how they relate, the item quoted), « duplicate » (refused: already
    validated), « merged » (folded into the waiting proposal), « clean » (a proposal that
    mentions nothing), or the refusal's words."""
    clock = Clock()
    workspace, reference = _home(tmp, clock, case)
    memory = Memory(workspace)
    refs = []
    for i in range(2):
        added = memory.add_journal(journal_fields(titre=f"Épisode {i}", lecon=case["new"]))
        refs.append(added.lines[0].removeprefix("Entrée ajoutée : "))
        clock.advance(hours=1)
    data: dict[str, Any] = {
        "type": "fait",
        "titre": case["new"][:60].rstrip(".") or "Fait",
        "contenu": case["new"],
        "sources": refs,
        "contradiction": "aucune",
        "remplace": "rien",
    }
    try:
        said = Proposals(workspace).propose(data).render()
    except Refused as refused:
        text = str(refused)
        if "déjà dans MEMORY.md" in text:
            return "duplicate"
        return "asked" if reference in text else f"refused: {text[:120]}"
    if "complétée" in said or "déjà en attente" in said:
        return "merged"
    new = pending.parse((tmp / "memory/pending.md").read_text(encoding="utf-8"))[-1]
    mentioned = " ".join((new.replaces, new.contradiction, new.check or ""))
    return "flagged" if reference in mentioned else "clean"


def pipeline_outcomes(tmp_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], str]]:
    for case in CASES:
        yield case, outcome_of(tmp_factory.mktemp("case"), case)


def figures(results: list[tuple[dict[str, str], str]]) -> dict[str, str]:
    def share(label: set[str], good: set[str]) -> tuple[int, int]:
        chosen = [o for c, o in results if c["label"] in label]
        return sum(o in good for o in chosen), len(chosen)

    flagged, changes = share({"change", "opposite"}, {"flagged", "asked"})
    merged, opposites = share({"opposite"}, {"merged"})
    validated_same = [
        (c, o) for c, o in results if c["label"] == "same" and c.get("where", "fait") == "fait"
    ]
    accepted = sum(o != "duplicate" for _, o in validated_same)
    false_flags, unrelated = share({"unrelated"}, {"flagged", "asked"})
    return {
        "changes flagged or asked": f"{flagged}/{changes}",
        "opposites merged": f"{merged}/{opposites}",
        "duplicates of a validated fact accepted": f"{accepted}/{len(validated_same)}",
        "false flags on unrelated facts": f"{false_flags}/{unrelated} ({100 * false_flags / unrelated:.1f} %)",
    }


FIGURES = re.compile(r"<!-- ocmem:relations -->\n(.*?)<!-- /ocmem:relations -->", re.DOTALL)


def test_through_a_proposal_every_change_is_flagged_and_nothing_false_is_merged(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    results = list(pipeline_outcomes(tmp_path_factory))
    wrong = [
        (c["label"], c["new"], o)
        for c, o in results
        if o.startswith("refused") or (o == "clean" and c["label"] in ("change", "opposite"))
    ]
    assert wrong == []
    found = figures(results)
    flagged, changes = map(int, found["changes flagged or asked"].split("/"))
    assert flagged == changes
    assert found["opposites merged"].startswith("0/")
    assert found["duplicates of a validated fact accepted"].startswith("0/")
    false_flags, unrelated = map(
        int, found["false flags on unrelated facts"].split(" ")[0].split("/")
    )
    assert false_flags <= 0.05 * unrelated
    table = "".join(f"| {name} | {value} |\n" for name, value in found.items())
    documented = FIGURES.search((REPO / "docs/benchmarks.md").read_text(encoding="utf-8"))
    assert documented is not None and documented.group(1).endswith(table), (
        "docs/benchmarks.md's figures are stale; the table rows should be:\n" + table
    )
