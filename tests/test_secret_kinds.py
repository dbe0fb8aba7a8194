"""Every kind of ``tests/data/secret_kinds.txt`` is refused, through ``check_text`` and through the
commands that write memory (note, journal add, propose); its clean look-alikes pass.

The figures (kinds refused, clean lines refused) are printed with ``pytest -s`` and kept in
docs/security.md.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Clock, journal_fields
from ocmem.errors import Refused
from ocmem.execution import exit_code
from ocmem.guards import detectsecrets
from ocmem.guards.homoglyphs import latin_skeleton
from ocmem.guards.textsafety import check_text, find_secrets
from ocmem.guards.tokens import find_shapes
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals

DATA = Path(__file__).parent / "data" / "secret_kinds.txt"
# The kinds issue 33 saw written to memory, by their labels in the corpus.
ISSUE_KINDS = (
    "google-api-key",
    "npm-token",
    "sendgrid-key",
    "huggingface-token",
    "discord-bot-token",
    "aws-secret-access-key",
    "base64-private-key",
    "base64-token",
    "hex-encryption-key",
    "nir",
    "password-homoglyph",
)


def unescape(text: str) -> str:
    return re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)


def load() -> list[tuple[str, str]]:
    samples = []
    for raw in DATA.read_text(encoding="utf-8").splitlines():
        if raw.strip() and not raw.startswith("#"):
            label, text = raw.split(None, 1)
            samples.append((label, unescape(text)))
    return samples


SAMPLES = load()
SECRETS = [(label, text) for label, text in SAMPLES if label != "clean"]
CLEAN = [text for label, text in SAMPLES if label == "clean"]


def refusal(text: str) -> Refused | None:
    try:
        check_text("fait", text)
    except Refused as refused:
        return refused
    return None


def test_the_corpus_has_forty_kinds_and_the_issues_ones() -> None:
    kinds = {label for label, _ in SECRETS}
    assert len(kinds) >= 40
    assert set(ISSUE_KINDS) <= kinds
    assert len(CLEAN) >= 25


def test_every_kind_is_refused_with_its_name_a_fix_and_no_value() -> None:
    missed: dict[str, list[str]] = defaultdict(list)
    for label, text in SECRETS:
        refused = refusal(text)
        if refused is None:
            missed[label].append(text)
            continue
        message = refused.render()
        assert exit_code(refused) == 3
        assert refused.fix
        assert re.search(r"« fait » contient .*: ligne 1 : \S", message), message
        # The value is never echoed: no 12-character piece of the sample's longest word.
        longest = max(latin_skeleton(text).split(), key=len)
        assert not any(longest[i : i + 12] in message for i in range(len(longest) - 11)), message
    kinds = {label for label, _ in SECRETS}
    print(f"\nkinds refused: {len(kinds) - len(missed)}/{len(kinds)}, samples: {len(SECRETS)}")
    assert not missed, dict(missed)


def test_look_alikes_pass() -> None:
    refused = [(text, str(r)) for text in CLEAN if (r := refusal(text)) is not None]
    print(f"\nclean look-alikes refused: {len(refused)}/{len(CLEAN)}")
    assert not refused


def test_the_token_gate_hides_nothing_detect_secrets_alone_finds() -> None:
    """detect-secrets runs only on a line ``may_hold_token`` lets through. Run on every line
    without the gate, each of its findings is on a line the gate opens, or is one ocmem's own
    shapes (which run on every text) find too: a URL's password, a private key's header."""
    found = 0
    for _label, text in SAMPLES:
        folded = latin_skeleton(text)
        for plugin in detectsecrets.plugins():
            if list(plugin.analyze_string(folded)):
                found += 1
                assert detectsecrets.may_hold_token(folded) or list(find_shapes(folded)), text
    assert found >= 20


@pytest.mark.parametrize(
    ("label", "kind"),
    [
        ("discord-bot-token", "jeton de bot Discord"),
        ("sendgrid-key", "clé SendGrid"),
        ("twilio-api-key", "clé Twilio"),
        ("telegram-bot-token", "jeton de bot Telegram"),
        ("azure-storage-key", "clé de compte de stockage Azure"),
        ("google-api-key", "clé Google"),
        ("base64-token", "jeton GitHub (en base64)"),
        ("hex-encryption-key", "clé secrète en hexadécimal"),
        ("password-homoglyph", "mot de passe ou jeton en clair"),
    ],
)
def test_kinds_are_named_in_french(label: str, kind: str) -> None:
    text = next(text for sample, text in SECRETS if sample == label)
    assert kind in {f.kind for f in find_secrets(text)}


def test_note_refuses_every_kind(memory: Memory, unchanged: None) -> None:
    short = [(label, text) for label, text in SECRETS if len(text) <= 300]
    assert {label for label, _ in short} >= set(ISSUE_KINDS) - {"base64-private-key"}
    for _label, text in short:
        with pytest.raises(Refused, match="« note » contient"):
            memory.add_note(text)


def test_journal_add_refuses_every_kind(memory: Memory, unchanged: None) -> None:
    for _label, text in SECRETS:
        with pytest.raises(Refused, match="« fait » contient"):
            memory.add_journal(journal_fields(fait=text))


def test_propose_refuses_the_issues_kinds(
    memory: Memory,
    proposals: Proposals,
    clock: Clock,
    files_snapshot: Callable[[], dict[str, bytes]],
) -> None:
    refs = []
    for i in range(2):
        added = memory.add_journal(journal_fields(titre=f"Épisode {i}")).lines[0]
        refs.append(added.removeprefix("Entrée ajoutée : "))
        clock.advance(hours=1)
    before = files_snapshot()
    for label, text in SECRETS:
        if label in ISSUE_KINDS:
            proposal = {
                "type": "fait",
                "titre": "Accès au service de sauvegarde",
                "contenu": f"Pour la sauvegarde : {text}",
                "sources": refs,
                "contradiction": "aucune",
                "remplace": "rien",
            }
            with pytest.raises(Refused, match="« contenu » contient"):
                proposals.propose(proposal)
    assert files_snapshot() == before
