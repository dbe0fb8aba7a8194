"""A user message correcting the agent: the table, plain questions, and the plugin's copy of the rule."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocmem.bridge.tools import plugin_config
from ocmem.guards.corrections import CORRECTION_SOURCE, is_correction
from ocmem.home.settings import load_settings
from ocmem.text.similarity import fold

CORRECTIONS = [
    "Non, c'est pas ça",
    "non ce n'est pas le bon port",
    "Non. Utilise le port 8080.",
    "mais non, le service s'appelle api",
    "Ah non, pas dans /etc",
    "nope, wrong again",
    "C'est faux",
    "c’est faux, le certificat expire en mars",
    "cest pas ca",
    "Pas comme ça !",
    "ce n'est pas comme ça qu'on redémarre nginx",
    "Tu t'es trompé de serveur",
    "tu te trompes, c'est la 15",
    "tu as tort",
    "Erreur, il fallait garder la config",
    "Je t'ai dit de ne pas toucher à la prod",
    "je t'avais demandé un backup d'abord",
    "j'ai dit le port 8080",
    "Ce n'est pas ce que j'ai demandé",
    "c'est pas ce que je voulais",
    "Arrête, tu vas tout casser",
    "arrête de modifier ce fichier",
    "STOP !",
    "stop",
    "le chemin est faux, c'est /srv/app",
    "Mauvais fichier",
    "tu as cassé le build",
    "t'as mal compris",
    "tu n'as pas lu ma demande",
    "ne fais pas ça",
    "remets comme avant",
    "tu aurais dû vérifier avant",
    "relis ma demande",
    "je voulais dire le conteneur db, pas l'app",
    "Faux ! C'est le port 5432",
    "pas celui-là, l'autre",
    "en fait non, garde l'ancienne version",
    "ok merci. Non, attends, c'est pas le bon dossier",
    "No, use the staging database",
    "no. the other one",
    "No no, don't restart it",
    "That's wrong",
    "thats not what I asked",
    "That's not what I asked for.",
    "wrong file",
    "You broke the tests",
    "you forgot to reload nginx",
    "Not like that",
    "I said port 8080",
    "I told you to use podman",
    "Actually, it's in /opt/app",
    "actually no, keep it",
    "this is completely wrong",
    "the path is wrong",
    "you misunderstood",
    "don't do that",
    "stop doing that",
    "Stop!",
    "undo that",
    "you're wrong about the port",
    "that's not how it works",
]

NOT_CORRECTIONS = [
    "Comment renouveler un certificat expiré sur nginx ?",
    "pourquoi non ?",
    "Est-ce que le port 80 est faux ?",
    "est-ce que c'est faux",
    "pourquoi c'est faux ?",
    "c'est faux ?",
    "tu t'es trompé ?",
    "Les tests de non-régression passent",
    "ajoute un test de non-régression",
    "non",
    "Non !",
    "non merci, c'est bon",
    "Non merci c'est bon",
    "non, pas de souci",
    "moi non plus",
    "non seulement ça marche, mais c'est rapide",
    "c'est pas mal",
    "c'est pas faux",
    "c'est pas bon signe",
    "l'annonce du nonce a échoué",
    "dis-moi si c'est faux",
    "arrête le conteneur postgres",
    "stop the nginx container",
    "Erreur : connection refused sur le port 5432",
    "quel est le mauvais fichier ?",
    "peux-tu vérifier pas comme ça ?",
    "No problem",
    "no worries, take your time",
    "No thanks",
    "no",
    "No errors in the log",
    "no such file or directory",
    "Is it wrong to run docker as root?",
    "what's wrong with nginx?",
    "something is wrong with the disk",
    "Why is the port wrong?",
    "is that the wrong file?",
    "how do I undo a commit?",
    "Nothing is wrong",
    "did you forget the semicolon?",
    "you know what, let's deploy",
    "actually, can you also add tests?",
    "nan values in the price column",
    "Déploie le service sur le VPS",
    "Merci, c'est parfait",
    "Ça marche, bravo",
    "Tu peux redémarrer nginx ?",
    "relis le fichier de config",
    "annonce la maintenance aux utilisateurs",
    "est-ce qu'il fallait redémarrer ?",
]


@pytest.mark.parametrize("said", CORRECTIONS)
def test_corrections_are_recognised(said: str) -> None:
    assert is_correction(fold(said))


@pytest.mark.parametrize("said", NOT_CORRECTIONS)
def test_other_messages_are_not_corrections(said: str) -> None:
    assert not is_correction(fold(said))


def test_the_table_is_large_enough() -> None:
    assert len(set(CORRECTIONS)) >= 40 and len(set(NOT_CORRECTIONS)) >= 40


# A question opening with a question word, made of the words corrections are made of, with no
# punctuation inside: never a correction (the "?" and the question word each suffice).
QUESTION_WORDS = [
    "pourquoi",
    "comment",
    "est-ce que",
    "quand",
    "why",
    "how",
    "what",
    "do you think",
    "can you tell if",
    "si",
]
VOCABULARY = [
    "c'est faux",
    "c'est pas ça",
    "pas comme ça",
    "tu t'es trompé",
    "tu as cassé",
    "je t'ai dit",
    "mauvais fichier",
    "wrong file",
    "that's wrong",
    "you broke",
    "i said",
    "not like that",
    "le port",
    "est faux",
    "non",
    "no",
    "erreur",
    "stop",
    "arrête",
    "nginx",
    "le certificat",
    "a expiré",
    "the build",
    "is wrong",
    "ce n'est pas ce que j'ai demandé",
    "actually",
]


@given(
    opener=st.sampled_from(QUESTION_WORDS),
    words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=6),
    mark=st.sampled_from(["?", " ?", ""]),
)
def test_plain_questions_never_trigger(opener: str, words: list[str], mark: str) -> None:
    assert not is_correction(fold(" ".join([opener.capitalize(), *words]) + mark))


@given(words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=6))
def test_any_question_mark_right_after_the_words_is_enough(words: list[str]) -> None:
    """Starting with a neutral word instead: the final "?" alone keeps clause phrases silent."""
    assert not is_correction(fold(" ".join(["Alors", *words]) + " ?"))


def test_the_plugin_gets_the_rule(home: Path) -> None:
    assert plugin_config(load_settings(home))["corrections"] == CORRECTION_SOURCE


def _random_messages(count: int) -> list[str]:
    """Messages mixing the table's pieces with characters where Python and JavaScript differ."""
    rng = random.Random(14)
    pieces = [
        *CORRECTIONS,
        *NOT_CORRECTIONS,
        *VOCABULARY,
        "œ",
        "ß",
        "’",
        "\u2028",
        "\t",
        "\n",
        "?",
        ",",
        ".",
        "!",
        "é",
        "-",
        "«",
        "»",
    ]
    return [
        fold(" ".join(rng.choice(pieces) for _ in range(rng.randint(1, 5)))) for _ in range(count)
    ]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH")
def test_javascript_reads_the_source_as_python_does() -> None:
    messages = [fold(m) for m in CORRECTIONS + NOT_CORRECTIONS] + _random_messages(3000)
    script = "const [src, msgs] = JSON.parse(require('fs').readFileSync(0, 'utf8')); const re = new RegExp(src); process.stdout.write(JSON.stringify(msgs.map((m) => re.test(m))))"
    done = subprocess.run(
        ["node", "-e", script],
        input=json.dumps([CORRECTION_SOURCE, messages]),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    verdicts = json.loads(done.stdout)
    assert len(verdicts) == len(messages)
    differ = [m for m, js in zip(messages, verdicts, strict=True) if js != is_correction(m)]
    assert differ == []
    assert sum(verdicts) >= len(CORRECTIONS)  # the comparison saw both answers
