"""`memsteward clear`: query-scoped clearance of harmful memories (MeClear and baselines)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import click

from ..errors import InputError
from ..policy.model import MAX_CALL_BUDGET, SHAPIQ_ESTIMATORS
from .common import deadline_option, emit_json, handle_errors, policy_with_deadline, progress_flag
from .demo import bundled

METHOD_NAMES = ("meclear", "loo", "contextcite", "proxyspex", "direct")
ESTIMATOR_NAMES = ("permutation", "stratified", "exact", *(f"shapiq:{n}" for n in SHAPIQ_ESTIMATORS))


def _spec(policy: str | None, deadline: float | None = None):
    from ..policy import load_policy

    loaded = load_policy(policy or bundled("policies", "default.yaml"))
    return policy_with_deadline(loaded, deadline).clearance


@dataclass
class _Models:
    """How this run calls models: ``--deadline`` per call, ``--archive DIR`` (``--replay``: only)."""

    deadline: float | None = None
    archive: str | None = None
    replay: bool = False
    opened: object | None = None
    overrides: dict | None = None  # --estimator / --call-budget / --after-verified / --k

    def spec(self, policy: str | None):
        spec = _spec(policy, self.deadline)
        if not self.overrides:
            return spec
        from pydantic import ValidationError

        from ..policy.model import ClearanceSpec

        try:
            return ClearanceSpec.model_validate({**spec.model_dump(), **self.overrides})
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InputError(str(err["msg"]).removeprefix("Value error, "), file="<command line>",
                             field="--estimator / --call-budget / --after-verified / --k") from None

    def evaluator(self, spec):
        """The policy's evaluator, reading and keeping replies in the archive when one is given."""
        from ..archive import Archive, ArchiveError
        from ..clearance.evaluators import from_policy

        if self.archive is None:
            return from_policy(spec.evaluator)
        if spec.evaluator.type != "openai":
            click.echo("note: the offline evaluator makes no model calls; --archive is not used", err=True)
            return from_policy(spec.evaluator)
        try:
            self.opened = Archive.open(self.archive, replay_only=self.replay)
        except ArchiveError as exc:
            raise InputError(str(exc), file=self.archive, field="--archive") from None
        return from_policy(spec.evaluator, self.opened)

    def report(self) -> None:
        if self.opened is not None:
            a = self.opened
            click.echo(f"archive {a.root}: {a.hits} replies reused, {a.stored} new", err=True)


