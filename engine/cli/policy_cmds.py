"""`memsteward schema`, `memsteward check`, `memsteward compare`, `memsteward policy list|show`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..api import check_policy
from ..errors import EXIT_BAD_INPUT, EXIT_FINDINGS, InputError
from ..policy.compare import compare as compare_policies
from ..policy.compare import settings_diff
from ..policy.findings import Finding
from ..policy.loader import PolicySchemaError, load_policy_source
from ..policy.model import KIND_PATTERN, MAX_KIND_CHARS, Policy
from .common import emit_json, handle_errors


@click.command()
@click.option("--tests", is_flag=True, help="Print the schema of test files (*_test.yaml) instead.")
@handle_errors
def schema(tests: bool) -> None:
    """Print the JSON Schema of the policy language (for editor autocompletion)."""
    if tests:
        from ..testing.spec import tests_schema

        click.echo(json.dumps(tests_schema(), indent=2))
        return
    doc = Policy.model_json_schema(by_alias=True)
    kinds = doc["properties"]["kinds"]  # the kind names as propertyNames (editors complete and check keys)
    kinds["propertyNames"] = {"pattern": KIND_PATTERN, "minLength": 1, "maxLength": MAX_KIND_CHARS}
    kinds["additionalProperties"] = kinds.pop("patternProperties").popitem()[1]
    kinds["description"] = ("the artifact kinds: the paper's record, cache, summary, skill (roles by default) "
                            "and any kind the team declares with a role")
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    doc["title"] = "memsteward policy"
    click.echo(json.dumps(doc, indent=2))


@click.command()
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


@click.command()
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
@click.option("--fail-on", type=click.Choice(["looser", "any", "never"]), default="never", show_default=True,
              help="Exit 1 when the new policy is looser somewhere (or differs at all): a CI gate.")
@click.option("--replay", "replay_store", default=None,
              help="Also replay the events recorded in this store (SQLite, or a .json export with "
                   "--events) under both policies, as dry runs on copies, and diff the outcomes per event.")
@click.option("--events", "event_files", multiple=True, type=click.Path(dir_okay=False),
              help="With --replay: replay these event files, in order, instead of the recorded events.")
@click.option("--allow-partial", is_flag=True,
              help="With --replay and --fail-on: do not fail because some decisions cannot be replayed "
                   "(they read metadata a delete erased); they are listed either way.")
@handle_errors
def compare(old: str, new: str, as_json: bool, fail_on: str, replay_store: str | None,
            event_files: tuple[str, ...], allow_partial: bool) -> None:
    """Compare two policies' mode maps cell by cell (Z3 finds one example per difference).

    For every region of the domain, the new decision equals, is stricter than (withdraws
    where the old repaired, or demands a superset of oracles), is looser than, or changes
    the old one. Also lists changed settings (λ, β, support, clearance).
    """
    a, b = _load_strict(old), _load_strict(new)
    diffs = compare_policies(a, b)
    settings = settings_diff(a, b)
    counts = {v: sum(d.verdict == v for d in diffs) for v in ("stricter", "looser", "changed")}
    replayed = _replay(a, b, replay_store, event_files) if replay_store else None
    if event_files and not replay_store:
        raise click.UsageError("--events needs --replay STORE")
    if as_json:
        doc = {"old": old, "new": new, "differences": [d.as_dict() for d in diffs],
               "settings": settings, "counts": counts, "equal": not diffs}
        if replayed is not None:
            doc["replay"] = replayed
        emit_json(doc)
    else:
        click.echo(f"{old} → {new}")
        if not diffs:
            click.echo("  the mode maps decide every cell identically")
        for d in diffs:
            rules = f"old rule {d.old.rule or '-'} → new rule {d.new.rule or '-'}"
            click.echo(f"  {d.verdict:<8} {{{d.cell.describe()}}}: {d.old.describe()} → {d.new.describe()}  ({rules})")
            for c in d.oracle_changes:
                click.echo(f"           oracle {c['oracle']} {c['setting']}: {json.dumps(c['old'])} → "
                           f"{json.dumps(c['new'])} ({c['verdict']})")
        for s in settings:
            click.echo(f"  {s['verdict']:<8} setting {s['setting']}: {json.dumps(s['old'])} → {json.dumps(s['new'])}")
        click.echo(f"summary: {counts['stricter']} stricter, {counts['looser']} looser, "
                   f"{counts['changed']} changed region(s); {len(settings)} setting(s) changed")
        if replayed is not None:
            _render_replay(replayed)
    looser_settings = [s for s in settings if s["verdict"] == "looser"]
    looser_settings += [c for d in diffs for c in d.oracle_changes if c["verdict"] == "looser"]
    replay_looser = bool(replayed and replayed["counts"]["looser"])
    replay_any = bool(replayed and replayed["differing_events"])
    partial = bool(replayed and replayed["partial"]) and fail_on != "never" and not allow_partial
    if partial:
        click.echo(f"compare: {len(replayed['partial'])} decision(s) could not be replayed (metadata erased); "
                   "the gate fails unless --allow-partial", err=True)
    if (fail_on == "looser" and (counts["looser"] or looser_settings or replay_looser)) or \
            (fail_on == "any" and (diffs or settings or replay_any)) or partial:
        sys.exit(EXIT_FINDINGS)


def _replay(a: Policy, b: Policy, store: str, event_files: tuple[str, ...]) -> dict:
    from ..testing.replay import replay, totals

    diffs, n, lost = replay(a, b, store, event_files)
    verdicts = [d.verdict for d in diffs]
    partial = [{"event": d.index, "policy": side, "artifact": a, "reads": list(reads)}
               for d in diffs for side, o in (("old", d.old), ("new", d.new)) for a, reads in o.partial]
    return {"store": store, "events": n, "erased_at_start": lost, "partial": partial,
            "per_event": [d.as_dict() for d in diffs],
            "totals": totals(diffs), "differing_events": sum(v is not None for v in verdicts),
            "counts": {v: verdicts.count(v) for v in ("stricter", "looser", "changed")}}


def _render_replay(r: dict) -> None:
    from ..testing.replay import describe_event
    from ..testing.report import safe

    click.echo(f"replay of {r['events']} event(s) from {safe(r['store'])} (dry runs on copies):")
    if r["erased_at_start"]:
        click.echo(f"  note: {len(r['erased_at_start'])} artifact(s) start without the content and metadata a "
                   f"delete erased ({safe(', '.join(r['erased_at_start'][:8]))}"
                   f"{' …' if len(r['erased_at_start']) > 8 else ''}); their outcomes may differ from what happened")
    for e in r["per_event"]:
        what = safe(describe_event(e["event"]))
        if e["verdict"] is None:
            click.echo(f"  event {e['index']} {what}: same outcome")
            continue
        click.echo(f"  event {e['index']} {what}: {e['verdict']}")
        for side in ("old", "new"):
            if e[side]["error"]:
                click.echo(f"    {side} policy could not replay it: {safe(e[side]['error'])}")
        for f, d in e["differences"].items():
            click.echo(f"    {f:<11} only old: {safe(', '.join(d['only_old']) or '-')}; "
                       f"only new: {safe(', '.join(d['only_new']) or '-')}")
    for p in r["partial"]:
        click.echo(f"  cannot replay: event {p['event']}, {p['policy']} policy's decision on {safe(p['artifact'])} "
                   f"reads meta {safe(', '.join(p['reads']))}, erased by a delete")
    t = r["totals"]
    click.echo("replay totals: " + ", ".join(f"{f} {t[f]['old']} → {t[f]['new']}" for f in t)
               + f"; {r['differing_events']} of {r['events']} event(s) differ "
               f"({r['counts']['looser']} looser, {r['counts']['stricter']} stricter, {r['counts']['changed']} changed)")


@click.group("policy")
def policy_group() -> None:
    """List and print the policies bundled with memsteward (starting points for your own)."""


def _bundled_policies() -> dict[str, Path]:
    from ..api import bundled_path

    return {p.stem: p for p in sorted(bundled_path("policies").glob("*.yaml"))}


@policy_group.command("list")
@handle_errors
def policy_list() -> None:
    """Name the bundled policies (each printable with `memsteward policy show NAME`)."""
    for name, path in _bundled_policies().items():
        first = next((ln.lstrip("# ").strip() for ln in path.read_text(encoding="utf-8").splitlines()
                      if ln.startswith("#")), "")
        click.echo(f"{name:<16} {first}")


@policy_group.command("show")
@click.argument("name")
@handle_errors
def policy_show(name: str) -> None:
    """Print the bundled policy NAME as YAML (`memsteward policy show default > my-policy.yaml`)."""
    policies = _bundled_policies()
    if name not in policies:
        raise InputError(f"no bundled policy {name!r}; one of: {', '.join(policies)}", field="NAME")
    click.echo(policies[name].read_text(encoding="utf-8"), nl=False)
