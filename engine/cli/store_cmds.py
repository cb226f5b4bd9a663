"""`memsteward store import|put|export|serve|log|copy|migrate|tenants`: the provenance store (MemoRepair §2.1)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import click

from ..errors import InputError
from ..jsonio import parse_json, read_text, source_name
from ..redaction import shown_location
from ..repair.artifacts import parse_store_document, read_json
from ..repair.writes import MAX_CONTENT_BYTES, parse_put
from ..store.api import Storage
from ..store.connection import is_postgres_url
from ..store.opening import list_tenants, open_store
from .common import emit_json, emit_json_stream, handle_errors, progress_flag, step_progress, terminal
from .paths import check_store


@click.group("store")
def store_group() -> None:
    """Create, inspect, export and copy a memsteward store (SQLite file, postgresql://… URL, or a .json export read into memory)."""


@store_group.command("import")
@click.option("--store", "store_path", required=True, help="SQLite store file or postgresql://…[?schema=NAME] (created if missing).")
@click.argument("document", type=click.Path(allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="Report what was imported as JSON.")
@handle_errors
def import_cmd(store_path: str, document: str, as_json: bool) -> None:
    """Add the artifacts and edges of a JSON DOCUMENT to the store (all or nothing)."""
    if store_path.endswith(".json"):
        raise InputError("import needs a SQLite store path, not a .json file", file=store_path)
    doc, text = read_json(document)
    snap = parse_store_document(doc, source_name(document), text)
    with new_file_kept_on_success(store_path) as opened:
        store = open_store(store_path, create=True)
        opened.append(store)
        store.import_snapshot(snap, file=source_name(document))
    if as_json:
        emit_json({"store": shown_location(store_path), "document": document, "artifacts": len(snap.artifacts),
                   "edges": len(snap.edges)})
    else:
        click.echo(f"imported {len(snap.artifacts)} artifacts and {len(snap.edges)} edges into {shown_location(store_path)}")


@contextmanager
def new_file_kept_on_success(store_path: str) -> Iterator[list[Storage]]:
    """A SQLite store file that the block creates is removed again (with its -wal/-shm/-journal
    files, and the key file beside it when the block made that too) when the block fails: a refused first write leaves no empty store behind. An existing
    store, a server URL or ``:memory:`` is left as it is. The block appends the store it opens to the
    list it is given, which is closed before its files are removed."""
    path = store_path[len("sqlite:///"):] if store_path.startswith("sqlite:///") else store_path
    fresh = path not in ("", ":memory:") and not is_postgres_url(path) and not os.path.lexists(path)
    keys = f"{path}.keys"  # the key file a new store makes beside it (memsteward.shred.keystores)
    files = [path] + ([] if os.path.lexists(keys) else [keys])
    opened: list[Storage] = []
    try:
        yield opened
    except BaseException:
        if fresh:
            for store in opened:
                store.close()
            for name in (f"{f}{end}" for f in files for end in ("", "-wal", "-shm", "-journal")):
                with suppress(FileNotFoundError):
                    os.unlink(name)
        raise


PUT_MAX_BYTES = 4 * MAX_CONTENT_BYTES
"""Limit on a put document (content and meta are limited to MAX_CONTENT_BYTES of canonical JSON)."""


def _read_put(document: str) -> str:
    return read_text(document, PUT_MAX_BYTES, "JSON file")  # "-": stdin


@store_group.command("put")
@click.option("--store", "store_path", required=True, help="SQLite store file or postgresql://…[?schema=NAME] (created if missing).")
@click.argument("document", default="-", type=click.Path(allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="Report the recorded artifact as JSON.")
@handle_errors
def put_cmd(store_path: str, document: str, as_json: bool) -> None:
    """Record ONE artifact from a JSON DOCUMENT (default: stdin) with its provenance.

    The document is {"id", "kind", "arch"?, "content", "meta"?, "inputs"?: [ids], "semantic"?: [ids]}.
    A new id gets version 1, a servable id a new version. Exit 2 when the write is refused: an
    input is withdrawn, staged or erased (write fencing), the content was erased by a delete
    (tombstone), an event is unfinished, or the document is bad; the store is then unchanged
    except for an audited `refuse` row.
    """
    if store_path.endswith(".json"):
        raise InputError("put needs a SQLite store path, not a .json file", file=store_path)
    name = "<stdin>" if document == "-" else document
    write = parse_put(parse_json(_read_put(document), name), name)
    with new_file_kept_on_success(store_path) as opened:
        store = open_store(store_path, create=True)
        opened.append(store)
        art = store.record_many([write])[0]
    if as_json:
        emit_json({"store": shown_location(store_path), "id": art.id, "kind": art.kind, "version": art.version,
                   "inputs": list(write.inputs), "semantic": list(write.semantic), "sha256": write.digest})
    else:
        click.echo(f"recorded {art.id!r} v{art.version} ({len(write.inputs)} inputs, "
                   f"{len(write.semantic)} semantic links) in {shown_location(store_path)}")


@store_group.command("export")
@click.option("--store", "store_path", required=True, help="SQLite store file or postgresql://…[?schema=NAME].")
@click.option("--output", "-o", type=click.Path(), default=None, help="Write here instead of stdout.")
@progress_flag("the rows written")
@handle_errors
def export_cmd(store_path: str, output: str | None, progress: bool | None) -> None:
    """Print the store as the JSON exchange document (current versions and states) of one state of
    the store, written as it is read: memory stays flat however large the store. A failure midway
    exits non-zero with the document incomplete on stdout, or the --output file emptied."""
    store = open_store(store_path)
    with store.read_snapshot(), step_progress(progress, "export", "row") as report:  # artifacts and edges of one state
        doc = store.export_stream()
        if report is not None:
            rows = store.row_counts(("artifacts", "edges"))
            total = rows["artifacts"] + rows["edges"]
            doc = {"artifacts": _counted(doc["artifacts"], report, total, 0),
                   "edges": _counted(doc["edges"], report, total, rows["artifacts"])}
        emit_json_stream(doc, output)


def _counted(rows: Iterator[Any], report: Callable[[int, int], None], total: int, offset: int) -> Iterator[Any]:
    """``rows``, calling ``report(done, total)`` every 10,000 rows and at the end (done counted from ``offset``)."""
    done = offset
    for done, row in enumerate(rows, offset + 1):
        if done % 10_000 == 0:
            report(done, total)
        yield row
    report(done, total)


@store_group.command("serve")
@click.option("--store", "store_path", required=True, help="SQLite store file or postgresql://…[?schema=NAME].")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def serve_cmd(store_path: str, as_json: bool) -> None:
    """List what retrieval may serve: servable and republished artifacts only."""
    arts = open_store(store_path).serve_stream()
    if as_json:
        emit_json_stream(a.as_dict() for a in arts)
        return
    for a in arts:
        arch = f"/{a.arch}" if a.arch else ""
        click.echo(terminal(f"{a.id:<24} {a.kind}{arch:<8} v{a.version:<3} {a.state}"))


@store_group.command("log")
@click.option("--store", "store_path", required=True, help="SQLite store file or postgresql://…[?schema=NAME].")
@click.option("--json", "as_json", is_flag=True)
@handle_errors
def audit_cmd(store_path: str, as_json: bool) -> None:
    """Print the raw, hash-chained audit log (`memsteward audit` gives the attestation)."""
    log = open_store(store_path).audit_log_stream()
    if as_json:
        emit_json_stream(log)
        return
    for r in log:
        click.echo(terminal(f"{r['seq']:>6} {r['at']} event={r['event_id']} {r['action']:<10} {r['artifact_id'] or ''}"))


def _verified_head(store: Storage, where: str) -> tuple[int, str] | None:
    """The audit chain of ``store`` verified against its recorded head, or InputError naming the row."""
    from ..repair.auditchain import first_broken

    head = store.audit_head()
    broken = first_broken(store.audit_rows(), head)
    if broken is not None:
        raise InputError(f"{where} audit chain broken at row {broken[0]}: {broken[1]}", file=store.path,
                         field=f"audit[{broken[0]}]")
    return head


@store_group.command("copy")
@click.argument("src")
@click.argument("dst")
@click.option("--json", "as_json", is_flag=True, help="Report the copy (row counts, audit head) as JSON.")
@progress_flag("the rows copied")
@handle_errors
def copy_cmd(src: str, dst: str, as_json: bool, progress: bool | None) -> None:
    """Copy the store SRC into the new, empty store DST, between backends (SQLite file ⇄
    postgresql://…?schema=…). Every row is kept (versions, states, events, plan steps, audit log,
    tombstones) in one DST transaction; the audit chain is verified on SRC before and on DST after,
    and both must end at the same head. A broken chain or a non-empty DST: exit 2, DST unchanged."""
    source = open_store(src)
    with source.read_snapshot():  # the checks and every copied table see one state of the source
        if source.unfinished_event() is not None:
            raise InputError("the source has an unfinished event; run `memsteward recover` first",
                             file=source.path)
        head = _verified_head(source, "source")
        target = open_store(dst, create=True)
        with step_progress(progress, "copy", "row") as report:
            counts = source.copy_into(target, progress=report)
    copied = _verified_head(target, "copied")
    if copied != head:
        raise InputError(f"the copy ends at audit head {copied} but the source at {head}", file=target.path)
    doc = {"src": source.path, "dst": target.path, "rows": counts,
           "audit_head": None if head is None else {"seq": head[0], "hash": head[1]}}
    if as_json:
        emit_json(doc)
    else:
        click.echo(terminal(f"copied {counts['artifacts']} artifacts, {counts['versions']} versions and "
                            f"{counts['audit']} audit rows from {source.path} to {target.path}; audit chain "
                            f"verified on both sides (head {'-' if head is None else head[0]})"))


@store_group.command("migrate")
@click.option("--store", "store_path", default=None, help="SQLite store file or postgresql://…[?schema=NAME].")
@click.argument("legacy_store", metavar="[STORE]", required=False)
@click.option("--json", "as_json", is_flag=True, help="Report the schema versions (from, to) as JSON.")
@click.option("--encrypt", is_flag=True,
              help="Then seal every plaintext version in place (resumable) and end with the deep scan "
                   "(docs/erasure.md).")
@handle_errors
def migrate_cmd(store_path: str | None, legacy_store: str | None, as_json: bool, encrypt: bool) -> None:
    """Bring the store (SQLite file or postgresql://…?schema=…) written by an older release to this
    release's schema version, in one transaction under the store's write lock. Every other command
    refuses an older store (exit 2, nothing changed) and names this one. Already current: exit 0.
    The positional STORE is the deprecated spelling of --store (kept for scripts; it says so)."""
    from ..store.schema import SCHEMA_VERSION

    if (store_path is None) == (legacy_store is None):
        raise click.UsageError("give the store as --store STORE")
    if store_path is None:
        assert legacy_store is not None
        check_store(legacy_store)
        click.echo("memsteward: `store migrate STORE` is deprecated; write `store migrate --store STORE`",
                   err=True)
        store_path = legacy_store

    if store_path.endswith(".json"):
        raise InputError("a .json export has no schema version: import it with `memsteward store import`",
                         file=store_path)
    store = open_store(store_path, migrate=True)
    done = store.migrated
    doc: dict[str, Any] = {"store": store.path, "from": SCHEMA_VERSION if done is None else done[0],
                           "to": SCHEMA_VERSION, "migrated": done is not None}
    if encrypt:
        try:
            doc["encrypt"] = store.encrypt_in_place()
        finally:
            store.close()
        _report_encrypt(doc, as_json)
        return
    store.close()
    if as_json:
        emit_json(doc)
    elif done is None:
        click.echo(terminal(f"{doc['store']} is already at schema version {SCHEMA_VERSION}"))
    else:
        click.echo(terminal(f"migrated {doc['store']} from schema version {done[0]} to {done[1]}"))


@store_group.command("tenants")
@click.option("--store", "store_path", required=True,
              help="The base store: SQLite store file or postgresql://…[?schema=NAME] (without ?tenant=).")
@click.option("--json", "as_json", is_flag=True, help="The tenant names as a JSON list.")
@handle_errors
def tenants_cmd(store_path: str, as_json: bool) -> None:
    """List the tenants that have a store beside the base store (each its own provenance, event lock
    and audit chain; open one with `--store URL?tenant=NAME`)."""
    names = list_tenants(store_path)
    if as_json:
        emit_json(names)
        return
    for name in names:
        click.echo(name)


def _report_encrypt(doc: dict[str, Any], as_json: bool) -> None:
    """`store migrate --encrypt`'s outcome; exit 1 when the closing scan found plaintext."""
    enc = doc["encrypt"]
    if as_json:
        emit_json(doc)
    else:
        scan = enc["scan"]
        where = ("not scanned (a PostgreSQL server's files are not readable from a client)" if scan is None else
                 f"deep scan of {len(scan['files'])} files: " + ("no plaintext found" if scan["clean"] else
                                                                 "PLAINTEXT FOUND in " + ", ".join(
                                                                     f["file"] for f in scan["files"] if f["found"])))
        click.echo(terminal(f"{doc['store']}: sealed {enc['sealed_now']} versions; {where}; {enc['note']}"))
    if not enc["clean"]:
        raise SystemExit(1)


@store_group.command("rotate-key")
@click.option("--store", "store_path", required=True, help="SQLite store file or postgresql://…[?schema=NAME].")
@click.option("--new-key-file", required=True, type=click.Path(dir_okay=False),
              help="The new master key (base64 or hex of 32 bytes; mode 0600).")
@click.option("--json", "as_json", is_flag=True)
@handle_errors
def rotate_key_cmd(store_path: str, new_key_file: str, as_json: bool) -> None:
    """Rewrap every data key of the store (and its index key) under the master key in --new-key-file,
    without touching the data. The current master key must open the key store (exit 2 otherwise,
    nothing changed). Afterwards set MEMSTEWARD_MASTER_KEY_FILE to the new file for this store."""
    from ..shred.master import read_key_file

    new = read_key_file(new_key_file)
    store = open_store(store_path)
    try:
        doc = store.rotate_key(new)
    finally:
        store.close()
    if as_json:
        emit_json(doc)
    else:
        click.echo(terminal(f"{doc['store']}: {doc['rewrapped']} data keys rewrapped under master key {doc['kid']}"))
