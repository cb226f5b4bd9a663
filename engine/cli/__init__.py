"""The ``memsteward`` command line.

Exit codes (documented in the README): 0 ok; 1 the input was read and has errors /
violations; 2 bad input (unreadable, unparsable, or naming things that do not exist);
3 internal error.

Commands are imported on use (:class:`~memsteward.cli.lazy.LazyGroup`): ``COMMANDS`` is the one
table of names, where each is defined, and the one-line help ``memsteward --help`` prints. The
``memsteward`` executable (and ``python -m memsteward``) is :func:`run`: :data:`main` with a quicker
interpreter exit.
"""

from __future__ import annotations

import atexit
import gc

import click

from .. import __version__
from .lazy import LazyCommand, LazyGroup

COMMANDS: dict[str, LazyCommand] = {
    "audit": LazyCommand(".audit_cmds:audit",
                         "Attest what an event did: barrier, withdrawn cascade, republished successors and the "
                         "support they were built from, failures, the roots' erasure, and checks anyone can "
                         "re-run."),
    "check": LazyCommand(".policy_cmds:check", "Validate policies and analyse them with Z3."),
    "clear": LazyCommand(".clear_cmds:clear",
                         "Clear harmful memories from one query's context (MeClear, Algorithm 1)."),
    "compare": LazyCommand(".policy_cmds:compare",
                           "Compare two policies' mode maps cell by cell (Z3 finds one example per difference)."),
    "demo": LazyCommand(".demo:demo",
                        "Run memsteward end to end on the bundled policies and data (no network needed)."),
    "mcp": LazyCommand(".mcp_cmds:mcp", "Serve a store's governed memory to MCP clients (stdio or streamable HTTP)."),
    "policy": LazyCommand(".policy_cmds:policy_group",
                          "List and print the policies bundled with memsteward (starting points for your own)."),
    "plugins": LazyCommand(".plugin_cmds:plugins",
                           "List the operators and oracles installed as plugins (entry-point groups "
                           "memsteward.operators and memsteward.oracles), with the distribution and version "
                           "that provides each."),
    "recover": LazyCommand(".repair_cmds:recover_cmd",
                           "Roll forward an event interrupted by a crash (no-op when none is pending)."),
    "repair": LazyCommand(".repair_cmds:repair",
                          "Apply a delete / correct / migrate EVENT: barrier, repair, validate, republish."),
    "schema": LazyCommand(".policy_cmds:schema",
                          "Print the JSON Schema of the policy language (for editor autocompletion)."),
    "store": LazyCommand(".store_cmds:store_group",
                         "Create, inspect, export and copy a memsteward store (SQLite file, postgresql://… URL, "
                         "or a .json export read into memory)."),
    "test": LazyCommand(".test_cmds:test_cmd",
                        "Run the declared test cases (*_test.yaml) of policies through the real engine."),
    "verify": LazyCommand(".verify_cmds:verify",
                          "Prove the guarantees of the spec catalog with Z3 (bounded, sizes reported)."),
}


@click.group(cls=LazyGroup, lazy=COMMANDS, package=__name__,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="memsteward")
def main() -> None:
    """memsteward — declarative governance of agent memory.

    Policies (YAML) declare how derived memory is repaired after a delete / correct /
    migrate event (MemoRepair) and how harmful memories are cleared from one query's
    context (MeClear). Start with `memsteward demo`, then
    `memsteward policy show default > my-policy.yaml`.
    """


def _quick_exit() -> None:
    """Collect what is garbage now, then freeze what is still alive so that the interpreter's
    finalisation does not traverse it again in its own full collections."""
    gc.collect()
    gc.freeze()


def run() -> None:
    """The ``memsteward`` executable: :data:`main`, then a quicker interpreter exit.

    CPython's finalisation runs full garbage collections over every object still alive: once
    pydantic's schemas and the engine are loaded, the exit of a ``repair --dry-run`` costs ≈ 50 ms
    of CPU, of which collecting once and freezing saves ≈ 20–35 ms (bench/cli_startup.py).
    :func:`_quick_exit`, registered before any command module is imported, runs after the atexit
    handlers those modules register (logging, multiprocessing, Ray, executors; atexit is LIFO): it
    collects the garbage of the command — finalizers run as before, so a store left to the collector
    is still closed and its WAL checkpointed — and freezes the rest (modules, classes, caches), which
    the process is about to discard; Python does not promise finalizers for objects alive at exit.
    Only the executable does this: importing :data:`main` (tests, ``CliRunner``) changes nothing.
    """
    atexit.register(_quick_exit)
    try:
        main()
    except BrokenPipeError:  # outside a command (`memsteward --help | head -1`)
        from .common import quiet_broken_pipe

        quiet_broken_pipe()
