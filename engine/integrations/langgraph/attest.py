"""The attestation of an adapter event, extended to the wrapped store.

memsteward's own attestation (:func:`memsteward.attest`) proves what happened in its store. An
adapter event also promises something about the wrapped store, checked here by reading it around the
adapter:

* ``wrapped-values``: no value the wrapped store holds carries text found only in the erased content;
* ``wrapped-vectors``: every vector the wrapped store holds belongs to an item it holds, at a field
  path that item's current value has (a vector of a removed item or of a dropped field is stale:
  it was embedded from content that is gone);
* ``wrapped-files``: the wrapped store's files (SQLite database and WAL; PostgreSQL relation files
  when the server's data directory is readable here) hold none of that text. Each file is read once
  (:func:`memsteward.shred.deepscan.scan_file`, the matcher of ``audit --deep``), whatever the
  number of needles. When no file could be read (a remote PostgreSQL server) the check is
  ``unverified``, never ``pass``;
* ``wrapped-statistics`` (PostgreSQL only): the planner statistics of the wrapped store's tables
  (``pg_stats``: ``most_common_vals``, ``histogram_bounds``, ``most_common_elems``, one query) hold
  none of that text. They are copies of column values written by ``ANALYZE``, which ``VACUUM FULL``
  does not touch (:func:`.physical.scrub` refreshes them). When the last scrub could not rewrite
  ``pg_statistic``'s heap (not a superuser or the database's owner, or an older snapshot was held),
  dead tuples of that catalog may still hold the old values: ``unverified`` unless a value was found;
* ``wrapped-wal-backups`` (file-backed stores only): always ``unverified``. The wrapped store keeps
  its values in plaintext (memsteward's own store is sealed under destroyable keys; LangGraph's
  tables are not), so PostgreSQL's WAL segments, WAL archive, streaming replicas, base backups and
  ``pg_dump`` files — or any copy of a ``SqliteStore`` file — keep a deleted row for as long as they
  are kept. Nothing here reads them (docs/langgraph.md says what to do about them).

The needles (:func:`erased_needles`) are the windows of the erased strings (:func:`memsteward.shred.
deepscan.windows`, no budget), in their UTF-8 and JSON-escaped forms, minus the windows that also
occur in what the event kept (the republished successors, a corrected root's new value): text the
repair kept is not evidence. They are taken from the content before the event erased it and kept by
the adapter in memory (``GovernedStore.fingerprints``): the store keeps only digests. An attestation
asked of an event this process did not run gets ``ok: false`` for the value, file and statistics checks, saying why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langgraph.store.base.embed import get_text_at_path, tokenize_path

from ...repair.attestation import attest as store_attest
from ...shred.deepscan import ByteMatcher, Needles, build_needles, scan_file
from .physical import files, is_postgres, raw_items, statistics, vector_rows

if TYPE_CHECKING:
    from .store import GovernedStore

__all__ = ["RESIDUE", "attest", "erased_needles", "stale_vectors"]

RESIDUE = {
    "postgresql": ("not read: the server's WAL segments (pg_wal), any WAL archive, streaming replicas, base "
                   "backups and pg_dump files of this database keep the deleted rows in plaintext (LangGraph's "
                   "tables are not sealed) until they are recycled, expired or deleted"),
    "sqlite": ("not read: copies of the SQLite file (backups, snapshots, replicas) keep the deleted rows in "
               "plaintext until they are deleted"),
}
"""What the wrapped store's erasure cannot reach and this attestation does not read, by backend."""


def _check(name: str, ok: bool, detail: str, looked: bool = True) -> dict[str, Any]:
    """One check, in the shape of :func:`memsteward.attest`'s (``check``, ``ok``, ``status``, ``detail``):
    a check that could not look is ``unverified`` (``ok`` stays true), never ``pass``."""
    status = ("pass" if looked else "unverified") if ok else "fail"
    return {"check": name, "ok": ok, "status": status, "detail": detail}


def erased_needles(erased: Mapping[str, Any], kept: Sequence[Any]) -> Needles:
    """The needles of ``erased`` (label → erased content; a content that joins governed strings with
    newlines is also split into them, as the wrapped value holds them apart) minus the windows
    that also occur in the ``kept`` contents (see the module docstring)."""
    parts: dict[str, Any] = {}
    for label, content in erased.items():
        parts[label] = content
        if isinstance(content, str) and "\n" in content:
            parts.update({f"{label}#{k}": p for k, p in enumerate(content.split("\n"))})
    return build_needles(parts, kept)


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


def _backend(inner: Any) -> str | None:
    """``"postgresql"``, ``"sqlite"`` (a file) or None (nothing of the store is on disk here)."""
    if is_postgres(inner):
        return "postgresql"
    return "sqlite" if files(inner, checkpoint=False) else None


