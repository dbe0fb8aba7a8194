"""How a proposed statement relates to one ocmem already holds, by rules a human can read (no
model): the same fact, a changed value, a contradiction, a refinement, close but undecided, or
unrelated. ``relate`` says which and why, in French, quoting what differs.

- **Subject**: the stems both statements share (``ocmem.text.searchterms``), once their values,
  negations and time words (« maintenant », "now") are set aside. Below a shared core, unrelated.
- **Values**: URLs, paths, IP addresses, host names, times of day, versions and numbers (a port,
  a size), each with its kind: a value of one kind that differs is a changed fact
  (« 2222 → 2200 », « /var/log/app → /srv/logs/app »).
- **Negation**: « ne … pas / plus / jamais », « jamais », « aucun », « sans », "not", "never",
  "no longer", "n't" (« ne … que » is a restriction, not a negation): one side negated is a
  contradiction, « toujours » against « jamais » included.
- **Inversion**: « A plutôt que B », « A au lieu de B », « A préféré à B », « préférer A à B »,
  "A rather than / instead of / over B", "prefer A to B": the same two the other way round.
- **Opposites**: word pairs that reverse a rule here (relatif/absolu, activer/désactiver,
  autoriser/interdire, public/privé, before/after…), one on each side.

Where the rules cannot tell (a close subject, nothing that differs in a way they know), the
relation is ``NEAR``: the caller asks the agent to say how the two relate.
"""

# No `from __future__ import annotations`: NamedTuples (see ocmem.home.settings).

import re
from typing import NamedTuple

from ocmem.text import searchterms
from ocmem.text.words import fold

SAME = "même"
REPLACES = "remplace"
REFINES = "précise"
CONTRADICTS = "contredit"
NEAR = "proche"
UNRELATED = "indépendant"
KINDS = (SAME, REPLACES, REFINES, CONTRADICTS, NEAR, UNRELATED)

# Values, most specific first: once matched, a span is not read again by a later kind.
_VALUE_KINDS: tuple[tuple[str, "re.Pattern[str]"], ...] = (
    ("adresse", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s)»\"']+", re.IGNORECASE)),
    ("IP", re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?(?::\d{1,5})?\b")),
    ("chemin", re.compile(r"(?<![\w.~/])(?:~|\.{1,2})?/[\w.@%+-]+(?:/[\w.@%+-]*)*")),
    ("hôte", re.compile(r"\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}\b", re.IGNORECASE)),
    (
        "heure",
        re.compile(
            r"\b(?:[01]?\d|2[0-3])(?::[0-5]\d| ?h ?(?:[0-5]\d)?(?![a-z]))|\b(?:1[0-2]|0?\d) ?[ap]\.?m\b",
            re.IGNORECASE,
        ),
    ),
    ("version", re.compile(r"\bv?\d+(?:\.\d+){1,3}(?:-[\w.]+)?\b|\bv\d+\b", re.IGNORECASE)),
    (
        "nombre",
        re.compile(
            r"\b\d+(?:[,.]\d+)?(?: ?(?:%|[kmgt]i?[ob]|[kmgt]?bytes?|octets?|ms|s|min|h|jours?|days?|"
            r"semaines?|weeks?|mois|months?|ans?|years?|go|mo|ko|to))?\b",
            re.IGNORECASE,
        ),
    ),
)

