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
attestation.

What is scanned (issue 25): the content *and meta* of every version an artifact still holds (an older
version keeps its text until erased), of every servable artifact and of every one an earlier event
left withdrawn; never an erased one. The index below holds all of them.

Cost: the scan does not read the store. Every artifact's current content is indexed at write time
by the hashes of its word trigrams (``INDEX_WORDS`` = 3, the smallest ``shingle_words`` a policy
may set), in the same transaction as the write (``shingles`` table of the store; an in-memory
index for a :class:`~memsteward.repair.artifacts.Snapshot`):

    index(a) = { h(t) : t ∈ shingles_3(a) }        h = the first 8 bytes of BLAKE2b, a signed 64-bit key

An artifact sharing an n-word run with a root holds every trigram of that run, so it is found in
the posting list of *any* trigram of the matching n-word window of the root. :func:`candidates`
takes, per window, the trigram with the shortest posting list (lists are probed up to ``COMMON``
ids; a window whose trigrams are all common reads one full list), so the work grows with the
roots' text and the rarest trigram of each window, not with the store. The candidates are then
checked exactly by :func:`untracked`, the same function that defines the scan: :func:`untracked`
over every servable artifact stays as the reference the tests compare with. Hash collisions only
add candidates that the exact check drops. The index holds hashes, never text, and the rows of
erased content are deleted with it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .erasure import string_leaves

_WORD = re.compile(r"\w+")
INDEX_WORDS = 3  # the write-time index unit; policies' shingle_words ≥ this (LineageSpec, ge=3)
COMMON = 256  # a posting list with more ids than this is "common": another trigram of the window is preferred


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


Keyed = Callable[[str], int] | None
"""A store's keyed trigram hash (:meth:`memsteward.shred.vault.Vault.shingle_hash`); None: unkeyed BLAKE2b."""


def shingle_hash(ws: Sequence[str], keyed: Keyed = None) -> int:
    """h(t): a signed 64-bit key of a run of words (BLAKE2b; the index stores these, never words). An
    encrypted store keys it (keyed BLAKE2b under its index key), so a phrase's hash needs that key."""
    text = " ".join(ws)
    if keyed is not None:
        return keyed(text)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big", signed=True)


def index_hashes(value: Any, keyed: Keyed = None) -> set[int]:
    """index(value): the hashes of every ``INDEX_WORDS``-word run within one string value."""
    n = INDEX_WORDS
    return {shingle_hash(ws[k:k + n], keyed) for ws in words(value) for k in range(len(ws) - n + 1)}


def windows(roots: Mapping[str, Any], n: int, keyed: Keyed = None) -> set[tuple[int, ...]]:
    """For every n-word run of a root: the hashes of its n − 2 trigrams (any copy of the run holds all)."""
    if n < INDEX_WORDS:
        raise ValueError(f"shingle_words must be at least {INDEX_WORDS} (the index unit)")
    out: set[tuple[int, ...]] = set()
    span = n - INDEX_WORDS + 1
    for value in roots.values():
        for ws in words(value):
            hs = [shingle_hash(ws[k:k + INDEX_WORDS], keyed) for k in range(len(ws) - INDEX_WORDS + 1)]
            out.update(tuple(hs[k:k + span]) for k in range(len(hs) - span + 1))
    return out


Posting = Callable[[int, int | None], Sequence[str]]
"""posting(h, limit): ids whose indexed content holds trigram h (at most ``limit`` of them; None: all)."""


def candidates(roots: Mapping[str, Any], n: int, posting: Posting, keyed: Keyed = None) -> set[str]:
    """Ids that may share an n-word run with a root: for each window of :func:`windows`, the posting
    list of its rarest trigram (a superset of the matches; :func:`untracked` checks them exactly)."""
    probed: dict[int, Sequence[str]] = {}
    full: dict[int, Sequence[str]] = {}
    found: set[str] = set()
    for window in sorted(windows(roots, n, keyed)):
        for h in window:
            if h not in probed:
                probed[h] = posting(h, COMMON + 1)
        rarest = min(window, key=lambda h: (len(probed[h]), h))
        if len(probed[rarest]) <= COMMON:
            found.update(probed[rarest])
        else:  # every trigram of the window is common: read one list whole
            if rarest not in full:
                full[rarest] = posting(rarest, None)
            found.update(full[rarest])
    return found
