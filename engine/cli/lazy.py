"""A click group whose commands are imported on use (the command line's start-up cost).

Each command lives in a module that imports what it needs (pydantic, Z3, OR-Tools, Hypothesis,
numpy, …). :class:`LazyGroup` maps a command name to ``"module:attribute"`` and imports the module
only when that command runs (or its own ``--help`` is asked for); ``memsteward --help`` lists the
commands from the same static table, with their one-line help, without importing any of them.
A test checks that the table's help matches the commands' docstrings and that ``--help`` imports
no heavy library.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, NamedTuple

import click


class LazyCommand(NamedTuple):
    """Where a command is defined (``"module:attribute"``, the module relative to the group's
    package) and its one-line help as ``memsteward --help`` shows it."""

    target: str
    short_help: str


class LazyGroup(click.Group):
    """A :class:`click.Group` that imports each command's module on first use."""

    def __init__(self, *args: Any, lazy: Mapping[str, LazyCommand], package: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)
        self.package = package

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.add_command(self.load(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def load(self, name: str) -> click.Command:
        """Import the module of command ``name`` and return its click command."""
        module, _, attr = self.lazy[name].target.partition(":")
        command = getattr(importlib.import_module(module, self.package), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy[name].target} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help`` from the static table (no command module is imported)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            if name in self.commands:
                if self.commands[name].hidden:
                    continue
                rows.append((name, self.commands[name].get_short_help_str(limit)))
            else:
                rows.append((name, click.Command(name, help=self.lazy[name].short_help).get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


__all__ = ["LazyCommand", "LazyGroup"]
