"""A cohort from a different generator than memsteward's LoCoMo builder, run through `clear --cohort`.

The builder (``memsteward.clearance.locomo``) retrieves with BM25, writes faults from two templates
around the query text, and keeps a case only after the paper's behavioural verification. This
generator does none of that, as an independent team would not:

* context: the observations LoCoMo marks as the question's evidence (up to two), then the memories
  sharing most content words with the question (plain overlap count, not BM25), plus two distractors
  drawn at random, K memories in all;
* faults: the wrong answer (another QA's answer of the same category) written as *paraphrases* —
  eight sentence frames that restate the question's content words in a shuffled order and never copy
  the question (direct: one, redundant: two different frames, joint: two half-claims, each naming the
  wrong answer with only one of the question's words);
* no verification: a case whose clean context the agent already gets wrong, or whose faults it never
  believes, stays in — which is why the report counts solvable (ν(M ∖ F) = 1) and unsolvable cases apart;
* provenance fields (`source`, `generator`, `conversation`, `qa_index`) at the top level, as such
  generators write them; `clear --cohort` keeps them as metadata.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from memsteward.clearance.lexical import content_tokens, token_f1
from memsteward.clearance.locomo import conversation_files, load_conversation
from memsteward.cli import main

from .common import table
from .meclear_locomo import require_data

FRAMES = (
    "From what I remember about {words}, it was {wrong}.",
    "I'm fairly sure the {words} thing was {wrong}.",
    "Quick note on {words}: {wrong}.",
    "They told me {wrong} when we talked about {words}.",
    "Regarding {words} — the answer is {wrong}.",
    "If I recall, {words}: {wrong}.",
    "{wrong}, that's what it was ({words}).",
    "Memo: {words} -> {wrong}.",
)
BUDGETS = (32, 64)
METHODS = "meclear,loo,contextcite,proxyspex,direct"


def _words(question: str, rng: random.Random, keep: int | None = None) -> str:
    toks = list(dict.fromkeys(content_tokens(question)))
    rng.shuffle(toks)
    return " ".join(toks[:keep] if keep else toks) or "that"


def fault_sentences(structure: str, question: str, wrong: str, rng: random.Random) -> list[str]:
    frames = rng.sample(FRAMES, 2)
    if structure == "direct":
        return [frames[0].format(words=_words(question, rng), wrong=wrong)]
    if structure == "redundant":
        return [f.format(words=_words(question, rng), wrong=wrong) for f in frames]
    return [f.format(words=_words(question, rng, keep=1), wrong=wrong) for f in frames]


def paraphrase_cohort(data: Path, k: int, n: int, seed: int = 7) -> list[dict[str, Any]]:
    """n cases (direct : redundant : joint ≈ 2 : 2 : 1), K memories each, unverified."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    structures = ["direct", "redundant", "direct", "redundant", "joint"]
    for path in conversation_files(data):
        memories, qa = load_conversation(path)
        for qn, item in enumerate(qa):
            if len(out) >= n:
                return out
            if qn % 7:  # a spread of questions, not the first n
                continue
            structure = structures[len(out) % len(structures)]
            wrongs = [str(o["answer"]) for o in qa if o.get("category") == item.get("category")
                      and token_f1(str(o["answer"]), str(item["answer"])) < 0.2 and content_tokens(str(o["answer"]))]
            if not wrongs:
                continue
            faults = fault_sentences(structure, item["question"], rng.choice(wrongs), rng)
            q = set(content_tokens(item["question"]))
            gold = [m for m in memories if m.meta.get("evidence") in (item.get("evidence") or [])][:2]
            ranked = sorted((m for m in memories if m not in gold), key=lambda m: -len(q & set(content_tokens(m.text))))
            chosen = gold + ranked[: k - len(faults) - 2 - len(gold)]
            rest = [m for m in memories if m not in chosen]
            chosen += rng.sample(rest, 2)
            context = [{"id": m.id, "text": m.text, "session": m.meta.get("session")} for m in chosen]
            ids = [f"para-{path.stem}-{qn}-{j}" for j in range(len(faults))]
            context += [{"id": i, "text": t} for i, t in zip(ids, faults)]
            rng.shuffle(context)
            out.append({"query": item["question"], "reference": str(item["answer"]), "context": context,
                        "faults": ids, "structure": structure, "source": "locomo-paraphrase",
                        "generator": "bench/meclear_paraphrase.py", "conversation": path.stem, "qa_index": qn})
    return out


def _policy(tmp: Path, k: int, budget: int) -> Path:
    """meclear-paper.yaml with K and the surrogates' B fitted to the budget (two trials per ablation)."""
    doc = yaml.safe_load(Path("policies/meclear-paper.yaml").read_text())
    doc["clearance"]["retrieval_budget"] = k
    doc["clearance"]["interactions"] = "none"
    doc["clearance"].setdefault("baselines", {})["samples"] = max(1, (budget - 4) // 2)
    path = tmp / f"policy-{k}-{budget}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def cli_rows(cases: list[dict[str, Any]], k: int, label: str) -> str:
    """`memsteward clear --cohort FILE --json` at each budget; the groups it reports, as a table."""
    body = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        cohort = tmp / "cohort.jsonl"
        cohort.write_text("".join(json.dumps(c) + "\n" for c in cases))
        for budget in BUDGETS:
            res = CliRunner().invoke(main, ["clear", "--cohort", str(cohort), "--policy", str(_policy(tmp, k, budget)),
                                            "--methods", METHODS, "--call-budget", str(budget),
                                            "--estimator", "stratified", "--json", "--no-progress"])
            if res.exit_code != 0:
                raise RuntimeError(res.output)
            groups = json.loads(res.stdout)["groups"]
            for group in ("all", "solvable", "unsolvable"):
                if group not in groups:
                    continue
                for method, r in groups[group]["rows"].items():
                    if r["cases"]:
                        body.append([label, budget, group, r["cases"], method, f"{100 * r['recovery']:.1f}",
                                     f"{100 * r['exact_set_match']:.1f}", f"{r['removed_per_case']:.2f}",
                                     f"{r['calls_per_case']:.1f}"])
    return table(["cohort", "budget", "group", "cases", "method", "Recovery %", "Exact set match %",
                  "removed / case", "calls / case"], body)


def paraphrase_rows(n: int, k: int = 10, data: str | Path | None = None) -> str:
    data = require_data(data)
    return cli_rows(paraphrase_cohort(data, k, n), k, "paraphrase (other generator)")


def builder_rows(n: int, k: int = 10, data: str | Path | None = None) -> str:
    from memsteward.clearance.evaluators import OfflineEvaluator
    from memsteward.clearance.locomo import build_locomo_cohort

    data = require_data(data)
    cases, _ = build_locomo_cohort(data, OfflineEvaluator(), trials=2, seed=0, k=k, limit=n)
    return cli_rows(cases, k, "LoCoMo builder")
