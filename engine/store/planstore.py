"""The stored form of a TransitionPlan JSON document (``events.plan``; MemoRepair Alg. 1 lines 2, 8).

The barrier records the plan in the transaction that withdraws C(F). At |C(F)| = 10^5 the plain
canonical JSON of :meth:`~memsteward.repair.plan.TransitionPlan.to_json` is ~30 MB — ten times the
same id list, 10^5 candidate objects — and encoding it was most of the barrier
(bench/sections/repair_scale.md). The stored form is the same document, *packed* (schema version 4):

* the plan's ``cascade`` is an id table; a list of ids that are runs of consecutive table entries is
  stored as ``{"ids": [start, length, …]}`` (C(F), its descendants, the barrier, the candidate ids
  and, often, the order and selection are each a few runs of the sorted cascade);
* a list whose values repeat in long runs is stored run-length encoded (``{"rle": values, "n": counts}``),
  only for values whose equality is identity (strings with null, or only booleans, only integers, only
  non-zero floats: ``1 == 1.0 == True`` and ``0.0 == -0.0`` never merge two values);
* a list of objects with the same keys (``candidates``, ``executed``) is stored column by column
  (``{"rows": keys, "columns": […]}``), a list of lists as its lengths and its concatenation
  (``{"lists": [lengths, items]}``) and a mapping as its keys and values (``{"map": [keys, values]}``),
  each part packed again;
* anything else is kept as is (``{"json": value}``).

Packing is exact: :func:`read_plan` gives back what ``json.loads`` of the plain canonical text gives
(same values, same types; ``proofs_tests/test_store_plan_storage.py`` compares them), so
``TransitionPlan.from_json`` returns the same plan. The audit log's ``plan_sha256`` is the digest of
the stored text, whichever form it has; a plain plan (written before schema version 4, or by hand)
reads unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import chain, count, groupby, islice, repeat
from operator import itemgetter
from typing import Any, overload

from ..errors import StoredPlanDamaged

__all__ = ["PACKED", "Rows", "pack", "plan_text", "read_plan", "read_fields", "unpack"]

PACKED = 2  # the ``packed`` marker of the stored form (a plain plan document has no such key)
PACK_MIN = 16  # shorter lists and smaller mappings are kept as they are (a small plan stays readable)
_RUN_SHARE = 4  # runs are used when there are at most len/_RUN_SHARE of them



class Rows(Sequence[dict[str, Any]]):
    """A list of objects with the same keys, held column by column: ``Rows(keys, columns)`` is the
    list whose k-th object maps ``keys[j]`` to ``columns[j][k]``. A plan's candidates handed over this
    way (:meth:`~memsteward.repair.plan.TransitionPlan.to_columns`) are packed from their columns,
    without an object per candidate; :func:`pack` gives the same result as for the list of objects."""

    def __init__(self, keys: Sequence[str], columns: Sequence[Sequence[Any]]) -> None:
        if len(keys) != len(columns) or len(set(keys)) != len(keys) or len({len(c) for c in columns}) > 1:
            raise ValueError("Rows needs one column per key (keys distinct), all of one length")
        order = sorted(range(len(keys)), key=keys.__getitem__)
        self.keys = [keys[j] for j in order]
        self.columns = [columns[j] for j in order]

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    @overload
    def __getitem__(self, k: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, k: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, k: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(k, slice):
            return list(map(dict, map(zip, repeat(self.keys), zip(*(c[k] for c in self.columns)))))
        return dict(zip(self.keys, (c[k] for c in self.columns)))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return map(dict, map(zip, repeat(self.keys), zip(*self.columns)))


def canonical(x: Any) -> str:
    """Canonical JSON (sorted keys, no spaces): the text the store writes and digests."""
    return json.dumps(x, sort_keys=True, separators=(",", ":"))


def plan_text(doc: Mapping[str, Any]) -> str:
    """The text stored in ``events.plan`` for a TransitionPlan JSON document: its packed form."""
    return canonical(pack(doc))


def read_plan(text: str) -> dict[str, Any]:
    """A stored plan (packed, or plain as written before schema version 4) → the TransitionPlan JSON."""
    try:
        doc = json.loads(text)
        if isinstance(doc, dict) and "packed" in doc:
            return unpack(doc)
    except _DAMAGE as exc:
        raise StoredPlanDamaged(f"damaged stored plan ({type(exc).__name__}: {exc})") from None
    if not isinstance(doc, dict):
        raise StoredPlanDamaged(f"damaged stored plan (a JSON {type(doc).__name__}, not an object)")
    return doc


# what decoding a damaged stored plan raises (json's errors are ValueErrors): a StoredPlanDamaged instead
_DAMAGE = (ValueError, KeyError, TypeError, IndexError, AttributeError, StopIteration)


def read_fields(text: str, keys: Sequence[str]) -> dict[str, Any]:
    """Only the fields ``keys`` of a stored plan (those it has), as :func:`read_plan` gives them: a
    packed plan unpacks nothing else (the plan steps read ``order`` and ``modes`` of a 10^5-step plan)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise StoredPlanDamaged(f"damaged stored plan ({type(exc).__name__}: {exc})") from None
    if not (isinstance(doc, dict) and "packed" in doc):
        return {k: doc[k] for k in keys if k in doc} if isinstance(doc, dict) else read_plan(text)
    fields = doc.get("fields") if doc.get("packed") == PACKED else None
    if not isinstance(fields, dict):
        return read_plan(text)  # raises StoredPlanDamaged naming the damage
    try:
        return {k: _unpack(fields[k], doc["ids"]) for k in keys if k in fields}
    except _DAMAGE as exc:
        raise StoredPlanDamaged(f"damaged stored plan ({type(exc).__name__}: {exc})") from None


