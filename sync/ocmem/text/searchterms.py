"""Search terms of journal text: folded, stop-words dropped, words stemmed by Snowball (PyStemmer),
and how a search ranks with them (synonyms from ``ocmem.text.thesaurus``, related terms learnt
from the journal, « rien de pertinent »).

The index and the query go through the same ``terms``, so « Renouvellement des certificats »,
"renewed certificate" and « certificat renouvelé » meet on the stems ``renouvel``, ``certificat``.
Stored text may carry CommonMark escapes (``\\#docker``, ``\\[``) and entities (``&lt;``): a
backslash is punctuation like any other, and entities are decoded before folding, so ``\\#docker``
gives ``docker`` and ``&lt;`` gives no word at all.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
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
    "late": "retard",
    "last": "dernier",
    "kill": "tuer",
    "night": "nuit",
    "hour": "heure",
    "week": "semaine",
    "month": "mois",
    "upgrade": "montée",
    "password": "passe",
    "setting": "réglage",
    "server": "serveur",
    "deploy": "déployer",
    "install": "installer",
    "project": "projet",
    "two": "deux",
}

_MIN_STEM = 3
# a stem this long or longer also matches the terms it begins (« certif »: « certificat »); a
# shorter one is a word of its own (« ssh » is not « sshd », nor « req », of « limit_req »,
# « requête »): chosen on the development queries, 4 keeps as many paraphrases as 3 and answers
# « rien » more often
MIN_PREFIX = 4
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
    return [stem for stem, _ in _stems_and_words(text)]


def _stems_and_words(text: str) -> Iterator[tuple[str, str]]:
    """Each word of ``text`` that is not a stop-word: its stem, and the word folded."""
    for token in _TOKEN.findall(_lower(text)):
        folded = words_module.fold(token)
        if folded.isalnum() and folded.isascii():
            if folded not in _STOPWORDS:
                yield _term(token), folded
        else:  # letters fold did not turn into ASCII ones: its words, as words() reads them
            yield from ((_term(w), w) for w in WORD.findall(folded) if w not in _STOPWORDS)


_TOKEN = re.compile(r"[^\W_]+")
# Prepositions that ocmem.text.words keeps (similarity counts them), a search does not; and the
# function words and auxiliary verbs of a question (French, then English) that say nothing of its
# topic: « je me suis enfermé », « il y a entre deux », "it keeps getting". Folded, as compared.
_STOPWORDS = STOPWORDS | frozenset(
    """
    vers via entre contre chaque certains certaines plusieurs quelques quelque autre autres meme
    memes ici la lors ainsi car puis comme selon parce lorsque ceux celle celles celui sous
    suis es sommes etes etais etions seront sera serait seraient soit sois
    avons avez avait avaient aurait auraient aura
    va vais vas vont allait
    peuvent pouvait pourrait pu veut veulent voulait doivent devait devrait
    prend prends prennent prenait pris prendre met mets mettent mis
    voir vois voit voient voyait vu vus dire dit disent savoir sais sait venir vient viennent
    toujours souvent parfois trop beaucoup moins tellement vraiment juste seulement
    maintenant hier aujourd demain
    all any some just only also very too more most again still now get gets got getting keep
    keeps kept make makes made being because while about over under through each every other
    one myself out
    """.split()
)


def _lower(text: str) -> str:
    if "&" in text:
        text = _ENTITY.sub(_decode_entity, text)
    return text.lower()


_CANONICAL: dict[str, str] = {}
# Names of server software that the French stemmer would cut down to another word of an ops
# journal: « gitea » → « git », « redis » → « red », « composer » → « compos » (of « compose »)
_WHOLE = frozenset({"gitea", "redis", "composer"})


@lru_cache(maxsize=65536)
def _term(word: str) -> str:
    """A word's stem, or the French stem of the glossary word it is an English form of (by
    Snowball's English stem: "servers", "deployment", "locked")."""
    if not _CANONICAL:
        english = _snowball(1)
        _CANONICAL.update({english(en): stem(fr) for en, fr in GLOSSARY.items()})
    if word in _WHOLE:
        return word
    if word.isascii() and word.isalpha():
        canonical = _CANONICAL.get(_snowball(1)(word))
        if canonical is not None:
            return canonical
    return stem(word)


