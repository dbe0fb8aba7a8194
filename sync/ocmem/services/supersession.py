"""What a proposed fact touches among what ocmem holds, and what follows (issue 21).

The items: validated facts (MEMORY.md), skills, other proposals, archived facts and skills. For
each, the relation ``ocmem.text.relations`` finds, and the agent's own word on it (its proposal's
« remplace », « contradiction » and « independant » may name an item). ``assess`` decides:

- a validated fact said again is a **duplicate** (refused); a refused proposal said again is
  refused unless the user asked (« retiens ça »); a waiting proposal said again is **completed**
  (its sources grow);
- a validated fact whose value changed, that the proposal contradicts or makes more precise, is
  its **target**: the proposal says it replaces it (ocmem writes it in « Remplace » itself), and
  promoting the proposal replaces that line (the old one goes to the archive);
- a contradicted item (a fact, a skill, a waiting proposal) is **signalled** in « Contradiction »,
  never merged;
- an item the rules find close but cannot classify is **undecided**: the proposal is refused
  until the agent says how it relates, the message quoting the item and the words to use;
- an archived item said again is a **comeback**: the proposal quotes its retirement.

Prose is also read sentence by sentence (``ocmem.text.coherence``, for facts and skills alike):
a sentence of the proposal that says the opposite of a sentence of a skill's body, of MEMORY.md
or of a waiting proposal is signalled in « Contradiction », the sentence quoted (``prose_conflicts``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from ocmem.errors import OcmemError, Refused
from ocmem.formats import archive, memorymd, pending, skills
from ocmem.home.atomic import read_text
from ocmem.services.drafts import NO_CONTRADICTION, Draft, is_none_word
from ocmem.text import coherence, relations
from ocmem.text.words import fold

FACT, SKILL, PROPOSAL, ARCHIVED = "fait", "skill", "proposition", "archive"
REPLACES, CONTRADICTS, INDEPENDENT = "remplace", "contradiction", "independant"
_PID = re.compile(r"\bP-\d{4,}\b")
_FACT_REF = re.compile(r"^MEMORY\.md « (.*?) »(?: — (.*))?$", re.DOTALL)


class Item(NamedTuple):
    kind: str  # FACT, SKILL, PROPOSAL or ARCHIVED
    ref: str  # how messages and pending.md name it
    statement: str  # what it says, as compared
    line: str = ""  # a fact: its MEMORY.md line (date and source included)
    proposal: pending.Proposal | None = None
    entry: archive.Entry | None = None


class Touch(NamedTuple):
    item: Item
    relation: relations.Relation


class Assessment(NamedTuple):
    duplicate: Touch | None
    promoted_twin: Touch | None  # a proposal already promoted that it says again
    refused_twin: Touch | None
    twin: Touch | None
    target: Touch | None
    conflicts: list[Touch]  # contradicted or changed: signalled in « Contradiction »
    related: list[Touch]  # a skill or waiting proposal it refines or is close to: « À vérifier »
    undecided: list[Touch]
    comeback: Touch | None


def fact_reference(statement: str) -> str:
    return f"MEMORY.md « {statement} »"


def replaced_fact(replaces: str) -> str | None:
    """The MEMORY.md statement a proposal's « Remplace » names, if it names one."""
    found = replacement(replaces)
    return found[0] if found else None


def replacement(replaces: str) -> tuple[str, str] | None:
    """« MEMORY.md « statement » — why » read back: the statement and why ("" when not said)."""
    match = _FACT_REF.match(replaces.strip())
    return (match.group(1), match.group(2) or "") if match else None


