"""What users mean by "the same text": one normalisation for tombstones and the content scan (issue 25).

``normalise(s)`` = skeleton(collapse(strip_zero_width(casefold(NFKC(s))))) without trailing punctuation:

* **NFKC** folds compatibility forms: fullwidth ``Ｂｏｂ`` → ``Bob``, ligatures, NFD ``e + ◌́`` → ``é``;
* **casefold** (Unicode's caseless matching, ``ß`` → ``ss``);
* **zero-width characters removed** (U+200B–U+200D, U+2060, U+FEFF, U+00AD soft hyphen, U+180E);
* **whitespace collapsed** to one space, and stripped at both ends;
* **trailing punctuation** dropped (``.``, ``!``, ``?``, ``,``, ``;``, ``:``, ``…``);
* **a confusables skeleton**: Cyrillic and Greek letters that look like Latin ones map to them (after
  casefolding), so ``Воb`` (Cyrillic В, о) matches ``Bob``. The table is the lower-case subset of
  Unicode's confusables (UTS #39) for these scripts, not the whole file.

:func:`text_of` gathers every string of a JSON value (keys excluded) in document order, so wrapping
text in ``{"text": …}`` or moving it into ``meta`` does not change what it says. Issue 27 keys its
digests (HMAC under the store's index key) over :func:`normalise` d text; :func:`digest_of` is the
plain hook the tombstones use until then.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e"))
_SPACE = re.compile(r"\s+")
TRAILING = ".!?,;:\u2026\u3002"
#: Cyrillic / Greek lower-case letters that render like Latin ones (UTS #39 confusables, subset)
CONFUSABLES = str.maketrans({
    "а": "a", "в": "b", "с": "c", "ԁ": "d", "е": "e", "һ": "h", "і": "i", "ј": "j", "к": "k", "м": "m",
    "н": "h", "о": "o", "р": "p", "ѕ": "s", "т": "t", "у": "y", "х": "x", "ԛ": "q", "ԝ": "w", "ь": "b",
    "ӏ": "l", "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "γ": "y", "ѡ": "w", "ԍ": "g", "ɡ": "g", "ı": "i", "ɩ": "i",
})
MIN_TOMBSTONE_CHARS = 20
"""A string shorter than this (normalised) gets no tombstone of its own: a label such as ``allergy``
must not block every later write that uses the word. The whole text of a value always gets one."""


def normalise(text: str) -> str:
    """The normal form of ``text`` (see the module docstring).

    >>> normalise("Bob's bank PIN is 482913") == normalise("  ｂｏｂ's  bank\\u200b PIN is 482913. ")
    True
    >>> normalise("Воb") == normalise("bob")
    True
    """
    s = unicodedata.normalize("NFKC", text).casefold().translate(ZERO_WIDTH)
    s = _SPACE.sub(" ", s).strip().rstrip(TRAILING + " ")
    return s.translate(CONFUSABLES)


def strings_of(value: Any) -> Iterator[str]:
    """Every string of a JSON value (object keys excluded), in document order with object members taken
    in key order (as canonical JSON stores them, so the order a writer used does not matter)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(v[k] for k in sorted(v, reverse=True))
        elif isinstance(v, (list, tuple)):
            stack.extend(reversed(v))


def text_of(value: Any) -> str:
    """The normalised text a JSON value says: its strings normalised and joined by one space."""
    return " ".join(t for t in (normalise(s) for s in strings_of(value)) if t)


def digest_of(text: str) -> str:
    """SHA-256 of normalised text under a domain prefix (issue 27 replaces it with a keyed HMAC)."""
    return hashlib.sha256(b"memsteward-text-v1:" + text.encode("utf-8", "surrogatepass")).hexdigest()


def text_digests(*values: Any) -> set[str]:
    """The tombstone digests of JSON values: each value's whole normalised text, and each of its
    strings of at least :data:`MIN_TOMBSTONE_CHARS` normalised characters."""
    out: set[str] = set()
    for value in values:
        normal = [n for n in map(normalise, strings_of(value)) if n]  # each string normalised once
        if normal:
            out.add(digest_of(" ".join(normal)))  # text_of(value)
        out.update(digest_of(n) for n in normal if len(n) >= MIN_TOMBSTONE_CHARS)
    return out


__all__ = ["CONFUSABLES", "MIN_TOMBSTONE_CHARS", "digest_of", "normalise", "strings_of", "text_digests", "text_of"]
