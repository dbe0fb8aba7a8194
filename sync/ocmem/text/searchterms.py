"""Search terms of journal text: folded, stop-words dropped, words stemmed by Snowball (PyStemmer),
and how a search ranks with them (related terms learnt from the journal, « rien de pertinent »).

The index and the query go through the same ``terms``, so « Renouvellement des certificats »,
"renewed certificate" and « certificat renouvelé » meet on the stems ``renouvel``, ``certificat``.
Stored text may carry CommonMark escapes (``\\#docker``, ``\\[``) and entities (``&lt;``): a
backslash is punctuation like any other, and entities are decoded before folding, so ``\\#docker``
gives ``docker`` and ``&lt;`` gives no word at all.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

from ocmem.text import words as words_module
from ocmem.text.words import STOPWORDS, WORD

_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")

# English words of server work and the French word the journal uses: both give the French stem,
# in the index and in queries, so English keywords find French entries (and the reverse).
# Matched by stem ("disks", "locked" too). Only single words whose stems differ: shared ones
# (certificate, port, service…) need nothing.
GLOSSARY: dict[str, str] = {
    "disk": "disque",
    "full": "plein",
    "space": "espace",
    "cleanup": "nettoyage",
    "clean": "nettoyer",
    "lock": "verrou",
    "start": "démarrer",
    "boot": "démarrage",
    "restart": "redémarrer",
    "reboot": "redémarrage",
    "stop": "arrêter",
    "order": "ordre",
    "database": "base",
    "size": "taille",
    "container": "conteneur",
    "backup": "sauvegarde",
    "restore": "restauration",
    "slow": "lent",
    "error": "erreur",
    "memory": "mémoire",
    "renew": "renouveler",
    "user": "utilisateur",
    "key": "clé",
    "delete": "supprimer",
    "remove": "supprimer",
    "file": "fichier",
    "folder": "dossier",
    "directory": "répertoire",
    "path": "chemin",
    "network": "réseau",
    "rule": "règle",
    "broken": "cassé",
    "break": "casser",
    "fail": "échec",
    "failure": "échec",
    "denied": "refusé",
    "refused": "refusé",
    "connection": "connexion",
    "empty": "vide",
    "missing": "manquant",
    "clock": "horloge",
    "timezone": "fuseau",
    "schedule": "planifier",
    "job": "tâche",
    "task": "tâche",
    "email": "mail",
    "query": "requête",
    "row": "ligne",
    "line": "ligne",
    "history": "historique",
    "branch": "branche",
    "reload": "recharger",
    "big": "gros",
    "large": "gros",
    "huge": "énorme",
    "old": "ancien",
    "new": "nouveau",
    "wrong": "mauvais",
    "kill": "tuer",
    "night": "nuit",
    "week": "semaine",
    "month": "mois",
    "upgrade": "montée",
    "password": "passe",
    "setting": "réglage",
    "server": "serveur",
    "deploy": "déployer",
    "install": "installer",
}

_MIN_STEM = 3
# English inflections the French stemmer does not know, removed first from ASCII words whose base
# keeps 4 letters or more: "renewed" → renew, "logging" → log, "entries" → entry. Nothing else is
# hand-written: the stem is then Snowball's French one (PyStemmer), which conflates far less than
# a list of endings (« servait » → serv, « serveur » → serveur).
_ENGLISH_ENDINGS = (("ies", "y"), ("ing", ""), ("ed", ""))
_DOUBLED = frozenset("bdgmnprt")
_STEMMERS: list[Callable[[str], str]] = []


def _snowball(language: int) -> Callable[[str], str]:
    """Snowball's French (0) or English (1) stemmer, loaded at the first stem."""
    if not _STEMMERS:
        import Stemmer  # type: ignore[import-not-found]  # PyStemmer (C, Snowball), no stubs

        _STEMMERS.extend(Stemmer.Stemmer(name).stemWord for name in ("french", "english"))
    return _STEMMERS[language]


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The stem of a lowercase word (accents kept or not), folded: Snowball's French stemmer,
    after English inflections. « certificats », "certificate" → ``certificat``; « renouveler »,
    « renouvellement » → ``renouvel``; « expirée », "expired" → ``expir``. Words with digits and
    words of 3 letters or less are only folded."""
    folded = words_module.fold(word)
    if len(folded) <= _MIN_STEM or not folded.isalpha():
        return folded
    if word.isascii():
        for ending, replacement in _ENGLISH_ENDINGS:
            base = word[: -len(ending)]
            if word.endswith(ending) and len(base) >= _MIN_STEM + 1 and not base.endswith("e"):
                if len(base) > _MIN_STEM + 1 and base[-1] == base[-2] and base[-1] in _DOUBLED:
                    base = base[:-1]  # stopped → stop, logging → log
                word = base + replacement
                break
    return words_module.fold(_snowball(0)(word))


def fold(text: str) -> str:
    """``ocmem.text.words.fold`` of stored text: CommonMark entities decoded first (``&eacute;``
    → e, ``&lt;`` → <)."""
    if "&" in text:
        text = _ENTITY.sub(_decode_entity, text)
    return words_module.fold(text)


def _decode_entity(match: re.Match[str]) -> str:
    import html  # only for text that has entities

    return html.unescape(match.group())


def words(text: str) -> list[str]:
    """The folded words of ``text`` (runs of ASCII letters and digits), stop-words included."""
    return WORD.findall(fold(text))


def terms(text: str) -> list[str]:
    """The stems of ``text``'s words that are not stop-words, in order (English glossary words
    as their French stem)."""
    found = []
    for token in _TOKEN.findall(_lower(text)):
        folded = words_module.fold(token)
        if folded.isalnum() and folded.isascii():
            if folded not in _STOPWORDS:
                found.append(_term(token))
        else:  # letters fold did not turn into ASCII ones: its words, as words() reads them
            found += [_term(w) for w in WORD.findall(folded) if w not in _STOPWORDS]
    return found


_TOKEN = re.compile(r"[^\W_]+")
# Prepositions that ocmem.text.words keeps (similarity counts them), a search does not.
_STOPWORDS = STOPWORDS | {"vers", "via"}


def _lower(text: str) -> str:
    if "&" in text:
        text = _ENTITY.sub(_decode_entity, text)
    return text.lower()


_CANONICAL: dict[str, str] = {}


@lru_cache(maxsize=65536)
def _term(word: str) -> str:
    """A word's stem, or the French stem of the glossary word it is an English form of (by
    Snowball's English stem: "servers", "deployment", "locked")."""
    if not _CANONICAL:
        english = _snowball(1)
        _CANONICAL.update({english(en): stem(fr) for en, fr in GLOSSARY.items()})
    if word.isascii() and word.isalpha():
        canonical = _CANONICAL.get(_snowball(1)(word))
        if canonical is not None:
            return canonical
    return stem(word)


