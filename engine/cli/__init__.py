"""The ``memsteward`` command line.

Exit codes (documented in the README): 0 ok; 1 the input was read and has errors /
violations; 2 bad input (unreadable, unparsable, or naming things that do not exist);
3 internal error.
"""

from __future__ import annotations

import importlib

import click

from .. import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="memsteward")
def main() -> None:
    """memsteward — declarative governance of agent memory.

    Policies (YAML) declare how derived memory is repaired after a delete / correct /
    migrate event (MemoRepair) and how harmful memories are cleared from one query's
    context (MeClear). Start with `memsteward demo`, then `memsteward check policies/*.yaml`.
    """


# Each module registers its commands on `main` when imported.
_COMMAND_MODULES = [
    "policy_cmds",
    "store_cmds",
    "repair_cmds",
    "demo",
    "verify_cmds",
    "clear_cmds",
    "audit_cmds",
    "test_cmds",
]

for _name in _COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_name}")
