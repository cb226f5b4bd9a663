"""Whole-value governance: what of a LangGraph item's value is governed content, and the value a
repair writes back.

A value is a JSON object. Three parts of it are set apart:

* the **provenance field** (``derived_from`` by default): ``[[namespace, key], …]``, the items the
  value was derived from (influence inputs), never content;
* the **meta field** (``meta``): metadata the policy may read (:func:`split_meta`), never content;
* the **governed content**: by default every string anywhere else in the value (keys walked in
  sorted order); with ``fields`` given, the texts at those JSON paths, read exactly as LangGraph reads
  its ``index`` fields (``"facts[*]"``, ``"profile.address"``, ``"{a,b}"``).

The artifact's content is the governed text (the strings joined by newlines, one string as is), so
fingerprints, tombstones and repair support see every governed field. Repair rebuilds the whole
value from the successor (:func:`rebuilt`): nothing of the old value is kept but the provenance
still servable, the meta, and — only when ``fields`` is given — the top-level fields no governed
path starts with (declared not to be content).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base.embed import get_text_at_path, tokenize_path

from ...errors import InputError

__all__ = ["ADDRESS_KEY", "EMBED_KEY", "UNTRUSTED_KEY", "ValueSpec", "governed_texts", "rebuilt", "split_meta", "user_meta"]

ADDRESS_KEY = "lg_address"
"""artifact meta key holding the item's address {namespace, key} (erased with the version)."""
UNTRUSTED_KEY = "lg_untrusted"
"""artifact meta key holding the value's meta keys the policy does not declare (kept, never read)."""
EMBED_KEY = "lg_embedding"
"""artifact meta key of a repaired successor's vector record (:mod:`.reembed`; never in the value)."""
RESERVED = frozenset({ADDRESS_KEY, UNTRUSTED_KEY, EMBED_KEY})
OPERATOR_META = frozenset({"transform", "summary_sentences", "probes"})
MAX_FIELDS = 64


@dataclass(frozen=True)
class ValueSpec:
    """Which parts of a value are governed (see the module docstring)."""

    fields: tuple[str, ...] | None = None
    provenance_field: str = "derived_from"
    meta_field: str = "meta"

    def __post_init__(self) -> None:
        if self.fields is not None:
            if not self.fields or len(self.fields) > MAX_FIELDS:
                raise InputError(f"governed fields: 1 to {MAX_FIELDS} JSON paths", file="<GovernedStore>",
                                 field="fields")
            for k, f in enumerate(self.fields):
                if not isinstance(f, str) or not f or f == "$" or not tokenize_path(f):
                    raise InputError(f"governed field {f!r} is not a JSON path", file="<GovernedStore>",
                                     field=f"fields[{k}]")
        if self.provenance_field == self.meta_field:
            raise InputError("the provenance and meta fields must differ", file="<GovernedStore>",
                             field="provenance_field")

    def heads(self) -> frozenset[str] | None:
        """The top-level names the governed paths start with; None when a path starts with the
        wildcard (``*``: every top-level field) or every string is governed (no ``fields``)."""
        if self.fields is None:
            return None
        out: set[str] = set()
        for f in self.fields:
            heads = path_heads(f)
            if heads is None:
                return None
            out |= heads
        return frozenset(out)