def query_terms(query: str) -> list[str]:
    """The distinct stems of a query; when it has nothing but stop-words, those words stemmed."""
    found = terms(query) or [_term(w) for w in words(query)]
    return list(dict.fromkeys(found))


# --- ranking: related terms learnt from the journal, and « rien de pertinent » ----------------
# The index (ocmem.home.journalindex) asks, these decide. Related terms of a query's stem: the
# broader terms of the user's own journal that the entries holding it mostly hold too, and that
# other entries hold as well (« espace » → « disque »), learnt at each search from the journal
# alone, nothing from outside; they count at a lower weight.

CANDIDATES = 60  # entries ranked per expression (the query's stems, their related terms)
SAMPLE = 400  # entries read to learn a word's related terms; a commoner word teaches nothing
EXPANSION = 0.3  # weight of the related terms' BM25 against the query's own
_ASSOCIATION = 0.3  # P(related | word) × P(not word | related), at least
_RELATED_PER_WORD = 2
_LEARN_SHARE = 0.2  # a word in more than this share of the entries is too common to learn from
# « rien de pertinent » below this share of the query's weight (IDF) carried by the best entry
RELEVANT = 0.3
# related terms are only looked for when the best entry carries less than this of the query
EXPAND_BELOW = 0.75


def idf(frequency: int, size: int) -> float:
    """BM25's inverse document frequency of a term in ``frequency`` of ``size`` entries."""
    return math.log(1 + (size - frequency + 0.5) / (frequency + 0.5))