def _values_check(gs: GovernedStore, needles: Needles, matcher: ByteMatcher | None) -> dict[str, Any]:
    """``wrapped-values``: every value read around the adapter, matched in one pass."""
    texts = [json.dumps(it.value, ensure_ascii=False).encode("utf-8") for it in raw_items(gs.inner)]
    found: set[bytes] = set()
    if texts and matcher is not None:
        matcher.find(memoryview(b"\n".join(texts)), found)
    return _check("wrapped-values", not found, f"{len(texts)} values read around the adapter; {len(found)} of "
                  f"{len(needles.words)} needles of the erased text found")


def _files_check(gs: GovernedStore, eid: int, needles: Needles, matcher: ByteMatcher | None,
                 backend: str | None) -> dict[str, Any]:
    """``wrapped-files``: each of the wrapped store's files read once (no CHECKPOINT when a clean
    ``VACUUM FULL`` ran after this event: :func:`.physical.files`)."""
    if backend is None:
        return _check("wrapped-files", True, "in-memory store: no file holds its values")
    fresh = gs.clean_through is not None and gs.clean_through >= eid
    paths = files(gs.inner, checkpoint=not fresh)
    if not paths:
        return _check("wrapped-files", True, "the server's data directory is not readable by this process: "
                      "the relation files were not scanned", looked=False)
    scanned = [scan_file(p, needles, matcher) for p in paths]
    hits = sum(n for f in scanned for n in f["found"].values())
    detail = f"{len(paths)} file(s) scanned ({sum(f['bytes'] for f in scanned)} bytes); {hits} needle hit(s)"
    held = gs.last_scrub.get("held_by")
    if hits and held:
        detail += (f"; VACUUM FULL had to keep deleted rows: {len(held)} session(s) of the database (pid "
                   f"{', '.join(map(str, held[:5]))}; 0: a replication slot) held a snapshot older than the "
                   "deletes; once they end, scrub() and attest again")
    return _check("wrapped-files", hits == 0, detail)


def _statistics_check(gs: GovernedStore, needles: Needles, matcher: ByteMatcher | None) -> dict[str, Any]:
    """``wrapped-statistics``: the value arrays of ``pg_stats`` for the wrapped tables, matched in one pass."""
    columns, text = statistics(gs.inner)
    found: set[bytes] = set()
    if text and matcher is not None:
        matcher.find(memoryview(text), found)
    detail = f"{columns} column(s) with planner statistics read; {len(found)} of {len(needles.words)} needles found"
    stats = gs.last_scrub.get("statistics") or {}
    if found and stats.get("skipped"):
        detail += (f"; ANALYZE of {', '.join(stats['skipped'])} was skipped: only the table's owner or a superuser "
                   "may refresh its statistics")
    if found and stats.get("stale"):
        detail += (f"; the statistics of the empty table(s) {', '.join(stats['stale'])} were kept: ANALYZE writes "
                   "none from no rows and deleting them from pg_statistic needs a superuser")
    if found and not stats:
        detail += "; the statistics were not refreshed after the event (no PostgreSQL scrub ran)"
    rewritten = stats.get("catalog_rewritten") and not gs.last_scrub.get("held_by")
    if found or rewritten:
        return _check("wrapped-statistics", not found, detail)
    why = ("VACUUM FULL pg_catalog.pg_statistic did not run or was skipped (it needs a superuser or the "
           "database's owner)" if not gs.last_scrub.get("held_by") else
           "an older snapshot was held, so VACUUM FULL pg_catalog.pg_statistic kept its recently dead tuples")
    return _check("wrapped-statistics", True, f"{detail}; {why}: dead tuples in pg_statistic's file may still "
                  "hold the statistics computed before the event, until that catalog is vacuumed", looked=False)


def attest(gs: GovernedStore, event_id: int | None = None, needles: Needles | None = None) -> dict[str, Any]:
    """memsteward's attestation of the event plus the wrapped-store checks; ``ok`` is all of them
    (``unverified`` checks do not fail it, and are listed under ``unverified``)."""
    out = store_attest(gs.store, event_id)
    eid = out["event"]["id"]
    found = needles if needles is not None else gs.fingerprints.get(eid)
    backend = _backend(gs.inner)
    checks = []
    if found is None:
        why = "the erased content's fingerprints are not known to this process (the event ran elsewhere)"
        names = ("wrapped-values", "wrapped-files") + (("wrapped-statistics",) if backend == "postgresql" else ())
        checks += [_check(n, False, why) for n in names]
    else:
        matcher = ByteMatcher(found.words) if found.words else None  # built once for values, files, statistics
        checks += [_values_check(gs, found, matcher), _files_check(gs, eid, found, matcher, backend)]
        if backend == "postgresql":
            checks.append(_statistics_check(gs, found, matcher))
    stale = stale_vectors(gs)
    checks.append(_check("wrapped-vectors", not stale, f"{len(stale)} stale vector(s)"))
    if backend is not None:
        checks.append(_check("wrapped-wal-backups", True, RESIDUE[backend], looked=False))
    out["checks"] = list(out["checks"]) + checks
    out["ok"] = all(c["ok"] for c in out["checks"])
    out["unverified"] = [c["check"] for c in out["checks"] if c.get("status") == "unverified"]
    return out
