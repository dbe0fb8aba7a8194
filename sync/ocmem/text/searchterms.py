"""Search terms of journal text: folded, stop-words dropped, words stemmed by Snowball (PyStemmer),
and how the words' side of a search ranks with them.

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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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
    tokens = _TOKEN.findall(_lower(text))
    known = _TOKEN_TERMS
    try:
        return [stem for token in tokens for stem in known[token]]
    except KeyError:
        if len(known) >= _TOKEN_CACHE:
            known.clear()
        for token in tokens:
            if token not in known:
                known[token] = tuple(stem for stem, _ in _stems_and_words(token))
        return [stem for token in tokens for stem in known[token]]


# Each token's stems, as ``terms`` found them: an index build meets the same few thousand words
# again and again (a dictionary lookup instead of folding and stemming each one: 3× faster).
_TOKEN_TERMS: dict[str, tuple[str, ...]] = {}
_TOKEN_CACHE = 200_000


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
    one myself out doesn isn didn aren wasn weren won shouldn couldn wouldn haven hasn
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


# --- ranking ---------------------------------------------------------------------------------
# The index (ocmem.home.journalindex) asks, these decide: BM25 over the stems, times a power of the
# share of the query's weight an entry carries (``coverage``); whether the query names something
# the journal never mentions (``name_shaped``, with the dictionary of ocmem.text.lexicon).

CANDIDATES = 60  # entries ranked by their coverage, of the best by BM25
# the rank score's power of the coverage (1 and 3 rank as well on the development queries, 2 puts
# the right entry first a little more often), and its floor
COVER_POWER = 2
COVER_FLOOR = 0.05


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


def final(score: float, cover: float) -> float:
    """An entry's rank score: its BM25 times a power of the share of the query it carries
    (``coverage``), so that an entry holding more of the query's distinct words, the rarer the
    better, goes before one that repeats a few of them."""
    return score * (COVER_FLOOR + cover) ** COVER_POWER


def coverage(
    words: Sequence[str], frequency: Mapping[str, int], size: int, entry: AbstractSet[str]
) -> float:
    """The share of the query's weight (the IDF of its stems) that ``entry`` (its terms) carries:
    the stems it holds, as words or as the beginning of one."""
    weights = {w: idf(frequency[w], size) for w in words}
    total = sum(weights.values())
    if total == 0:
        return 1.0
    return sum(weight for w, weight in weights.items() if holds(entry, w)) / total


_NAME_CODE = re.compile(r"[^\W\d_][0-9]")


def name_shaped(token: str, first: bool) -> bool:
    """Whether a query word, as typed, is written as a name: a capital inside it (« OpenSearch »,
    « StoreKit »), letters then digits (« P2028 », « TS2353 »), or a capital first when it does not
    start the query (« le worker Celery »). Not a number (« 3h », « 2GB ») nor an acronym in
    capitals (« VPN », « GB »): those are names only when no dictionary knows them."""
    if not token or token[0].isdigit() or (token.isalpha() and token.isupper()):
        return False
    if any(c.isupper() for c in token[1:]) or _NAME_CODE.search(token):
        return True
    return token[0].isupper() and not first


def typed_words(query: str) -> dict[str, tuple[str, bool]]:
    """Each folded word of a query that is not a stop-word, with the word as typed (the first
    time) and whether the query starts with it: for ``name_shaped``."""
    found: dict[str, tuple[str, bool]] = {}
    for n, token in enumerate(_TOKEN.findall(query)):
        folded = words_module.fold(token)
        if folded.isalnum() and folded.isascii() and folded not in _STOPWORDS:
            found.setdefault(folded, (token, n == 0))
    return found


class EntryTerms(frozenset[str]):
    """An entry's terms, also in order: ``holds`` then finds a term a word begins in a few
    comparisons (a search asks it of every shown entry for every word)."""

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