# Time words: they date a statement (« désormais 2200 ») without changing its subject.
_TIME_WORDS = frozenset(
    searchterms.stem(word)
    for word in """
    maintenant desormais dorenavant actuellement aujourd hui nouveau nouvelle nouveaux nouvelles
    ancien ancienne anciens anciennes plus now currently today new old anymore formerly previously
    longer toujours jamais always never
    """.split()
)
# Stems that carry no subject of their own (generic verbs, prepositions the stop-words miss):
# two statements that differ only by them say the same thing.
# Words that place a thing without saying anything of it (« tourne sous », « est hébergé chez »),
# as the stemmer makes them: a statement that differs only by them says the same.
_LIGHT = frozenset(
    searchterms.stem(word)
    for word in """
    utilise utilisent utilisons utiliser sert servent servir ecoute ecoutent tourne tournent
    tourner fonctionne fonctionnent trouve situe situee heberge hebergee comme sous dans chez vers
    sur read run runs use uses using serve serves has have live lives sit sits host hosts keep
    keeps listen store stores
    """.split()
)
_NEGATION = re.compile(
    r"\bn(?:e\b|')(?:(?!\bque\b)[^.;!?])*?\b(?:pas|plus|jamais|rien|aucun|aucune|personne|guere|nullement)\b"
    r"|\b(?:jamais|aucun|aucune|sans|nullement|not|never|nothing|none|neither|nor)\b"
    r"|\bpas\s+(?:de|d'|du|des|le|la|les|un|une|besoin|la peine|necessaire|toujours|forcement)\b"
    r"|\bno\s+(?:longer|more|need|reason|\w+)\b|n't\b|\bcannot\b|\bnon\s+(?!plus\b)\w+"
)
_OPPOSITES: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(a.split("|")), frozenset(b.split("|")))
    for a, b in (
        ("relatif|relatifs|relative|relatives", "absolu|absolus|absolue|absolues|absolute"),
        (
            "activer|active|actives|activee|activees|enable|enables|enabled",
            "desactiver|desactive|desactives|desactivee|desactivees|disable|disables|disabled",
        ),
        (
            "autoriser|autorise|autorisee|autorises|allow|allows|allowed|permit|permits|permitted",
            "interdire|interdit|interdite|interdits|deny|denies|denied|forbid|forbids|forbidden",
        ),
        (
            "accepter|accepte|acceptes|accept|accepts|accepted",
            "refuser|refuse|refuses|reject|rejects|rejected",
        ),
        ("ouvert|ouverte|ouverts|open", "ferme|fermee|fermes|closed"),
        ("public|publique|publics", "prive|privee|prives|private"),
        (
            "obligatoire|obligatoires|required|mandatory",
            "facultatif|facultative|optionnel|optionnelle|optional",
        ),
        ("avant|before", "apres|after"),
        ("synchrone|synchronous|sync", "asynchrone|asynchronous|async"),
        ("majuscule|majuscules|uppercase", "minuscule|minuscules|lowercase"),
        ("local|locale|locaux", "distant|distante|distants|remote"),
        ("vrai|true", "faux|false"),
        ("augmenter|increase|plus", "diminuer|decrease|moins|less"),
        ("toujours|always", "jamais|never"),
        ("tabulation|tabulations|tabs|tab", "espaces|spaces"),
        ("root", "rootless"),
    )
)
_PREFERENCE = re.compile(
    r"(?P<a>[\w.+-]+)\s+(?:plutot\s+qu(?:e\s+|')|au\s+lieu\s+d(?:e\s+|')|prefere(?:e|s|es)?\s+(?:a|au|aux)\s+|"
    r"rather\s+than\s+|instead\s+of\s+|over\s+|preferred\s+to\s+)(?:l(?:e|a|es)\s+|l')?(?P<b>[\w.+-]+)"
    r"|\b(?:preferer|prefere|preferez|prefer|prefers|use)\s+(?:l(?:e|a|es)\s+|l')?(?P<c>[\w.+-]+)\s+"
    r"(?:a|au|aux|to|over)\s+(?:l(?:e|a|es)\s+|l')?(?P<d>[\w.+-]+)"
)
# How much of the smaller statement's subject the other must share to be about the same thing.
SUBJECT_MINIMUM = 0.5
# Close enough that the agent must say how they relate, when no rule tells.
NEAR_MINIMUM = 0.6
SAME_MINIMUM = 0.75


class Value(NamedTuple):
    kind: str
    text: str  # as written
    key: str  # as compared (folded, trailing punctuation dropped)


class Statement(NamedTuple):
    text: str
    folded: str
    subject: frozenset[str]
    values: tuple[Value, ...]
    negated: bool
    opposites: dict[int, str]  # 2*i (first word set of pair i) or 2*i+1 → the word written
    preference: tuple[str, str, str, str] | None  # preferred, other: stems, then as written


class Relation(NamedTuple):
    kind: str
    reason: str  # what differs, in French (empty for SAME and UNRELATED)
    subject: float  # the share of the smaller subject the two have in common


def values(text: str) -> tuple[Value, ...]:
    """The values ``text`` states, each once, in order."""
    found: list[tuple[int, Value]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _VALUE_KINDS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < b and a < end for a, b in taken):
                continue
            raw = match.group().rstrip(".,;:!?")
            taken.append((start, end))
            found.append((start, Value(kind, raw, _value_key(kind, raw))))
    seen: set[tuple[str, str]] = set()
    ordered = []
    for _, value in sorted(found):
        if (value.kind, value.key) not in seen:
            seen.add((value.kind, value.key))
            ordered.append(value)
    return tuple(ordered)


def _value_key(kind: str, raw: str) -> str:
    key = fold(raw).replace(" ", "")
    if kind == "heure":
        key = re.sub(r"^(\d{1,2})(?::|h)?(\d{2})?$", lambda m: f"{int(m[1])}:{m[2] or '00'}", key)
    elif kind == "nombre":
        key = key.replace(",", ".")
    elif kind == "chemin":
        key = key.rstrip("/") or "/"
    return key


