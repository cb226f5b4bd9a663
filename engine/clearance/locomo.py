"""LoCoMo fault-injection cohort builder (paper Appendix D.1, Table 3).

From LoCoMo conversations (``conv-*.json`` in a directory given by the caller; the data is
never copied into the project):

1. memories are the per-session observations (text, speaker, session date, evidence turn);
2. QA pairs of categories 1–4 are kept; for each, a lexical BM25 retriever freezes the top
   K − |F| clean memories (Eq. 6);
3. *clean-correct*: the evaluator must answer correctly from the clean context in every trial;
4. faults asserting a wrong answer (the answer of another QA of the same conversation and
   category) are injected: one query paraphrase (direct), two paraphrases (redundant), or two
   weakly related statements (joint);
5. each proposal is kept only if it passes the behavioural verification of App. D.1
   (:func:`memsteward.clearance.cohort.verified`).

Works with any evaluator (offline or openai); the output is a JSONL cohort of case objects.
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from .cohort import verified
from .game import Evaluator, Memory, Task
from .lexical import content_tokens, token_f1

CATEGORIES = (1, 2, 3, 4)


def conversation_files(data: Path) -> list[Path]:
    """The ``conv-*.json`` files of a LoCoMo directory (or the file itself)."""
    if data.is_file():
        return [data]
    if not data.is_dir():
        raise InputError("LoCoMo data path not found", file=str(data))
    files = sorted(data.glob("conv-*.json"))
    if not files:
        raise InputError("no conv-*.json files in the LoCoMo directory", file=str(data))
    return files


def load_conversation(path: Path) -> tuple[list[Memory], list[dict[str, Any]]]:
    """Observations as memories and the QA pairs of one conversation."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read LoCoMo conversation: {exc}", file=str(path)) from None
    if not isinstance(data, dict) or not isinstance(data.get("qa"), list):
        raise InputError("not a LoCoMo conversation (no 'qa' list)", file=str(path), field="qa")
    conv = path.stem
    memories: list[Memory] = []
    sessions = sorted(int(k.split("_")[1]) for k in data
                       if k.startswith("session_") and k.endswith("_observation"))
    for s in sessions:
        obs = data.get(f"session_{s}_observation") or {}
        date = data.get(f"session_{s}_date_time", "")
        for speaker, items in (obs.items() if isinstance(obs, dict) else []):
            for n, item in enumerate(items or []):
                if not isinstance(item, list) or not item or not isinstance(item[0], str):
                    continue
                evidence = item[1] if len(item) > 1 else ""
                who = "".join(ch for ch in speaker.lower() if ch.isalnum()) or "x"
                memories.append(Memory(f"{conv}-s{s}-{who}-{n}", item[0],
                                       {"session": s, "speaker": speaker, "date": date,
                                        "evidence": evidence if isinstance(evidence, str) else ""}))
    qa = [q for q in data["qa"] if isinstance(q, dict) and q.get("category") in CATEGORIES
          and "answer" in q and isinstance(q.get("question"), str)]
    return memories, qa


class BM25:
    """A small Okapi BM25 retriever over memory text (k1 = 1.5, b = 0.75)."""

    def __init__(self, memories: Sequence[Memory], k1: float = 1.5, b: float = 0.75) -> None:
        self.memories = list(memories)
        self.docs = [Counter(content_tokens(m.text)) for m in self.memories]
        self.avg = sum(sum(d.values()) for d in self.docs) / max(len(self.docs), 1)
        df: Counter[str] = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def top(self, query: str, k: int) -> list[Memory]:
        q = content_tokens(query)
        scores = []
        for idx, d in enumerate(self.docs):
            length = sum(d.values())
            s = 0.0
            for t in q:
                if t in d:
                    tf = d[t]
                    s += self.idf[t] * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * length / self.avg))
            scores.append((s, -idx))
        best = sorted(range(len(self.docs)), key=lambda i: scores[i], reverse=True)[:k]
        return [self.memories[i] for i in best if scores[i][0] > 0]


def fault_texts(structure: str, query: str, wrong: str) -> list[str]:
    """Injected fault memories asserting ``wrong`` (their claim is exactly the wrong answer).

    direct / redundant: paraphrases of the query (highly relevant); joint: statements sharing a
    single query word (each too weak alone to out-rank the gold memory, together they out-vote it).
    """
    q = query.strip().rstrip("?")
    anchor = next(iter(content_tokens(query)), "it")
    if structure == "joint":
        return [f"{anchor.capitalize()}: {wrong}.", f"As for {anchor}, it was {wrong}."]
    paraphrases = [f"{q}? {wrong}.", f"It was {wrong}, about: {q}."]
    return paraphrases[:1] if structure == "direct" else paraphrases


