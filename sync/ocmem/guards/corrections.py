"""Does a user message correct the agent? (« non, … », « c'est faux », "that's wrong", …)

The OpenCode plugin asks for the retrospective once when the user corrects the agent, as it does
for « retiens ça ». It runs ``new RegExp(CORRECTION_SOURCE).test(fold(text))``; Python runs the
same source through ``is_correction``. The source keeps to what Python ``re`` (with
``re.ASCII``) and JavaScript (no flags) read alike: no lookbehind, no possessive quantifiers,
``\\b`` and character classes over ASCII only, no ``$`` (it differs before a final newline).

Two kinds of patterns, on folded text (lowercase, no accents: ``ocmem.text.similarity.fold``):

- *Openers*, the first word of a sentence: « non, … », « mais non … », "no, …", "nope …",
  « arrête ! », « arrête de … », "stop!", "stop doing …", « erreur, … », « faux ! »,
  "actually, it's …", « en fait non ». They count whatever follows, questions included
  (« non, pourquoi tu as changé le port ? » contradicts the agent).
- *Clause phrases*, anywhere in a clause: « c'est faux », « c'est pas ça », « pas comme ça »,
  « tu t'es trompé », « tu as cassé », « je t'ai dit de », « ce n'est pas ce que j'ai demandé »,
  « le port est faux », « mauvais fichier », "that's wrong", "you broke", "I said", "wrong file",
  "not like that"… A clause phrase does not count when its clause is a question: a "?" follows
  it before any other punctuation, or the clause opens with a question or condition word before
  it (pourquoi, comment, est-ce, si, why, how, what, if, do…), since a plain question never
  triggers (« pourquoi c'est faux », « est-ce que le port 80 est faux ? »).

Edge cases, decided:

- A bare « non » / "no" / "nope" (nothing after it) is an answer to the agent's question, not a
  correction; « non » followed by anything else is one (« non ce n'est pas le bon port »), except
  the polite or idiomatic forms « non merci », "no thanks", "no problem", "no worries", « non, pas
  de souci », « pas besoin », "no need", « non plus », « non seulement », "no idea".
- English "no" counts only followed by punctuation or by no/not/don't/stop ("No errors in the
  log" is a determiner; "no, use port 8080" is a correction).
- « non-régression », « nonce », « annonce », « pourquoi non ? », « moi non plus »: never.
- « c'est pas faux » (idiom: "true enough"), « c'est pas mal », « c'est pas bon signe »: no.
- « arrête le conteneur », "stop the service": instructions, not corrections; « arrête, … »,
  « arrête de … », "stop!", "stop doing …" are.
- « Erreur : connection refused » (a pasted message) is not; « erreur, il fallait … » is.
- « dis-moi si c'est faux » (a condition), "something is wrong with nginx" (a report): no.
- Narration can still trigger (« hier j'ai dit au client… »), and so can a pasted log line
  ("wrong file descriptor"): the cost of a false positive is one extra retrospective prompt.
"""

from __future__ import annotations

import re

# Folded text keeps the typographic apostrophe; users also type none ("cest") or a space.
_APOSTROPHE = "(?:['’] ?| )?"
_SPACE = "[ \\t]+"


def _phrase(text: str) -> str:
    """A pattern written with plain spaces and apostrophes, made tolerant of how users type."""
    return text.replace("'", "\x00").replace(" ", _SPACE).replace("\x00", _APOSTROPHE)


def _any(*alternatives: str) -> str:
    return "(?:" + "|".join(_phrase(a) for a in alternatives) + ")"


_NOUNS_FR = (
    "fichier|port|dossier|repertoire|chemin|branche|serveur|conteneur|commande|version|cle|base|"
    "table|service|utilisateur|projet|depot|image|reseau|domaine|variable|option|hote|endroit|"
    "methode|approche|outil|ligne|fonction|config|configuration|url|adresse|mot de passe"
)
_NOUNS_EN = (
    "file|port|folder|directory|path|branch|server|container|command|version|key|database|"
    "table|service|user|project|repo|repository|image|network|domain|variable|option|host|place|"
    "way|approach|tool|one|line|function|method|config|url|address|password"
)

