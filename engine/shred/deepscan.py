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

Files are read in chunks of :data:`CHUNK` bytes overlapping by the longest needle, as latin-1 (one
character per byte, so a byte needle is a string needle); the report holds counts and labels (the
erased versions' ids), never the text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ahocorasick

WINDOW, STRIDE, MIN_LEAF = 24, 8, 16
CHUNK = 1 << 24


def string_leaves(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (dict keys are names, not content: left out)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


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


def _forms(window: str) -> set[str]:
    """The byte forms of a window, as latin-1 strings: UTF-8, JSON with and without ``ensure_ascii``."""
    return {window.encode("utf-8").decode("latin-1"),
            json.dumps(window)[1:-1],
            json.dumps(window, ensure_ascii=False)[1:-1].encode("utf-8").decode("latin-1")}


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
    """The byte needles of the erased text (latin-1 strings → label) and what was left out as retained."""

    words: dict[str, str] = field(default_factory=dict)
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


def scan_file(path: str, needles: Needles) -> dict[str, Any]:
    """One pass over ``path``: the labels whose needles occur, with counts of distinct needles."""
    hits: dict[str, set[str]] = {}
    size = 0
    if needles.words:
        auto = _automaton({w: (w, lab) for w, lab in needles.words.items()})
        overlap = max(map(len, needles.words)) - 1
        with open(path, "rb") as fh:
            tail = ""
            while chunk := fh.read(CHUNK):
                size += len(chunk)
                text = tail + chunk.decode("latin-1")
                for _, (word, label) in auto.iter(text):
                    hits.setdefault(label, set()).add(word)
                tail = text[-overlap:] if overlap else ""
    else:
        size = os.path.getsize(path)
    return {"file": path, "bytes": size, "found": {lab: len(ws) for lab, ws in sorted(hits.items())}}


def deep_scan(paths: Sequence[str], erased: Mapping[str, Any], retained: Iterable[Any]) -> dict[str, Any]:
    """Scan every file once for text found only in erased contents; ``clean`` when nothing is found."""
    needles = build_needles(erased, retained)
    files = [scan_file(p, needles) for p in paths if os.path.exists(p)]
    return {"needles": len(needles.words), "windows": needles.windows, "retained_windows": needles.retained,
            "files": files, "clean": not any(f["found"] for f in files),
            "missing": [p for p in paths if not os.path.exists(p)]}
