"""The content scan of a small delete across store sizes: the lineage index against the full scan.

One on-disk SQLite store (WAL) grows through 10^4, 10^5 and 10^6 artifacts with text (``--quick``:
10^3 … 10^5). Text model: 8–16 words per artifact drawn from a Zipf(1.1) distribution over a
5,000-word vocabulary, so frequent trigrams exist ("common" posting lists) as in natural text. At
each size, ``EVENTS`` small deletes are planned, each of a root record (a 20-word text of the same
model) with 3 derived summaries recorded with influence edges and one copy of a 10-word run of the
root written WITHOUT an edge (the untracked derivation the scan must find).

Per delete, in the same run and on the same store:

* **indexed**: the scan as planning runs it, :meth:`Store.shingle_candidates` (posting lists of the
  rarest trigram per 8-word window) then the exact check :func:`~memsteward.repair.lineage.untracked`;
* **plan**: the whole plan of the delete (:func:`~memsteward.repair.plan.compute_plan`, scan on,
  ``ortools`` cut) from the on-disk store;
* **full scan (reference)**: the former implementation, one pass over the content of every servable
  artifact (the SQL stream it used) into the same :func:`untracked`.

Both scans must find the same untracked set (checked wherever the reference runs: the first
``FULL_SCANS`` deletes of each size). Medians over the deletes.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from .common import machine, peak_rss_mb, table, write_section

EVENTS = 7
FULL_SCANS = 3  # the reference reads the whole store: on the first 3 deletes of each size
VOCAB_SIZE = 5000
ZIPF = 1.1
SPAN = 10


class TextModel:
    """Zipf-distributed words (rank r with weight r^-s) over a synthetic vocabulary."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        syll = ["ka", "lo", "mi", "nu", "pe", "ra", "si", "tu", "vo", "ze", "bar", "cel", "dor", "fin", "gul"]
        words: list[str] = []
        seen: set[str] = set()
        while len(words) < VOCAB_SIZE:
            w = "".join(self.rng.choice(syll) for _ in range(self.rng.randint(2, 4)))
            if w not in seen:
                seen.add(w)
                words.append(w)
        self.words = words
        weights = [1 / (r + 1) ** ZIPF for r in range(VOCAB_SIZE)]
        total = sum(weights)
        acc, self.cum = 0.0, []
        for w in weights:
            acc += w / total
            self.cum.append(acc)

    def text(self, n: int) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cum, k=n))


def _fill(store: Any, model: TextModel, start: int, stop: int, batch: int = 5000) -> None:
    """Record artifacts start … stop-1 (records and summaries with text; summaries derive from a record)."""
    for lo in range(start, stop, batch):
        writes = []
        for k in range(lo, min(stop, lo + batch)):
            if k % 4 == 3:
                writes.append({"id": f"s{k}", "kind": "summary", "content": model.text(model.rng.randint(8, 16)),
                               "inputs": [f"r{k - 1}"]})
            else:
                writes.append({"id": f"r{k}", "kind": "record",
                               "content": {"text": model.text(model.rng.randint(8, 16))}})
        store.record_many(writes)


def _small_delete(store: Any, model: TextModel, tag: str, common: bool = False) -> tuple[str, str]:
    """A root with 3 derived summaries (edges) and an untracked 10-word copy (no edge); returns (root, copy).
    ``common``: the root's 20 words are drawn from the 30 most frequent ones (the scan's worst case)."""
    root, copy = f"root-{tag}", f"copy-{tag}"
    words = model.rng.choices(model.words[:30], k=20) if common else model.text(20).split()
    start = model.rng.randrange(0, len(words) - SPAN + 1)
    store.record_many([
        {"id": root, "kind": "record", "content": {"text": " ".join(words)}},
        *({"id": f"{root}-d{j}", "kind": "summary", "content": model.text(12), "inputs": [root]} for j in range(3)),
        {"id": copy, "kind": "summary", "content": f"Recap: {' '.join(words[start:start + SPAN])}. {model.text(6)}"},
    ])
    return root, copy


def _full_scan_contents(store: Any) -> Iterator[tuple[str, Any]]:
    """The former ``Store.servable_contents``: every servable artifact's content, streamed."""
    q = ("SELECT a.id, v.content FROM artifacts a JOIN versions v ON v.id = a.id AND v.version = a.version "
         "WHERE a.state IN ('servable', 'republished') AND v.content IS NOT NULL")
    for i, c in store.conn.execute(q):
        yield i, json.loads(c)


