"""The command table of the README (from the click commands themselves) and the guide's table
of ocmem.yaml's keys (from its loader).

``scripts/generate.py`` rewrites the table between its markers (``--check``: says it is stale);
``tests/test_docs.py`` fails when any ``ocmem …`` command or option quoted in the docs no longer
matches the command line.
"""

from __future__ import annotations

import re

import click

from ocmem.cli import audience
from ocmem.cli.commands import cli
from ocmem.cli.options import shown_name

_TABLE = re.compile(r"(<!-- ocmem:commands -->\n).*?(<!-- /ocmem:commands -->)", re.DOTALL)
_SETTINGS = re.compile(r"(<!-- ocmem:settings -->\n).*?(<!-- /ocmem:settings -->)", re.DOTALL)


_METAVARS = {"TEXT": "TEXTE", "INTEGER": "N", "FLOAT": "NOMBRE"}


def commands(
    group: click.Group, prefix: str, *, hidden: bool = False
) -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []
    for name in group.list_commands(click.Context(group)):
        command = group.get_command(click.Context(group), name)
        if command is None or (command.hidden and not hidden):
            continue
        path = f"{prefix} {name}"
        if isinstance(command, click.Group):
            found += commands(command, path, hidden=hidden)
        else:
            found.append((path, command))
    return found


def _usage(path: str, command: click.Command) -> str:
    parts = [path]
    for param in command.params:
        if isinstance(param, click.Argument):
            name = (param.name or "").upper()
            parts.append(param.metavar or (name if param.required else f"[{name}]"))
        elif isinstance(param, click.Option) and not param.hidden and param.name != "help":
            flag = shown_name(param)
            if param.is_flag:
                parts.append(f"[{flag}]")
            else:
                metavar = param.metavar or (
                    "|".join(str(c) for c in param.type.choices)
                    if isinstance(param.type, click.Choice)
                    else _METAVARS.get(param.type.name.upper(), param.type.name.upper())
                )
                given = f"{flag} {metavar}"
                parts.append(given if param.required else f"[{given}]")
    return " ".join(parts)


def summary(command: click.Command) -> str:
    """The first paragraph of a command's help, on one line (a cell of the table)."""
    paragraph = (command.help or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split()).rstrip(".")


def table() -> str:
    """The Markdown tables of the commands, by audience (ocmem.cli.audience): each command's
    usage, who runs it when that is not the human, and its help's first paragraph."""
    blocks = []
    for title, rows in audience.sections(cli):
        callers = any(caller for _, _, caller in rows)
        lines = [
            f"**{title}**",
            "",
            "| commande | qui la lance | rôle |" if callers else "| commande | rôle |",
            "|---|---|---|" if callers else "|---|---|",
        ]
        for path, command, caller in rows:
            cells = [f"`{_usage(f'ocmem {path}', command)}`", caller, summary(command)]
            shown = cells if callers else [cells[0], cells[2]]
            # a pipe would split the cell
            lines.append("| " + " | ".join(cell.replace("|", r"\|") for cell in shown) + " |")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def with_table(readme: str) -> str:
    if not _TABLE.search(readme):
        raise ValueError(
            "the markers <!-- ocmem:commands --> … <!-- /ocmem:commands --> are missing"
        )
    return _TABLE.sub(lambda m: m.group(1) + table() + m.group(2), readme)


def settings_table() -> str:
    """The Markdown table of every key of ocmem.yaml (ocmem.home.settings.SECTIONS), in French."""
    from ocmem.home.settings import SECTIONS

    kinds = {
        "integer": "entier",
        "number": "nombre",
        "boolean": "true/false",
        "text": "texte",
        "texts": "liste",
        "rules": "liste de règles",
    }
    lines = ["| clé | valeur | rôle | défaut |", "|---|---|---|---|"]
    for name, options in SECTIONS.items():
        for key, option in options.items():
            low, high = option.low, option.high
            bounds = f" ({low:g} à {high:g})" if low is not None and high is not None else ""
            default = option.default
            shown = (
                ""
                if default is None or default == []
                else f"`[{', '.join(default)}]`"
                if isinstance(default, list)
                else f"`{str(default).lower() if isinstance(default, bool) else default}`"
            )
            lines.append(
                f"| `{name}.{key}` | {kinds[option.kind]}{bounds} | {option.help} | {shown} |"
            )
    return "\n".join(lines) + "\n"


def with_settings(text: str) -> str:
    if not _SETTINGS.search(text):
        raise ValueError(
            "the markers <!-- ocmem:settings --> … <!-- /ocmem:settings --> are missing"
        )
    return _SETTINGS.sub(lambda m: m.group(1) + settings_table() + m.group(2), text)


def unknown_mentions(text: str) -> list[str]:
    """``ocmem …`` commands or options quoted in ``text`` that the command line does not have."""
    known = dict(commands(cli, "ocmem", hidden=True))
    groups = {path.rsplit(" ", 1)[0] for path in known}
    global_options = {opt for p in cli.params for opt in p.opts}
    wrong = []
    for quoted in re.findall(r"`(ocmem [^`]*)`", text):
        words = quoted.split()
        command = None
        for end in range(len(words), 1, -1):
            if " ".join(words[:end]) in known:
                command = known[" ".join(words[:end])]
                break
        if command is None:
            # Only a group (``ocmem journal``) or the program's own options may be left.
            depth = max(
                n for n in range(1, len(words) + 1) if " ".join(words[:n]) in groups | {"ocmem"}
            )
            if any(not w.startswith("-") for w in words[depth : depth + 1]) or not (
                set(words[depth : depth + 1]) <= global_options | {"--help", "--version"}
            ):
                wrong.append(quoted)
            continue
        options = {opt for p in command.params for opt in p.opts} | global_options | {"--help"}
        wrong += [f"{quoted} ({w})" for w in words if w.startswith("--") and w not in options]
    return wrong
