"""Personal data in memory writes (issue 12): refused with a masked hint, look-alikes pass."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conftest import CliResult, Clock, journal_fields
from ocmem.errors import Refused
from ocmem.execution import exit_code
from ocmem.guards.personal import (
    ADDRESS,
    CARD,
    EMAIL,
    IBAN,
    NIR,
    PHONE,
    card_number_is_valid,
    find_personal_data,
    iban_is_valid,
    luhn_is_valid,
)
from ocmem.guards.textsafety import check_text
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.services.memory import Memory
from ocmem.setup.install import Installer


@pytest.mark.parametrize(
    ("text", "kind", "hint"),
    [
        ("le client jean.dupont@gmail.com veut un devis", EMAIL, "j…@…"),
        ("contact: Julie <julie.fontaine@laposte.net>", EMAIL, "j…@…"),
        ("the user's email is KEVIN.WALSH@GMAIL.COM", EMAIL, "K…@…"),
        ('ssh-keygen -C "emma.lopez@lopez-archi.fr"', EMAIL, "e…@…"),
        ("ssh jean.dupont@gmail.com", EMAIL, "j…@…"),
        ("rappeler au 06 12 34 56 78 après 18 h", PHONE, "06 … 78"),
        ("son portable : 06.23.45.67.89", PHONE, "06 … 89"),
        ("le livreur a laissé le 0712345678", PHONE, "07 … 78"),
        ("joignable au +33 6 12 34 56 78", PHONE, "+33 … 78"),
        ("astreinte : +33 (0)6 98 76 54 32", PHONE, "+33 … 32"),
        ("depuis l'étranger : 0033 6 45 67 89 01", PHONE, "0033 … 01"),
        ("call Sarah on +44 20 7946 0958", PHONE, "+44 … 58"),
        ("US contact: +1 (415) 555-0132", PHONE, "+1 … 32"),
        ("le client habite au 12 rue de la Paix", ADDRESS, "… rue …"),
        ("livraison au 3 bis avenue Foch", ADDRESS, "… avenue …"),
        ("RDV chez lui au 8, place Bellecour", ADDRESS, "… place …"),
        ("ship it to 221B Baker Street, London", ADDRESS, "… street …"),
        ("33 Queen's Road", ADDRESS, "… road …"),
        ("sa mère habite à 13005 Marseille", ADDRESS, "13… …"),
        ("rembourser Paul sur FR76 3000 6000 0112 3456 7890 189", IBAN, "FR… 89"),
        ("the contractor's IBAN is NL91ABNA0417164300", IBAN, "NL… 00"),
        ("son IBAN : fr45 1009 6000 3012 3456 7890 112", IBAN, "FR… 12"),
        ("la carte de Paul : 4970 1012 3456 7893", CARD, "… 93"),
        ("CB : 4526-0181-5908-3012, exp 09/27", CARD, "… 12"),
        ("Amex 3766 131860 91399", CARD, "… 99"),
        ("numéro 4491186252760181 collé dans le ticket", CARD, "… 81"),
        ("NIR de l'intérimaire : 1 84 12 76 451 089 46", NIR, "1… 46"),
        ("numéro sécu 291032A00412368", NIR, "2… 68"),
        ("sécu : 2.91.03.2B.004.123.95", NIR, "2… 95"),
        ("n° ０６ １２ ３４ ５６ ７８ en pleine chasse", PHONE, "06 … 78"),
        ("écrire à j\u0435an.dupont@gmail.com", EMAIL, "j…@…"),
    ],
)
def test_personal_data_is_found_with_a_masked_hint(text: str, kind: str, hint: str) -> None:
    assert [(f.kind, f.hint) for f in find_personal_data(text)] == [(kind, hint)]


@pytest.mark.parametrize(
    "text",
    [
        # infrastructure and role addresses
        "ssh deploy@10.0.0.5 puis systemctl restart app",
        "git clone git@github.com:acme/infra.git",
        "scp backup.tar.gz root@192.168.1.20:/var/backups/",
        "rsync -avz ./dist/ jean@web01.acme.fr:/var/www/",
        "root@localhost reçoit les mails de cron",
        "les mails partent de noreply@monapp.fr",
        "Reply-To: no-reply@notifications.acme.fr",
        "security@acme.io est dans SECURITY.md",
        "Signed-off-by: CI Bot <ci-bot@acme.io>",
        "l'exemple de la doc utilise jean.dupont@example.com",
        "jenkins@ci.acme.internal signe les tags",
        "https://jean@git.acme.fr/team/repo.git",
        "49699333+dependabot[bot]@users.noreply.github.com",
        # not an e-mail's shape
        "systemctl status getty@tty1.service",
        "icône icon@2x.png manquante",
        "npm install lodash@4.17.21",
        "docker pull ghcr.io/acme/api@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "uses: actions/checkout@v4",
        # numbers that are not phones
        "hexdump : 00 01 02 03 04 05 06 07 08 09",
        "valeurs 01 02 03 04 05 dans le CSV",
        "l'alphabet est 0123456789abcdef",
        "ticket 0612345678 fermé",
        "ref produit 0600123456 en rupture",
        "MAC 00-11-22-33-44-55 sur eth0",
        "timestamp 1712345678, en ms 1712345678901",
        "offset +0200, fuseau +02:00",
        "git diff --stat : +1234 -567",
        "+33 % de trafic, +44 000 req/s",
        "version 06.12.34 mal formée",
        # not addresses
        "2 routes statiques ajoutées",
        "3 place holders dans le template",
        "ajouté 3 Route Tables dans le VPC",
        "3 Hard Drive failures this month",
        "port 10000 Mbps sur le switch",
        "NodePort 31000 Kubernetes",
        "la BDD compte 69003 lignes",
        # not IBANs or cards
        "FR76 est le préfixe des IBAN français",
        "Stripe en mode test : carte 4242 4242 4242 4242",
        "EAN 4006381333931, ISBN 9782070368228",
        "IMEI 356938035643809 du routeur",
        "snowflake 1098765432109876543",
        "uuid 550e8400-e29b-41d4-a716-446655440000",
    ],
)
def test_technical_look_alikes_are_not_personal_data(text: str) -> None:
    assert find_personal_data(text) == []


_NIR_FIELDS = st.tuples(
    st.sampled_from("1278"),
    st.integers(0, 99),
    st.sampled_from([*range(1, 13), 20, 42, 50, 99]),
    st.sampled_from(["01", "13", "2A", "2B", "75", "95", "97", "99"]),
    st.integers(1, 999),
    st.integers(1, 999),
)


@given(_NIR_FIELDS, st.sampled_from([" ", ".", ""]), st.integers(1, 96))
def test_a_nir_with_its_key_is_found_and_with_another_key_is_not(
    fields: tuple[str, int, int, str, int, int], separator: str, shift: int
) -> None:
    sex, year, month, dept, commune, order = fields
    groups = [sex, f"{year:02}", f"{month:02}", dept, f"{commune:03}", f"{order:03}"]
    number = "".join(groups).replace("2A", "19").replace("2B", "18")
    key = 97 - int(number) % 97
    written = separator.join([*groups, f"{key:02}"])
    assert [f.kind for f in find_personal_data(f"son numéro {written} est à jour")] == [NIR]
    wrong = separator.join([*groups, f"{(key + shift - 1) % 97 + 1:02}"])
    assert NIR not in {f.kind for f in find_personal_data(f"son numéro {wrong} est à jour")}


def test_one_finding_per_kind_and_line() -> None:
    text = "Paul : 12 rue de la Paix, 75002 Paris\ntel 06 12 34 56 78 ou 07 12 34 56 78"
    assert [(f.line, f.kind) for f in find_personal_data(text)] == [(1, ADDRESS), (2, PHONE)]


def test_an_iban_is_not_also_a_card_or_a_phone() -> None:
    assert [f.kind for f in find_personal_data("RIB FR7630004000031234567890143")] == [IBAN]


def test_the_iban_stops_at_its_length() -> None:
    (finding,) = find_personal_data("FR76 3000 6000 0112 3456 7890 189 ET LE RESTE")
    assert finding.hint == "FR… 89"


# --- checksums ------------------------------------------------------------------------------


def _luhn_complete(body: str) -> str:
    return next(body + d for d in "0123456789" if luhn_is_valid(body + d))


def _iban(country: str, bban: str) -> str:
    number = int("".join(str(int(c, 36)) for c in bban + country + "00"))
    return f"{country}{98 - number % 97:02d}{bban}"


_CARD_BODIES = st.tuples(
    st.sampled_from([("4", 16), ("51", 16), ("55", 16), ("2221", 16), ("6011", 16)]),
    st.text(alphabet="0123456789", min_size=14, max_size=14),
).map(lambda t: t[0][0] + t[1][: t[0][1] - len(t[0][0]) - 1])


@given(_CARD_BODIES, st.sampled_from([" ", "-", ""]), st.integers(0, 15), st.integers(1, 9))
def test_a_valid_card_is_found_and_one_wrong_digit_is_not(
    body: str, separator: str, position: int, delta: int
) -> None:
    digits = _luhn_complete(body)
    written = separator.join(digits[i : i + 4] for i in range(0, 16, 4))
    findings = find_personal_data(f"payé avec la carte {written} hier")
    assert [f.kind for f in findings] == [CARD]
    assert all(digits not in f.hint and written not in f.hint for f in findings)
    wrong = digits[:position] + str((int(digits[position]) + delta) % 10) + digits[position + 1 :]
    assert not card_number_is_valid(wrong)  # Luhn catches every single-digit error


@given(
    st.sampled_from([("FR", 23), ("DE", 18), ("GB", 18), ("BE", 12)]),
    st.data(),
)
def test_a_valid_iban_is_found_and_a_typo_is_not(
    country_length: tuple[str, int], data: st.DataObject
) -> None:
    country, length = country_length
    if country == "GB":
        bban = "NWBK" + data.draw(st.text(alphabet="0123456789", min_size=14, max_size=14))
    else:
        bban = data.draw(st.text(alphabet="0123456789", min_size=length, max_size=length))
    iban = _iban(country, bban)
    spaced = " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))
    assert iban_is_valid(iban)
    assert [f.kind for f in find_personal_data(f"virement vers {spaced} demain")] == [IBAN]
    position = data.draw(st.integers(4, len(iban) - 1))
    if iban[position].isdigit():
        typo = iban[:position] + str((int(iban[position]) + 1) % 10) + iban[position + 1 :]
        assert not iban_is_valid(typo)  # mod 97 catches every single-digit error


# --- look-alikes as properties --------------------------------------------------------------

_OCTET = st.integers(0, 255).map(str)
_IPV4 = st.tuples(_OCTET, _OCTET, _OCTET, _OCTET).map(".".join)
_PORT = st.integers(1, 65535).map(str)
_SEMVER = st.lists(st.integers(0, 99), min_size=3, max_size=3).map(lambda t: ".".join(map(str, t)))
_HEX = st.text(alphabet="0123456789abcdef", min_size=7, max_size=64).filter(
    lambda h: not h.isdigit()  # a hash of 7+ characters almost always has a letter
)
_UUID = st.uuids().map(str)
_DATE = st.datetimes().map(lambda d: d.isoformat(sep=" ", timespec="seconds"))
_IPV6 = st.ip_addresses(v=6).map(str)
_SIZE = st.integers(0, 10**12).map(str)
_TECHNICAL = st.one_of(_IPV4, _SEMVER, _HEX, _UUID, _DATE, _IPV6, _SIZE, _PORT)


@given(st.lists(_TECHNICAL, min_size=1, max_size=4), st.sampled_from([" ", ", ", ":", " -> "]))
def test_ips_versions_hashes_dates_and_sizes_are_never_personal(
    parts: list[str], joiner: str
) -> None:
    text = "vu dans les logs : " + joiner.join(parts)
    assert find_personal_data(text) == []


_ROLES = st.sampled_from(["noreply", "support", "root", "git", "postmaster", "ci-bot", "alerts"])
_DOMAINS = st.sampled_from(["acme.io", "monapp.fr", "github.com", "mg.acme.io"])
_PEOPLE = st.builds(
    "{}{}{}".format,
    st.sampled_from(["jean", "marie", "luc", "sophie", "k", "thomas", "lea"]),
    st.sampled_from([".", "_", "", "-"]),
    st.sampled_from(["dupont", "martin", "nguyen", "bernard", "roux85", "petit"]),
)
_WEBMAIL = st.sampled_from(["gmail.com", "orange.fr", "free.fr", "outlook.com", "proton.me"])


@given(_ROLES, _DOMAINS)
def test_role_mailboxes_pass(role: str, domain: str) -> None:
    assert find_personal_data(f"alertes envoyées à {role}@{domain}") == []


@given(_PEOPLE, _WEBMAIL, st.sampled_from(["écrire à {}", "ssh {}", "contact : <{}>", "{}"]))
def test_a_person_at_a_webmail_is_found_even_in_a_command(
    local: str, domain: str, template: str
) -> None:
    address = f"{local}@{domain}"
    findings = find_personal_data(template.format(address))
    assert [f.kind for f in findings] == [EMAIL]
    assert local not in findings[0].hint and domain not in findings[0].hint


_MOBILE = st.tuples(st.sampled_from("67"), st.text(alphabet="0123456789", min_size=8, max_size=8))
_FORMATS = st.sampled_from(
    ["0{}{} {} {} {} {}", "0{}{}.{}.{}.{}.{}", "+33 {}{} {} {} {} {}", "+33{}{}{}{}{}{}"]
)


@given(_MOBILE, _FORMATS)
def test_a_french_mobile_is_found_in_any_usual_form(mobile: tuple[str, str], form: str) -> None:
    first, rest = mobile
    assume(rest[:2] != f"0{int(first) + 1}")  # « 07 08 09 10 11 » is a counting sequence
    if form.startswith("+33 "):
        written = "+33 " + first + " " + " ".join(rest[i : i + 2] for i in range(0, 8, 2))
    elif form.startswith("+33"):
        written = "+33" + first + rest
    else:
        separator = "." if "." in form else " "
        written = "0" + first + separator + separator.join(rest[i : i + 2] for i in range(0, 8, 2))
    findings = find_personal_data(f"appelle-le au {written} demain")
    assert [f.kind for f in findings] == [PHONE]
    assert all(rest not in f.hint.replace(" ", "") for f in findings)


# --- the guard and its message --------------------------------------------------------------


def test_check_text_names_the_kind_masked_and_the_fix() -> None:
    with pytest.raises(Refused) as refused:
        check_text("fait", "envoyé le rapport à jean.dupont@gmail.com")
    assert exit_code(refused.value) == 3
    assert refused.value.render() == (
        "« fait » contient une donnée personnelle : ligne 1 : adresse e-mail (j…@…)\n"
        "Correction : retire-la (la mémoire ne garde aucune donnée personnelle) ; un contact utile "
        "va dans ton gestionnaire de mots de passe ou ton carnet d'adresses, pas dans la mémoire"
    )


def test_several_findings_are_all_named() -> None:
    with pytest.raises(Refused) as refused:
        check_text("note", "Paul : 06 12 34 56 78\nrembourser sur FR7630004000031234567890143")
    message = refused.value.render()
    assert message.startswith(
        "« note » contient des données personnelles : ligne 1 : numéro de téléphone (06 … 78); "
        "ligne 2 : IBAN (FR… 43)\nCorrection : retire-les "
    )


Run = Callable[..., CliResult]
_PERSONAL = {
    "fait": "envoyé à jean.dupont@gmail.com",
    "piege": "rappeler au 06 12 34 56 78",
    "lecon": "rembourser sur FR76 3000 6000 0112 3456 7890 189",
    "demande": "le mot de passe admin est hunter2",
    "titre": "colis au 12 rue de la Paix",
}
_VALUES = ["jean.dupont", "gmail.com", "12 34 56", "3000 6000", "hunter2", "rue de la Paix"]


@pytest.mark.parametrize(("field", "text"), sorted(_PERSONAL.items()))
def test_every_journal_field_is_guarded_and_nothing_is_echoed(
    run_cli: Run, home: Path, unchanged: None, field: str, text: str
) -> None:
    result = run_cli("journal", "add", stdin=json.dumps(journal_fields(**{field: text})))
    assert result.code == 3
    assert "Correction :" in result.err
    log = (home / ".ocmem/log.jsonl").read_text() if (home / ".ocmem/log.jsonl").exists() else ""
    for value in _VALUES:
        assert value not in result.out + result.err + log


def test_notes_and_proposals_are_guarded(run_cli: Run, home: Path, unchanged: None) -> None:
    note = run_cli("note", "appeler Julie au +33 6 45 67 89 01")
    assert note.code == 3 and "numéro de téléphone (+33 … 01)" in note.err
    proposal = {"type": "fait", "titre": "Contact", "contenu": "Le comptable est paul.martin@orange.fr.",
                "sources": ["journal 2026-11-29 09:00"], "contradiction": "aucune", "remplace": "rien",
                "retiens_ca": True}  # fmt: skip
    proposed = run_cli("propose", stdin=json.dumps(proposal))
    assert proposed.code == 3 and "adresse e-mail (p…@…)" in proposed.err
    assert "paul.martin" not in proposed.out + proposed.err


def test_memory_refuses_before_writing(memory: Memory, unchanged: None) -> None:
    with pytest.raises(Refused, match="donnée personnelle"):
        memory.add_note("le client habite 4 impasse du Moulin")


def test_import_of_an_old_memory_skips_personal_data(tmp_path: Path) -> None:
    home = tmp_path / "h"
    old = tmp_path / "memoire.md"
    old.write_text("- le NAS est sur 192.168.1.50\n- portable de Marc : 06 12 34 56 78\n")
    report = Installer(Workspace(load_settings(home), clock=Clock())).run(old).render()
    assert "192.168.1.50" in (home / "memory/SHORT_TERM.md").read_text()
    assert "ligne 2 : numéro de téléphone" in report and "12 34 56" not in report
