"""Prose that says the opposite of prose ocmem holds (issue 36, the spec's « Cohérence » rule): a
line of a proposal against a line of an installed skill, of MEMORY.md or of a waiting proposal.
No model: a rule a human can check by hand, one sentence against one sentence.

- **The same thing**: every content word of the shorter sentence is in the other (stems, so
  « vérifie » is « vérifier »; stop-words and the markers below set aside), two at least, and no
  value of one kind differs (« port 443 » is not « port 8080 »).
- **Reversals**, each of which turns the sense over once:
  - *polarity*: a sentence is negative when it holds an odd number of negations (« ne … pas /
    plus / jamais / rien », « jamais », « sans », « pas de », « aucun », « éviter de »,
    « oublier de »; "not", "n't", "never", "no", "without", "avoid", "skip", "forget"): two on one
    line cancel (« pas de migration sans sauvegarde » asks for the backup); « A plutôt que B »,
    « au lieu de », "rather than", "instead of" negate B. « ne … que » restricts, it does not
    negate;
  - *an opposite pair*, one word on each side: activer/désactiver, ouvrir/fermer,
    démarrer/arrêter, installer/désinstaller, ajouter/retirer, garder/supprimer,
    autoriser/interdire, obligatoire/facultatif or interdit, augmenter/diminuer… (``OPPOSITES``);
  - *the order*: « A avant B » against « B avant A » (« B après A » is « A avant B », and so is
    « Après A, B »).
  An odd number of reversals is a contradiction; an even number agrees (« ne jamais autoriser le
  root login » says « le root login est interdit »).
- **A condition on one side only** (« si », « sauf », « lorsque », « quand »; "if", "unless",
  "when") speaks of another case: not a contradiction.

``opposed`` says why two sentences contradict, in French, or None. Its figures on
tests/data/coherence.yaml are development figures (docs/benchmarks.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import NamedTuple

from ocmem.text import relations, searchterms
from ocmem.text.words import fold


def _words(spec: str) -> str:
    """« activ* enable » → a pattern of whole folded words: ``activ\\w*`` starts a word, ``enable``
    is the word."""
    forms = [w[:-1] + r"\w*" if w.endswith("*") else w for w in spec.split()]
    return r"\b(?:" + "|".join(forms) + r")\b"


# Each pair: the words of one sense, then of the other (folded).
OPPOSITES: tuple[tuple[str, str], ...] = (
    ("activ* enable enables enabled enabling", "desactiv* disable disables disabled disabling"),
    ("ouvr* ouvert* open opens opened", "ferm* close closes closed"),
    ("demarr* start starts started allum*", "arret* stop stops stopped eteind* eteint*"),
    (
        "install install installs installed installer installe installes installez installee*",
        "desinstall* uninstall*",
    ),
    ("ajout* add adds added", "retir* enlev* remove removes removed"),
    ("gard* conserv* keep keeps kept", "supprim* effac* purg* delete deletes deleted"),
    (
        "autoris* permet* permis allow allows allowed permit permits permitted",
        "interdi* deny denies denied forbid* bloqu* block blocks blocked",
    ),
    ("accept*", "refus* reject*"),
    ("obligatoire* requis required mandatory", "facultati* optionnel* optional"),
    ("obligatoire* mandatory", "interdi* forbid*"),
    (
        "augment* increase increases increased",
        "diminu* reduire reduis* reduit* baiss* decrease* reduce*",
    ),
    ("monter monte montez monte montes mount mounts mounted", "demont* unmount*"),
    ("chiffr* encrypt*", "dechiffr* decrypt*"),
    ("verrouill* lock locks locked", "deverrouill* unlock*"),
    ("inclu* include*", "exclu* exclude*"),
    ("public publique publics publiques", "prive privee prives privees private"),
    ("relati*", "absolu*"),
    ("local locale locaux locales", "distant* remote"),
    ("synchrone* synchronous", "asynchrone* asynchronous"),
    ("vrai true", "faux false"),
    ("majuscule* uppercase", "minuscule* lowercase"),
)
_OPPOSITES = tuple((re.compile(_words(a)), re.compile(_words(b))) for a, b in OPPOSITES)
_NEGATING_VERBS = "evit* oubli* omet* omis avoid* skip* forget* omit*"
# Counted on folded text whose apostrophes are spaces (« n utilise », "don t").
_NEGATION = re.compile(
    r"\bne?\b(?:(?!\bque?\b)[^.;!?])*?\b(?:pas|plus|jamais|rien|aucun|aucune|nullement|guere)\b"
    r"|\b(?:jamais|aucun|aucune|sans|nullement|not|never|nothing|none|without|cannot)\b"
    r"|\bpas\s+(?:de|d|du|des|le|la|les|un|une|besoin|la peine|necessaire|forcement)\b"
    r"|\bno\s+\w+|\b(?:don|doesn|didn|isn|aren|wasn|won|can|shouldn|mustn) t\b"
    r"|\bnon\s+(?!plus\b)\w+|\bplutot\s+que?\b|\bau\s+lieu\s+de?\b|\brather\s+than\b"
    r"|\binstead\s+of\b|" + _words(_NEGATING_VERBS)
)
_ORDER = re.compile(r"\b(avant|apres|before|after)\b")
_THEN = frozenset({"apres", "after"})  # « B après A »: A comes first
_CONDITION = re.compile(r"\b(?:si|s il|sauf|lorsque?|lorsqu|quand|if|unless|when|whenever)\b")
# Every marker word: none of them is a content word.
_MARKERS = re.compile(
    "|".join(
        [
            _words(
                "ne n pas plus jamais rien aucun aucune nullement guere sans not never nothing "
                "none without cannot no non t toujours always avant apres before after si s il "
                "sauf lorsque lorsqu quand if unless when whenever plutot lieu rather instead "
                + _NEGATING_VERBS
            )
        ]
        + [p.pattern for pair in _OPPOSITES for p in pair]
    )
)
MIN_SHARED = 2
# A sentence ends at « . ; ! ? », and a colon opens another clause (« jamais de redémarrage :
# un reload suffit » negates the restart, not the reload).
_SENTENCE = re.compile(r"(?<=[.;!?])\s+|\s+:\s+")


class Sentence(NamedTuple):
    text: str  # as written
    content: frozenset[str]  # stems of its content words
    values: dict[str, frozenset[str]]  # kind → values stated (ocmem.text.relations)
    negations: int
    senses: dict[int, str]  # opposite pair i → "0" or "1" (its side), when one side only
    said: dict[int, str]  # opposite pair i → the word written
    # opposite pair i → the stems of its words here: a content word unless the other sentence
    # speaks of that pair too (« ne pas supprimer les sauvegardes » is not « faire une sauvegarde »)
    pairs: dict[int, frozenset[str]]
    order: tuple[frozenset[str], frozenset[str]] | None  # content words first, then
    marker: str  # the order word, as folded ("" without one)
    conditional: bool

    @property
    def keys(self) -> frozenset[str]:
        """What two sentences must share to be about the same thing: the first letters of their
        words (``_matches``), for an index over many held sentences."""
        words = self.content.union(*self.pairs.values())
        return frozenset(w[: searchterms.MIN_PREFIX] for w in words)


def sentences(text: str) -> Iterator[str]:
    """The sentences of prose: one a line, cut again at « . ; ! ? »; headings, code blocks,
    front matter and empty lines left out (a command states nothing to contradict)."""
    fenced = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or not line or line.startswith(("#", "---")):
            continue
        line = re.sub(r"^(?:[-*+>]|\d+[.)])\s+", "", line)
        yield from (s for s in _SENTENCE.split(line) if s.strip())


@lru_cache(maxsize=8192)
def sentence(text: str) -> Sentence:
    """The sentence as ``opposed`` compares it (cached: a long-lived gate reads the same skills
    at every proposal; never changed by its callers)."""
    folded = fold(text).replace("’", "'")
    found = relations.values(text)
    bare = folded
    for value in found:
        bare = bare.replace(fold(value.text), " ")
    bare = re.sub(r"\b(\w+)'(?=\w)", r"\1 ", bare)  # « n'utilise », "don't": words apart
    values: dict[str, set[str]] = {}
    for value in found:
        values.setdefault(value.kind, set()).add(value.key)
    senses: dict[int, str] = {}
    said: dict[int, str] = {}
    pairs: dict[int, frozenset[str]] = {}
    for i, (first, second) in enumerate(_OPPOSITES):
        a, b = first.findall(bare), second.findall(bare)
        if a or b:
            pairs[i] = frozenset(searchterms.terms(" ".join(a + b)))
        if bool(a) != bool(b):
            senses[i] = "0" if a else "1"
            said[i] = _as_written((a or b)[0], text)
    order, marker = _order(bare)
    return Sentence(
        text,
        _content(bare),
        {k: frozenset(v) for k, v in values.items()},
        len(_NEGATION.findall(bare)),
        senses,
        said,
        pairs,
        order,
        marker,
        bool(_CONDITION.search(bare)),
    )


def _content(folded: str) -> frozenset[str]:
    kept = _MARKERS.sub(" ", folded)
    return frozenset(t for t in searchterms.terms(kept) if len(t) > 1 and not t.isdigit())


def _order(folded: str) -> tuple[tuple[frozenset[str], frozenset[str]] | None, str]:
    """What comes first and what then, by the one order word of the sentence (None without
    exactly one)."""
    found = _ORDER.findall(folded)
    if len(found) != 1:
        return None, ""
    word = found[0]
    before, after = _ORDER.split(folded, maxsplit=1)[::2]
    if not _content(before) and "," in after:
        # « Après A, B » / « Avant A, B »: the clause after the comma is the main one
        reference, main = after.split(",", 1)
        before, after = main, reference
    first, then = _content(before), _content(after)
    return ((then, first) if word in _THEN else (first, then)), word


def _matches(word: str, other: str) -> bool:
    """The same stem, or one begins the other (« verif », « verifi »; « redemarr »,
    « redemarrag ») when the shorter has searchterms.MIN_PREFIX letters."""
    return word == other or (
        min(len(word), len(other)) >= searchterms.MIN_PREFIX
        and (other.startswith(word) or word.startswith(other))
    )


def _shared(a: frozenset[str], b: frozenset[str]) -> int:
    return sum(any(_matches(word, other) for other in b) for word in a)


def _covered(smaller: frozenset[str], larger: frozenset[str]) -> bool:
    return _shared(smaller, larger) == len(smaller)


def _as_written(folded: str, text: str) -> str:
    """A folded word as ``text`` writes it (accents kept), in lower case."""
    return next((w.lower() for w in re.findall(r"\w+", text) if fold(w) == folded), folded)


def _with_actions(a: Sentence, b: Sentence) -> frozenset[str]:
    """``a``'s content words, and the words of its opposite pairs ``b`` does not speak of (a word
    of a pair both speak of, « interdit » of interdire/autoriser and obligatoire/interdit, stays
    a marker)."""
    marked = frozenset().union(*(t for i, t in a.pairs.items() if i in b.pairs))
    alone = frozenset().union(*(t for i, t in a.pairs.items() if i not in b.pairs))
    return a.content | (alone - marked)


def same_thing(a: Sentence, b: Sentence) -> bool:
    smaller, larger = sorted((_with_actions(a, b), _with_actions(b, a)), key=len)
    if len(smaller) < MIN_SHARED or not _covered(smaller, larger):
        return False
    return not any(kind in b.values and b.values[kind] != keys for kind, keys in a.values.items())


def opposed(new: Sentence, held: Sentence, who: str = "la proposition") -> str | None:
    """Why ``new`` says the opposite of ``held`` (French, ``new`` named ``who``), or None."""
    if new.conditional != held.conditional or not same_thing(new, held):
        return None
    reversals = []
    if new.negations % 2 != held.negations % 2:
        said, other = ("nie", "affirme") if new.negations % 2 else ("affirme", "nie")
        reversals.append(f"négation : {who} {said} ce que l'autre {other}")
    for i, side in new.senses.items():
        if held.senses.get(i, side) != side:
            reversals.append(f"sens opposé : « {held.said[i]} » / « {new.said[i]} »")
    if new.order and held.order:
        (first, then), (held_first, held_then) = new.order, held.order
        crossed = _shared(first, held_then) + _shared(then, held_first)
        kept = _shared(first, held_first) + _shared(then, held_then)
        if crossed > kept:
            words = {_as_written(held.marker, held.text), _as_written(new.marker, new.text)}
            reversals.append(f"ordre inversé : « {' » / « '.join(sorted(words))} »")
    if len(reversals) % 2 == 0:
        return None  # none, or two that cancel
    return " + ".join(reversals)


def between(new: str, held: str) -> str | None:
    """Why a sentence of the prose ``new`` says the opposite of one of ``held``, or None."""
    theirs = [sentence(s) for s in sentences(held)]
    for mine in map(sentence, sentences(new)):
        for other in theirs:
            why = opposed(mine, other)
            if why is not None:
                return why
    return None