def _methods(text: str) -> list[str]:
    names = list(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    if not names:
        raise InputError(f"no method given (choose from {', '.join(METHOD_NAMES)})",
                         file="<command line>", field="--methods")
    for m in names:
        if m not in METHOD_NAMES:
            raise InputError(f"unknown method '{m}' (choose from {', '.join(METHOD_NAMES)})",
                             file="<command line>", field="--methods")
    return names


@click.command("clear")
@click.option("--policy", "policy", type=click.Path(dir_okay=False), default=None,
              help="Policy YAML (default: the bundled default policy).")
@click.option("--case", "case", type=click.Path(dir_okay=False), default=None,
              help="One case JSON file: query, reference, context, optional game.")
@click.option("--cohort", "cohort", type=click.Path(dir_okay=False), default=None,
              help="A JSONL cohort: run every method on every case and print the paper's metrics.")
@click.option("--method", "method", type=click.Choice(METHOD_NAMES), default="meclear",
              show_default=True, help="Clearance method for --case.")
@click.option("--methods", "methods", default=",".join(METHOD_NAMES), show_default=True,
              help="Comma-separated methods for --cohort.")
@click.option("--synthetic-cohort", "synthetic", type=click.IntRange(1, 1_000_000), default=None,
              help="Generate N verified synthetic cases (paper's 375:285:85 shape) to --out.")
@click.option("--locomo", "locomo", type=click.Path(), default=None,
              help="Build a fault-injection cohort from a LoCoMo data directory to --out.")
@click.option("--limit", "limit", type=click.IntRange(1, 10_000_000), default=None,
              help="With --cohort: run the first N cases; with --locomo: build at most N cases.")
@click.option("--k", "k", type=click.IntRange(1, 64), default=None,
              help="Context size K of generated cases [default: 5]; with --case / --cohort: the policy's "
                   "retrieval_budget (K) for this run.")
@click.option("--seed", "seed", type=click.IntRange(0, 2**63 - 1), default=0, show_default=True, help="Generator seed.")
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None,
              help="Output JSONL for --synthetic-cohort / --locomo.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@deadline_option
@click.option("--archive", "archive", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Keep every model reply in DIR (content-addressed) and reuse it: a killed run "
                   "resumes without repeating a call; other methods / τ / κ re-score for free.")
@click.option("--replay", is_flag=True,
              help="With --archive: replay only; a request not in the archive is an error, not a call.")
@click.option("--executor", "executor", default="sequential", show_default=True, metavar="sequential|ray[:N]|ray://HOST:PORT[:N]",
              help="With --cohort: run each case as a Ray task (memsteward[ray]), at most N at once; "
                   "each case keeps its own coalition cache, the results are the local run's.")
@progress_flag("the cases (--cohort, --locomo)")
@click.option("--estimator", "estimator", type=click.Choice(ESTIMATOR_NAMES), default=None,
              help="How MeClear estimates ψ (overrides clearance.estimator); see below.")
@click.option("--call-budget", "call_budget", type=click.IntRange(1, MAX_CALL_BUDGET), default=None,
              help="Hard cap on MeClear's evaluator calls per query, screen and verification included "
                   "(sets clearance.call_budget and search: budgeted).")
@click.option("--after-verified", "after_verified", type=click.Choice(["stop", "refine"]), default=None,
              help="With --call-budget: stop at the first verified removal of maximal gain (default), or "
                   "refine the ranking with the calls left (sets clearance.after_verified).")
@handle_errors
def clear(policy, case, cohort, method, methods, synthetic, locomo, limit, k, seed, out, as_json, deadline,
          archive, replay, executor, progress, estimator, call_budget, after_verified):
    """Clear harmful memories from one query's context (MeClear, Algorithm 1).

    \b
    memsteward clear --case CASE.json [--method meclear|loo|contextcite|proxyspex|direct] [--json]
    memsteward clear --cohort CASES.jsonl [--methods meclear,loo] [--json]
    memsteward clear --cohort CASES.jsonl --call-budget 64 --estimator stratified --json
    memsteward clear --synthetic-cohort 745 --seed 0 --out CASES.jsonl
    memsteward clear --locomo DATA_DIR --out CASES.jsonl [--limit N]

    The memory bank is never modified: the plan names the memories to hide for this query.

    \b
    Estimators of ψ (clearance.estimator / --estimator):
      permutation   Eq. 11, L seeded permutations (the paper's)
      stratified    every evaluated coalition informs every memory, LOO screen as control variate
      exact         Eq. 3 over all 2^K coalitions (K ≤ 16)
      shapiq:NAME   a shapiq approximator (pip install 'memsteward[shapiq]') reading the same cache:
                    KernelSHAP, UnbiasedKernelSHAP, kADDSHAP, SVARM, PermutationSamplingSV,
                    OwenSamplingSV, StratifiedSamplingSV

    \b
    Budget (clearance.call_budget / --call-budget; one call = one agent + judge trial):
      search: paper     the budget caps the sampled attribution; screen and verification always run
      search: budgeted  the budget caps every call of the query (--call-budget sets this): the screen,
                        estimation rounds, and verification of candidate removals between rounds; the
                        search stops at a verified removal of maximal gain or when the budget is spent.
                        It needs ≥ K + 2·trials calls. Guarantees: docs/meclear-budget.md.
      block_search      on (default): when no removal the LOO ranking offers recovers, test halves of
                        the ranking, then halves of a recovering half (each test a verification),
                        before estimating (the plan's estimator is then `block`).
      after_verified    stop (default): end at that removal, fewest calls; refine (--after-verified):
                        spend the rest of the budget refining ψ̂, each new chain verified, so the
                        ranking rests on more samples and the removal can only shrink at equal gain.
    """
    if replay and archive is None:
        raise click.UsageError("--replay needs --archive DIR")
    overrides = {k2: v for k2, v in (("estimator", estimator), ("call_budget", call_budget),
                                     ("after_verified", after_verified)) if v is not None}
    if call_budget is not None:
        overrides["search"] = "budgeted"
    if k is not None and (case is not None or cohort is not None):
        overrides["retrieval_budget"] = k
    k = 5 if k is None else k
    models = _Models(deadline, archive, replay, overrides=overrides or None)
    drawing = sys.stderr.isatty() if progress is None else progress  # a bar only on a terminal
    modes = [x is not None for x in (case, cohort, synthetic, locomo)]
    if sum(modes) != 1:
        raise click.UsageError("give exactly one of --case, --cohort, --synthetic-cohort, --locomo")
    runner = _cohort_executor(executor, cohort is not None, archive)
    if synthetic is not None:
        _synthetic(synthetic, seed, k, out)
    elif locomo is not None:
        _locomo(policy, locomo, out, limit, seed, k, models, drawing)
    elif case is not None:
        _one(policy, case, method, as_json, models)
    else:
        _cohort(policy, cohort, _methods(methods), as_json, models, limit, runner, drawing)
    models.report()


def _cohort_executor(text: str, cohort: bool, archive: str | None):
    """``--executor`` for ``clear``: sequential, or Ray for a cohort (bad input: exit 2)."""
    from ..repair.executors import parse_executor

    runner = parse_executor(text)
    if runner.name == "sequential":
        return None
    if runner.name != "ray":
        raise InputError("clear takes --executor sequential or ray[:N] / ray://HOST:PORT[:N] (a model "
                         "endpoint's calls already run concurrently within each case)", file="--executor")
    if not cohort:
        raise InputError("--executor ray applies to --cohort only", file="--executor")
    if archive is not None:
        raise InputError("--archive is a local directory: it cannot be combined with --executor ray",
                         file="--executor")
    return runner


def _need_out(out: str | None) -> str:
    if not out:
        raise click.UsageError("--out FILE.jsonl is required")
    return out


def _synthetic(n: int, seed: int, k: int, out: str | None) -> None:
    from ..clearance.cohort import synthetic_cohort, write_jsonl

    if n < 1 or k < 2:
        raise click.UsageError("--synthetic-cohort needs N ≥ 1 and --k ≥ 2")
    count = write_jsonl(synthetic_cohort(n, seed, k=k), _need_out(out))
    click.echo(f"wrote {count} verified synthetic cases to {out}", err=True)


def _locomo(policy: str | None, data: str, out: str | None, limit: int | None, seed: int, k: int,
            models: _Models, progress: bool) -> None:
    from ..clearance.cohort import write_jsonl
    from ..clearance.locomo import build_locomo_cohort

    spec = models.spec(policy)
    target = _need_out(out)
    evaluator = models.evaluator(spec)
    cases, funnel = build_locomo_cohort(Path(data), evaluator, trials=spec.trials, seed=seed,
                                        k=k, limit=limit, progress=progress)
    count = write_jsonl(cases, target)
    click.echo(f"wrote {count} verified cases to {target}; funnel: "
               + ", ".join(f"{k}={v}" for k, v in funnel.items()), err=True)


def _one(policy: str | None, path: str, method: str, as_json: bool, models: _Models) -> None:
    from ..clearance.case import case_game, load_case
    from ..clearance.pipeline import run_method

    spec = models.spec(policy)
    case = load_case(path)
    evaluator = models.evaluator(spec) if case.game is None else None
    plan = run_method(method, case_game(case, spec, evaluator), spec)
    if as_json:
        emit_json(plan.to_json())
        return
    click.echo(f"{plan.method} on {path}: {case.task.query}")
    click.echo(f"{'id':<10} {'loo d':>7} {'local':<13} {'contribution':>12}  text")
    for m in case.task.context:
        d = plan.loo.get(m.id)
        click.echo(f"{m.id:<10} {'' if d is None else f'{d:+.3f}':>7} {plan.screen.get(m.id, ''):<13} "
                   f"{plan.contribution.get(m.id, 0.0):>+12.3f}  {m.text[:60]}")
    how = ("exact (2^K coalitions)" if plan.exact
           else f"stratified, {plan.samples} sampled coalitions ({plan.stop})" if plan.estimator == "stratified"
           else f"adaptive, {plan.permutations} permutations + {plan.samples} targeted samples ({plan.stop})"
           if plan.estimator == "targeted"
           else f"L = {plan.permutations} permutations ({plan.stop})")
    if plan.method == "meclear":
        radius = max(plan.radius.values(), default=0.0)
        click.echo(f"attribution: {how}, radius ±{radius:.3f}")
        for p in plan.interaction:
            click.echo(f"interaction ω({p.pair[0]}, {p.pair[1]}) = {p.omega:+.3f}: {p.structure}")
        click.echo(f"harmful: {', '.join(plan.harmful) or '∅'}; chain gains: "
                   + ", ".join(f"g({j})=" + ("unread" if g is None else f"{g:+.2f}") for j, g in enumerate(plan.gains))
                   + f"; admissible {list(plan.admissible)}; selected ĵ = {plan.selected}")
    click.echo(f"removed: {', '.join(plan.removed) or '∅'}; value {plan.baseline_value:.2f} → "
               f"{plan.cleared_value:.2f}; recovered: {'yes' if plan.recovered else 'no'}")
    click.echo(f"cost: {plan.coalitions_evaluated} coalitions, {plan.evaluator_calls} evaluator calls")


def _cohort(policy: str | None, path: str, methods: list[str], as_json: bool, models: _Models,
            limit: int | None, executor=None, progress: bool = False) -> None:
    from itertools import islice

    from tqdm import tqdm

    from ..clearance.case import iter_cohort
    from ..clearance.cohort import run_cohort
    from ..clearance.metrics import cohort_differences, cohort_groups, cohort_notes, format_table, summary_table

    spec = models.spec(policy)
    cases = list(islice(iter_cohort(path, spec.retrieval_budget), limit))  # all validated before any run
    if not cases:
        raise InputError("the cohort has no cases", file=path)
    bar = (lambda it: tqdm(it, total=len(cases), desc="clear", unit="case", file=sys.stderr)) if progress else None
    if executor is not None:  # each case a Ray task; the policy's evaluator is made in the workers
        outcomes = run_cohort(cases, spec, methods, executor=executor)
    else:
        evaluator = models.evaluator(spec) if any(c.game is None for c in cases) else None
        outcomes = run_cohort(cases, spec, methods, progress=bar, evaluator=evaluator)
    rows = summary_table(outcomes)
    notes, diffs = cohort_notes(outcomes), cohort_differences(outcomes)
    evaluator_name = _evaluator_name(spec, cases)
    if as_json:
        emit_json({"cases": len(cases), "methods": methods, "evaluator": evaluator_name,
                   "rows": [r.as_dict() for r in rows], "groups": cohort_groups(outcomes),
                   "per_case": _per_case(cases, outcomes, methods), "notes": notes,
                   "differences": [d.as_dict() for d in diffs]})
        return
    click.echo(f"evaluator: {evaluator_name}")
    click.echo(format_table(rows))
    if "meclear" in methods and spec.search == "budgeted":
        click.echo(f"MeClear: search budgeted, at most {spec.call_budget} evaluator calls per case "
                   f"(screen, estimator {spec.estimator}, verification)")
    elif "meclear" in methods:
        click.echo(f"MeClear attribution: exact (all 2^K coalitions) on {notes['meclear_exact']} case(s), "
                   f"sampled permutations (L = {spec.permutations}) on {notes['meclear_sampled']}")
    click.echo(f"already correct with the full context: {notes['full_context_correct']} case(s); wrong even "
               f"with every fault removed: {notes['clean_context_wrong']} case(s) — both counted in "
               "Binary Task Recovery as they are")
    for d in diffs:
        click.echo(f"MeClear − LOO, {d.metric}: {100 * d.mean:+.1f} pp "
                   f"[95% paired bootstrap {100 * d.low:+.1f}, {100 * d.high:+.1f}] over {d.cases} cases")


def _per_case(cases, outcomes, methods: list[str]) -> list[dict]:
    """Each case's name, metadata (the generator's extra fields) and per-method calls / recovery."""
    out = []
    for k, case in enumerate(cases):
        mine = outcomes[k * len(methods):(k + 1) * len(methods)]
        out.append({"name": case.name, "meta": case.meta, "structure": case.structure,
                    "methods": {o.method: {"recovered": o.recovered, "removed": list(o.removed),
                                           "calls": o.calls} for o in mine}})
    return out


def _evaluator_name(spec, cases) -> str:
    """Which evaluator scored the cases (the table's figures mean nothing without it)."""
    games = {c.game.get("type") for c in cases if c.game is not None}
    names = sorted(f"the cases' {g} games" for g in games)
    if any(c.game is None for c in cases):
        ev = spec.evaluator
        names.append(f"openai model {ev.endpoint.model} ({ev.judge} judge)" if ev.type == "openai"
                     else "offline agent + lexical judge")
    return "; ".join(names)
