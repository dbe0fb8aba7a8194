"""Personal data in text bound for memory: e-mail addresses, phone numbers, postal addresses,
IBANs, French social security numbers and payment card numbers. Each finding carries a masked
hint, never the value. Text is read as a person reads it (``homoglyphs.latin_skeleton``:
fullwidth digits, look-alike letters and invisible characters folded).

The detectors aim at few false positives on technical notes, so what identifies a machine or an
organisation passes, and what identifies a person is refused:

- E-mail: a role or service mailbox (``noreply@…``, ``support@…``, ``git@…``, ``root@…``), a
  reserved domain (``example.com``, ``.test``, ``.local``, ``.internal``, ``.lan``), URL
  credentials' user names and ssh/scp/rsync targets (``deploy@host``, ``git@github.com:org/x``)
  are infrastructure. A webmail address (gmail.com, orange.fr…) is personal even there.
  ``user@host`` without a dotted domain, ``getty@tty1.service``, ``icon@2x.png``, ``pkg@1.2.3``
  and ``image@sha256:…`` do not have an e-mail's shape.
- Phone: French numbers (``06 12 34 56 78``, ``06.12.34.56.78``, ``0612345678``, ``+33 6 …``,
  ``+33 (0)6 …``, ``0033 6 …``) and international ones written with ``+`` (8 to 15 digits). A
  bare 10-digit number after an identifier's name (« ticket 0612345678 », « ref produit … »,
  « ID client … ») is an identifier; a counting sequence (``0123456789``, ``01 02 03 04 05``) is
  nobody's number. Numbers glued to other digit groups (hex dumps, MAC addresses) and IPs,
  versions, dates, times and UTC offsets do not match.
- Postal address: a number, a street type and a name (« 12 rue de la Paix », « 3 bis avenue
  Foch », "221B Baker Street"), or a French postcode and a capitalised city (« 75001 Paris »).
  After street types that are also ordinary words (place, route, cours…) the name must be
  capitalised and, without an article, end the address, so « 3 place holders » and « 3 Route
  Tables dans le VPC » pass; a 5-digit number after a port, PID, error code… is not a postcode.
- IBAN: country code, check digits, the country's length and the mod-97 checksum.
- Social security number (NIR): 15 characters, contiguous or grouped as on the card
  (``1 84 12 76 451 089 46``): sex (1, 2, or 7, 8 for a temporary number), year, a month that
  exists (01–12, or 20–42 and 50–99 when unknown), a department (2A/2B for Corsica), and the key
  (97 minus the first 13 digits mod 97, Corsica counted as 19 and 18).
- Card: 14 to 19 digits (contiguous or grouped by spaces or dashes) with a card network's
  prefix and length and a valid Luhn checksum. Processors' published test numbers
  (4242 4242 4242 4242…) are documentation, not personal data.

Not detected: bare names (too many false positives), birth dates, ID card numbers, licence
plates, US-style phone numbers without ``+``.

Patterns are kept as strings and compiled on first use (``re`` caches them): every ocmem command
is a new process, and a detector runs only on text that could hold its kind.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator

from ocmem.guards.findings import Finding, line_of
from ocmem.guards.homoglyphs import latin_skeleton

EMAIL = "adresse e-mail"
PHONE = "numéro de téléphone"
ADDRESS = "adresse postale"
IBAN = "IBAN"
NIR = "numéro de sécurité sociale"
CARD = "numéro de carte bancaire"

# --- e-mail ---------------------------------------------------------------------------------

_EMAIL = (
    r"(?<![\w.%+-])(?P<local>[A-Za-z0-9][\w.%+-]*)@"
    r"(?P<domain>(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+(?P<tld>[A-Za-z]{2,}))(?![\w-])"
)
# RFC 2142 role mailboxes, system accounts and usual placeholders.
_ROLE_MAILBOXES = frozenset(
    """
    admin administrator root postmaster hostmaster webmaster abuse security support contact info
    hello sales billing help helpdesk team ops devops sysadmin noc it dev git deploy ci bot
    jenkins gitlab github ubuntu debian centos ec2-user www-data nobody daemon mailer-daemon bounce
    bounces notifications notification alerts alert newsletter marketing careers jobs privacy
    legal press presse service office mail email user username test example demo nom prenom.nom
    dmarc dmarc-reports tls-rpt tlsrpt reports
    firstname.lastname john.doe jane.doe
    """.split()
)
# A part of the mailbox name that marks a machine or a rota: ``ci-bot@…``, ``oncall@…``.
_MACHINE_PARTS = frozenset(
    "bot ci cd robot svc automation monitoring alerts oncall astreinte".split()
)
_RESERVED_DOMAINS = ("example.com", "example.net", "example.org")
_RESERVED_TLDS = frozenset(
    "example test invalid localhost local internal lan intranet home".split()
)
# Endings of systemd units and file names: ``getty@tty1.service``, ``icon@2x.png``.
_NOT_TLDS = frozenset(
    """
    service socket target mount automount path timer slice scope device swap png jpg jpeg gif svg
    webp ico js mjs cjs ts json yaml yml toml ini cfg conf txt md py sh rb go rs java kt css html
    lock log tar gz zip whl
    """.split()
)
_WEBMAIL = frozenset(
    """
    gmail googlemail hotmail outlook live msn yahoo ymail icloud me mac aol gmx protonmail proton
    pm laposte orange wanadoo free sfr neuf bbox yandex tutanota fastmail
    """.split()
)
# ``ssh-keygen -C "…"`` names a person, not a target: the command must stand alone.
_REMOTE_COMMAND = r"(?<![\w-])(?:ssh-copy-id|ssh|scp|rsync|sftp|mosh)(?![\w-])"


def _emails(text: str) -> Iterator[tuple[int, int, str, str]]:
    for match in re.finditer(_EMAIL, text):
        local = match.group("local").lower().split("+")[0]
        domain = match.group("domain").lower()
        tld = match.group("tld").lower()
        if (
            tld in _NOT_TLDS
            or tld in _RESERVED_TLDS
            or domain.endswith(_RESERVED_DOMAINS)
            or "noreply" in domain
            or local in _ROLE_MAILBOXES
            or not _MACHINE_PARTS.isdisjoint(re.split(r"[._-]", local))
            or "noreply" in local.replace("-", "").replace("donot", "no")
        ):
            continue
        if domain.split(".")[-2] not in _WEBMAIL and _is_infrastructure(text, match):
            continue
        yield match.start(), match.end(), EMAIL, match.group("local")[0] + "…@…"


def _is_infrastructure(text: str, match: re.Match[str]) -> bool:
    """URL credentials, ssh-style targets (``user@host:path``) and addresses in remote commands."""
    start, end = match.span()
    if text.endswith("://", 0, start) or (
        text[end : end + 1] == ":" and text[end + 1 : end + 2].strip()
    ):
        return True
    return re.compile(_REMOTE_COMMAND).search(text, _line_start(text, start), start) is not None


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


# --- phone ----------------------------------------------------------------------------------

# Not glued to a word, a sign or another digit group (hex dumps, MAC addresses, IBANs).
_ALONE_BEFORE = r"(?<![\w+.,/-])(?<!\d[ .-])"
_ALONE_AFTER = r"(?!\w|[ .-]\d)"
_FRENCH_PHONE = (
    _ALONE_BEFORE + r"(?P<prefix>(?:\+|00)33[ .-]?(?:\(0\)[ .-]?)?|0)"
    r"[1-9](?P<sep>[ .-]?)\d{2}(?:(?P=sep)\d{2}){3}" + _ALONE_AFTER
)
_INTERNATIONAL_PHONE = (
    r"(?<![\w+])\+[1-9]\d{0,2}(?:[ .-]?(?:\(\d{1,4}\)|\d{1,5})){1,6}" + _ALONE_AFTER
)
# A bare number after one of these names (at most one word between) is an identifier:
# « ticket 0612345678 », « ref produit 0600123456 », « ID client 0612345678 ».
_IDENTIFIER_BEFORE = (
    r"(?i)(?:\b(?:ticket|id|build|job|run|pid|commande|order|facture|invoice|issue|réf|ref"
    r"|référence|série|serial|lot|dossier|colis|tracking|version)|#|n°)(?:[ \t]+[\w-]+)?[ \t:]*$"
)


def _phones(text: str) -> Iterator[tuple[int, int, str, str]]:
    for match in re.finditer(_FRENCH_PHONE, text):
        number = match.group(0)
        digits = re.sub(r"\D", "", number)
        if _is_counting(digits) or (
            number.isdigit()
            and re.compile(_IDENTIFIER_BEFORE).search(
                text, _line_start(text, match.start()), match.start()
            )
        ):
            continue
        prefix = number[:4] if number.startswith("00") else number[: 3 if number[0] == "+" else 2]
        yield match.start(), match.end(), PHONE, f"{prefix} … {number[-2:]}"
    for match in re.finditer(_INTERNATIONAL_PHONE, text) if "+" in text else ():
        number = match.group(0)
        if 8 <= sum(c.isdigit() for c in number) <= 15:
            prefix = re.split(r"[ .(-]", number, maxsplit=1)[0][:4]
            yield match.start(), match.end(), PHONE, f"{prefix} … {number[-2:]}"


def _is_counting(digits: str) -> bool:
    """``0123456789`` or ``01 02 03 04 05``: a counting sequence, not anyone's number."""
    pairs = [int(digits[i : i + 2]) for i in range(0, len(digits) - 1, 2)]
    return digits in "01234567890123456789" or all(b == a + 1 for a, b in itertools.pairwise(pairs))