def held_items(
    memory_text: str,
    installed: Sequence[skills.Skill],
    proposals: Sequence[pending.Proposal],
    archive_text: str,
) -> list[Item]:
    """Everything a proposal may touch."""
    found = [
        Item(
            FACT, fact_reference(memorymd.fact_statement(line)), memorymd.fact_statement(line), line
        )
        for line in memorymd.fact_lines(memory_text)
    ]
    found += [Item(SKILL, f"skill {s.name}", f"{s.name} {s.description or ''}") for s in installed]
    found += [
        Item(PROPOSAL, f"{p.id} « {p.title} »", proposal_statement(p), proposal=p)
        for p in proposals
    ]
    found += [
        Item(
            ARCHIVED,
            f"archive ({e.when.isoformat()}, {e.kind} {e.action})",
            memorymd.fact_statement(e.old) if e.kind == archive.FACT else e.about,
            entry=e,
        )
        for e in archive.entries(archive_text)
    ]
    return found


def proposal_statement(proposal: pending.Proposal) -> str:
    return proposal.content if proposal.kind == "fait" else proposal.description or proposal.title


def resolve(text: str, items: Sequence[Item]) -> Item | None:
    """The item an agent's words name: a proposal id, « skill NAME », or a fact quoted (whole,
    or enough of it that it says the same)."""
    pid = _PID.search(text)
    if pid:
        return next(
            (i for i in items if i.proposal is not None and i.proposal.id == pid.group()), None
        )
    for item in items:
        if item.kind == SKILL and fold(text.strip()) in (fold(item.ref), fold(item.ref[6:])):
            return item
    named = named_facts(text, items)
    if named:  # several: the words name none of them (``declarations`` says which)
        return named[0] if len(named) == 1 else None
    said = _quoted(text)
    facts = [i for i in items if i.kind == FACT]
    same = [i for i in facts if relations.relate(said, i.statement).kind == relations.SAME]
    return same[0] if len(same) == 1 else None


def _quoted(text: str) -> str:
    return replaced_fact(text) or text.strip().strip("«»\"' ").removeprefix("MEMORY.md").strip(
        " «»\"'"
    )


def quoted_facts(text: str, items: Sequence[Item]) -> list[Item]:
    """The facts ``text`` quotes: the one it states whole, or every one it is a part of (more
    than one: it names none of them, and a human must say which)."""
    folded = fold(_quoted(text))
    facts = [i for i in items if i.kind == FACT]
    whole = [i for i in facts if folded == fold(i.statement)]
    return whole or [i for i in facts if folded and folded in fold(i.line)]


def named_facts(text: str, items: Sequence[Item]) -> list[Item]:
    """``quoted_facts``, one per statement: a fact MEMORY.md holds twice (written by hand) is
    one fact, named by its first line, as « Remplace » names it and the promotion finds it."""
    found: dict[str, Item] = {}
    for item in quoted_facts(text, items):
        found.setdefault(item.statement, item)
    return list(found.values())


def touches(statement: str, items: Sequence[Item]) -> list[Touch]:
    """The items ``statement`` relates to (not unrelated), closest first."""
    new = relations.statement(statement)
    found = []
    for item in items:
        relation = relations.relate_statements(new, relations.statement(item.statement))
        if relation.kind != relations.UNRELATED:
            found.append(Touch(item, relation))
    return sorted(found, key=lambda t: -t.relation.subject)


