"""Secrets written in prose or as short assignments.

« le mot de passe (admin) est hunter2 », "the password is swordfish", ``pwd=abc``, « code PIN :
1234 », « la clé API est … ». A keyword (mot de passe, mdp, password, pwd, passphrase, PIN, secret,
token, jeton, clé API, api key…) followed by a value is a secret when the value could be one:

- a quoted value, or any value after ``=`` (``password=abc``), unless it is a reference;
- an unquoted value with a digit or a symbol (``hunter2``, ``P@ss``), unless it is a reference or
  a number with a unit (« 3600 secondes »);
- an unquoted word (« azerty ») after ``:`` or « est »/"is" only when it ends the clause and is
  not an ordinary word: « le mot de passe est dans le coffre », "password is required", « mot de
  passe expiré » stay prose;
- a keyword directly followed by a value (« mdp hunter2 ») only with a digit or a symbol;
- a PIN only as 4 to 8 digits.

References are never secrets: ``$VAR``, ``${…}``, ``{{ … }}``, ``<mot de passe>``, paths, URLs,
``os.environ[…]``, ``ALL_CAPS_NAMES``, command options, YAML tags (``!vault``), ``None``, ``***``.
A keyword qualified by a property (« longueur », "hash", "lifetime"…) describes a rule, not a
value. Credential pairs (``admin/admin``) and values written before the keyword are not detected.

Patterns are kept as strings and compiled on first use (``re`` caches them): every ocmem command
is a new process, and most texts never name a keyword, so most commands compile nothing here.
"""

from __future__ import annotations

import re

from ocmem.guards.findings import Finding, line_of

KIND = "mot de passe ou jeton en clair"

_KEYWORD = (
    # Letters or digits may not touch the keyword, an underscore may: DB_PASSWORD=…, but not
    # PASSWORD_FILE=… (whose value is a path) nor PasswordAuthentication.
    r"(?<![A-Za-z0-9])(?P<kw>"
    r"(?i:mots?[ \t]+de[ \t]+passe|phrase[ \t]+(?:de[ \t]+passe|secrète)"
    r"|pass(?:word|wd|phrase|code)|pass[ \t]+phrase|pwd|mdp"
    r"|code[ \t]+(?:pin|secret)|client[ _-]?secret|secret[ _-]?key|cl[ée]f?[ \t]+secrète"
    r"|cl[ée]f?[ \t]+(?:d['’]|de[ \t]+l['’])?api|api[ \t_-]?(?:key|token)|apikey"
    r"|(?:access|auth)[ \t_-]?(?:key|token)|secret|token|jeton|pass)"
    r"|PIN)"  # upper case only: "pin" is also a GPIO pin or a pinned version
    r"(?![A-Za-z0-9_])"
)
# « de l'admin », « du compte root », "for the db", « (admin) »: up to four words, never the verb
# nor a command option (``secret generic x --from-env-file=…``).
_QUALIFIER = (
    r"(?P<qual>[ \t]*\([^()\n]{1,40}\)"
    r"|(?:[ \t]+(?!(?:est|était|sera|sont|reste|vaut|c['’]est|is|was|are)(?![\w'’])|-)[\w.@'’-]{1,30}){1,4})?"
)
_CONNECTOR = (
    r"(?P<conn>[ \t]*(?::=|==|=>|=|:|->|→)[ \t]*"
    r"|[ \t]+(?:est|était|sera|sont|reste|vaut|c['’]est|is|was|are)[ \t]+"
    r"(?:(?:toujours|encore|maintenant|désormais|juste|still|now|just|currently)[ \t]+)?)"
)
_VALUE = r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|«[^»\n]*»|“[^”\n]*”|`[^`\n]*`|[^\s\"'«“`]+)"

# Matched from the keyword's end: « est hunter2 », « : chaton », or directly « hunter2 ».
_WITH_CONNECTOR = _QUALIFIER + _CONNECTOR + _VALUE
_BARE = r"[ \t]+" + _VALUE
# Every keyword contains one of these (in lower case): a text without any skips the regexes.
_STEMS = r"pass|pwd|mdp|\bpin\b|secr|token|jeton|\bapi|key"

_QUOTES = {'"': '"', "'": "'", "«": "»", "“": "”", "`": "`"}
_ASSIGNMENT = {":=", "==", "=>", "="}
# "pass" alone is a password only in ``pass: x`` or ``pass=x`` (« le pass Navigo est … »).
_PASS_CONNECTORS = {":", "="}
_TRAILING = ".,;:!?)]}»…"

_REFERENCE = (
    r"[$%{<~.@&|!-]"  # $VAR ${…} %s {{ … }} <x> ~/path .env @file -option !vault (YAML tag)
    r"|[A-Z][A-Z0-9]*_[A-Z0-9_]+$"  # an environment variable's name
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$"  # settings.password, process.env.TOKEN
)
_REFERENCE_INSIDE = "/(["  # paths, URLs, Vault paths, os.environ[…], getpass()
_PLACEHOLDERS = frozenset(
    "none null nil undefined true false empty vide redacted masked hidden xxx tbd todo n/a"
    " na rien nothing".split()
)
_FILLER = frozenset("x*•.…#-_X")

