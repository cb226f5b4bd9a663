"""`memsteward test`: declared cases, coverage and property-based regression of a team's policies."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from ..errors import EXIT_BAD_INPUT, EXIT_FINDINGS, InputError
from ..policy.loader import load_checked_source
from ..safewrite import replace_file
from ..testing.coverage import PolicyCoverage, coverage
from ..testing.load import Suite, discover, load_suite
from ..testing.properties import MAX_EXAMPLES, run_properties, save_failure
from ..testing.report import as_json, junit_xml, render_text, safe
from ..testing.run import CaseResult, run_case
from .common import emit_json, handle_errors


def _render_coverage(cov: PolicyCoverage, echo) -> None:
    rules_hit = sum(i.covered for i in cov.rules)
    echo(f"coverage {safe(cov.file)}: rules {rules_hit}/{len(cov.rules)} ({cov.percent:.0f}%), "
         f"regions {sum(i.covered for i in cov.regions)}/{len(cov.regions)}, "
         f"oracles {sum(i.covered for i in cov.oracles)}/{len(cov.oracles)}, "
         f"thresholds {sum(i.covered for i in cov.thresholds)}/{len(cov.thresholds)} ({cov.cases} case(s))")
    for i in cov.rules:
        if not i.covered:
            echo(f"  {safe(cov.file)}:{i.line}: rule never fired: {safe(i.name)} ({i.note})")
    for i in cov.oracles:
        if not i.covered:
            echo(f"  {safe(cov.file)}:{i.line}: oracle never ran: {safe(i.name)}")
    for i in cov.edges:
        if not i.covered:
            echo(f"  {safe(cov.file)}:{i.line}: {i.name} never at stake: {i.note}")
    for i in cov.thresholds:
        if not i.covered:
            echo(f"  {safe(cov.file)}:{i.line}: threshold never at stake: {safe(i.name)}; {i.note}")
    for i in cov.regions:
        if not i.covered:
            echo(f"  {safe(cov.file)}:{i.line}: region not reached: {i.name}, e.g. {safe(i.note)}")


@click.command("test")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--json", "as_json_flag", is_flag=True, help="Print results (and coverage) as JSON.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), default=None,
              help="Also write JUnit XML to this file (for CI systems).")
@click.option("--coverage", "with_coverage", is_flag=True,
              help="Report per policy the rules never fired, regions never reached (with a witness "
                   "cell), oracles never run and λ/β never at stake.")
@click.option("--threshold", type=click.FloatRange(0, 100), default=None,
              help="With --coverage: exit 1 when a policy's rule coverage is under this percentage.")
@click.option("--properties", "properties_policy", type=click.Path(dir_okay=False), default=None,
              help="Property-based regression of this POLICY: generated stores and events, checking "
                   "G4, G5 and the invariants declared in its test file(s).")
@click.option("--examples", type=click.IntRange(1, MAX_EXAMPLES), default=100, show_default=True,
              help="With --properties: how many scenarios to generate.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
              help="With --properties: the generator's seed (the same seed gives the same run).")
@click.option("--save-failures", "save_dir", type=click.Path(file_okay=False), default=None,
              help="With --properties: write the shrunk failing store, event, violated clauses and "
                   "a ready-to-edit test case into this folder.")
@handle_errors
def test_cmd(paths: tuple[str, ...], as_json_flag: bool, junit_path: str | None, with_coverage: bool,
             threshold: float | None, properties_policy: str | None, examples: int, seed: int,
             save_dir: str | None) -> None:
    """Run the declared test cases (*_test.yaml) of policies through the real engine.

    PATHS are test files or folders (searched recursively for *_test.yaml). Each repair case is
    planned and executed on an in-memory copy of its store (a dry run); each clearance case runs
    MeClear. Prints one line per case and `N passed, M failed`.

    With --properties POLICY, Hypothesis generates stores and events within the policy's declared
    kinds, architectures and metadata ranges instead, and checks G4, G5 and the policy's
    invariants (from PATHS, or the POLICY's own *_test.yaml next to it or in tests/).

    Exit status: 0 all passed (and coverage ≥ --threshold); 1 a case failed, coverage is under
    the threshold or a property failed; 2 a test file, store, event or policy is bad
    (file:line [field]).
    """
    if properties_policy is not None:
        if with_coverage or threshold is not None or junit_path:
            raise click.UsageError("--coverage, --threshold and --junit apply to declared cases, not --properties")
        _properties(properties_policy, paths, examples, seed, save_dir, as_json_flag)
        return
    if not paths:
        raise click.UsageError("give test files or folders (e.g. `memsteward test policies/`)")
    if threshold is not None and not with_coverage:
        raise click.UsageError("--threshold needs --coverage")
    started = time.perf_counter()
    suites: list[Suite] = []
    bad: list[InputError] = []
    files = discover(paths)
    if not files:
        raise InputError("no test files (*_test.yaml) found", file=", ".join(paths)[:200])
    for path in files:
        try:
            suites.append(load_suite(path))
        except InputError as exc:
            bad.append(exc)
    results: list[CaseResult] = []
    for suite in suites:
        for case in suite.cases:
            t0 = time.perf_counter()
            r = run_case(case)
            r.seconds = time.perf_counter() - t0
            results.append(r)
    seconds = time.perf_counter() - started
    covs = _coverages(suites, results) if with_coverage else []
    if junit_path:
        with replace_file(junit_path, "wb") as fh:
            fh.write(junit_xml(results, seconds))
    under = [c for c in covs if threshold is not None and c.percent < threshold]
    if as_json_flag:
        doc = as_json(results)
        doc["bad_input"] = [e.as_dict() for e in bad]
        if with_coverage:
            doc["coverage"] = [c.as_dict() for c in covs]
            doc["threshold"] = threshold
        emit_json(doc)
    else:
        for exc in bad:
            click.echo(exc.render(), err=True)
        render_text(results, seconds, click.echo)
        for c in covs:
            _render_coverage(c, click.echo)
        for c in under:
            click.echo(f"coverage of {safe(c.file)} is {c.percent:.1f}% < threshold {threshold:g}%")
    if bad:
        sys.exit(EXIT_BAD_INPUT)
    if any(not r.passed for r in results) or under:
        sys.exit(EXIT_FINDINGS)


def _coverages(suites: list[Suite], results: list[CaseResult]) -> list[PolicyCoverage]:
    """One coverage report per policy (several test files may test the same policy)."""
    by_policy: dict[str, tuple[Suite, list[CaseResult]]] = {}
    for s in suites:
        key = str(Path(s.policy.file).resolve())
        by_policy.setdefault(key, (s, []))
    for r in results:
        by_policy[str(Path(r.case.suite.policy.file).resolve())][1].append(r)
    return [coverage(s.policy, rs) for s, rs in by_policy.values()]


def _invariant_suites(policy_path: str, paths: tuple[str, ...]) -> list[Suite]:
    """Test files that test ``policy_path``: from PATHS, else NAME_test.yaml beside it or in tests/."""
    target = Path(policy_path).resolve()
    if paths:
        files = discover(paths)
    else:
        stem = Path(policy_path).stem
        files = [str(f) for f in (target.parent / f"{stem}_test.yaml", target.parent / "tests" / f"{stem}_test.yaml")
                 if f.is_file()]
    suites = [load_suite(f) for f in files]
    return [s for s in suites if Path(s.policy.file).resolve() == target]


def _properties(policy_path: str, paths: tuple[str, ...], examples: int, seed: int, save_dir: str | None,
                as_json_flag: bool) -> None:
    src = load_checked_source(policy_path)
    suites = _invariant_suites(policy_path, paths)
    invariants = [inv for s in suites for inv in s.invariants]
    result = run_properties(src.policy, invariants, examples, seed)
    saved = save_failure(result, save_dir, policy_path) if (save_dir and not result.passed) else []
    if as_json_flag:
        emit_json({"policy": policy_path, "examples": result.examples, "seed": seed, "passed": result.passed,
                   "invariants": [i.name for i in invariants], "violations": [v.as_dict() for v in result.violations],
                   "store": result.store, "event": result.event, "saved": [str(p) for p in saved]})
    else:
        what = f"G4, G5 and {len(invariants)} invariant(s)" + (
            f" ({', '.join(safe(i.name) for i in invariants)})" if invariants else "")
        if result.passed:
            click.echo(f"{safe(policy_path)}: {what} hold on {result.examples} generated scenario(s) (seed {seed})")
        else:
            arts = result.store["artifacts"] if result.store else []
            click.echo(f"{safe(policy_path)}: FAILED after {result.examples} scenario(s) (seed {seed}); "
                       f"shrunk to {len(arts)} artifact(s), event {safe(json.dumps(result.event))}")
            for v in result.violations:
                click.echo(f"  {safe(v.clause)}: {safe(v.detail)} {safe(json.dumps(v.witness, default=str))}")
            for p in saved:
                click.echo(f"  wrote {safe(p)}")
    if not result.passed:
        sys.exit(EXIT_FINDINGS)