# --- postal address -------------------------------------------------------------------------

_STRONG_STREETS = ("rue", "avenue", "boulevard", "impasse", "allée", "allee", "quai", "faubourg")
# These are also ordinary words (« 3 place holders », « 2 route tables »): the name after them
# must be capitalised.
_WEAK_STREETS = (
    "place", "pl.", "route", "chemin", "cours", "passage", "square", "voie", "sentier", "villa",
    "cité", "résidence", "promenade", "esplanade", "parvis", "montée", "rond-point", "chaussée",
    "lotissement", "hameau", "lieu-dit", "av.", "bd",
)  # fmt: skip
_ENGLISH_STREETS = (
    "Street", "St.", "Road", "Rd.", "Rd", "Avenue", "Ave.", "Ave", "Lane", "Drive", "Boulevard",
    "Blvd.", "Blvd", "Court", "Way", "Place", "Square", "Terrace", "Close", "Crescent", "Gardens",
    "Parkway", "Highway", "Mews", "Row",
)  # fmt: skip
_STREET_WORDS = frozenset(
    word.rstrip(".").lower() for word in (*_STRONG_STREETS, *_WEAK_STREETS, *_ENGLISH_STREETS)
)


def _one_of(words: tuple[str, ...]) -> str:
    return "|".join(re.escape(word) for word in words)