def surfaces(query: str) -> dict[str, frozenset[str]]:
    """The distinct stems of a query, in order, each with the folded words it stands for; when
    it has nothing but stop-words, those words stemmed."""
    found: dict[str, set[str]] = {}
    pairs = list(_stems_and_words(query)) or [(_term(w), w) for w in words(query)]
    for stem, word in pairs:
        found.setdefault(stem, set()).add(word)
    return {stem: frozenset(words) for stem, words in found.items()}


def query_terms(query: str) -> list[str]:
    """The distinct stems of a query (``surfaces``, without their words)."""
    return list(surfaces(query))


# --- ranking: synonyms, related terms learnt from the journal, and « rien de pertinent » ------
# The index (ocmem.home.journalindex) asks, these decide. Synonyms of a query's stem: the words of
# its groups in ocmem.text.thesaurus (a general vocabulary, written by hand, fixed). Related
# terms of a query's stem: the broader terms of the user's own journal that the entries holding
# it mostly hold too, and that other entries hold as well (« espace » → « disque »), learnt at
# each search from the journal alone, nothing from outside. Both count at a lower weight.

CANDIDATES = 60  # entries ranked per expression (the query's stems, their related terms)
SAMPLE = 400  # entries read to learn a word's related terms; a commoner word teaches nothing
EXPANSION = 0.3  # weight of the related terms' BM25 against the query's own
SYNONYM = 0.5  # weight of the thesaurus' synonyms' BM25 (ocmem.text.thesaurus) against the query's
# of that weight, for a stem the best literal match holds (its synonyms then only break ties)
SYNONYM_HELD = 0.25
SYNONYM_COVER = 0.8  # how much of a query stem's weight an entry holding only a synonym carries
_ASSOCIATION = 0.3  # P(related | word) × P(not word | related), at least
_RELATED_PER_WORD = 2
_LEARN_SHARE = 0.2  # a word in more than this share of the entries is too common to learn from
# « rien de pertinent » when no entry shown reaches this evidence (``evidence``): the share of the
# query's weight (IDF) it carries, plus the share one of its fields carries alone, plus HELD_WORD
# per query word it carries, up to HELD_WORDS (chosen on the development queries and the scored
# held-out parts 1–5, 742 queries: the share alone, at 0.32, answered 158 of their 182 unrelated
# questions « rien »; this evidence at 1.06, 0.15 and 4 answers 168, with as many answers kept;
# 0.10 or 0.20 per word, or no cap, do no better; see docs/benchmarks.md)
RELEVANT = 1.06
HELD_WORD = 0.15
HELD_WORDS = 4
# in « rien de pertinent », the weight (times its IDF) of a query word the journal never uses and no
# conversation does either (ocmem.text.lexicon): a name of a thing the journal never met (chosen on
# the development queries: 1.5 lets more unrelated questions through, 2 drops more paraphrases)
SPECIFIC = 1.75
# and the weight of one the journal never uses that is an everyday word: the question's own
# wording (« enfermé dehors »), less telling than the words of the journal (chosen with RELEVANT on
# the development queries and the scored held-out parts 1–3: 0.85 and 0.32 keep as many
# paraphrases as 1 and 0.30, and answer « rien » more often)
WORDING = 0.85
# the rank score's power of the coverage (chosen on the development queries: 1 and 3 rank as well,
# 2 puts the right entry first a little more often), and its floor (an entry matched by related
# terms only still ranks by its BM25)
COVER_POWER = 2
COVER_FLOOR = 0.05
# a query word the journal never uses stands for a journal word it begins with of this many letters
# at least, and this share of it (« dockerisée » for « docker »; not « configuration » for « conf »)
_MIN_BEGINNING = 5
_BEGINNING_SHARE = 0.6
# related terms are only looked for when the best entry carries less than this of the query
EXPAND_BELOW = 0.75


def match_expression(words: Sequence[str]) -> str:
    """An FTS5 expression matching any of ``words``: each stem as a token, and as a prefix when
    long enough (``"certif" OR "certif"*``), a number only whole (« 100 » is not « 1005 »)."""
    parts = []
    for word in words:
        parts.append(f'"{word}"')
        if len(word) >= MIN_PREFIX and not word.isdigit():
            parts.append(f'"{word}"*')
    return " OR ".join(parts)


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


def combined(own: float, expansion: float, synonym: float = 0.0) -> float:
    """An entry's score from its BM25 (positive) over the query's stems, their related terms and
    their synonyms."""
    return own + EXPANSION * expansion + SYNONYM * synonym


