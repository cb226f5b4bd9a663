"""``audit --deep``: is any erased text still in the store's files (or a backup)? One pass per file.

Needles. Each string leaf of an erased content (at least :data:`MIN_LEAF` characters) yields every
window of :data:`WINDOW` characters starting at a multiple of :data:`STRIDE` (plus its last window;
a leaf shorter than a window is its own needle), so any surviving run of WINDOW + STRIDE − 1
characters contains a whole window. Each window is searched as UTF-8, as JSON escapes it with
``ensure_ascii`` (``\\uXXXX``) and without; and the runs of characters JSON never escapes yield
windows of their own, which are the same bytes under any escaping, so a text dense in quotes,
newlines or accents is still found however a writer escaped it. There is no needle budget: the
matcher (Aho–Corasick, pyahocorasick) reads each file once whatever the number of needles.

Retained text is not evidence. A window that also occurs in retained content (another record, a
republished successor, another tenant's memory, a version not erased) is dropped before the scan:
an extractive summary shares sentences with the records it was built from, and finding those
sentences on disk proves nothing. So the scan fails exactly when text that exists *only* in erased
versions is still in a file.

Files are read as bytes, in chunks of :data:`CHUNK` bytes overlapping by the longest needle, and
matched by :class:`ByteMatcher` in one vectorised pass (numpy): every needle has at least 2·BLOCK − 1
bytes, so any occurrence holds a whole 8-byte block at an offset that is a multiple of 8; each such
block of the file is hashed, looked up in a table of the needles' blocks, and the few candidates are
compared exactly. (Aho–Corasick over the file decoded as latin-1 ran at 63× ``cat``: the automaton,
not the decoding, was the cost; it still drops the retained windows, over the retained texts.) The
report holds counts and labels (the erased versions' ids), never the text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ahocorasick
import numpy as np

from ..textnorm import strings_of as string_leaves

WINDOW, STRIDE, MIN_LEAF = 24, 8, 16
CHUNK = 1 << 24
BLOCK = 8
TABLE_BITS = 20  # a 1 MB table: few false candidates for thousands of needles, and it stays in cache
_MULT = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the table index is the product's top bits
_SHIFT = np.uint64(64 - TABLE_BITS)


def _strided(text: str) -> Iterator[str]:
    if len(text) <= WINDOW:
        yield text
        return
    for k in range(0, len(text) - WINDOW + 1, STRIDE):
        yield text[k:k + WINDOW]
    yield text[-WINDOW:]


def _plain(ch: str) -> bool:
    """A character every JSON writer leaves as it is: printable ASCII other than the quote and backslash."""
    return " " <= ch <= "~" and ch not in "\"\\/"


def clean_runs(text: str) -> Iterator[str]:
    """Maximal runs of :func:`_plain` characters of at least WINDOW characters."""
    start = None
    for k, ch in enumerate(text + "\0"):
        if _plain(ch):
            start = k if start is None else start
        elif start is not None:
            if k - start >= WINDOW:
                yield text[start:k]
            start = None


def windows(text: str) -> set[str]:
    """The windows of one erased leaf (see the module docstring)."""
    if len(text) < MIN_LEAF:
        return set()
    out = set(_strided(text))
    for run in clean_runs(text):
        out.update(_strided(run))
    return out


def _forms(window: str) -> set[bytes]:
    """The byte forms of a window: UTF-8, JSON with and without ``ensure_ascii``."""
    return {window.encode("utf-8"), json.dumps(window)[1:-1].encode("ascii"),
            json.dumps(window, ensure_ascii=False)[1:-1].encode("utf-8")}


def _automaton(words: Mapping[str, Any]) -> Any:
    auto = ahocorasick.Automaton()
    for word, value in words.items():
        auto.add_word(word, value)
    auto.make_automaton()
    return auto


def retained_windows(candidates: Iterable[str], retained: Iterable[str]) -> set[str]:
    """The candidate windows that occur in some retained text (one Aho–Corasick pass over it)."""
    cands = {w: w for w in candidates}
    if not cands:
        return set()
    auto = _automaton(cands)
    found: set[str] = set()
    for text in retained:
        found.update(w for _, w in auto.iter(text))
    return found


@dataclass
class Needles:
    """The byte needles of the erased text (bytes → label) and what was left out as retained."""

    words: dict[bytes, str] = field(default_factory=dict)
    windows: int = 0
    retained: int = 0


def build_needles(erased: Mapping[str, Any], retained: Iterable[Any]) -> Needles:
    """Needles of ``erased`` (label → erased content) that are not also in ``retained`` (contents)."""
    by_window: dict[str, str] = {}
    for label in sorted(erased):
        for leaf in string_leaves(erased[label]):
            for w in windows(leaf):
                by_window.setdefault(w, label)
    kept = retained_windows(by_window, (s for c in retained for s in string_leaves(c)))
    out = Needles(windows=len(by_window), retained=len(kept))
    for w, label in by_window.items():
        if w not in kept:
            for form in _forms(w):
                out.words.setdefault(form, label)
    return out


class ByteMatcher:
    """Which of many byte needles occur in a buffer, in one vectorised pass (see the module docstring)."""

    def __init__(self, words: Collection[bytes]) -> None:
        self.short = sorted(w for w in words if len(w) < 2 * BLOCK - 1)  # none from :func:`windows`
        self.at: dict[int, list[tuple[bytes, int]]] = {}  # block value → (needle, its offset in the needle)
        for w in words:
            if len(w) >= 2 * BLOCK - 1:
                for off in range(len(w) - BLOCK + 1):
                    self.at.setdefault(int.from_bytes(w[off:off + BLOCK], "little"), []).append((w, off))
        self.keys = np.fromiter(self.at, dtype=np.uint64, count=len(self.at))
        self.table = np.zeros(1 << TABLE_BITS, dtype=bool)
        with np.errstate(over="ignore"):
            self.table[(self.keys * _MULT >> _SHIFT).view(np.int64)] = True
        self.overlap = max(map(len, words), default=1) - 1
        self._hash = np.empty(0, dtype=np.uint64)

    def find(self, buf: memoryview, found: set[bytes]) -> None:
        """Add to ``found`` the needles that occur in ``buf``."""
        n = len(buf) // BLOCK
        if self.at and n:
            blocks = np.frombuffer(buf, dtype="<u8", count=n)
            if len(self._hash) < n:
                self._hash = np.empty(n, dtype=np.uint64)
            h = self._hash[:n]
            with np.errstate(over="ignore"):
                np.multiply(blocks, _MULT, out=h)
            np.right_shift(h, _SHIFT, out=h)
            cand = np.flatnonzero(self.table[h.view(np.int64)])
            for k in cand[np.isin(blocks[cand], self.keys)].tolist():
                p = k * BLOCK
                for w, off in self.at[int(blocks[k])]:
                    if p >= off and w not in found and buf[p - off:p - off + len(w)] == w:
                        found.add(w)
        if self.short:
            data = bytes(buf)
            found.update(w for w in self.short if w in data)


def scan_file(path: str, needles: Needles) -> dict[str, Any]:
    """One pass over ``path``: the labels whose needles occur, with counts of distinct needles."""
    if not needles.words:
        return {"file": path, "bytes": os.path.getsize(path), "found": {}}
    matcher = ByteMatcher(needles.words)
    found: set[bytes] = set()
    size = have = 0
    buf = bytearray(CHUNK + matcher.overlap)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while got := fh.readinto(view[have:have + CHUNK]):
            size += got
            end = have + got
            matcher.find(view[:end], found)
            have = min(matcher.overlap, end)  # the tail is read again with the next chunk
            buf[:have] = buf[end - have:end]
    hits: dict[str, int] = {}
    for w in found:
        hits[needles.words[w]] = hits.get(needles.words[w], 0) + 1
    return {"file": path, "bytes": size, "found": dict(sorted(hits.items()))}


def deep_scan(paths: Sequence[str], erased: Mapping[str, Any], retained: Iterable[Any]) -> dict[str, Any]:
    """Scan every file once for text found only in erased contents; ``clean`` when nothing is found."""
    needles = build_needles(erased, retained)
    files = [scan_file(p, needles) for p in paths if os.path.exists(p)]
    return {"needles": len(needles.words), "windows": needles.windows, "retained_windows": needles.retained,
            "files": files, "clean": not any(f["found"] for f in files),
            "missing": [p for p in paths if not os.path.exists(p)]}