def statement(text: str) -> Statement:
    """What ``relate`` compares of ``text``."""
    folded = fold(text)
    found = values(text)
    bare = folded
    for value in found:
        bare = bare.replace(fold(value.text), " ")
    subject = frozenset(
        term
        for term in searchterms.terms(bare)
        if term not in _TIME_WORDS and not term.isdigit() and len(term) > 1
    )
    words = re.findall(r"[a-z0-9]+", folded)
    opposites = {
        2 * i + side: word
        for i, pair in enumerate(_OPPOSITES)
        for side in (0, 1)
        for word in words
        if word in pair[side]
    }
    preference = None
    match = _PREFERENCE.search(folded)
    if match:
        a, b = (match["a"], match["b"]) if match["a"] else (match["c"], match["d"])
        preference = (searchterms.stem(a), searchterms.stem(b), a, b)
    return Statement(
        text, folded, subject, found, bool(_NEGATION.search(folded)), opposites, preference
    )


def relate(new: str, old: str) -> Relation:
    """How the statement ``new`` relates to ``old``."""
    return relate_statements(statement(new), statement(old))


def relate_statements(new: Statement, old: Statement) -> Relation:
    shared = new.subject & old.subject
    smaller = min(len(new.subject), len(old.subject))
    overlap = len(shared) / smaller if smaller else 0.0
    same_values = {(v.kind, v.key) for v in new.values} == {(v.kind, v.key) for v in old.values}
    enough = overlap >= SUBJECT_MINIMUM and len(shared) >= min(2, smaller)
    if not shared or not (enough or _shared_anchor(new, old)):
        return Relation(UNRELATED, "", overlap)
    if new.preference and old.preference and new.preference[:2] == old.preference[1::-1]:
        return Relation(
            CONTRADICTS,
            f"inversion : « {old.preference[2]} plutôt que {old.preference[3]} » → "
            f"« {new.preference[2]} plutôt que {new.preference[3]} »",
            overlap,
        )
    if overlap >= SUBJECT_MINIMUM:
        for i in range(len(_OPPOSITES)):
            sides_new = {k for k in new.opposites if k // 2 == i}
            sides_old = {k for k in old.opposites if k // 2 == i}
            if len(sides_new) == len(sides_old) == 1 and sides_new != sides_old:
                (a,), (b,) = sides_old, sides_new
                return Relation(
                    CONTRADICTS,
                    f"sens opposé : « {old.opposites[a]} » → « {new.opposites[b]} »",
                    overlap,
                )
    if new.negated != old.negated and overlap >= SUBJECT_MINIMUM:
        said = "nie ce que l'ancien affirme" if new.negated else "affirme ce que l'ancien nie"
        return Relation(CONTRADICTS, f"négation : le nouveau {said}", overlap)
    changed = _changed_values(new, old)
    if changed:
        return Relation(REPLACES, "valeur changée : " + " ; ".join(changed), overlap)
    if not same_values:
        added = [v.text for v in new.values if (v.kind, v.key) not in _keys(old)]
        if added and overlap >= SUBJECT_MINIMUM:
            return Relation(REFINES, "précise : " + ", ".join(added[:3]), overlap)
    only_new, only_old = new.subject - old.subject - _LIGHT, old.subject - new.subject - _LIGHT
    if same_values and overlap >= SAME_MINIMUM and not only_new and not only_old:
        return Relation(SAME, "", overlap)
    if same_values and overlap >= SAME_MINIMUM and only_new and not only_old:
        return Relation(REFINES, "précise : " + ", ".join(sorted(only_new)[:3]), overlap)
    if overlap >= NEAR_MINIMUM:
        return Relation(NEAR, "même sujet, relation indécise", overlap)
    return Relation(UNRELATED, "", overlap)


def _keys(statement_: Statement) -> set[tuple[str, str]]:
    return {(v.kind, v.key) for v in statement_.values}


def _shared_anchor(new: Statement, old: Statement) -> bool:
    """Both name the same specific thing (a path, a host, an address), beyond common words."""
    specific = {"adresse", "IP", "chemin", "hôte"}
    return bool(
        {k for k in _keys(new) if k[0] in specific} & {k for k in _keys(old) if k[0] in specific}
    )


def _changed_values(new: Statement, old: Statement) -> list[str]:
    """« old → new » for each kind of value both state, whose values differ."""
    changed = []
    for kind, _ in _VALUE_KINDS:
        before = [v for v in old.values if v.kind == kind]
        after = [v for v in new.values if v.kind == kind]
        if before and after and {v.key for v in before} != {v.key for v in after}:
            gone = [v.text for v in before if v.key not in {a.key for a in after}]
            came = [v.text for v in after if v.key not in {b.key for b in before}]
            if gone and came:
                changed.append(f"{', '.join(gone)} → {', '.join(came)}")
    return changed
