"""Search terms of journal text: folded, stop-words dropped, French and English words stemmed.

The index and the query go through the same ``terms``, so « Renouvellement des certificats »,
"renewed certificate" and « certificat renouvelé » meet on the stems ``renouvel``, ``certificat``.
Stored text may carry CommonMark escapes (``\\#docker``, ``\\[``) and entities (``&lt;``): a
backslash is punctuation like any other, and entities are decoded before folding, so ``\\#docker``
gives ``docker`` and ``&lt;`` gives no word at all.
"""

from __future__ import annotations

import re
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
}

_MIN_STEM = 3
# Derivational and inflectional endings, longest first; the first that leaves a stem of
# _MIN_STEM letters or more is removed (once). French and English share most of them.
_SUFFIXES = tuple(
    sorted(
        """
        issement ement ation ition ateur atrice ating ated ance ence ible able euse eur ment ing
        aient ait ant age ate ee er ed ez
        """.split(),
        key=len,
        reverse=True,
    )
)
# English verbs in -ate (rotate, migrate) meet their -ation nouns by losing it…
_VERB_ATE = frozenset({"ate", "ated", "ating"})
_DOUBLED = frozenset("bcdfglmnprstz")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light stem of a folded word: plural, then one ending, a final e, a doubled consonant.

    « certificats », « certificat », "certificate", "certificates" → ``certificat``;
    « renouveler », « renouvelé », « renouvellement » → ``renouvel``; "expired", « expirée »,
    « expiration » → ``expir``. Words with digits and words of 3 letters or less are kept.
    """
    if len(word) <= _MIN_STEM or not word.isalpha():
        return word
    if word.endswith("aux"):
        word = word[:-3] + "al"  # journaux → journal
    elif word.endswith("s") and (word.endswith("ous") or not word.endswith(("ss", "us", "is"))):
        word = word[:-1]
    if len(word) <= _MIN_STEM:
        return word
    if word.endswith("ction"):
        word = word[:-3]  # connection → connect
    else:
        for suffix in _SUFFIXES:
            if not word.endswith(suffix) or len(word) - len(suffix) < _MIN_STEM:
                continue
            if suffix in _VERB_ATE and word[-len(suffix) - 1] == "c":
                continue  # certificate, authenticated: the French noun keeps "-cat"
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > _MIN_STEM + 1:
        word = word[:-1]
    if len(word) > _MIN_STEM + 1 and word[-1] == word[-2] and word[-1] in _DOUBLED:
        word = word[:-1]  # renouvell(ement) → renouvel, stopp(ed) → stop
    if word.endswith("y") and len(word) > _MIN_STEM:
        word = word[:-1] + "i"  # deploy, deployment, entry, entries
    return word


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
    return [_term(w) for w in words(text) if w not in STOPWORDS]


_CANONICAL: dict[str, str] = {}


def _term(word: str) -> str:
    if not _CANONICAL:
        _CANONICAL.update({stem(en): stem(fold(fr)) for en, fr in GLOSSARY.items()})
    stemmed = stem(word)
    return _CANONICAL.get(stemmed, stemmed)


def query_terms(query: str) -> list[str]:
    """The distinct stems of a query; when it has nothing but stop-words, those words stemmed."""
    found = terms(query) or [_term(w) for w in words(query)]
    return list(dict.fromkeys(found))
