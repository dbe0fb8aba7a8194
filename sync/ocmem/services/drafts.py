"""A proposal as the agent submits it, checked for shape before anything is read or written,
and the wording rules every proposal follows (what it contradicts, what it replaces, its sources
and origin)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, NamedTuple

from ocmem.errors import InputError, Refused
from ocmem.formats import journal, pending, skills
from ocmem.home.settings import Limits
from ocmem.services import recurrence
from ocmem.text.similarity import Match, fold

NO_CONTRADICTION = "aucune"
NOTHING_REPLACED = "rien"
NONE_WORDS = {"aucune", "aucun", "none", "non", "no", "rien", "nothing", "neant", "-"}
MAX_FACT_CHARS = 300
MAX_TITLE = 100
MAX_LINE = 300  # contradiction, remplace
MAX_SKILL_CHARS = 6000
# Below 0.1 (one meaningful word shared out of more than ten) a fact or skill is not "close":
# listing it as a neighbour was noise (« similarité 0.04 »).
NEIGHBOUR_MINIMUM = 0.09
# An imported fact's own origin and source: it came from another memory system that `ocmem init`
# replaced, not from journal episodes; the human still decides, as for any proposal.
IMPORT_SOURCE = "ancienne mémoire"
IMPORT_CHECK = (
    "importé tel quel de l'ancienne mémoire : vérifie qu'il est encore vrai avant de le promouvoir"
)
IMPORT_TITLE = 80


class ImportedFact(NamedTuple):
    where: str  # the old memory's file, as messages show it (~/…, or relative to the home)
    line: int
    text: str


def import_source(where: str, line: int) -> str:
    return f"{IMPORT_SOURCE} {where}, ligne {line}"


def is_import_source(source: str) -> bool:
    return source.startswith(f"{IMPORT_SOURCE} ")


def import_place(source: str) -> str:
    return source[len(IMPORT_SOURCE) + 1 :].rsplit(", ligne ", 1)[0]


def is_none_word(text: str) -> bool:
    return fold(text).strip(" .") in NONE_WORDS


@dataclass(frozen=True)
class Draft:
    """A proposal as submitted, validated for shape (state-dependent checks come later)."""

    kind: str
    title: str
    content: str
    sources: tuple[str, ...]
    contradiction: str | None
    replaces: str | None
    retiens_ca: bool
    from_note: bool
    skill_name: str | None
    description: str | None
    # Items close to it that the agent says it does not touch (quoted, or P-…, or skill NAME).
    independent: tuple[str, ...] = ()
    check: str | None = None  # what the human should verify, found by ocmem

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], limits: Limits) -> Draft:
        if not isinstance(data, Mapping):
            raise InputError("la proposition doit être un objet JSON", fix=PROPOSE_HINT)
        # null is how the plugin's tool schema says "not given" (its optional arguments)
        values = {
            fold(str(k)).strip().replace(" ", "_"): v for k, v in data.items() if v is not None
        }
        allowed = {
            "type",
            "titre",
            "contenu",
            "sources",
            "contradiction",
            "remplace",
            "retiens_ca",
            "note_recurrente",
            "name",
            "description",
            "independant",
        }
        unknown = sorted(set(values) - allowed)
        if unknown:
            raise InputError(f"clé(s) inconnue(s) : {', '.join(unknown)}", fix=PROPOSE_HINT)
        kind = str(values.get("type", "")).strip().lower()
        if kind not in pending.KINDS:
            raise InputError(f"type {kind!r} inconnu", fix='"type": "fait" ou "skill"')
        title = required_line(values, "titre", MAX_TITLE)
        content = values.get("contenu")
        if not isinstance(content, str) or not content.strip():
            raise InputError("« contenu » manquant ou vide", fix=PROPOSE_HINT)
        content = content.replace("\r\n", "\n").strip()
        if len(content) > MAX_SKILL_CHARS:
            raise InputError(
                f"« contenu » fait {len(content)} caractères (maximum {MAX_SKILL_CHARS})",
                fix="un fait tient en une phrase, un skill en une page : garde l'essentiel",
            )
        sources = values.get("sources", [])
        if isinstance(sources, str):
            sources = [sources]
        if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            raise InputError(
                "« sources » doit être une liste de références",
                fix='["journal AAAA-MM-JJ HH:MM", …]',
            )
        minutes = sorted({journal.parse_ref(s) for s in sources})
        retiens = values.get("retiens_ca", False)
        if not isinstance(retiens, bool):
            raise InputError("« retiens_ca » doit valoir true ou false", fix=PROPOSE_HINT)
        from_note = values.get("note_recurrente", False)
        if not isinstance(from_note, bool):
            raise InputError("« note_recurrente » doit valoir true ou false", fix=PROPOSE_HINT)
        independent = values.get("independant", [])
        if isinstance(independent, str):
            independent = [independent]
        if not isinstance(independent, list) or not all(
            isinstance(i, str) and i.strip() and "\n" not in i and len(i) <= MAX_LINE
            for i in independent
        ):
            raise InputError(
                "« independant » est une liste d'éléments cités, une ligne chacun",
                fix='["MEMORY.md « … »", "P-0003", "skill deploy-vps"]',
            )
        skill_name = description = None
        if kind == "fait":
            if "\n" in content or len(content) > MAX_FACT_CHARS:
                raise InputError(
                    f"un fait tient sur une ligne de {MAX_FACT_CHARS} caractères au plus",
                    fix="énonce le fait plus brièvement (une procédure détaillée est un skill)",
                )
        else:
            skill_name = str(values.get("name", "")).strip()
            problems = skills.name_problems(skill_name) + skills.description_problems(
                values.get("description")
            )
            if problems:
                raise InputError("skill invalide : " + " ; ".join(problems), fix=PROPOSE_HINT)
            description = str(values["description"]).strip()
            if "\n" in description:
                raise InputError("la description tient sur une ligne", fix="au plus deux phrases")
        return cls(
            kind=kind,
            title=title,
            content=content,
            sources=tuple(journal.ref_of(m) for m in minutes),
            contradiction=optional_line(values, "contradiction"),
            replaces=optional_line(values, "remplace"),
            retiens_ca=retiens,
            from_note=from_note,
            skill_name=skill_name,
            description=description,
            independent=tuple(i.strip() for i in independent),
        )

    def texts(self) -> list[tuple[str, str]]:
        found = [("titre", self.title), ("contenu", self.content)]
        for name, value in (
            ("contradiction", self.contradiction),
            ("remplace", self.replaces),
            ("description", self.description),
        ):
            if value:
                found.append((name, value))
        return found

    def lesson(self) -> str:
        """What a cited entry must speak of: the title, and the fact or the skill's description
        (a skill's whole draft would share common words with any entry)."""
        return f"{self.title} {self.content if self.kind == 'fait' else self.description or ''}"

    def source_minutes(self) -> list[journal.Ref]:
        return [journal.parse_ref(s) for s in self.sources]

    def check_against(self, memory_text: str, existing: list[skills.Skill], limits: Limits) -> None:
        if self.kind == "fait":
            return  # a fact against MEMORY.md: ocmem.services.supersession (a relation, not a score)
        names = {s.name for s in existing}
        if self.skill_name in names and self.replaces == NOTHING_REPLACED:
            raise Refused(
                f"le skill {self.skill_name} existe déjà",
                fix='indique dans "remplace" ce que la proposition change dans ce skill',
            )
        if (
            self.skill_name not in names
            and len(names) >= limits.skills_max
            and self.replaces == NOTHING_REPLACED
        ):
            raise Refused(
                f"{len(names)} skills installés (maximum {limits.skills_max})",
                fix='propose plutôt de fusionner ou de retirer un skill existant ("remplace")',
            )
        draft_text = skills.render_skill(
            self.skill_name or "",
            self.description or "",
            self.content,
            {"source": "", "promu": "", "proposition": ""},
        )
        # Promotion adds a source line: keep two lines of margin for it.
        lines = len(draft_text.splitlines()) + 2
        if lines > limits.skill_lines:
            raise Refused(
                f"le skill ferait {lines} lignes une fois promu (maximum {limits.skill_lines}, "
                "dont 2 pour sa source)",
                fix=f"retire au moins {lines - limits.skill_lines} ligne(s) : garde l'essentiel "
                "dans SKILL.md, les détails iront dans des fichiers annexes",
            )

    def to_proposal(
        self, pid: str, today: date, neighbours: Sequence[Match], note: str | None
    ) -> pending.Proposal:
        contradiction = (
            NO_CONTRADICTION if is_none_word(self.contradiction or "") else self.contradiction or ""
        )
        replaces = NOTHING_REPLACED if is_none_word(self.replaces or "") else self.replaces or ""
        check = self.check
        if (
            check is None
            and neighbours
            and neighbours[0].score >= 0.3
            and contradiction == NO_CONTRADICTION
        ):
            check = f"proche de {neighbours[0].item} (similarité {neighbours[0].score:.2f}) : vérifier qu'il n'y a pas de contradiction"
        return pending.Proposal(
            id=pid,
            kind=self.kind,
            title=self.title,
            status=pending.STATE_PENDING,
            created=today,
            sources=ordered_sources(self.sources, (note,) if note else ()),
            origin=origin_of(
                self.retiens_ca, ordered_sources(self.sources, (note,) if note else ())
            ),
            replaces=replaces,
            contradiction=contradiction,
            content=self.content,
            check=check,
            skill_name=self.skill_name,
            description=self.description,
        )


PROPOSE_HINT = (
    'attendu : {"type": "fait|skill", "titre": "…", "contenu": "…", "sources": '
    '["journal AAAA-MM-JJ HH:MM", …], "contradiction": "aucune|…", "remplace": "rien|…", '
    '"retiens_ca": false, "independant": [éléments proches qu\'elle ne touche pas], et pour un '
    'skill "name" et "description" (2 phrases au plus)}'
)


LESSON_TERMS_SHARED = 2


def says_lesson(entry_text: str, lesson: str) -> bool:
    """Whether a journal entry speaks of ``lesson``: it shares two of the lesson's keywords
    (stemmed, accents and case folded, English glossary words as French), or half of them when
    the lesson has fewer than four. Cheap and explainable; a paraphrase with no common keyword is
    not evidence."""
    from ocmem.text import searchterms

    wanted = set(searchterms.terms(lesson))
    shared = wanted & set(searchterms.terms(entry_text))
    return len(shared) >= min(LESSON_TERMS_SHARED, (len(wanted) + 1) // 2)


def ordered_sources(earlier: Sequence[str], added: Sequence[str]) -> tuple[str, ...]:
    """Journal references in time order, then the old-memory lines they were imported from,
    then the latest recurring-note source, if any."""
    every = [*earlier, *added]
    notes = [s for s in every if recurrence.is_note_source(s)]
    imports = list(dict.fromkeys(s for s in every if is_import_source(s)))
    episodes = sorted(
        {s for s in every if s not in notes and s not in imports}, key=journal.parse_ref
    )
    return (*episodes, *imports, *notes[-1:])


def origin_of(retiens_ca: bool, sources: Sequence[str]) -> str:
    notes = sum(recurrence.is_note_source(s) for s in sources)
    places = list(dict.fromkeys(import_place(s) for s in sources if is_import_source(s)))
    episodes = len(sources) - notes - sum(is_import_source(s) for s in sources)
    parts = []
    if retiens_ca:
        parts.append("demande explicite de l'utilisateur (« retiens ça »)")
    elif episodes >= 2 or not (notes or places):
        parts.append(f"récurrence ({episodes} épisodes)")
    if notes:
        parts.append("note récurrente")
    if places:
        parts.append(f"import de l'ancienne mémoire ({', '.join(places)})")
    return " ; ".join(parts)


def required_line(values: Mapping[str, Any], key: str, max_chars: int) -> str:
    value = values.get(key)
    if (
        not isinstance(value, str)
        or not value.strip()
        or "\n" in value.strip()
        or len(value.strip()) > max_chars
    ):
        raise InputError(
            f"« {key} » doit être une ligne non vide de {max_chars} caractères au plus",
            fix=PROPOSE_HINT,
        )
    return value.strip()


def optional_line(values: Mapping[str, Any], key: str) -> str | None:
    value = values.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str) or "\n" in value.strip():
        raise InputError(f"« {key} » doit tenir sur une ligne", fix=PROPOSE_HINT)
    if len(value.strip()) > MAX_LINE:
        raise InputError(
            f"« {key} » fait {len(value.strip())} caractères (maximum {MAX_LINE})",
            fix=f"résume « {key} » en une phrase",
        )
    return value.strip()