_ARTICLE = r"(?:(?:de[ \t]+la|de|du|des|la|le|les)[ \t]+|(?:de[ \t]+)?l['’]|d['’])"
_NAME = r"[A-ZÀ-ÖØ-Þ][\w'’-]+"
# Without an article, « place Bellecour » must end there (a comma, a postcode, the line's end):
# « 3 Route Tables dans le VPC » is not an address.
_NAME_ENDING = _NAME + r"(?=[ \t]*(?:[,.;:)]|\d|$))"
_FRENCH_STREET = (
    r"(?<![\w.,/-])\d{1,4}(?:[ \t]?(?:bis|ter|quater)\b|[A-Da-d]\b)?,?[ \t]+(?P<type>"
    f"(?i:{_one_of(_STRONG_STREETS)})[ \\t]+{_ARTICLE}?[\\w'’-]{{2,}}"
    f"|(?i:{_one_of(_WEAK_STREETS)})[ \\t]+(?:{_ARTICLE}{_NAME}|{_NAME_ENDING}))"
)
_ENGLISH_STREET = (
    r"(?<![\w.,/-])\d{1,5}[A-Za-z]?[ \t]+"
    r"(?!(?:Hard|Disk|Disc|Flash|Solid|Optical|Network|Shared|External|Google|Team)\b)"
    r"(?:[A-Z][a-z]+(?:['’]s)?[ \t]+){1,3}"
    f"(?P<type>{_one_of(_ENGLISH_STREETS)})(?!\\w)"
)
# Postcodes exist from 01000 to 95xxx and 97xxx (overseas).
_POSTCODE_CITY = (
    r"(?<![\w.,:/#+-])(?P<postcode>(?:0[1-9]|[1-8]\d|9[0-5]|97)\d{3})[ \t]+"
    r"[A-ZÀ-ÖØ-Þ][a-zà-öø-ÿ]+(?:-(?:[a-zà-öø-ÿ]+|[A-ZÀ-ÖØ-Þ][a-zà-öø-ÿ]+))*(?![\w])"
)
_NOT_A_POSTCODE_BEFORE = (
    r"(?i)\b(?:port|ports|nodeport|pid|uid|gid|id|build|job|run|ticket|issue|code|erreur|error"
    r"|status|exit|ligne|line|version|taille|size)[ \t:]*$"
)
_UNIT_WORDS = frozenset("Mbps Gbps Kbps Mhz Ghz Khz Octets Bytes".split())