def assess(found: Sequence[Touch], declared: dict[str, str]) -> Assessment:
    """What follows from the touches of a proposed fact, given the agent's declarations
    (item ref → REPLACES, CONTRADICTS or INDEPENDENT)."""
    duplicate = promoted_twin = refused_twin = twin = target = comeback = None
    conflicts: list[Touch] = []
    related: list[Touch] = []
    undecided: list[Touch] = []
    for touch in found:
        item, kind = touch.item, touch.relation.kind
        said = declared.get(item.ref)
        if said == INDEPENDENT and kind == relations.NEAR:
            continue
        if kind == relations.NEAR and item.kind == PROPOSAL and said is None:
            # Two waiting proposals close to each other: the human sees both, and merges them
            # if they are one lesson (`ocmem pending merge`); never merged here.
            if item.proposal is not None and item.proposal.state == pending.STATE_PENDING:
                related.append(touch)
            continue
        if kind == relations.NEAR:
            if said is None:
                undecided.append(touch)
                continue
            kind = relations.REPLACES if said == REPLACES else relations.CONTRADICTS
        if item.kind == FACT:
            if kind == relations.SAME:
                duplicate = duplicate or touch
            elif target is None:
                target = touch
                if kind == relations.CONTRADICTS:
                    conflicts.append(touch)
            else:
                conflicts.append(touch)
        elif item.kind == SKILL:
            if kind == relations.REFINES:
                related.append(touch)
            elif kind != relations.SAME:
                conflicts.append(touch)
        elif item.kind == PROPOSAL and item.proposal is not None:
            state = item.proposal.state
            if kind == relations.SAME and state == pending.STATE_PENDING:
                twin = twin or touch
            elif kind == relations.SAME and state == pending.STATE_REFUSED:
                refused_twin = refused_twin or touch
            elif kind == relations.SAME and state == pending.STATE_PROMOTED:
                promoted_twin = promoted_twin or touch
            elif state == pending.STATE_PENDING and kind == relations.REFINES:
                related.append(touch)
            elif state == pending.STATE_PENDING:
                conflicts.append(touch)
        elif item.kind == ARCHIVED and kind == relations.SAME:
            comeback = comeback or touch
    if declared:
        # A target the agent named wins over the one the rules found.
        named = [t for t in found if declared.get(t.item.ref) == REPLACES and t.item.kind == FACT]
        if named:
            target = named[0]
    if twin is not None:
        undecided = []  # the waiting proposal it repeats went through the same question
    if comeback is not None:
        promoted_twin = None  # promoted once, retired since: the comeback is what to say
    return Assessment(
        duplicate,
        promoted_twin,
        refused_twin,
        twin,
        target,
        conflicts,
        related,
        undecided,
        comeback,
    )


class ProseConflict(NamedTuple):
    ref: str  # the item: « skill deploy-nginx », « MEMORY.md », « P-0003 « titre » »
    line: str  # its sentence, as written
    reason: str

    @property
    def item(self) -> str:
        """How « Contradiction » names it; for a fact, what ``fact_reference`` writes."""
        return f"{self.ref} « {self.line} »"

    def describe(self) -> str:
        return f"{self.item} — {self.reason}"


Prose = Sequence[tuple[str, coherence.Sentence]]


def skill_texts(installed: Sequence[skills.Skill]) -> list[tuple[str, str]]:
    """Each installed skill's name and SKILL.md text, through the home's door: a skill it
    refuses to read (a link; listed with that problem by ``Workspace.skills``) states nothing."""
    found = []
    for skill in installed:
        try:
            found.append((skill.name, read_text(skill.path, errors="replace")))
        except OcmemError:
            continue
    return found


def held_prose(
    memory_text: str, installed: Sequence[tuple[str, str]], proposals: Sequence[pending.Proposal]
) -> list[tuple[str, coherence.Sentence]]:
    """The sentences a proposal may contradict: MEMORY.md's facts, each installed skill's
    description and body (``installed``: its name and SKILL.md text), the waiting proposals'."""
    found = [
        ("MEMORY.md", coherence.sentence(sentence))
        for line in memorymd.fact_lines(memory_text)
        for sentence in coherence.sentences(memorymd.fact_statement(line))
    ]
    for name, text in installed:
        description, body = skills.split_skill(text)
        found += [
            (f"skill {name}", coherence.sentence(sentence))
            for sentence in (*coherence.sentences(description), *coherence.sentences(body))
        ]
    for proposal in proposals:
        if proposal.state == pending.STATE_PENDING:
            prose = f"{proposal.description or ''}\n{proposal.content}"
            found += [
                (f"{proposal.id} « {proposal.title} »", coherence.sentence(sentence))
                for sentence in coherence.sentences(prose)
            ]
    return found


