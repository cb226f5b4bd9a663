"""Untracked derivations found by content (the erasure issue, item 3).

Provenance can be incomplete: an agent may write a memory built from a record without recording
the influence edge, and then C(F) = Reach(F; E^inf) never reaches it. Before publication the
planner therefore scans the content of every servable artifact outside C(F) for the roots' text:

    shingles_n(x) = { (w_k, …, w_{k+n−1}) : consecutive words of one string value of x }   (lower-cased \\w+ words)
    untracked(F)  = { a ∉ C(F) servable : |shingles_n(a) ∩ ⋃_{r ∈ F} shingles_n(r)| ≥ m }

with n = ``lineage.shingle_words`` and m = ``lineage.min_shared`` (policy). Any copy of an n-word
span of a root is found (a shared shingle is an exact n-word run); shorter copies and paraphrases
are not. Each match is treated as a child of the root it shares most with (a virtual influence
edge), so it and everything derived from it join the cascade: withdrawn at the barrier, repaired
or removed under the policy, erased on delete — and listed as ``untracked`` in the plan and the
attestation. Cost: one pass over the servable content of the store (the only whole-store read of
planning; it runs only for a delete or a privacy correction and only when the policy enables it).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from .erasure import string_leaves

_WORD = re.compile(r"\w+")


def words(value: Any) -> list[list[str]]:
    """The lower-cased words of each string inside a JSON value (one list per string)."""
    return [[w.lower() for w in _WORD.findall(s)] for s in string_leaves(value)]


def shingles(value: Any, n: int) -> set[tuple[str, ...]]:
    """shingles_n(value): every run of ``n`` consecutive words within one string value."""
    return {tuple(ws[k:k + n]) for ws in words(value) for k in range(len(ws) - n + 1)}


def untracked(roots: Mapping[str, Any], candidates: Iterable[tuple[str, Any]], n: int,
              min_shared: int) -> dict[str, dict[str, Any]]:
    """Artifacts (id, content) sharing at least ``min_shared`` n-word shingles with a root's content:
    id → {"root": the root sharing most (ties by id), "shared": that count}."""
    by_root = {r: shingles(c, n) for r, c in sorted(roots.items())}
    owner: dict[tuple[str, ...], list[str]] = {}
    for r, sh in by_root.items():
        for s in sh:
            owner.setdefault(s, []).append(r)
    if not owner:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for ident, content in candidates:
        counts: dict[str, int] = {}
        seen: set[tuple[str, ...]] = set()
        for ws in words(content):
            for k in range(len(ws) - n + 1):
                s = tuple(ws[k:k + n])
                if s in owner and s not in seen:
                    seen.add(s)
                    for r in owner[s]:
                        counts[r] = counts.get(r, 0) + 1
        if counts:
            root, shared = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            if shared >= min_shared:
                out[ident] = {"root": root, "shared": shared}
    return out
