"""Secrets in prose and short assignments (issue 13): caught in every field, never echoed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocmem.errors import Refused
from ocmem.guards.credentials import KIND, find_prose_secrets
from ocmem.guards.textsafety import check_text, find_secrets


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("le mot de passe admin est hunter2", "hunter2"),
        ("le mot de passe (admin) est Soleil2024", "Soleil2024"),
        ("le mot de passe de l'admin est azerty", "azerty"),
        ("le mot de passe du compte root est toor.", "toor"),
        ("mot de passe : chaton", "chaton"),
        ("mot de passe du Wi-Fi : « framboise »", "framboise"),
        ("mdp hunter2 pour le NAS", "hunter2"),
        ("mdp=coucou", "coucou"),
        ("le mot de passe c'est mimosa", "mimosa"),
        ("the password is swordfish", "swordfish"),
        ("the admin password is letmein, and the user is bob", "letmein"),
        ("the password for the db is sunshine", "sunshine"),
        ("password: trustno1", "trustno1"),
        ("password=hunter2", "hunter2"),
        ("password=abc", "abc"),
        ("password → hunter2", "hunter2"),
        ("pass: hunter2", "hunter2"),
        ("pwd=qwerty", "qwerty"),
        ("export DB_PASSWORD=s3cr3t", "s3cr3t"),
        ("mysql -u root --password=rootpw", "rootpw"),
        ("password = 'dragon'", "dragon"),
        ('la passphrase de la clé GPG est "correct horse battery staple"', "correct horse"),
        ("le code PIN est 1234", "1234"),
        ("code PIN de la carte SIM : 0000", "0000"),
        ("PIN 4821 pour le cadenas", "4821"),
        ("la clé API est abc123def456", "abc123def456"),
        ("la clé d'API OpenWeather vaut 4f5e6d7c8b", "4f5e6d7c8b"),
        ("l'API key is 8f2b7c1d9e", "8f2b7c1d9e"),
        ("le token GitHub est tok3nValue", "tok3nValue"),
        ("jeton d'accès : 7a8b9c0d1e", "7a8b9c0d1e"),
        ("the secret key is kitten", "kitten"),
        ('client_secret = "pomme"', "pomme"),
    ],
)
def test_prose_secrets_are_found_without_their_value(text: str, value: str) -> None:
    findings = find_prose_secrets(text)
    assert [f.kind for f in findings] == [KIND]
    assert value not in findings[0].hint
    with pytest.raises(Refused) as refused:
        check_text("fait", text)
    assert value not in refused.value.render()


@pytest.mark.parametrize(
    "text",
    [
        # prose about passwords, without a value
        "le mot de passe est dans le coffre Bitwarden",
        "le mot de passe se change dans l'interface",
        "mot de passe expiré : l'utilisateur doit le changer",
        "changer le mot de passe root après l'installation",
        "password is required for the admin endpoint",
        "the password is stored in 1Password",
        "password: voir le gestionnaire",
        "mdp oublié : procédure de reset par mail",
        "le mot de passe est faux, compte verrouillé 15 min",
        "le mot de passe est correct mais le compte est désactivé",
        "password is case sensitive",
        "password is blank on the dev database",
        "the password is too weak",
        "le pass Navigo est périmé",
        "le mot de passe est celui du gestionnaire",
        # rules about passwords
        "la longueur minimale du mot de passe est 12 caractères",
        "minimum password length is 14 characters",
        "the password hash is bcrypt with cost 12",
        "token lifetime is 3600 seconds",
        "Bearer token absent : 401 Unauthorized",
        "le jeton d'accès expire après 3600 secondes",
        "PIN 3 du GPIO pour la LED",
        # references, not values
        "DB_PASSWORD=${DB_PASSWORD} dans le compose",
        "POSTGRES_PASSWORD_FILE=/run/secrets/pg_password",
        'password: "{{ vault_db_password }}"',
        "token: ${{ secrets.GITHUB_TOKEN }}",
        'api_key = os.environ["OPENAI_API_KEY"]',
        "password = getpass.getpass()",
        "password: !vault |",
        "apiKey: process.env.STRIPE_KEY",
        'api_key: "YOUR_API_KEY"',
        "token: <à générer dans GitLab>",
        "password=None",
        "password: ''",
        "token: null",
        "passwd -l olduser",
        "pwd affiche /srv/app",
        "kubectl create secret generic db-creds --from-env-file=.env.prod",
        "PasswordAuthentication no",
        "max_tokens=2048",
    ],
)
def test_prose_about_secrets_is_not_a_secret(text: str) -> None:
    assert find_prose_secrets(text) == []
    assert find_secrets(text) == []


def test_a_shaped_token_is_reported_once() -> None:
    findings = find_secrets("token: ghp_" + "a" * 36)
    assert [f.kind for f in findings] == ["jeton GitHub"]


def test_each_keyword_gives_its_line() -> None:
    text = "rien\npassword=abc\nmdp : loulou"
    assert [(f.line, f.hint) for f in find_prose_secrets(text)] == [
        (2, "password …"),
        (3, "mdp …"),
    ]


_PASSWORDS = st.text(
    alphabet=st.sampled_from("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"),
    min_size=3,
    max_size=20,
).filter(
    # A leading digit may read as a number with a unit (« 2KB »), which is a setting.
    lambda v: v[0].isalpha() and any(c.isdigit() for c in v)
)
_SENTENCES = st.sampled_from(
    [
        "le mot de passe est {}",
        "le mot de passe de l'admin est {}",
        "mot de passe : {}",
        "mdp {} pour le NAS",
        "the password is {}",
        "password={}",
        "api_key: {}",
        "la clé API est {}, à changer",
    ]
)


@given(_PASSWORDS, _SENTENCES)
def test_a_word_with_a_digit_is_caught_and_not_echoed(value: str, sentence: str) -> None:
    text = sentence.format(value)
    findings = find_secrets(text)
    assert findings
    assert all(value not in f.describe() for f in findings)


@given(st.text(alphabet=st.characters(blacklist_characters="\n"), max_size=40))
def test_a_hint_is_only_the_keyword(value: str) -> None:
    for finding in find_prose_secrets(f"password={value}"):
        assert finding.hint == "password …"