def prose_conflicts(text: str, held: Prose, who: str = "la proposition") -> list[ProseConflict]:
    """Each held sentence one of ``text``'s sentences says the opposite of (ocmem.text.coherence),
    once, in the order held. Only held sentences sharing a word's first letters with it are
    compared (an index: a proposal against fifteen full skills)."""
    index: dict[str, set[int]] = {}
    for k, (_, line) in enumerate(held):
        for key in line.keys:
            index.setdefault(key, set()).add(k)
    reasons: dict[int, str] = {}
    for sentence in map(coherence.sentence, coherence.sentences(text)):
        candidates = set().union(*(index.get(key, set()) for key in sentence.keys))
        for k in candidates - reasons.keys():
            why = coherence.opposed(sentence, held[k][1], who)
            if why is not None:
                reasons[k] = why
    found: list[ProseConflict] = []
    for k in sorted(reasons):
        ref, line = held[k]
        conflict = ProseConflict(ref, line.text.strip(), reasons[k])
        if conflict.item not in {c.item for c in found}:
            found.append(conflict)
    return found


# Contradictions a proposal names at most; the rest are counted (a draft may reverse a whole skill).
SHOWN_CONFLICTS = 4


def capped(found: Sequence[str]) -> list[str]:
    if len(found) <= SHOWN_CONFLICTS:
        return list(found)
    more = len(found) - SHOWN_CONFLICTS + 1
    return [*found[: SHOWN_CONFLICTS - 1], f"et {more} autre(s) élément(s) contredit(s)"]


def contradiction_field(found: Sequence[str], declared: str | None, items: Sequence[Item]) -> str:
    """« Contradiction » as ocmem writes it: what it found, then what the agent declared when
    that names something else (its « aucune » gives way)."""
    contradiction = declared or NO_CONTRADICTION
    if not found:
        return contradiction
    own = (
        []
        if is_none_word(contradiction)
        or resolve(contradiction, items) is not None
        or any(fold(contradiction) in fold(f) for f in found)
        else [contradiction]
    )
    return " ; ".join([*found, *own])


def describe(touch: Touch) -> str:
    """« <item> — <why> », for « Remplace », « Contradiction » and messages."""
    why = touch.relation.reason or touch.relation.kind
    return f"{touch.item.ref} — {why}"


class Judgement(NamedTuple):
    """A proposed fact's fields as ocmem sets them, and what to tell the agent."""

    replaces: str | None
    contradiction: str
    check: str | None
    twin: pending.Proposal | None  # the waiting proposal it repeats: completed instead
    lines: list[str]


