"""The attestation of an adapter event, extended to the wrapped store.

memsteward's own attestation (:func:`memsteward.attest`) proves what happened in its store. An
adapter event also promises something about the wrapped store, checked here by reading it around the
adapter:

* ``wrapped-values``: no value the wrapped store holds carries a fingerprint of the erased content
  (:func:`memsteward.repair.erasure.fingerprints`: windows of every erased string of 16+ characters);
* ``wrapped-vectors``: every vector the wrapped store holds belongs to an item it holds, at a field
  path that item's current value has (a vector of a removed item or of a dropped field is stale:
  it was embedded from content that is gone);
* ``wrapped-files``: the wrapped store's files (SQLite database and WAL; PostgreSQL relation files
  when the server's data directory is readable here) hold none of the fingerprints.

The fingerprints are taken from the content before the event erased it, and kept by the adapter
in memory (``GovernedStore.fingerprints``): the store keeps only digests. An attestation asked of an
event this process did not run gets ``ok: false`` for the wrapped-store checks, saying why.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langgraph.store.base.embed import get_text_at_path, tokenize_path

from ...repair.attestation import attest as store_attest
from ...repair.erasure import scan
from .physical import files, raw_items, vector_rows

if TYPE_CHECKING:
    from .store import GovernedStore

__all__ = ["attest", "stale_vectors"]


def _check(name: str, ok: bool, detail: str) -> dict[str, Any]:
    """One check, in the shape of :func:`memsteward.attest`'s (``check``, ``ok``, ``status``, ``detail``)."""
    return {"check": name, "ok": ok, "status": "pass" if ok else "fail", "detail": detail}


def _paths(value: Any, fields: Sequence[str]) -> set[str]:
    """The vector field names a LangGraph store derives from a value for its index ``fields``."""
    out: set[str] = set()
    for f in fields:
        texts = get_text_at_path(value, tokenize_path(f) if f != "$" else f)
        out |= {f"{f}.{i}" for i in range(len(texts))} if len(texts) > 1 else ({f} if texts else set())
    return out


def stale_vectors(gs: GovernedStore) -> list[tuple[tuple[str, ...], str, str]]:
    """Vectors of the wrapped store whose item or field is gone (see the module docstring).

    Items put with an explicit ``index=[…]`` may hold other field names; those are not stale when
    the field path still exists in the value."""
    rows = vector_rows(gs.inner)
    if not rows:
        return []
    fields = list((gs.index_config or {}).get("fields") or ["$"])
    values = {(tuple(it.namespace), it.key): it.value for it in raw_items(gs.inner)}
    out = []
    for ns, key, path in rows:
        value = values.get((tuple(ns), key))
        if value is None:
            out.append((ns, key, path))
        elif path not in _paths(value, fields):
            base = path.rsplit(".", 1)[0] if path.rsplit(".", 1)[-1].isdigit() else path
            if not get_text_at_path(value, tokenize_path(base) if base != "$" else base):
                out.append((ns, key, path))
    return out


def _files_check(gs: GovernedStore, eid: int, needles: Sequence[bytes]) -> dict[str, Any]:
    """``wrapped-files``: the scan of the wrapped store's files (no CHECKPOINT when a clean
    ``VACUUM FULL`` ran after this event: :func:`.physical.files`)."""
    fresh = gs.clean_through is not None and gs.clean_through >= eid
    paths = files(gs.inner, checkpoint=not fresh)
    result = scan(paths, needles) if paths and needles else {"found": 0}
    found_in = result.get("found") or {}
    hits = sum(found_in.values()) if isinstance(found_in, dict) else int(found_in)
    detail = f"{len(paths)} file(s) scanned; {hits} fingerprint hit(s)"
    held = gs.last_scrub.get("held_by")
    if hits and held:
        detail += (f"; VACUUM FULL had to keep deleted rows: {len(held)} session(s) of the database (pid "
                   f"{', '.join(map(str, held[:5]))}; 0: a replication slot) held a snapshot older than the "
                   "deletes; once they end, scrub() and attest again")
    return _check("wrapped-files", hits == 0, detail)


def attest(gs: GovernedStore, event_id: int | None = None, needles: Sequence[bytes] | None = None) -> dict[str, Any]:
    """memsteward's attestation of the event plus the three wrapped-store checks; ``ok`` is all of them."""
    out = store_attest(gs.store, event_id)
    eid = out["event"]["id"]
    found = needles if needles is not None else gs.fingerprints.get(eid)
    checks = []
    if found is None:
        why = "the erased content's fingerprints are not known to this process (the event ran elsewhere)"
        checks += [_check(n, False, why) for n in ("wrapped-values", "wrapped-files")]
    else:
        texts = [json.dumps(it.value, ensure_ascii=False) for it in raw_items(gs.inner)]
        hits = sum(1 for t in texts for n in found if n.decode("utf-8", "ignore") in t)
        checks.append(_check("wrapped-values", hits == 0,
                             f"{len(texts)} values read around the adapter; {hits} fingerprint hit(s)"))
        checks.append(_files_check(gs, eid, found))
    stale = stale_vectors(gs)
    checks.append(_check("wrapped-vectors", not stale, f"{len(stale)} stale vector(s)"))
    out["checks"] = list(out["checks"]) + checks
    out["ok"] = all(c["ok"] for c in out["checks"])
    return out