def path_heads(path: str) -> frozenset[str] | None:
    """Every top-level name a LangGraph index path reads in a value (an object), as
    ``get_text_at_path`` reads it; None for the wildcard ``*`` (every top-level field).

    Each alternative of a ``{a,b}`` group is a head (its first name, looked up as is: LangGraph
    splits a group at every comma and reads each part's names as literal keys). A leading ``[n]``
    reads nothing of an object.

    Examples
    --------
    >>> sorted(path_heads("{content, facts.x,nested[0]}"))
    ['content', 'facts', 'nested']
    >>> sorted(path_heads("profile.address")), path_heads("*.text"), sorted(path_heads("[*]"))
    (['profile'], None, [])
    """
    tokens = tokenize_path(path)
    if not tokens:
        return frozenset()
    token = tokens[0]
    if token.startswith("[") and token.endswith("]"):
        return frozenset()
    if token.startswith("{") and token.endswith("}"):
        parts = (tokenize_path(part.strip()) for part in token[1:-1].split(","))
        return frozenset(p[0] for p in parts if p)
    if token == "*":
        return None
    return frozenset({token})


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k in sorted(value, key=str):
            yield from _strings(value[k])
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def governed_texts(value: Mapping[str, Any], spec: ValueSpec) -> list[str]:
    """The governed strings of a value, in a canonical order (sorted keys; paths in the given order).

    Examples
    --------
    >>> governed_texts({"content": "a", "facts": ["b", "c"], "derived_from": [], "meta": {"x": "m"}}, ValueSpec())
    ['a', 'b', 'c']
    >>> governed_texts({"content": "a", "tag": "t"}, ValueSpec(fields=("content",)))
    ['a']
    """
    body = {k: v for k, v in value.items() if k not in (spec.provenance_field, spec.meta_field)}
    if spec.fields is None:
        return list(_strings(body))
    return [t for f in spec.fields for t in get_text_at_path(body, f)]


def artifact_content(value: Mapping[str, Any], spec: ValueSpec) -> Any:
    """The artifact's content: the governed text (one string, or the strings joined by newlines);
    a value without governed text is its own content (minus provenance and meta)."""
    texts = governed_texts(value, spec)
    if texts:
        return texts[0] if len(texts) == 1 else "\n".join(texts)
    return {k: v for k, v in value.items() if k not in (spec.provenance_field, spec.meta_field)}


def split_meta(meta: Any, declared: frozenset[str]) -> dict[str, Any]:
    """The artifact meta of a value's meta: declared keys as they are, the others under
    :data:`UNTRUSTED_KEY` (kept for the write-back, never read by a policy or operator).

    Examples
    --------
    >>> split_meta({"sensitivity": 3, "source": "chat"}, frozenset({"sensitivity"}))
    {'sensitivity': 3, 'lg_untrusted': {'source': 'chat'}}
    """
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise InputError("'meta' must be an object", file="<langgraph put>", field="meta")
    reserved = sorted(RESERVED & set(meta))
    if reserved:
        raise InputError(f"meta key {reserved[0]!r} is reserved by the adapter", file="<langgraph put>",
                         field=f"meta.{reserved[0]}")
    out = {k: v for k, v in meta.items() if k in declared or k in OPERATOR_META}
    extra = {k: v for k, v in meta.items() if k not in out}
    if extra:
        out[UNTRUSTED_KEY] = extra
    return out


def user_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The value's meta back from an artifact's meta (inverse of :func:`split_meta`)."""
    out = {k: v for k, v in meta.items() if k not in RESERVED}
    extra = meta.get(UNTRUSTED_KEY)
    if isinstance(extra, Mapping):
        out.update(extra)
    return out


def rebuilt(old: Mapping[str, Any] | None, content: Any, meta: Mapping[str, Any], spec: ValueSpec,
            keep_source: Callable[[Sequence[Any]], bool], text_field: str = "content") -> dict[str, Any]:
    """The value a republished successor is written back as: built from the successor's ``content``
    and ``meta`` only, plus the provenance pairs ``keep_source`` keeps and (with ``fields`` given)
    the old value's top-level fields that no governed path starts with.

    Examples
    --------
    >>> old = {"content": "A. B.", "facts": ["A"], "derived_from": [[["m"], "a"], [["m"], "b"]]}
    >>> rebuilt(old, "B.", {}, ValueSpec(), lambda pair: pair[1] == "b")
    {'content': 'B.', 'derived_from': [[['m'], 'b']]}
    """
    value: dict[str, Any] = dict(content) if isinstance(content, Mapping) else {text_field: content}
    heads = spec.heads()
    if old is not None and heads is not None:
        for k, v in old.items():
            if k not in heads and k not in (spec.provenance_field, spec.meta_field) and k not in value:
                value[k] = v
    sources = old.get(spec.provenance_field) if old is not None else None
    if isinstance(sources, list):
        value[spec.provenance_field] = [p for p in sources if keep_source(p)]
    back = user_meta(meta)
    if back:
        value[spec.meta_field] = back
    return value