def pack(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The packed form of a TransitionPlan JSON document (see the module docstring)."""
    ids = doc.get("cascade")
    table = list(ids) if isinstance(ids, (list, tuple)) and len(ids) >= PACK_MIN and _types(ids) == {str} else []
    packer = _Packer(table)
    return {"packed": PACKED, "ids": table if len(packer.index) == len(table) else [],
            "fields": {k: packer.value(v) for k, v in doc.items()}}


def unpack(packed: Mapping[str, Any]) -> dict[str, Any]:
    """The TransitionPlan JSON document of a packed one (keys in sorted order, as a plain stored plan loads)."""
    if packed.get("packed") != PACKED:
        raise ValueError(f"unknown stored plan form {packed.get('packed')!r}")
    table = packed["ids"]
    return {k: _unpack(v, table) for k, v in sorted(packed["fields"].items())}


# ----------------------------------------------------------------------------- packing

def _types(values: Any) -> set[type]:
    return set(map(type, values))


class _Packer:
    """Packs the lists of one document against its id table; an id list met again (the same ids in
    the same order: C(F), its descendants, the candidate ids, the order, …) is packed once."""

    def __init__(self, table: list[str]) -> None:
        self.table = table
        self.index = dict(zip(table, count()))
        if len(self.index) != len(table):  # repeated ids: not an id table
            self.index = {}
        self.seen: list[tuple[list[str], dict[str, Any]]] = []

    def value(self, v: Any) -> dict[str, Any]:
        if isinstance(v, (list, tuple, Rows)):
            return self.seq(v)
        if type(v) is dict and len(v) >= PACK_MIN and _types(v.keys()) == {str}:
            return {"map": [self.seq(list(v)), self.seq(list(v.values()))]}
        return {"json": v}

    def seq(self, col: Sequence[Any]) -> dict[str, Any]:
        """The first packing that applies to ``col`` (each tried on a prefix first, so a list it does
        not fit costs little); else ``col`` as is. :class:`Rows` go column by column, as the list of
        their objects does (objects are neither ids nor run-length coded: :func:`_rle` takes none)."""
        if type(col) is Rows:
            if len(col) >= PACK_MIN and _types(col.keys) == {str}:
                return self.columns(col.keys, col.columns)
            col = list(col)
        col = col if type(col) is list else list(col)
        if len(col) < PACK_MIN:
            return {"json": col}
        for other, done in self.seen:  # equal to a list of ids: only strings equal strings
            if other == col:
                return done
        if self.index and type(col[0]) is str and col[0] in self.index:
            runs = _id_runs(col[:_PROBE], self.index, self.table) and _id_runs(col, self.index, self.table)
            if runs is not None:
                done = {"ids": runs}
                self.seen.append((col, done))
                return done
        rle = _rle(col[:_PROBE]) and _rle(col)
        if rle is not None:
            return {"rle": rle[0], "n": rle[1]}
        first = type(col[0])
        if first is dict:
            return self.rows(col)
        if first is list or first is tuple:
            if _types(col) <= {list, tuple}:
                return {"lists": [self.seq(list(map(len, col))), self.seq(list(chain.from_iterable(col)))]}
        return {"json": col}

    def rows(self, col: list[Any]) -> dict[str, Any]:
        """Objects with one key set, column by column."""
        keys = sorted(col[0])
        if _types(col) != {dict} or _types(keys) != {str} or set(map(len, col)) != {len(keys)}:
            return {"json": col}
        try:
            columns = [list(map(itemgetter(k), col)) for k in keys]
        except KeyError:  # another key set of the same size
            return {"json": col}
        return self.columns(keys, columns)

    def columns(self, keys: list[str], columns: Sequence[Sequence[Any]]) -> dict[str, Any]:
        return {"rows": keys, "columns": [self.seq(c) for c in columns]}


_PROBE = 256  # the prefix a packing is tried on first


def _id_runs(col: list[str], index: Mapping[str, int], table: Sequence[str]) -> list[int] | None:
    """[start, length, …] of ``col`` as runs of consecutive id-table entries (None: more than
    len/_RUN_SHARE runs, or an item outside the table). A run is found by comparing slices of
    ``col`` and ``table``: doubling lengths until one differs, then halving back — a run of L ids
    costs O(L) comparisons made by the list type, and O(log L) Python steps."""
    out: list[int] = []
    limit, at, n = len(col) // _RUN_SHARE + 1, 0, len(col)
    while at < n:
        try:
            start = index[col[at]]
        except (KeyError, TypeError):
            return None
        room = min(n - at, len(table) - start)
        good, size = 1, 1  # col[at:at + good] == table[start:start + good]
        while good < room:  # the next segment, twice as long as the last
            end = min(good + size, room)
            if col[at + good:at + end] != table[start + good:start + end]:
                hi = end  # the run ends before hi: halve the gap
                while hi - good > 1:
                    mid = (good + hi) // 2
                    if col[at + good:at + mid] == table[start + good:start + mid]:
                        good = mid
                    else:
                        hi = mid
                break
            good, size = end, 2 * size
        out += (start, good)
        at += good
        if len(out) > 2 * limit:
            return None
    return out


_NUMBERS = (bool, int, float)


def _rle(col: list[Any]) -> tuple[list[Any], list[int]] | None:
    """(values, counts) of the runs of equal values (None: more than len/_RUN_SHARE runs, or runs that
    could merge values that are equal but not the same JSON: ``1 == 1.0 == True``, ``0.0 == -0.0``)."""
    values, counts = [], []
    limit = len(col) // _RUN_SHARE + 1
    try:
        for v, run in groupby(col):
            values.append(v)
            counts.append(len(list(run)))
            if len(values) > limit:
                return None
    except TypeError:
        return None
    # a run of a string or of null holds only equal strings or nulls; only numbers need a look
    if any(isinstance(v, _NUMBERS) for v in values):
        kinds = _types(col)
        if len(kinds) != 1 or not kinds <= {bool, int, float} or (kinds == {float} and 0.0 in values):
            return None
    elif not _types(values) <= {str, type(None)}:
        return None
    return values, counts


# ----------------------------------------------------------------------------- unpacking

def _unpack(p: Mapping[str, Any], table: Sequence[str]) -> Any:
    return _UNPACK[next(k for k in p if k in _UNPACK)](p, table)


def _unpack_ids(p: Mapping[str, Any], table: Sequence[str]) -> list[str]:
    r = p["ids"]
    return list(chain.from_iterable(table[s:s + n] for s, n in zip(r[::2], r[1::2])))


def _unpack_rows(p: Mapping[str, Any], table: Sequence[str]) -> list[dict[str, Any]]:
    keys = p["rows"]
    columns = [_unpack(c, table) for c in p["columns"]]
    return list(map(dict, map(zip, repeat(keys), zip(*columns))))


def _unpack_lists(p: Mapping[str, Any], table: Sequence[str]) -> list[list[Any]]:
    lengths, items = (_unpack(x, table) for x in p["lists"])
    it = iter(items)
    return [list(islice(it, n)) for n in lengths]


def _unpack_map(p: Mapping[str, Any], table: Sequence[str]) -> dict[str, Any]:
    keys, values = (_unpack(x, table) for x in p["map"])
    return dict(zip(keys, values))


_UNPACK: dict[str, Callable[[Mapping[str, Any], Sequence[str]], Any]] = {
    "json": lambda p, _: p["json"],
    "ids": _unpack_ids,
    "rle": lambda p, _: list(chain.from_iterable(map(repeat, p["rle"], p["n"]))),
    "rows": _unpack_rows,
    "lists": _unpack_lists,
    "map": _unpack_map,
}
