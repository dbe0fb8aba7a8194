"""Facts of an old memory system made proposals (``ocmem init --replace-old``): each meets the
guards of any proposal and goes to the human; nothing is written here."""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from ocmem.formats import memorymd, pending
from ocmem.guards.textsafety import find_injection, find_personal_data, find_secrets
from ocmem.home.workspace import Workspace
from ocmem.services.drafts import (
    IMPORT_CHECK,
    IMPORT_TITLE,
    MAX_FACT_CHARS,
    NO_CONTRADICTION,
    NOTHING_REPLACED,
    Draft,
    ImportedFact,
    import_source,
)
from ocmem.services.proposals import closest_items, similar_proposal
from ocmem.text import inert
from ocmem.text.similarity import similarity


class FactImport(NamedTuple):
    document: pending.Document  # pending.md with the new proposals (not written yet)
    added: list[pending.Proposal]
    skipped: list[str]  # "<file> ligne N : why", never the line itself (it may hold a secret)


def plan_import(ws: Workspace, facts: list[ImportedFact]) -> FactImport:
    """The proposals an old memory's facts become; nothing is written (``ocmem init`` writes
    pending.md in its own run). Each fact meets the guards of any proposal (secrets,
    personal data, injection markers, length, what MEMORY.md and pending.md already hold)
    and goes to the human. Its origin says where it comes from: an import has no journal
    episode, and none is made up for it. At most ``memory_chars`` characters of facts are
    proposed: MEMORY.md could not hold more."""
    today = ws.today()
    doc = ws.pending_document()
    statements = [memorymd.fact_statement(line) for line in memorymd.fact_lines(ws.memory_text())]
    added: list[pending.Proposal] = []
    skipped: list[str] = []
    budget = ws.limits.memory_chars
    for fact in facts:
        text = " ".join(inert.clean(fact.text).split())
        reason = _import_refusal(ws, text, statements, doc, budget)
        if reason:
            skipped.append(f"{fact.where} ligne {fact.line} : {reason}")
            continue
        budget -= len(text)
        title = (
            text if len(text) <= IMPORT_TITLE else text[: IMPORT_TITLE - 1].rsplit(" ", 1)[0] + "…"
        )
        draft = Draft(
            kind="fait",
            title=title,
            content=text,
            sources=(import_source(fact.where, fact.line),),
            contradiction=NO_CONTRADICTION,
            replaces=NOTHING_REPLACED,
            retiens_ca=False,
            from_note=False,
            skill_name=None,
            description=None,
        )
        proposal = draft.to_proposal(
            pending.next_id(doc.ids()), today, closest_items(ws, text), None
        )
        proposal = replace(proposal, check=proposal.check or IMPORT_CHECK)
        doc = doc.append(proposal)
        added.append(proposal)
    return FactImport(doc, added, skipped)


def _import_refusal(
    ws: Workspace, text: str, statements: list[str], doc: pending.Document, budget: int
) -> str | None:
    problems = (
        find_secrets(text, ws.known_secrets) + find_personal_data(text) + find_injection(text)
    )
    if problems:
        return f"{problems[0].kind}, non importée"
    if len(text) > MAX_FACT_CHARS:
        return f"plus de {MAX_FACT_CHARS} caractères, non importée (un fait tient en une ligne)"
    if any(similarity(text, known) >= 0.8 for known in statements):
        return "déjà dans MEMORY.md"
    probe = Draft("fait", text, text, (), None, None, False, False, None, None)
    twin = similar_proposal(probe, doc.proposals, ws.limits.duplicate_similarity)
    if twin is not None:
        return f"déjà proposé : {twin.id} « {twin.title} » ({twin.status})"
    if len(text) > budget:
        return (
            f"plafond atteint : les faits importés dépasseraient la taille de MEMORY.md "
            f"({ws.limits.memory_chars} caractères), non importée"
        )
    return None