def judge(draft: Draft, items: Sequence[Item], prose: Prose = ()) -> Judgement:
    """A proposed fact against ``items``: refused when it repeats a validated fact, or is close
    to an item nobody can say how it relates to; otherwise its « Remplace » and
    « Contradiction » as ocmem found them (over the agent's « rien » and « aucune »), with the
    sentences of ``prose`` it contradicts."""
    declared = declarations(draft, items)
    judged = assess(touches(draft.content, items), declared)
    if judged.duplicate is not None:
        raise Refused(
            f"ce fait est déjà dans MEMORY.md : « {judged.duplicate.item.line} »",
            fix="rien à proposer ; si le fait a changé, la proposition dit la nouvelle valeur "
            "(ocmem voit alors qu'elle remplace l'ancienne)",
        )
    if judged.undecided:
        quote = judged.undecided[0].item.ref
        raise Refused(
            f"la proposition est proche de {quote} et ocmem ne peut pas dire comment elles "
            "se rapportent (même sujet, rien qui change de façon reconnaissable)",
            fix=(
                f'dis-le dans la proposition : "remplace": "{quote}" si elle la remplace ou la '
                f'précise, "contradiction": "{quote}" si elle la contredit (l\'humain '
                f'choisira), ou "independant": ["{quote}"] si c\'est un autre sujet'
            ),
        )
    replaces = draft.replaces
    lines: list[str] = []
    if judged.target is not None:
        replaces = describe(judged.target)
        lines.append(f"Remplace (vu par ocmem) : {replaces}")
    # A skill is named by the sentence contradicted when there is one (its description alone
    # says less); a fact or a proposal the relation rules already signal is not signalled twice.
    quoted = prose_conflicts(draft.content, prose)
    skills_quoted = {c.ref for c in quoted}
    kept = [
        t for t in judged.conflicts if not (t.item.kind == SKILL and t.item.ref in skills_quoted)
    ]
    named = {t.item.ref for t in kept}
    signalled = capped(
        [describe(t) for t in kept]
        + [c.describe() for c in quoted if c.ref not in named and c.item not in named]
    )
    contradiction = contradiction_field(signalled, draft.contradiction, items)
    if signalled:
        lines.append(f"Contradiction (vue par ocmem) : {' ; '.join(signalled)}")
    checks = [
        f"{'précise' if t.relation.kind == relations.REFINES else 'proche de'} {describe(t)}"
        for t in judged.related
    ]
    if judged.comeback is not None and judged.comeback.item.entry is not None:
        entry = judged.comeback.item.entry
        checks.append(
            f"reprend un {entry.kind} {entry.action} le {entry.when.isoformat()} "
            f"(archive, raison : {entry.reason})"
        )
        lines.append(f"⚠ {checks[-1]}")
    # A lesson refused, then proposed again on « retiens ça », is waiting: that one is completed.
    twin = judged.promoted_twin or judged.twin or judged.refused_twin
    return Judgement(
        replaces,
        contradiction,
        " ; ".join(checks) or None,
        twin.item.proposal if twin is not None else None,
        lines,
    )


def declarations(draft: Draft, items: Sequence[Item]) -> dict[str, str]:
    """What the agent says of the items it names (« remplace », « contradiction »,
    « independant »): item ref → its word. A « remplace » or an « independant » that names
    nothing ocmem holds is refused (the promotion could not act on it)."""
    declared: dict[str, str] = {}
    for text, word in ((draft.replaces, REPLACES), (draft.contradiction, CONTRADICTS)):
        if text is None or is_none_word(text):
            continue
        item = resolve(text, items)
        if item is not None:
            declared[item.ref] = word
        elif word == REPLACES:
            _refuse_ambiguous(REPLACES, text, items)
            raise Refused(
                f"« remplace » ne désigne aucun fait de MEMORY.md ni proposition : « {text} »",
                fix="cite le fait remplacé tel qu'il est dans MEMORY.md (ou P-XXXX pour une "
                "proposition), ou écris « rien »",
            )
    for text in draft.independent:
        item = resolve(text, items)
        if item is None:
            _refuse_ambiguous(INDEPENDENT, text, items)
            raise Refused(
                f"« independant » ne désigne aucun élément connu : « {text} »",
                fix="cite l'élément tel qu'ocmem l'a nommé dans son refus",
            )
        declared[item.ref] = INDEPENDENT
    return declared


def _refuse_ambiguous(word: str, text: str, items: Sequence[Item]) -> None:
    """Refused when ``text``, the agent's « remplace » or « independant », is found in several
    facts of MEMORY.md: taking the first would let the promotion replace a fact the human did
    not mean. Every fact it names is quoted, its line whole."""
    several = named_facts(text, items)
    if len(several) < 2:
        return
    raise Refused(
        f"« {word} » « {text} » se trouve dans {len(several)} faits de MEMORY.md : "
        + " ; ".join(f"« {i.line} »" for i in several),
        fix=f"cite assez de la ligne voulue pour la distinguer des autres dans « {word} » "
        f"(--{word} en ligne de commande), par ex. « {several[0].statement} » ; rien n'a été écrit",
    )
