"""Options in one language: each option is shown under its French name, its first; the English
names it had before stay accepted, hidden (cron lines, scripts, the plugin and older docs keep
working).

The rule: an option's shown name is French, without accents (it is typed); a few names stay as
they are because French users type them as they are: ``UNIVERSAL`` (``--help``, ``--version``,
``--json``, ``--debug``, ``--home``, ``--wait``), program names (``--opencode``, ``--systemd``)
and words that are the same in French (``--agent``, ``--session``, ``--source``, ``--type``,
``--tag``…). ``tests/test_cli_options.py`` holds every option to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

UNIVERSAL = frozenset({"-h", "--help", "--version", "--json", "--debug", "--home", "--wait"})

F = TypeVar("F", bound=Callable[..., Any])


class Option(click.Option):
    """An option whose help, usage and error messages show its first name only; its other names
    (the English ones) still parse."""

    @property
    def shown(self) -> str:
        return self.opts[0]

    @property
    def aliases(self) -> list[str]:
        return self.opts[1:]

    def get_help_spec(self, ctx: click.Context) -> str:
        opts = self.opts
        self.opts = opts[:1]
        try:
            return super().get_help_spec(ctx)
        finally:
            self.opts = opts

    def get_error_hint(self, ctx: click.Context | None) -> str:
        return f"'{self.shown}'"


def option(*param_decls: str, **attrs: Any) -> Callable[[F], F]:
    """``click.option`` with ``Option``: the French name first, then the hidden English ones,
    then the parameter's name."""
    return click.option(*param_decls, cls=Option, **attrs)


def shown_name(param: click.Option) -> str:
    """The name an option is shown under (its French one)."""
    return param.shown if isinstance(param, Option) else max(param.opts, key=len)


def shown_suggestions(error: click.exceptions.NoSuchOption) -> None:
    """« Voulais-tu dire … ? » names an option by its shown name, not by an English alias: an
    English name close to the mistyped one stands for its French name, unless a shown name is
    close too (then only those are suggested)."""
    if error.ctx is None or not error.possibilities:
        return
    shown = {
        alias: param.shown
        for param in error.ctx.command.params
        if isinstance(param, Option)
        for alias in param.aliases
    }
    direct = [p for p in error.possibilities if p not in shown]
    # Final for mypy: click sets it once, from every name of the command's options.
    setattr(  # noqa: B010
        error,
        "possibilities",
        direct or list(dict.fromkeys(shown[p] for p in error.possibilities)),
    )