# --- openers: the first word of a sentence -----------------------------------------------------

_SENTENCE_START = '(?:^|[\\n.!?;])[ \\t"«]*'
# « mais non », « ah non », "oh no, …"
_INTERJECTION = "(?:(?:ah|oh|mais|euh|bah|ben|hm+|hum|ok|okay|well|uh|um|hey|eh)[ \\t,]+)*"
# What may follow « non » without making it a correction.
_POLITE = (
    "(?![ \\t,.!:;]*"
    + _any(
        "merci",
        "thanks",
        "thank you",
        "problem",
        "probleme",
        "worries",
        "souci",
        "soucis",
        "need",
        "besoin",
        "pas de souci",
        "pas de probleme",
        "pas besoin",
        "plus",
        "seulement",
        "idea",
        "idee",
        "such",
        "matter",
        "longer",
    )
    + "\\b)"
)
# Something must follow « non »: a bare « non » answers the agent's question.
_CONTENT = "[ \\t,.!:;]*[a-z0-9'’]"
_OPENERS = (
    # not « non-régression »
    "(?:non|nope)\\b(?!-)" + _POLITE + _CONTENT,
    # English "no" is also a determiner ("No errors in the log"), « nan » is also NaN:
    # punctuation or a negation must follow.
    "(?:no|nan|nah)(?:[ \\t]*[,.!:;]|"
    + _SPACE
    + _any("no", "not", "don't", "stop")
    + "\\b)"
    + _POLITE
    + _CONTENT,
    # « arrête ! », « arrête de … », "stop!", "stop doing …"; not « arrête le conteneur ».
    "(?:arrete|arretes|arretez|stop|stoppe)(?:[ \\t]*[,!.]|"
    + _SPACE
    + _any(
        "de",
        "d'",
        "ca",
        "it",
        "that",
        "doing",
        "changing",
        "touching",
        "editing",
        "deleting",
        "modifying",
        "removing",
        "rewriting",
        "guessing",
        "making",
        "adding",
    )
    + "|[ \\t\\r\\n]*(?![\\s\\S]))",
    # « erreur, il fallait … », « faux ! », "wrong!"; not « Erreur : connection refused ».
    "(?:erreur|faux|incorrect|wrong)[ \\t]*[,!]",
    # "actually, it's …", "actually no"
    "actually,?"
    + _SPACE
    + _any("no\\b", "it's", "it is", "it was", "it should", "that's", "that is"),
    _phrase("en fait,? non\\b"),
)
_OPENER = _SENTENCE_START + _INTERJECTION + "(?:" + "|".join(_OPENERS) + ")"

# --- clause phrases ----------------------------------------------------------------------------

_CLAUSE_START = '(?:^|[\\n.!?;:,"«»()])[ \\t]*'
# Words that make the clause a question or a condition when they come before the phrase.
_QUESTION_WORDS = _any(
    "si",
    "s'il(?! (?:te|vous) pla)",
    "pourquoi",
    "comment",
    "quand",
    "est-ce",
    "est ce",
    "qu'est-ce",
    "quel",
    "quelle",
    "rien",
    "if",
    "whether",
    "unless",
    "why",
    "how",
    "what",
    "what's",
    "when",
    "which",
    "do",
    "does",
    "did",
    "can",
    "could",
    "would",
    "should",
    "nothing",
    "something",
    "anything",
)
_WORD_BEFORE = "(?:(?!" + _QUESTION_WORDS + '\\b)[^ \\t\\n.!?;:,"«»()]+' + _SPACE + ")*"
_NOT_A_QUESTION = "\\b(?![^\\n.!?;:,]*\\?)"

