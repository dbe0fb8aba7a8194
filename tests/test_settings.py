"""ocmem.yaml read by one typed loader (ocmem.home.settings): every section's keys have their
type and bounds, an unknown key is refused with its name and the keys possible, and a refused
file changes nothing, whatever the command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from conftest import CliResult
from ocmem.bridge.tools import plugin_config
from ocmem.errors import InputError
from ocmem.home.settings import SECTIONS, Limits, load_settings


def write_config(home: Path, text: str) -> None:
    (home / "ocmem.yaml").write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "named"),
    [
        # The review's findings: none of these is a crash or a silent misreading now.
        (
            "plugin: {pull_timeout_seconds: vite}",
            "`plugin.pull_timeout_seconds` doit être un nombre",
        ),
        ("plugin: {trusted_tools: webfetch}", "`plugin.trusted_tools` doit être une liste de noms"),
        ('plugin: {trust_project: "no"}', "`plugin.trust_project` doit être true ou false"),
        ("limit: {memory_chars: 3000}", "clé(s) inconnue(s) dans"),
        ("plugin: {trust_projet: false}", "clé(s) inconnue(s) sous `plugin` : trust_projet"),
        ("plugin: [trust_project]", "`plugin` doit être un dictionnaire"),
        ("limits: {memory_chars: 2500.5}", "`limits.memory_chars` doit être un nombre entier"),
        ("limits: {memory_chars: -1}", "`limits.memory_chars` doit être un nombre entier positif"),
        (
            "limits: {fill_warning_ratio: 3}",
            "`limits.fill_warning_ratio` doit être un nombre positif",
        ),
        ("limits: {memory_chars: true}", "`limits.memory_chars` doit être un nombre entier"),
        (
            "silverbullet: {concurrency: 100}",
            "`silverbullet.concurrency` doit être un nombre entier de 1 à 64",
        ),
        ("silverbullet: {url: 8080}", "`silverbullet.url` doit être un texte"),
        (
            "silverbullet: {allow_plain_http: oui}",
            "`silverbullet.allow_plain_http` doit être true ou false",
        ),
        ("silverbullet: {token: abc}", "le jeton ne va jamais dans ocmem.yaml"),
        ("silverbullet: {pull: Agents/}", "`silverbullet.pull` doit être une liste de règles"),
    ],
)
def test_a_bad_key_is_refused_with_its_name_and_the_fix(home: Path, text: str, named: str) -> None:
    write_config(home, text + "\n")
    with pytest.raises(InputError) as refused:
        load_settings(home)
    assert named in str(refused.value), refused.value
    assert refused.value.fix and (
        "ocmem.yaml" in refused.value.fix or "possibles" in refused.value.fix
    )
    assert "abc" not in str(refused.value) + str(refused.value.fix)  # never the token back


def test_what_the_keys_take_is_read_as_written(home: Path) -> None:
    write_config(
        home,
        "limits: {memory_chars: 3000.0, fill_warning_ratio: 0.8}\n"
        "plugin: {pull_timeout_seconds: 2, trusted_tools: [mcp_docs], trust_project: false}\n"
        "silverbullet: {url: 'http://127.0.0.1:3000', concurrency: 4, expect_space_path: null}\n",
    )
    settings = load_settings(home)
    assert settings.limits.memory_chars == 3000 and isinstance(settings.limits.memory_chars, int)
    assert settings.limits.fill_warning_ratio == 0.8
    config = plugin_config(settings, env={})
    assert config["pull_timeout_seconds"] == 2.0 and "mcp_docs" in config["trusted_tools"]
    assert config["trust_project"] is False


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10_000),
    st.floats(-5, 10_000, allow_nan=False),
    st.text(max_size=8),
    st.lists(st.text(max_size=4), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@given(
    name=st.sampled_from(sorted(SECTIONS)),
    data=st.data(),
    value=VALUES,
)
def test_any_value_of_any_key_is_taken_or_refused_in_words(
    tmp_path_factory: pytest.TempPathFactory, name: str, data: st.DataObject, value: Any
) -> None:
    home = tmp_path_factory.mktemp("home")
    key = data.draw(st.sampled_from(sorted(SECTIONS[name])))
    write_config(home, yaml.safe_dump({name: {key: value}}))
    try:
        load_settings(home)
    except InputError as refused:
        assert key in str(refused) or "jeton" in str(refused) or "dépasse" in str(refused)


def test_every_cap_can_be_set(home: Path) -> None:
    assert set(SECTIONS["limits"]) == set(Limits._fields)


def test_a_refused_file_stops_every_command_before_it_writes(home: Path, run_cli: Any) -> None:
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file() and ".ocmem" not in p.parts}
    write_config(home, "plugin: {pull_timeout_seconds: vite}\n")
    result: CliResult = run_cli("note", "une note")
    assert result.code == 2 and "pull_timeout_seconds" in result.err and "Correction" in result.err
    after = {p: p.read_bytes() for p in before}
    assert after == before