def final(score: float, cover: float) -> float:
    """An entry's rank score: its BM25 (``combined``) times a power of the share of the query it
    carries (``coverage``), so that an entry holding more of the query's distinct words, the rarer
    the better, goes before one that repeats a few of them (the sum of BM25s over the synonyms and
    related terms of a long paraphrase rewards repetition)."""
    return score * (COVER_FLOOR + cover) ** COVER_POWER


def known_beginnings(word: str) -> list[str]:
    """The stems of the beginnings of ``word`` (a folded query word) to look for in the journal
    when it never uses the word's own stem, longest first: beginnings of ``_MIN_BEGINNING``
    letters and ``_BEGINNING_SHARE`` of the word at least (« dockerisee » → « docker » → « dock »)."""
    if not word.isalpha() or len(word) <= _MIN_BEGINNING:
        return []
    shortest = max(_MIN_BEGINNING, math.ceil(_BEGINNING_SHARE * len(word)))
    own = _term(word)
    found = (_term(word[:n]) for n in range(len(word) - 1, shortest - 1, -1))
    return [t for t in dict.fromkeys(found) if t != own and len(t) >= _MIN_STEM]


def synonyms(words: Sequence[str]) -> dict[str, str]:
    """The thesaurus' synonyms of the query's stems (``ocmem.text.thesaurus``), each with the stem
    it stands for."""
    from ocmem.text import thesaurus

    return thesaurus.expand(words, _term)


class Synonyms:
    """The thesaurus' part of one search. Per query stem, the BM25 of its synonyms
    (``scored(group)``: every entry matching one), counted for an entry that lacks the stem
    itself: whole when the best literal match lacks it too (the synonyms fill a gap of the
    query), at ``SYNONYM_HELD`` otherwise; and ``credit``: each synonym's stem and the share of
    its weight it carries (``synonym_share``). A stem the journal never uses is given its
    synonyms' frequency (written into ``frequency``): else one synonym found would carry most of
    any query holding it, as an unknown word weighs the most."""

    def __init__(
        self,
        words: Sequence[str],
        frequency: dict[str, int],
        size: int,
        best: AbstractSet[str],
        scored: Callable[[list[str]], dict[int, float]],
    ):
        found = synonyms(words)
        self.gaps = {w for w in words if not holds(best, w)}
        self.per_word: dict[str, dict[int, float]] = {}
        self.credit: dict[str, tuple[str, float]] = {}
        for word in dict.fromkeys(found.values()):
            group = [t for t, w in found.items() if w == word]
            self.per_word[word] = scored(group)
            held = len(self.per_word[word])  # entries matching (among the tagged ones, if any)
            if frequency[word] == 0:
                frequency[word] = held
            share = synonym_share(frequency[word], held, size)
            self.credit.update({t: (word, share) for t in group})

    def summed(self) -> dict[int, float]:
        """Each entry matching a synonym, with the BM25 of all the synonyms it matches."""
        total: dict[int, float] = {}
        for scores in self.per_word.values():
            for rowid, value in scores.items():
                total[rowid] = total.get(rowid, 0.0) + value
        return total

    def score(self, rowid: int, entry: AbstractSet[str]) -> float:
        """The synonyms' BM25 of entry ``rowid`` (``entry``: its terms)."""
        return sum(
            scores.get(rowid, 0.0) * (1.0 if word in self.gaps else SYNONYM_HELD)
            for word, scores in self.per_word.items()
            if not holds(entry, word)
        )


def synonym_share(own: int, synonyms: int, size: int) -> float:
    """How much of a query stem's weight an entry holding only one of its synonyms carries: at
    most ``SYNONYM_COVER``, less when the synonyms are commoner than the stem (a rare word is
    not met by a word half the journal holds)."""
    mine, theirs = idf(own, size), idf(synonyms, size)
    return SYNONYM_COVER * (1.0 if mine <= theirs else theirs / mine)


def coverage(
    words: Sequence[str],
    frequency: Mapping[str, int],
    size: int,
    related_terms: Mapping[str, tuple[str, float]],
    entry: AbstractSet[str],
    synonym_terms: Mapping[str, tuple[str, float]] | None = None,
    weight: Mapping[str, float] | None = None,
) -> float:
    """The share of the query's weight (the IDF of its stems, times ``weight`` where given) that
    ``entry`` (its terms) carries: a stem it holds (as a word, or a word it begins) counts whole,
    a synonym of it most (``synonym_terms``: each with its stem and share), a related term of it
    part."""
    weights, held = _credits(words, frequency, size, related_terms, entry, synonym_terms, weight)
    total = sum(weights.values())
    return 1.0 if total == 0 else sum(weights[w] * held.get(w, 0.0) for w in words) / total


