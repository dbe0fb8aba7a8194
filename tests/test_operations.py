"""One declaration per memory operation (ocmem.formats.operations): the plugin's tool schema,
the argument check and the command line's options all come from it, and are held to it here."""

from __future__ import annotations

from typing import Any

import click
import pytest

from ocmem.bridge.contract import tool_schemas
from ocmem.cli.commands import cli
from ocmem.errors import InputError
from ocmem.formats import journal, operations
from ocmem.home.settings import Limits


def command(path: str) -> click.Command:
    found: click.Command = cli
    for word in path.split(" --")[0].split():
        assert isinstance(found, click.Group), path
        found = found.commands[word]
    return found


@pytest.mark.parametrize("op", operations.OPERATIONS, ids=lambda op: op.tool)
def test_each_operation_is_a_command_of_the_command_line(op: operations.Operation) -> None:
    found = command(op.command)
    options = {o for p in found.params for o in p.opts}
    assert all(flag in options for flag in op.command.split(" ")[1:] if flag.startswith("--"))


@pytest.mark.parametrize("op", [operations.JOURNAL, operations.PROPOSE], ids=lambda op: op.tool)
def test_the_commands_options_are_the_operations_arguments(op: operations.Operation) -> None:
    params = {p.name: p for p in command(op.command).params if isinstance(p, click.Option)}
    for arg in op.args:
        param = params[arg.name]
        assert arg.flag in param.opts
        assert param.multiple == (arg.kind == operations.STRINGS)
        assert param.is_flag == (arg.kind == operations.BOOLEAN)
        if arg.choices:
            assert isinstance(param.type, click.Choice)
            assert set(arg.choices) <= set(param.type.choices)


@pytest.mark.parametrize("op", operations.OPERATIONS, ids=lambda op: op.tool)
def test_the_tool_schema_is_the_declaration(op: operations.Operation) -> None:
    schema = tool_schemas()[op.tool]
    assert schema["description"] == op.description
    assert list(schema["args"]) == [a.name for a in op.args]


def test_the_caps_the_tools_announce_are_the_limits_ocmem_applies() -> None:
    assert Limits().search_results == operations.SEARCH_MAX
    recent = next(a for a in operations.SEARCH.args if a.name == "recent")
    assert recent.maximum == operations.RECENT_MAX
    resultat = next(a for a in operations.JOURNAL.args if a.name == "resultat")
    assert set(resultat.choices) == set(journal.RESULTS.values())


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"text": "x", "colour": "red"}, "colour"),
        ({}, "« text » manquant"),
        ({"text": 3}, "doit être une chaîne"),
        ({"text": "x", "days": "7"}, "doit être un nombre entier"),
        ({"text": "x", "days": True}, "doit être un nombre entier"),
        ({"text": "x", "days": 0}, "au moins 1"),
    ],
)
def test_bad_arguments_are_refused_with_the_argument_named(
    args: dict[str, Any], named: str
) -> None:
    with pytest.raises(InputError) as refused:
        operations.check_args(operations.NOTE, args)
    assert named in str(refused.value) and refused.value.fix


def test_null_is_an_absent_optional_argument_and_bounds_hold() -> None:
    assert operations.check_args(operations.NOTE, {"text": "x", "days": None}) == {"text": "x"}
    with pytest.raises(InputError, match="de 1 à 20"):
        operations.check_args(operations.SEARCH, {"recent": operations.RECENT_MAX + 1})
    with pytest.raises(InputError, match="réussi ou"):
        operations.check_args(
            operations.JOURNAL,
            {**{a.name: "x" for a in operations.JOURNAL.args}, "tags": ["t"], "resultat": "bof"},
        )
    many = ["a"] * (operations.ALTERNATIVES_MAX + 1)
    with pytest.raises(InputError, match=f"de 0 à {operations.ALTERNATIVES_MAX} éléments"):
        operations.check_args(operations.SEARCH, {"query": "x", "alternatives": many})
    schema = dict(
        zip(
            [a.name for a in operations.SEARCH.args],
            [a.schema() for a in operations.SEARCH.args],
            strict=True,
        )
    )
    assert schema["alternatives"]["maxItems"] == operations.ALTERNATIVES_MAX