_C_EST = _any("c'est", "c'etait", "ce n'est", "ce n'etait", "ca n'est")
_PHRASES = (
    # French
    _C_EST
    + _SPACE
    + _any(
        "faux",
        "incorrect",
        "errone",
        "n'importe quoi",
        "pas (?:ca|cela|bon(?! signe)|juste|correct|exact|le bon|la bonne|les bons|les bonnes)",
        "pas ce que",
        "pas ce qu'",
    ),
    _phrase("pas comme (?:ca|cela)"),
    _phrase("pas (?:celui|celle|ceux|celles)(?:-| )la"),
    _phrase("(?:est|sont|etait|etaient) (?:faux|fausse|fausses|incorrecte?s?|errone(?:e|s|es)?)"),
    _any(
        "tu (?:t'es|t'etais|te) (?:trompe|trompes|plante|plantes|goure|goures|melange)",
        "vous vous etes trompes?",
        "(?:tu as|t'as|vous avez) (?:tort|tout casse|casse|tout efface|efface mon|supprime mon|"
        "mal (?:compris|lu|fait)|oublie|fait (?:une|n'importe))",
        "(?:tu n'as|t'as|vous n'avez) pas (?:compris|lu|ecoute|suivi|respecte|fait ce que)",
        "tu m'as mal compris",
    ),
    _any(
        "je (?:t'ai|t'avais|vous ai|vous avais) (?:dit|demande|precise|explique)",
        "j'(?:ai|avais) (?:dit|precise)",
        "j'avais demande",
        "je voulais dire",
        "je (?:n'ai|ne t'ai|t'ai) jamais (?:dit|demande)",
        "j'ai jamais (?:dit|demande)",
    ),
    _phrase(f"(?:mauvais|mauvaise|mauvaises) (?:{_NOUNS_FR})"),
    _any(
        "(?:ne )?fais pas (?:ca|cela)",
        "remets (?:tout |le |la |les )?comme (?:avant|c'etait)",
        "reviens en arriere",
        "annule (?:ca|ta|tes|ce que tu)",
        "(?:tu aurais|t'aurais|vous auriez) (?:pas )?du",
        "tu n'aurais pas du",
        "il aurait fallu",
        "relis (?:ma demande|mon message|ce que|la consigne)",
    ),
    # English
    _phrase("(?:that|this|it|that one|this one)(?:'s| is| was)")
    + _SPACE
    + _any(
        "(?:completely |totally |all |just )?wrong",
        "incorrect",
        "not (?:right|correct|true|it|what|how|the right|the correct|the one)",
    ),
    _any(
        "you're wrong",
        "you are wrong",
        "you(?:'ve| have)? got (?:it|that|this) wrong",
        "(?:is|are|was|were) (?:wrong|incorrect)",
    ),
    _phrase("not (?:like (?:that|this)|that way|this way|that one|what i)"),
    _phrase(
        "you (?:broke|messed up|screwed up|misunderstood|misread|forgot|ignored|deleted my|"
        "overwrote|didn't (?:listen|read|follow|do what)|did not (?:listen|read|follow)|"
        "have broken|'ve broken|should not have|shouldn't have)"
    ),
    _phrase(
        "i (?:said|told you|already (?:said|told you)|asked you to|meant|didn't (?:ask|say|want)|"
        "never (?:asked|said|told you))"
    ),
    _phrase(f"wrong (?:{_NOUNS_EN})"),
    _any(
        "(?:don't|do not) do that",
        "undo (?:that|this|it|your)",
        "revert (?:that|this|it|your)",
        "put it back",
        "change it back",
    ),
)
_PHRASE = _CLAUSE_START + _WORD_BEFORE + "(?:" + "|".join(_PHRASES) + ")" + _NOT_A_QUESTION

CORRECTION_SOURCE = f"(?:{_OPENER})|(?:{_PHRASE})"
"""One regular expression source, for folded text, that Python and JavaScript read alike."""

_CORRECTION = re.compile(CORRECTION_SOURCE, re.ASCII)


def is_correction(folded: str) -> bool:
    """Whether this user message (folded: ``ocmem.text.similarity.fold``) corrects the agent."""
    return _CORRECTION.search(folded) is not None
