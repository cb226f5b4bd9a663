"""`memgov demo`: the main job on bundled data (grows as the engine grows)."""

from __future__ import annotations

import importlib
from importlib import resources
from pathlib import Path
from typing import Callable

import click

from ..policy.analysis import analyze
from ..policy.compare import compare
from ..policy.loader import load_policy_source
from . import main
from .common import handle_errors


def bundled(*parts: str) -> Path:
    """Path of bundled data shipped in the package (engine/data/...)."""
    return Path(str(resources.files("engine").joinpath("data", *parts)))


def _section(title: str) -> None:
    click.echo("")
    click.secho(f"== {title} ", bold=True, nl=False)
    click.echo("=" * max(0, 70 - len(title)))


def demo_policies(echo: Callable[[str], None] = click.echo) -> None:
    """Check the bundled policies with Z3 and compare two of them."""
    for path in sorted(bundled("policies").glob("*.yaml")):
        src = load_policy_source(path)
        findings = analyze(src)
        errors = sum(f.severity == "error" for f in findings)
        echo(f"  memgov check {path.name:<22} {len(src.policy.modes)} rules, "
             f"{'total over the domain' if not errors else f'{errors} error(s)'}")
    old = load_policy_source(bundled("policies", "default.yaml")).policy
    new = load_policy_source(bundled("policies", "assistant.yaml")).policy
    diffs = compare(old, new)
    echo(f"  memgov compare default.yaml assistant.yaml: {len(diffs)} differing region(s), e.g.")
    for d in diffs[:3]:
        echo(f"    {d.verdict:<8} {d.cell.describe()}: {d.old.describe()} → {d.new.describe()}")


def demo_verify(echo: Callable[[str], None] = click.echo) -> None:
    """Prove the guarantee catalog with Z3 (the same run as `memgov verify`)."""
    from specs import CATALOG
    from specs.verify import verify

    names = {g.id: g.name for g in CATALOG}
    for r in verify():
        echo(f"  {r.guarantee} {names[r.guarantee]:<26} {r.status:<8} {r.seconds:5.2f}s  {r.bound}")


# Later sections register here: (title, "module:function"), each function takes `echo`.
SECTIONS: list[tuple[str, str]] = [
    ("Policies: validation and Z3 analysis", "engine.cli.demo:demo_policies"),
    ("MemoRepair: barrier-first cascade repair (delete, correct, migrate)", "engine.repair.demo:run_repair_demo"),
    ("MeClear: query-scoped clearance of harmful memories", "engine.clearance.demo:run_clearance_demo"),
    ("Guarantees: Z3 proofs (memgov verify)", "engine.cli.demo:demo_verify"),
]


@main.command()
@handle_errors
def demo() -> None:
    """Run memgov end to end on the bundled policies and data (no network needed)."""
    click.echo("memgov demo — bundled policies and data, offline evaluator and operators")
    for title, target in SECTIONS:
        module, func = target.split(":")
        _section(title)
        getattr(importlib.import_module(module), func)(click.echo)
    click.echo("")
    click.echo("done. Next: `memgov check policies/*.yaml`, `memgov --help`.")
