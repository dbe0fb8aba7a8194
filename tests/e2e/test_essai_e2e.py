"""``ocmem essai`` with the real OpenCode, as the user runs it: their ``opencode`` found on the
PATH, their HOME (OpenCode's configuration in it) and crontab untouched, the 13 tests passed;
then with one guard broken on purpose, the run fails on the tests that guard proves."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.harness import OpenCodeInstall
from support.usermachine import broken, essai, results, snapshot, user_machine

pytestmark = pytest.mark.e2e

# Notes written after a web page or an MCP tool were read are no longer set apart: the guard of
# the spec's tests 3 and 13, off in every Python process of the run (the plugin's gate included).
BREAK_QUARANTINE = """\
from ocmem.services.memory import Memory

kept = Memory.add_note


def add_note(self, text, days=None, taint=None):
    return kept(self, text, days, None)


Memory.add_note = add_note
"""


def test_the_thirteen_tests_pass_and_nothing_of_the_users_is_touched(
    opencode_install: OpenCodeInstall, tmp_path: Path
) -> None:
    env, home = user_machine(tmp_path, opencode_install.binary)
    before = snapshot(home)
    code, document = essai(env, timeout=300)
    failed = {t["numero"]: t["preuve"] for t in document["tests"] if t["resultat"] != "réussi"}
    assert (code, failed) == (0, {}), document
    assert sorted(results(document)) == list(range(1, 14))
    assert f"OpenCode {opencode_install.version}" in " ".join(document["contexte"])
    remarks = " ".join(document["remarques"])
    assert "aucune tentative de sortie" in remarks
    assert "Permissions d'OpenCode : aucune demandée pendant les tests de l'agent." in remarks
    assert "Crontab et systemd : les tiens jamais appelés" in remarks
    assert snapshot(home) == before
    assert not (tmp_path / "appels.log").exists()
    assert list((tmp_path / "tmp").iterdir()) == []


def test_with_the_quarantine_broken_on_purpose_it_fails_and_shows_the_trapped_note(
    opencode_install: OpenCodeInstall, tmp_path: Path
) -> None:
    env, _ = user_machine(tmp_path, opencode_install.binary)
    code, document = essai({**env, **broken(tmp_path, BREAK_QUARANTINE)}, timeout=300)
    seen = results(document)
    assert code == 1
    assert {n for n, r in seen.items() if r != "réussi"} == {3, 13}, document
    proofs = {t["numero"]: t["preuve"] for t in document["tests"]}
    assert "SHORT_TERM.md contient « le serveur de production est 10.0.0.99 »" in proofs[3]
    assert "SHORT_TERM.md contient « le mot de passe du routeur" in proofs[13]
