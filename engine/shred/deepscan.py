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
compared exactly; when every needle has at least 8·S + 7 bytes only every S-th block is (S = 2 for
the 24-character windows). A large file is read as consecutive parts on a few threads at once.
(Aho–Corasick over the file decoded as latin-1 ran at 63× ``cat``: the automaton,
not the decoding, was the cost; it still drops the retained windows, over the retained texts.) The
report holds counts and labels (the erased versions' ids), never the text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import ahocorasick
import numpy as np

from ..textnorm import strings_of as string_leaves

WINDOW, STRIDE, MIN_LEAF = 24, 8, 16
CHUNK = 1 << 18  # a chunk and its hashes stay in cache between numpy's passes over them
PART, WORKERS = 1 << 25, min(4, os.cpu_count() or 1)  # a file of more than 2·PART bytes is split among threads
BLOCK = 8
TABLE_BITS = 20  # the largest table: 1 MB, few false candidates for thousands of needles
_MULT = np.uint64(0x9E3779B97F4A7C15)


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
    """Which of many byte needles occur in a buffer, in one vectorised pass (see the module docstring).

    With stride S (the most that the shortest needle allows: every needle has at least
    8·S + 7 bytes), only the blocks at offsets that are multiples of 8·S are hashed: an occurrence
    of ≥ 8·S + 7 bytes holds a whole one of them, and the first one starts at a needle offset below
    8·S. The 24-character windows give S = 2; a leaf of 16–22 characters (its own needle) gives S = 1.

    The index is built with numpy, not one Python object per entry: ``keys`` holds the block of
    every needle at each offset below 8·S, with that offset (``off``) and the needle's length
    (``size``), sorted and without repeats. A hashed block at buffer position p is checked by its run
    of equal keys: for each (offset, length) there, is ``buf[p − offset : p − offset + length]`` one of
    the needles (a set lookup)? Needles sharing a block (windows of similar records) cost one lookup
    per distinct (offset, length), not one comparison per needle."""

    def __init__(self, words: Collection[bytes]) -> None:
        self.short = sorted(w for w in words if len(w) < 2 * BLOCK - 1)  # none from :func:`windows`
        long = [w for w in words if len(w) >= 2 * BLOCK - 1]
        self.words = frozenset(long)
        self.stride = max(1, (min(map(len, long), default=2 * BLOCK - 1) - (BLOCK - 1)) // BLOCK)
        span = BLOCK * self.stride  # an occurrence's first hashed block starts at a needle offset below this
        keys = np.empty(0, dtype=np.uint64)
        offs = sizes = np.empty(0, dtype=np.int64)
        if long:
            width = span + BLOCK - 1  # every long needle has at least this many bytes
            heads = np.frombuffer(b"".join(w[:width] for w in long), dtype=np.uint8).reshape(len(long), width)
            keys = np.concatenate([np.ascontiguousarray(heads[:, off:off + BLOCK]).view("<u8").ravel()
                                   for off in range(span)])
            offs = np.repeat(np.arange(span, dtype=np.int64), len(long))
            sizes = np.tile(np.fromiter(map(len, long), dtype=np.int64, count=len(long)), span)
        order = np.lexsort((sizes, offs, keys))
        keys, offs, sizes = keys[order].astype(np.uint64), offs[order], sizes[order]
        new = np.ones(len(keys), dtype=bool)
        new[1:] = (keys[1:] != keys[:-1]) | (offs[1:] != offs[:-1]) | (sizes[1:] != sizes[:-1])
        self.keys, self.off, self.size = keys[new], offs[new], sizes[new]  # sorted by key, no repeats
        # about 1,000 slots per key (few false candidates), between 16 KB (in L1 cache) and 1 MB
        bits = min(TABLE_BITS, max(14, len(np.unique(self.keys)).bit_length() + 10))
        self.shift = np.uint64(64 - bits)  # Fibonacci hashing: the table index is the product's top bits
        self.table = np.zeros(1 << bits, dtype=bool)
        with np.errstate(over="ignore"):
            self.table[(self.keys * _MULT >> self.shift).view(np.int64)] = True
        self.overlap = max(map(len, words), default=1) - 1

    def find(self, buf: memoryview, found: set[bytes], scratch: Scratch | None = None) -> None:
        """Add to ``found`` the needles that occur in ``buf``. ``scratch``: arrays reused from call to call
        (one per thread: numpy lets go of the GIL while it hashes, so threads scan at once)."""
        n = len(buf) // BLOCK
        if self.words and n:
            step = self.stride
            blocks = np.frombuffer(buf, dtype="<u8", count=n)[::step]
            m = len(blocks)
            scratch = scratch if scratch is not None and len(scratch.hashes) >= m else Scratch(m)
            h, hit = scratch.hashes[:m], scratch.hits[:m]
            with np.errstate(over="ignore"):
                np.multiply(blocks, _MULT, out=h)
            np.right_shift(h, self.shift, out=h)
            np.take(self.table, h.view(np.int64), out=hit)  # a gather into a bool array: faster than a mask
            cand = hit.nonzero()[0]  # bool: numpy's fast path (uint8 was 10x slower)
            values = blocks[cand]
            lo = np.searchsorted(self.keys, values, side="left")  # the run of index entries of each block
            hi = np.searchsorted(self.keys, values, side="right")
            real = hi > lo
            for k, a, b in zip(cand[real].tolist(), lo[real].tolist(), hi[real].tolist()):
                p = k * step * BLOCK
                for off, size in zip(self.off[a:b].tolist(), self.size[a:b].tolist()):
                    if p >= off:
                        seg = bytes(buf[p - off:p - off + size])
                        if seg in self.words:
                            found.add(seg)
        if self.short:
            data = bytes(buf)
            found.update(w for w in self.short if w in data)


class Scratch:
    """The arrays :meth:`ByteMatcher.find` hashes a chunk into, allocated once per thread (a fresh
    half-megabyte array per chunk cost a page fault per 4 KB)."""

    def __init__(self, blocks: int) -> None:
        self.hashes = np.empty(blocks, dtype=np.uint64)
        self.hits = np.empty(blocks, dtype=bool)


def _scan_part(path: str, start: int, stop: int, matcher: ByteMatcher) -> tuple[set[bytes], int]:
    """The needles in bytes [start, stop) of ``path`` (read on to ``stop`` + the overlap, so an occurrence
    that starts inside is whole), in chunks of :data:`CHUNK` bytes overlapping by the longest needle."""
    found: set[bytes] = set()
    buf = bytearray(CHUNK + matcher.overlap)
    view = memoryview(buf)
    scratch = Scratch(len(buf) // BLOCK)
    have, pos, size = 0, start, 0
    with open(path, "rb", buffering=0) as fh:
        fh.seek(start)
        while pos < stop and (got := fh.readinto(view[have:have + min(CHUNK, stop + matcher.overlap - pos)])):
            pos += got
            size += got
            end = have + got
            matcher.find(view[:end], found, scratch)
            have = min(matcher.overlap, end)  # the tail is read again with the next chunk
            buf[:have] = buf[end - have:end]
    return found, min(size, stop - start)


def _parts(size: int, workers: int) -> list[tuple[int, int]]:
    """[start, stop) ranges splitting a file of ``size`` bytes among ``workers`` (at least PART bytes each)."""
    k = max(1, min(workers, size // PART))
    cut = [size * j // k for j in range(k + 1)]
    return list(zip(cut, cut[1:], strict=False)) or [(0, 0)]


def scan_file(path: str, needles: Needles, matcher: ByteMatcher | None = None) -> dict[str, Any]:
    """One pass over ``path``: the labels whose needles occur, with counts of distinct needles. A file
    of more than 2·PART bytes is read as consecutive parts on :data:`WORKERS` threads at once (reading
    and numpy both let go of the GIL), each byte once but for the overlaps."""
    if not needles.words:
        return {"file": path, "bytes": os.path.getsize(path), "found": {}}
    matcher = matcher or ByteMatcher(needles.words)
    parts = _parts(os.path.getsize(path), WORKERS)
    if len(parts) == 1:
        results = [_scan_part(path, 0, 1 << 62, matcher)]
    else:
        with ThreadPoolExecutor(len(parts), thread_name_prefix="memsteward-scan") as pool:
            results = list(pool.map(lambda r: _scan_part(path, r[0], r[1], matcher), parts))
    found = set().union(*(f for f, _ in results))
    hits: dict[str, int] = {}
    for w in found:
        hits[needles.words[w]] = hits.get(needles.words[w], 0) + 1
    return {"file": path, "bytes": sum(n for _, n in results), "found": dict(sorted(hits.items()))}


def deep_scan(paths: Sequence[str], erased: Mapping[str, Any], retained: Iterable[Any]) -> dict[str, Any]:
    """Scan every file once for text found only in erased contents; ``clean`` when nothing is found."""
    needles = build_needles(erased, retained)
    matcher = ByteMatcher(needles.words) if needles.words else None
    files = [scan_file(p, needles, matcher) for p in paths if os.path.exists(p)]
    return {"needles": len(needles.words), "windows": needles.windows, "retained_windows": needles.retained,
            "files": files, "clean": not any(f["found"] for f in files),
            "missing": [p for p in paths if not os.path.exists(p)]}