def _addresses(text: str) -> Iterator[tuple[int, int, str, str]]:
    if not _STREET_WORDS.isdisjoint(re.findall(r"[\w-]+", text.lower())):
        for pattern in (_FRENCH_STREET, _ENGLISH_STREET):
            for match in re.finditer(pattern, text):
                street_type = match.group("type").split()[0].rstrip(".").lower()
                yield match.start(), match.end(), ADDRESS, f"… {street_type} …"
    for match in re.finditer(_POSTCODE_CITY, text):
        city = match.group(0).split()[-1]
        if city in _UNIT_WORDS or re.compile(_NOT_A_POSTCODE_BEFORE).search(
            text, _line_start(text, match.start()), match.start()
        ):
            continue
        yield match.start(), match.end(), ADDRESS, match.group("postcode")[:2] + "… …"


# --- IBAN and cards -------------------------------------------------------------------------

_IBAN = r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]{1,4}){3,8}(?![A-Za-z0-9])"
# Lengths from the SWIFT IBAN registry.
_IBAN_LENGTHS = {
    country: int(length)
    for country, length in (
        item.split(":")
        for item in (
            "AD:24 AE:23 AL:28 AT:20 AZ:28 BA:20 BE:16 BG:22 BH:22 BI:27 BR:29 BY:28 CH:21 CR:22 "
            "CY:28 CZ:24 DE:22 DJ:27 DK:18 DO:28 EE:20 EG:29 ES:24 FI:18 FK:18 FO:18 FR:27 GB:22 "
            "GE:22 GI:23 GL:18 GR:27 GT:28 HN:28 HR:21 HU:28 IE:22 IL:23 IQ:23 IS:26 IT:27 JO:30 "
            "KW:30 KZ:20 LB:28 LC:32 LI:21 LT:20 LU:20 LV:21 LY:25 MC:27 MD:24 ME:22 MK:19 MN:20 "
            "MR:27 MT:31 MU:30 NI:28 NL:18 NO:15 OM:23 PK:24 PL:28 PS:29 PT:25 QA:29 RO:24 RS:22 "
            "RU:33 SA:24 SC:31 SD:18 SE:24 SI:19 SK:24 SM:27 SO:23 ST:25 SV:28 TL:23 TN:24 TR:26 "
            "UA:29 VA:22 VG:24 XK:20 YE:30"
        ).split()
    )
}


def iban_is_valid(candidate: str) -> bool:
    """Country length and mod-97 checksum (ISO 13616), separators ignored."""
    compact = re.sub(r"[ -]", "", candidate).upper()
    if len(compact) != _IBAN_LENGTHS.get(compact[:2], 0):
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _ibans(text: str) -> Iterator[tuple[int, int, str, str]]:
    for match in re.finditer(_IBAN, text):
        # The pattern may run into a following code word (« … 189 ET »): cut at the length.
        iban = _first_chars(match.group(0), _IBAN_LENGTHS.get(match.group(0)[:2].upper(), 0))
        if iban and iban_is_valid(iban):
            yield match.start(), match.start() + len(iban), IBAN, f"{iban[:2].upper()}… {iban[-2:]}"


def _first_chars(candidate: str, count: int) -> str | None:
    """The prefix of ``candidate`` holding ``count`` characters besides separators."""
    seen = 0
    for index, char in enumerate(candidate):
        seen += char not in " -"
        if seen == count:
            return candidate[: index + 1]
    return None


# One separator (a space, a dot or none) between all the groups: as on the card, or one number.
_NIR = (
    _ALONE_BEFORE + r"(?P<sex>[1278])(?P<sep>[ .]?)(?P<year>\d{2})(?P=sep)"
    r"(?P<month>0[1-9]|1[0-2]|[2-4]\d|[5-9]\d)(?P=sep)(?P<dept>\d{2}|2[ABab])(?P=sep)"
    r"(?P<commune>\d{3})(?P=sep)(?P<order>\d{3})(?P=sep)(?P<key>\d{2})" + _ALONE_AFTER
)