def cooccurring(word: str, sample: Sequence[set[str]]) -> dict[str, int]:
    """The terms found with ``word`` in enough of ``sample`` (the terms of entries holding it)
    to be related to it, and in how many."""
    least = max(2, math.ceil(_ASSOCIATION * len(sample)))
    counts = Counter(t for entry in sample for t in entry)
    return {
        t: c
        for t, c in counts.items()
        if c >= least and t != word and len(t) >= _MIN_STEM and not t.isdigit()
    }


def related(
    words: Sequence[str],
    frequency: Mapping[str, int],
    size: int,
    neighbours: Callable[[str], tuple[int, dict[str, tuple[int, int]]]],
) -> dict[str, tuple[str, float]]:
    """Each related term of the query's stems, with the stem it relates to and how strongly.

    ``neighbours(word)``: how many entries hold ``word`` (read), and for each ``cooccurring``
    term its count among them and in the whole journal."""
    found: dict[str, tuple[str, float]] = {}
    for word in words:
        common = frequency[word] > min(SAMPLE, _LEARN_SHARE * size)
        if len(word) < _MIN_STEM or word.isdigit() or frequency[word] < 2 or common:
            continue
        held, together = neighbours(word)
        # found with the word (c of its ``held`` entries), and also elsewhere (c of ``d``): a term
        # only ever found with it (the rest of a routine entry) finds nothing more
        scored = sorted(
            (
                (c / held * (1 - c / d), t)
                for t, (c, d) in together.items()
                if t not in words and d <= _LEARN_SHARE * size  # « aucun », « vérifié »: no topic
            ),
            reverse=True,
        )
        for score, term in scored[:_RELATED_PER_WORD]:
            if score >= _ASSOCIATION and term not in found:
                found[term] = (word, score)
    return found


def combined(own: float, expansion: float) -> float:
    """An entry's score from its BM25 (positive) over the query's stems and their related terms."""
    return own + EXPANSION * expansion


def coverage(
    words: Sequence[str],
    frequency: Mapping[str, int],
    size: int,
    related_terms: Mapping[str, tuple[str, float]],
    entry: set[str],
) -> float:
    """The share of the query's weight (the IDF of its stems) that ``entry`` (its terms) carries:
    a stem it holds (as a word, or a word it begins) counts whole, a related term of it part."""
    weights = {w: idf(frequency[w], size) for w in words}
    held = {w: 1.0 for w in words if _holds(entry, w)}
    for term, (word, score) in related_terms.items():
        if word not in held and _holds(entry, term):
            held[word] = max(held.get(word, 0.0), EXPANSION * score)
    total = sum(weights.values())
    return 1.0 if total == 0 else sum(weights[w] * held.get(w, 0.0) for w in words) / total


def relevant(
    words: Sequence[str],
    frequency: Mapping[str, int],
    size: int,
    related_terms: Mapping[str, tuple[str, float]],
    entry: set[str],
) -> bool:
    """Whether ``entry`` carries enough of the query to be shown (else « rien de pertinent »)."""
    return coverage(words, frequency, size, related_terms, entry) >= RELEVANT


def _holds(entry: set[str], word: str) -> bool:
    if word in entry:
        return True
    return len(word) >= _MIN_STEM and not word.isdigit() and any(t.startswith(word) for t in entry)