def _all_correct(evaluator: Evaluator, task: Task, trials: int, seed: int) -> bool:
    ev = evaluator.evaluate(task, [frozenset(task.ids)], trials, seed)[0]
    return all(s >= 1.0 for s in ev.scores)


MAX_DONORS = 16  # wrong answers tried per clean-correct QA (bounds the proposals a QA can cost)


def _wrong_answers(qa: dict, pool: Sequence[dict], rng: random.Random, donors: int) -> list[str]:
    """Up to ``donors`` distinct answers of other QAs of the same category that share (almost)
    nothing with this QA's reference: the claims the faults will assert."""
    reference = str(qa["answer"])
    options = [str(o["answer"]) for o in pool
               if o is not qa and o.get("category") == qa.get("category")
               and token_f1(str(o["answer"]), reference) < 0.2 and content_tokens(str(o["answer"]))]
    if not options:
        return []
    if donors == 1:
        return [rng.choice(options)]
    distinct = list(dict.fromkeys(options))
    return rng.sample(distinct, min(donors, len(distinct)))


def build_locomo_cohort(data: Path, evaluator: Evaluator, *, trials: int = 2, seed: int = 0,
                        k: int = 5, limit: int | None = None,
                        structures: Sequence[str] = ("direct", "redundant", "joint"),
                        progress: bool = False, donors: int = 1) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Verified fault-injection cases from LoCoMo, and the funnel counts (Table 3, Panel A).

    Each clean-correct QA gets one proposal per structure for each of ``donors`` wrong answers
    (other QAs' answers); the paper's funnel has 7,986 proposals for 624 clean-correct QAs, about
    4.3 donors × 3 structures. Case names are ``<conversation>-q<n>[-d<donor>]-<structure>``."""
    if not 1 <= donors <= MAX_DONORS:
        raise InputError(f"donors must be between 1 and {MAX_DONORS}, not {donors}", field="donors")
    rng = random.Random(seed)
    funnel = Counter({"qa": 0, "clean_correct": 0, "proposals": 0, "verified": 0})
    cases: list[dict[str, Any]] = []
    for path in conversation_files(data):
        memories, qa = load_conversation(path)
        retriever = BM25(memories)
        for qn, item in enumerate(_iterate(qa, progress, path.stem)):
            if limit is not None and len(cases) >= limit:
                return cases, dict(funnel)
            funnel["qa"] += 1
            query, reference = item["question"], str(item["answer"])
            clean = retriever.top(query, k)
            if len(clean) < k:
                continue
            if not _all_correct(evaluator, Task(query, reference, tuple(clean)), trials, seed):
                continue
            funnel["clean_correct"] += 1
            for d, wrong in enumerate(_wrong_answers(item, qa, rng, donors)):
                tag = f"q{qn}" if donors == 1 else f"q{qn}-d{d + 1}"
                for structure in structures:
                    texts = fault_texts(structure, query, wrong)
                    background = list(clean[: k - len(texts)])
                    faults = [Memory(f"{path.stem}-{tag}-f{j + 1}", t,
                                     {"injected": True, "structure": structure, "wrong": wrong})
                              for j, t in enumerate(texts)]
                    context = background + faults
                    rng.shuffle(context)
                    task = Task(query, reference, tuple(context))
                    funnel["proposals"] += 1
                    if not verified(structure, evaluator, task, [f.id for f in faults], trials, seed):
                        continue
                    funnel["verified"] += 1
                    funnel[structure] += 1
                    cases.append({
                        "name": f"{path.stem}-{tag}-{structure}", "structure": structure,
                        "query": query, "reference": reference,
                        "context": [{"id": m.id, "text": m.text, "meta": dict(m.meta)} for m in context],
                        "faults": [f.id for f in faults],
                        "meta": {"conversation": path.stem, "category": item.get("category"),
                                 "wrong": wrong},
                    })
                    if limit is not None and len(cases) >= limit:
                        return cases, dict(funnel)
    return cases, dict(funnel)


def _iterate(qa: list[dict], progress: bool, name: str) -> Iterator[dict]:
    if not progress:
        return iter(qa)
    from tqdm import tqdm

    return iter(tqdm(qa, desc=name, unit="qa", file=sys.stderr))