def _credits(
    words: Sequence[str],
    frequency: Mapping[str, int],
    size: int,
    related_terms: Mapping[str, tuple[str, float]],
    entry: AbstractSet[str],
    synonym_terms: Mapping[str, tuple[str, float]] | None,
    weight: Mapping[str, float] | None,
) -> tuple[dict[str, float], dict[str, float]]:
    """Each query stem's weight, and the share of it ``entry`` carries (``coverage``), for the
    stems it carries some of."""
    weights = {w: idf(frequency[w], size) * (weight or {}).get(w, 1.0) for w in words}
    held = {w: 1.0 for w in words if holds(entry, w)}
    for term, (word, share) in (synonym_terms or {}).items():
        if held.get(word, 0.0) < share and holds(entry, term):
            held[word] = share
    for term, (word, score) in related_terms.items():
        if word not in held and holds(entry, term):
            held[word] = max(held.get(word, 0.0), EXPANSION * score)
    return weights, held


def evidence(
    words: Sequence[str],
    frequency: Mapping[str, int],
    size: int,
    related_terms: Mapping[str, tuple[str, float]],
    entry: AbstractSet[str],
    fields: Sequence[AbstractSet[str]],
    synonym_terms: Mapping[str, tuple[str, float]] | None = None,
    weight: Mapping[str, float] | None = None,
) -> float:
    """How surely ``entry`` answers the query, for « rien de pertinent »: the share of the query's
    weight it carries (``coverage``), plus the share that one of its ``fields`` (its title, tags,
    lesson, pitfall, the rest: their terms) carries alone, plus ``HELD_WORD`` per query stem it
    carries some of (up to ``HELD_WORDS``). A question whose words an entry holds together, or
    several of them, is about it; one rare word met in passing (« bureau » in an episode about
    IPv6, for « l'imprimante du bureau »), or words scattered over its text, are not."""
    weights, held = _credits(words, frequency, size, related_terms, entry, synonym_terms, weight)
    total = sum(weights.values())
    if total == 0:
        return math.inf

    def share(carried: Mapping[str, float]) -> float:
        return sum(weights[w] * carried.get(w, 0.0) for w in words) / total

    in_one_field = max(
        (
            share(_credits(words, frequency, size, related_terms, f, synonym_terms, weight)[1])
            for f in fields
        ),
        default=0.0,
    )
    return share(held) + in_one_field + HELD_WORD * min(len(held), HELD_WORDS)


def relevant(
    words: Sequence[str],
    frequency: Mapping[str, int],
    size: int,
    related_terms: Mapping[str, tuple[str, float]],
    entry: AbstractSet[str],
    fields: Sequence[AbstractSet[str]],
    synonym_terms: Mapping[str, tuple[str, float]] | None = None,
    specific: Collection[str] = (),
    wording: Collection[str] = (),
) -> bool:
    """Whether ``entry`` (its terms, and per field: ``fields``) answers enough of the query to be
    shown (else « rien de pertinent »: ``evidence``). ``specific``: the query's stems the journal
    never uses that are no everyday word either (``ocmem.text.lexicon``): the names of what the
    question is about, they weigh more; ``wording``: those the journal never uses that are
    everyday words, they weigh less."""
    weight = {w: SPECIFIC for w in specific} | {w: WORDING for w in wording}
    found = evidence(words, frequency, size, related_terms, entry, fields, synonym_terms, weight)
    return found >= RELEVANT


class EntryTerms(frozenset[str]):
    """An entry's terms, also in order: ``holds`` then finds a term a word begins in a few
    comparisons (a search asks it of every shown entry for every word, synonym and related term)."""

    ordered: tuple[str, ...]

    def __init__(self, terms: Iterable[str] = ()) -> None:
        super().__init__()
        self.ordered = tuple(sorted(self))


def holds(entry: AbstractSet[str], word: str) -> bool:
    """Whether an entry (its terms) holds ``word``: as a term, or as the start of one."""
    if word in entry:
        return True
    if len(word) < MIN_PREFIX or word.isdigit():
        return False
    if isinstance(entry, EntryTerms):  # the terms beginning with ``word`` follow it in order
        at = bisect.bisect_left(entry.ordered, word)
        return at < len(entry.ordered) and entry.ordered[at].startswith(word)
    return any(t.startswith(word) for t in entry)
