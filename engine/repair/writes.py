"""The write path: one memory write (an artifact, its influence inputs and semantic links).

A :class:`Write` is validated here, before any database is touched: the artifact's fields, its
content as JSON (finite numbers only, at most :data:`MAX_CONTENT_BYTES` of canonical JSON), and
the shape of ``inputs`` / ``semantic``. Whether the inputs exist, are servable (write fencing) and
whether the content was erased before (tombstones) is decided by :meth:`Store.record_many` inside
the write's transaction.

The ``store put`` document is an artifact object of the exchange format plus two optional
lists: ``{"id", "kind", "arch"?, "content", "meta"?, "inputs"?: [ids], "semantic"?: [ids]}``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from .artifacts import MAX_CONTENT_BYTES, Artifact, parse_artifact
from .schemas import id_problem

MAX_LINKS = 10_000
"""Limit on ``inputs`` + ``semantic`` of one write."""

PUT_FIELDS = frozenset({"id", "kind", "arch", "content", "meta", "inputs", "semantic"})


def canonical_json(value: Any) -> str:
    """The canonical JSON text of a value: sorted keys, no spaces, UTF-8 kept (the digest's input).

    Examples
    --------
    >>> canonical_json({"b": 1, "a": ["é"]})
    '{"a":["é"],"b":1}'
    """
    return _CANONICAL.encode(value)


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def content_digest(content: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of an artifact's content: what a tombstone keeps.

    Examples
    --------
    >>> content_digest({"text": "hi"}) == content_digest({"text": "hi"})
    True
    >>> content_digest("a") != content_digest("b")
    True
    """
    return hashlib.sha256(canonical_json(content).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Write:
    """One validated write: the artifact (version and state are the store's to assign), the ids
    it was produced from (influence edges ``input → artifact``) and its semantic links."""

    artifact: Artifact
    inputs: tuple[str, ...] = ()
    semantic: tuple[str, ...] = ()
    content_text: str = "null"
    """canonical JSON of the content (what the store keeps and the digest is taken of)"""
    meta_text: str = "{}"
    digest: str = ""
    """:func:`content_digest` of the content"""


def _json_text(value: Any, what: str, ident: str, file: str, field: str) -> str:
    try:
        return _CANONICAL.encode(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} of {ident!r} is not JSON: {exc}", file=file, field=field) from None
    except RecursionError:
        raise InputError(f"{what} of {ident!r} nests too deeply", file=file, field=field) from None


def _ids(value: Any, name: str, file: str, where: str) -> tuple[str, ...]:
    if not value:
        if value is None or isinstance(value, (list, tuple)):
            return ()
    if not isinstance(value, (list, tuple)):
        raise InputError(f"'{name}' must be a list of artifact ids", file=file, field=f"{where}{name}")
    out = tuple(value)
    for k, i in enumerate(out):
        if type(i) is not str or not i:
            raise InputError(f"'{name}' holds a non-id value {i!r:.40}", file=file, field=f"{where}{name}[{k}]")
        problem = id_problem(i)
        if problem:
            raise InputError(f"'{name}' holds {i!r:.40}: {problem}", file=file, field=f"{where}{name}[{k}]")
    if len(out) > 1 and len(set(out)) != len(out):
        dup = next(i for k, i in enumerate(out) if i in out[:k])
        raise InputError(f"'{name}' names {dup!r} twice", file=file, field=f"{where}{name}")
    return out


def prepare(artifact: Artifact | Mapping[str, Any], inputs: Sequence[str] | None = None,
            semantic: Sequence[str] | None = None, file: str = "<record>", where: str = "") -> Write:
    """Validate one write without touching a store (InputError naming the field on any problem).

    ``artifact`` is an :class:`Artifact` (its version and state are ignored: the store assigns
    them) or an exchange-format object without ``version``/``state``.
    """
    if isinstance(artifact, dict) or isinstance(artifact, Mapping):
        bad = [f for f in ("state", "version") if f in artifact]
        if bad:
            raise InputError(f"'{bad[0]}' is assigned by the store, not by a write", file=file,
                             field=f"{where}{bad[0]}")
        art = parse_artifact(artifact if isinstance(artifact, dict) else dict(artifact),
                             where.rstrip(".") or "artifact", file, sized=False)
    elif isinstance(artifact, Artifact):
        art = parse_artifact({"id": artifact.id, "kind": artifact.kind, "arch": artifact.arch,
                              "content": artifact.content, "meta": dict(artifact.meta)},
                             where.rstrip(".") or "artifact", file, sized=False)
    else:
        raise InputError(f"an artifact is an Artifact or an object, not {type(artifact).__name__}", file=file,
                         field=where.rstrip(".") or "artifact")
    canonical = _json_text(art.content, "content", art.id, file, where + "content")
    meta_text = _json_text(art.meta, "meta", art.id, file, where + "meta")
    size = len(canonical.encode("utf-8")) + len(meta_text.encode("utf-8"))  # (parse_artifact left it to here)
    if size > MAX_CONTENT_BYTES:
        raise InputError(f"artifact {art.id!r} is {size} bytes of JSON, over the {MAX_CONTENT_BYTES}-byte limit",
                         file=file, field=f"{where}content")
    ins = _ids(inputs, "inputs", file, where)
    sem = _ids(semantic, "semantic", file, where)
    if len(ins) + len(sem) > MAX_LINKS:
        raise InputError(f"a write links at most {MAX_LINKS} artifacts", file=file, field=f"{where}inputs")
    return Write(art, ins, sem, canonical, meta_text, hashlib.sha256(canonical.encode("utf-8")).hexdigest())


def parse_put(doc: Any, file: str = "<stdin>", where: str = "") -> Write:
    """Validate a ``store put`` document: an artifact object plus optional ``inputs``/``semantic``."""
    if not isinstance(doc, dict):
        raise InputError("a put document is an artifact object {id, kind, content, meta?, inputs?, semantic?}",
                         file=file, field=where.rstrip("."))
    extra = sorted(set(doc) - PUT_FIELDS)
    if extra:
        hint = " (version and state are assigned by the store)" if extra[0] in ("version", "state") else \
            " (extra fields belong in 'meta')"
        raise InputError(f"unknown field {extra[0]!r}{hint}", file=file, field=f"{where}{extra[0]}")
    art = {k: v for k, v in doc.items() if k not in ("inputs", "semantic")}
    return prepare(art, doc.get("inputs"), doc.get("semantic"), file, where)