# Words that follow « le mot de passe est » or "password is" in prose. Participles, adjectives
# and adverbs are mostly caught by their endings (_PROSE_ENDINGS); these are the rest.
_COMMON_WORDS = frozenset(
    """
    le la les l un une des du de dans en sur sous chez à au aux avec sans par pour ce cet cette
    the a an in on at of for with without by to from into not no pas plus trop très encore still
    toujours now maintenant déjà already same même identique pareil celui celle ici here there là
    ailleurs elsewhere correct incorrect wrong faux fausse bon bonne mauvais mauvaise juste vide
    empty requis requise obligatoire mandatory optional optionnel optionnelle facultatif manquant
    missing absent présent present valid valide invalid invalide secret secrète confidential
    confidentiel confidentielle private privé privée public publique unknown inconnu inconnue
    short court courte long longue strong fort forte weak faible simple complexe complex ok okay
    good bad fine nécessaire necessary set unset temporaire temporary provisoire random aléatoire
    unique different différent différente case sensitive sensible known connu connue off on yes
    oui non nul nulle aucun aucune none that this what which quoi quel quelle voir see cf
    ci-dessous ci-dessus below above dessous dessus vault keepass keepassxc bitwarden 1password
    lastpass dashlane pass gopass sops coffre gestionnaire manager env environment
    environnement variable fichier file inchangé unchanged blank vierge
    """.split()
)
_PROSE_ENDINGS = (
    "é", "ée", "és", "ées", "ed", "ing", "able", "ible", "ment", "tion", "sion", "aire", "oire",
    "eux", "euse", "ique", "ly",
)  # fmt: skip
# A keyword qualified by one of these describes a rule (« longueur du mot de passe »), not a value.
_PROPERTIES = frozenset(
    """
    hash hashing haché hachage policy politique length longueur lifetime durée expiry expiration
    ttl size taille limit limite count nombre min minimum max maximum complexity complexité
    strength force rotation reset field champ prompt format type manager gestionnaire file fichier
    store history historique age algorithm algorithme salt sel cost coût entropy entropie mode
    usage budget window endpoint url scope validity validité version encoding encodage limité
    limitée limited restreint restreinte restricted scoped
    """.split()
)
_UNITS = frozenset(
    """
    s ms sec secondes seconds min minutes h heures hours j jours days d semaines weeks mois months
    caractères characters chars car bits bytes octets ko mo go kb mb gb fois times tentatives
    attempts tokens %
    """.split()
)
_NUMBER_WITH_UNIT = r"(?i)\d+(?:[.,]\d+)?(?:ms|s|min|h|j|d|k|ko|mo|go|kb|mb|gb|%)"
_CLAUSE_GOES_ON = frozenset(
    "et and mais but pour for sur on ou or puis then depuis since avec with sinon".split()
)


def find_prose_secrets(text: str) -> list[Finding]:
    """A finding per keyword followed by what looks like its value (never the value itself)."""
    if not re.search(_STEMS, text.lower()):
        return []
    findings = []
    covered = 0  # « le mot de passe du token est … » is one secret, not two
    for keyword in re.finditer(_KEYWORD, text):
        if keyword.start() < covered:
            continue
        for pattern, bare in ((_WITH_CONNECTOR, False), (_BARE, True)):
            match = re.compile(pattern).match(text, keyword.end())
            if match and _is_secret(keyword.group("kw"), match, text, bare=bare):
                hint = " ".join(keyword.group("kw").split()) + " …"
                findings.append(Finding(KIND, line_of(text, keyword.start()), hint))
                covered = match.end()
                break
    return findings


def _is_secret(keyword: str, match: re.Match[str], text: str, *, bare: bool) -> bool:
    raw = match.group("value")
    quoted = len(raw) >= 2 and _QUOTES.get(raw[0]) == raw[-1]
    value = raw[1:-1].strip() if quoted else raw.rstrip(_TRAILING)
    keyword = keyword.lower()
    if keyword.endswith("pin"):
        return value.isdigit() and 4 <= len(value) <= 8
    if keyword == "pass" and (bare or (match.group("conn") or "").strip() not in _PASS_CONNECTORS):
        return False
    if (
        len(value) < 3
        or not any(c.isalnum() for c in value)
        or set(value) <= _FILLER
        or value.endswith(("...", "…"))  # an elided value (« jeton `glrt-...` ») shows none
        or value.lower() in _PLACEHOLDERS
        or re.match(_REFERENCE, value)
        or any(c in _REFERENCE_INSIDE for c in value)
        or _describes_a_rule(match)
    ):
        return False
    if quoted:
        return True
    end_of_line = text.find("\n", match.end())
    rest = text[match.end() : len(text) if end_of_line < 0 else end_of_line]
    strong = not all(c.isalpha() or c in "-'’" for c in value)
    if bare:
        return strong and _could_be_a_password(value, rest)
    if (match.group("conn") or "").strip() in _ASSIGNMENT:
        return True
    if strong:
        return _could_be_a_password(value, rest)
    return _ends_the_clause(rest) and not _is_common_word(value)


def _describes_a_rule(match: re.Match[str]) -> bool:
    qualifier = match.groupdict().get("qual") or ""
    return any(word.lower().strip("()") in _PROPERTIES for word in qualifier.split())


def _could_be_a_password(value: str, rest: str) -> bool:
    if value.lower() in _COMMON_WORDS or re.fullmatch(_NUMBER_WITH_UNIT, value):
        return False
    if value.isdigit():
        # A 3-digit number is a status code or a count; a number followed by a unit is a setting.
        next_words = rest.split(maxsplit=1)
        return len(value) >= 4 and not (next_words and next_words[0].lower() in _UNITS)
    return True


def _ends_the_clause(rest: str) -> bool:
    rest = rest.lstrip()
    if not rest or rest[0] in ".,;:!?()[]»—–-":
        return True
    return rest.split(maxsplit=1)[0].lower() in _CLAUSE_GOES_ON


def _is_common_word(value: str) -> bool:
    word = value.lower()
    return word in _COMMON_WORDS or word.endswith(_PROSE_ENDINGS)