def measure(store: Any, policy: Any, roots: list[str]) -> dict[str, Any]:
    from memsteward.repair.events import parse_event
    from memsteward.repair.lineage import untracked
    from memsteward.repair.plan import compute_plan
    from memsteward.repair.scope import read_scope

    n, m = policy.lineage.shingle_words, policy.lineage.min_shared
    idx_t, plan_t, full_t, cands, found = [], [], [], [], []
    for k, root in enumerate(roots):
        scope = read_scope(store, [root])
        content = {root: scope.artifacts[root].content}
        t = time.perf_counter()
        got = untracked(content, [(i, c) for i, c in store.shingle_candidates(content, n) if i not in scope.cascade],
                        n, m)
        idx_t.append(time.perf_counter() - t)
        cands.append(len(store.shingle_candidates(content, n)))
        if k < FULL_SCANS:
            t = time.perf_counter()
            ref = untracked(content, ((i, c) for i, c in _full_scan_contents(store) if i not in scope.cascade), n, m)
            full_t.append(time.perf_counter() - t)
            if got != ref:
                raise AssertionError(f"indexed scan {sorted(got)} differs from the full scan {sorted(ref)} for {root}")
        found.append(len(got))
        event = parse_event({"type": "delete", "roots": [root]}, store)
        t = time.perf_counter()
        plan = compute_plan(policy, store, event, backend="ortools")
        plan_t.append(time.perf_counter() - t)
        assert set(plan.untracked) == set(got)
    return {"indexed_ms": 1e3 * statistics.median(idx_t), "plan_ms": 1e3 * statistics.median(plan_t),
            "full_ms": 1e3 * statistics.median(full_t), "candidates": statistics.median(cands),
            "found": statistics.median(found)}


def run(quick: bool = False) -> None:
    from memsteward.policy.loader import load_policy
    from memsteward.store import Store

    sizes = (10**3, 10**4, 10**5) if quick else (10**4, 10**5, 10**6)
    root_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    policy = load_policy(os.path.join(root_dir, "policies", "default.yaml"))
    model = TextModel(11)
    rows, worst = [], []
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memsteward-lineage-") as tmp:
        db = os.path.join(tmp, "store.db")
        store = Store.open(db, create=True)
        have = 0
        for size in sizes:
            t = time.perf_counter()
            _fill(store, model, have, size - 5 * (EVENTS + 1))
            fill_s = time.perf_counter() - t
            rate = (size - 5 * (EVENTS + 1) - have) / fill_s
            roots = [_small_delete(store, model, f"{size}-{e}")[0] for e in range(EVENTS)]
            common_root = _small_delete(store, model, f"{size}-common", common=True)[0]
            have = size
            (arts,) = store.conn.execute("SELECT COUNT(*) FROM artifacts").fetchone()
            (rows_idx,) = store.conn.execute("SELECT COUNT(*) FROM shingles").fetchone()
            res = measure(store, policy, roots)
            bad = measure(store, policy, [common_root])
            worst.append([f"{arts:,}", f"{bad['indexed_ms']:.1f}", f"{bad['full_ms']:.0f}", f"{bad['candidates']:.0f}",
                          f"{bad['found']:.0f}"])
            mb = os.path.getsize(db) / 2**20
            rows.append([f"{arts:,}", f"{res['indexed_ms']:.2f}", f"{res['plan_ms']:.1f}", f"{res['full_ms']:.0f}",
                         f"{res['full_ms'] / res['indexed_ms']:.0f}×", f"{res['candidates']:.0f}",
                         f"{res['found']:.0f}", f"{rows_idx:,}", f"{mb:.0f}", f"{rate:,.0f}"])
            print(rows[-1], file=sys.stderr, flush=True)
        store.close()
    m = machine()
    load = os.getloadavg()[0]
    md = (
        "## The content scan of a small delete across store sizes (`bench/lineage_scale.py`)\n\n"
        f"Commit `{m['commit']}`, {m['cores']} cores, {m['date']}, load average {load:.1f} (shared machine); "
        f"{time.perf_counter() - began:.0f} s, peak RSS {peak_rss_mb():.0f} MB. One on-disk SQLite store grows "
        "through the sizes below: records and summaries of 8–16 words each, Zipf(1.1) over 5,000 words (so common "
        f"trigrams exist, as in natural text). At each size {EVENTS} small deletes: a root record (20 words) with 3 "
        f"derived summaries (influence edges) and one summary holding a {SPAN}-word run of the root WITHOUT an edge. "
        "Default policy: 8-word shingles, one shared run suffices.\n\n"
        f"**indexed** = the scan as planning runs it now: posting lists of the lineage index (trigram hashes, "
        "written with each write), the rarest trigram per 8-word window, then the exact check. **plan** = the "
        "whole plan of the delete (cascade, content scan, candidates, OR-Tools cut, order) from the on-disk store, "
        "run after the indexed scan (which is the delete's first read: index pages cold). "
        "**full scan** = the former implementation in the same run: every servable artifact's content read and "
        f"checked, on the first {FULL_SCANS} deletes of each size (the same untracked set as the indexed scan at each, "
        f"checked). Medians over the deletes; "
        "the fill rate is `record_many` in batches of 5,000 with the index written in the same transactions.\n\n"
        + table(["artifacts", "indexed scan ms", "plan ms (scan on)", "full scan ms (reference)", "full / indexed",
                 "candidates read", "untracked found", "index rows", "DB MB", "fill artifacts/s"], rows) + "\n\n"
        "Frequent words, one more delete per size: a root whose 20 words are drawn from the 30 most frequent ones "
        "(its trigrams have longer posting lists; a window whose trigrams all exceed 256 ids would read one list "
        "whole, so the cost then grows with those lists):\n\n"
        + table(["artifacts", "indexed scan ms", "full scan ms (reference)", "candidates read", "untracked found"],
                worst) + "\n"
    )
    write_section("lineage_scale", md)
    print(md)


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