def nir_is_valid(match: re.Match[str]) -> bool:
    """The key of a NIR's 13 first characters, and a month and a department that exist."""
    month, dept = int(match.group("month")), match.group("dept").upper()
    if 13 <= month <= 19 or 43 <= month <= 49 or dept == "00":
        return False
    sex, year, commune, order = (match.group(g) for g in ("sex", "year", "commune", "order"))
    number = sex + year + f"{month:02}" + {"2A": "19", "2B": "18"}.get(dept, dept) + commune + order
    return 97 - int(number) % 97 == int(match.group("key"))


def _nirs(text: str) -> Iterator[tuple[int, int, str, str]]:
    for match in re.finditer(_NIR, text):
        if nir_is_valid(match):
            yield match.start(), match.end(), NIR, f"{match.group('sex')}… {match.group('key')}"


_CARD = (
    _ALONE_BEFORE + r"(?:\d{4}(?P<sep>[ -])\d{4}(?P=sep)\d{4}(?P=sep)\d{1,4}(?:(?P=sep)\d{1,3})?"
    r"|\d{4}(?P<amex>[ -])\d{6}(?P=amex)\d{4,5}"
    r"|\d{14,19})" + _ALONE_AFTER
)
# Network prefixes and lengths (ISO/IEC 7812 ranges as published by the networks). No 13-digit
# numbers: such cards are no longer issued, while EAN-13 barcodes and ms timestamps abound.
_CARD_NETWORKS: tuple[tuple[Callable[[str], bool], frozenset[int]], ...] = (
    (lambda d: d[0] == "4", frozenset({16, 19})),  # Visa
    (lambda d: 51 <= int(d[:2]) <= 55 or 2221 <= int(d[:4]) <= 2720, frozenset({16})),  # MC
    (lambda d: d[:2] in ("34", "37"), frozenset({15})),  # American Express
    # Diners Club
    (lambda d: d[:2] in ("36", "38", "39") or 300 <= int(d[:3]) <= 305, frozenset(range(14, 20))),
    (lambda d: 3528 <= int(d[:4]) <= 3589, frozenset(range(16, 20))),  # JCB
    # Discover, UnionPay, Maestro
    (lambda d: d[:1] == "6" or d[:2] == "50" or 56 <= int(d[:2]) <= 58, frozenset(range(16, 20))),
    (lambda d: 2200 <= int(d[:4]) <= 2204, frozenset({16})),  # Mir
)
_TEST_CARDS = frozenset(
    """
    4242424242424242 4000056655665556 4111111111111111 4012888888881881 5555555555554444
    2223003122003222 5200828282828210 5105105105105100 378282246310005 371449635398431
    6011111111111117 6011000990139424 3056930009020004 36227206271667 3566002020360505
    6200000000000005
    """.split()
)


def luhn_is_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def card_number_is_valid(digits: str) -> bool:
    """A network's prefix and length, and the Luhn checksum."""
    return any(
        prefix(digits) and len(digits) in lengths for prefix, lengths in _CARD_NETWORKS
    ) and luhn_is_valid(digits)


def _cards(text: str) -> Iterator[tuple[int, int, str, str]]:
    for match in re.finditer(_CARD, text):
        digits = re.sub(r"\D", "", match.group(0))
        if digits not in _TEST_CARDS and card_number_is_valid(digits):
            yield match.start(), match.end(), CARD, "… " + digits[-2:]


# --- all together ---------------------------------------------------------------------------


def find_personal_data(text: str) -> list[Finding]:
    """One finding per kind and line, with a masked hint (never the value)."""
    text = latin_skeleton(text)
    digits = sum(map(str.isdigit, text))
    # Checksummed kinds first: an IBAN's digit groups must not also count as a card or a phone.
    # Each detector needs what its shortest value has (8 digits for a phone or an IBAN, 13 for a
    # NIR, 14 for a card, an @), so most texts run few of them.
    detectors = [
        detector
        for detector, possible in (
            (_ibans, digits >= 8),
            (_nirs, digits >= 13),
            (_cards, digits >= 14),
            (_emails, "@" in text),
            (_phones, digits >= 8),
            (_addresses, digits > 0),
        )
        if possible
    ]
    taken: list[tuple[int, int]] = []
    findings: dict[tuple[str, int], Finding] = {}
    for detector in detectors:
        for start, end, kind, hint in detector(text):
            if any(start < e and s < end for s, e in taken):
                continue
            taken.append((start, end))
            line = line_of(text, start)
            findings.setdefault((kind, line), Finding(kind, line, hint))
    return sorted(findings.values(), key=lambda f: f.line)
