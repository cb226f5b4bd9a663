"""What users mean by "the same text": one normalisation for tombstones and the content scan (issue 25).

``normalise(s)`` = skeleton(collapse(strip_invisible(casefold(NFKC(s))))) without quotes at its ends and
trailing punctuation:

* **NFKC** folds compatibility forms: fullwidth ``Ｂｏｂ`` → ``Bob``, ligatures, NFD ``e + ◌́`` → ``é``;
* **casefold** (Unicode's caseless matching, ``ß`` → ``ss``);
* **invisible characters removed**: every Default_Ignorable_Code_Point of Unicode's
  DerivedCoreProperties.txt (zero-width spaces and joiners, the soft hyphen, direction marks and
  bidi controls, invisible operators, variation selectors, the combining grapheme joiner, tags),
  except the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), which render as blank space and
  become a space; removed before NFKC too, so that none splits what NFKC composes;
* **whitespace collapsed** to one space, and stripped at both ends;
* **quotes and brackets at either end** dropped (``"``, ``'``, ``“ ”``, ``‘ ’``, ``« »``, ``( )``,
  ``[ ]``, …), and **trailing punctuation** (``.``, ``!``, ``?``, ``,``, ``;``, ``:``, ``…``);
* **a confusables skeleton**: Cyrillic and Greek letters that look like Latin ones map to them (after
  casefolding), so ``Воb`` (Cyrillic В, о) matches ``Bob``. The table is the lower-case subset of
  Unicode's confusables (UTS #39) for these scripts, not the whole file.

:func:`text_of` gathers every string of a JSON value (keys excluded) in document order, so wrapping
text in ``{"text": …}`` or moving it into ``meta`` does not change what it says. A write is also
checked by its object keys and by each line of a string of several lines, of at least
:data:`MIN_TOMBSTONE_CHARS` normalised characters (:func:`said_text_digests`): ``{"<erased text>":
true}`` says it too, and so does ``"<erased text>\\nmore"``. A tombstone holds no key's digest (keys
are a value's schema: tombstoning them would refuse every later value of the same shape). Issue 27 keys its
digests (HMAC under the store's index key) over :func:`normalise` d text; :func:`digest_of` is the
plain hook the tombstones use until then.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

#: Default_Ignorable_Code_Point, Unicode 15.1 (DerivedCoreProperties.txt), as inclusive ranges
DEFAULT_IGNORABLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                     (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
                     (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
HANGUL_FILLERS = "\u115f\u1160\u3164\uffa0"
"""Default-ignorable, yet drawn as blank space: each becomes a space, not nothing."""
INVISIBLE: dict[int, str | None] = {cp: None for lo, hi in DEFAULT_IGNORABLE for cp in range(lo, hi + 1)}
INVISIBLE.update({ord(c): " " for c in HANGUL_FILLERS})
_SPACE = re.compile(r"\s+")
TRAILING = ".!?,;:\u2026\u3002"
QUOTES = "\"'`\u201c\u201d\u201e\u201f\u2018\u2019\u201a\u201b\u00ab\u00bb\u2039\u203a()[]{}<>\u300c\u300d\u300e\u300f"
"""Quotes and brackets, dropped at either end of a string (after NFKC, which folds fullwidth ones)."""
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
    >>> normalise('"Bob\u200e\u3164PIN"') == normalise("bob pin")
    True
    """
    if not text.isascii():  # ASCII holds no invisible character
        text = text.translate(INVISIBLE)
    s = unicodedata.normalize("NFKC", text).casefold()
    if not s.isascii():
        s = s.translate(INVISIBLE)
    s = _SPACE.sub(" ", s).strip(QUOTES + " ").rstrip(TRAILING + QUOTES + " ")
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


def keys_of(value: Any) -> Iterator[str]:
    """Every object key of a JSON value, at any depth."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            yield from (k for k in v if isinstance(k, str))
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)


def text_of(value: Any) -> str:
    """The normalised text a JSON value says: its strings normalised and joined by one space."""
    return " ".join(t for t in (normalise(s) for s in strings_of(value)) if t)


def digest_of(text: str) -> str:
    """SHA-256 of normalised text under a domain prefix (issue 27 replaces it with a keyed HMAC)."""
    return hashlib.sha256(b"memsteward-text-v1:" + text.encode("utf-8", "surrogatepass")).hexdigest()


def lines_of(value: Any) -> Iterator[str]:
    """Each line of every string of a JSON value that holds more than one line (a value built by joining
    fields with newlines, as the LangGraph adapter's governed text is, says each of its fields)."""
    for s in strings_of(value):
        lines = s.splitlines()
        if len(lines) > 1:
            yield from lines


def text_digests(*values: Any) -> set[str]:
    """The tombstone digests of JSON values: each value's whole normalised text, and each of its
    strings, and each line of a string of several lines, of at least :data:`MIN_TOMBSTONE_CHARS`
    normalised characters."""
    out: set[str] = set()
    for value in values:
        normal = [n for n in map(normalise, strings_of(value)) if n]  # each string normalised once
        if normal:
            out.add(digest_of(" ".join(normal)))  # text_of(value)
        out.update(digest_of(n) for n in normal if len(n) >= MIN_TOMBSTONE_CHARS)
        out.update(digest_of(n) for n in map(normalise, lines_of(value)) if len(n) >= MIN_TOMBSTONE_CHARS)
    return out


def said_text_digests(*values: Any) -> set[str]:
    """What a write says, for the tombstone test: :func:`text_digests` of its values, and the digest of
    each line and each object key of at least :data:`MIN_TOMBSTONE_CHARS` normalised characters (a
    shorter one would match the whole text of every short erased value: a deleted "yes" must not refuse
    every later line or key "yes", as it does not refuse a string "yes" inside a larger value)."""
    lines = {n for value in values for n in map(normalise, lines_of(value)) if len(n) >= MIN_TOMBSTONE_CHARS}
    return text_digests(*values) | {digest_of(t) for t in said_keys(*values) | lines}


def said_keys(*values: Any) -> set[str]:
    """The normalised object keys of JSON values that can say an erased string: those of at least
    :data:`MIN_TOMBSTONE_CHARS` normalised characters (normalising may lengthen a key: ``ß`` → ``ss``)."""
    return {n for value in values for n in map(normalise, keys_of(value)) if len(n) >= MIN_TOMBSTONE_CHARS}


__all__ = ["CONFUSABLES", "DEFAULT_IGNORABLE", "MIN_TOMBSTONE_CHARS", "digest_of", "keys_of", "lines_of", "normalise",
           "said_keys", "said_text_digests", "strings_of", "text_digests", "text_of"]
