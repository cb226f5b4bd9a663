"""`memsteward schema`, `memsteward check`, `memsteward compare`."""

from __future__ import annotations

import json
import sys

import click

from ..api import check_policy
from ..errors import EXIT_BAD_INPUT, EXIT_FINDINGS, InputError
from ..policy.compare import compare as compare_policies
from ..policy.compare import settings_diff
from ..policy.findings import Finding
from ..policy.loader import PolicySchemaError, load_policy_source
from ..policy.model import Policy
from . import main
from .common import emit_json, handle_errors


@main.command()
@click.option("--tests", is_flag=True, help="Print the schema of test files (*_test.yaml) instead.")
@handle_errors
def schema(tests: bool) -> None:
    """Print the JSON Schema of the policy language (for editor autocompletion)."""
    if tests:
        from ..testing.spec import tests_schema

        click.echo(json.dumps(tests_schema(), indent=2))
        return
    doc = Policy.model_json_schema(by_alias=True)
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    doc["title"] = "memsteward policy"
    click.echo(json.dumps(doc, indent=2))


@main.command()
@click.argument("policies", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the findings as a JSON list of objects.")
@click.option("--strict", is_flag=True, help="Treat warnings (dead or vacuous rules) as errors.")
@handle_errors
def check(policies: tuple[str, ...], as_json: bool, strict: bool) -> None:
    """Validate policies and analyse them with Z3.

    Proves the mode map total over every (kind, arch, event, support, partitions, metadata)
    cell, finds dead (shadowed) and vacuous rules, and checks type safety (param only for
    neural skills, recompute only for replayable kinds, an oracle for every repair mode) and
    parameter ranges. Each finding is printed as `file:line:col: severity: message`.

    Exit status: 0 no errors; 1 a policy has errors (or warnings with --strict);
    2 a file cannot be read or parsed as YAML.
    """
    findings: list[Finding] = []
    bad_input: list[InputError] = []
    for path in policies:
        try:
            found = check_policy(path)
        except InputError as exc:
            bad_input.append(exc)
            continue
        findings += found
    if as_json:
        emit_json([f.as_dict() for f in findings] + [e.as_dict() for e in bad_input])
    else:
        for exc in bad_input:
            click.echo(exc.render(), err=True)
        for f in findings:
            click.echo(f.render())
        errors = sum(f.severity == "error" for f in findings) + len(bad_input)
        warnings = sum(f.severity == "warning" for f in findings)
        ok = len(policies) - len({f.file for f in findings if f.severity == "error"}) - len(bad_input)
        click.echo(f"checked {len(policies)} polic{'y' if len(policies) == 1 else 'ies'}: "
                   f"{errors} error(s), {warnings} warning(s); {ok} without errors")
    if bad_input:
        sys.exit(EXIT_BAD_INPUT)
    failing = [f for f in findings if f.severity == "error" or (strict and f.severity == "warning")]
    sys.exit(EXIT_FINDINGS if failing else 0)


def _load_strict(path: str):
    try:
        return load_policy_source(path).policy
    except PolicySchemaError as exc:
        first = exc.findings[0]
        raise InputError(first.message, file=first.file, line=first.line, col=first.col, field=first.field) from None


@main.command()
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
@click.option("--fail-on", type=click.Choice(["looser", "any", "never"]), default="never", show_default=True,
              help="Exit 1 when the new policy is looser somewhere (or differs at all): a CI gate.")
@handle_errors
def compare(old: str, new: str, as_json: bool, fail_on: str) -> None:
    """Compare two policies' mode maps cell by cell (Z3 finds one example per difference).

    For every region of the domain, the new decision equals, is stricter than (withdraws
    where the old repaired, or demands a superset of oracles), is looser than, or changes
    the old one. Also lists changed settings (λ, β, support, clearance).
    """
    a, b = _load_strict(old), _load_strict(new)
    diffs = compare_policies(a, b)
    settings = settings_diff(a, b)
    counts = {v: sum(d.verdict == v for d in diffs) for v in ("stricter", "looser", "changed")}
    if as_json:
        emit_json({"old": old, "new": new, "differences": [d.as_dict() for d in diffs],
                   "settings": settings, "counts": counts, "equal": not diffs})
    else:
        click.echo(f"{old} → {new}")
        if not diffs:
            click.echo("  the mode maps decide every cell identically")
        for d in diffs:
            rules = f"old rule {d.old.rule or '-'} → new rule {d.new.rule or '-'}"
            note = "  [oracle settings differ]" if d.old.oracles == d.new.oracles and d.old.mode == d.new.mode else ""
            click.echo(f"  {d.verdict:<8} {{{d.cell.describe()}}}: {d.old.describe()} → {d.new.describe()}  ({rules}){note}")
        for s in settings:
            click.echo(f"  {s['verdict']:<8} setting {s['setting']}: {json.dumps(s['old'])} → {json.dumps(s['new'])}")
        click.echo(f"summary: {counts['stricter']} stricter, {counts['looser']} looser, "
                   f"{counts['changed']} changed region(s); {len(settings)} setting(s) changed")
    looser_settings = [s for s in settings if s["verdict"] == "looser"]
    if (fail_on == "looser" and (counts["looser"] or looser_settings)) or (fail_on == "any" and (diffs or settings)):
        sys.exit(EXIT_FINDINGS)
