"""`memsteward audit`: the deletion attestation and the audit log's hash chain."""

from __future__ import annotations

import sys
from typing import Any

import click

from ..errors import EXIT_FINDINGS
from ..redaction import shown_location
from .common import emit_json, handle_errors, terminal

UNPROVEN_NOTE = ("integrity against a file writer: NOT PROVEN (unverified) — without MEMSTEWARD_AUDIT_KEY, whoever can "
                 "write the database can rewrite rows and recompute every hash; set the key every writer uses, "
                 "and/or keep the head outside the store and pass it back with --expect-head")
LEGACY_SEAL_NOTE = ("the head is signed in seal format 1 (before this release), which does not bind the store id or "
                    "tenant: another store's log signed under the same key would pass until the next keyed write "
                    "re-seals the head in format 2")


def integrity_claim(signed: bool, anchored: bool) -> str:
    """What a passing ``audit --check`` proves against someone who can write the database file:
    ``verified`` with the signing key (every append is sealed; a rechained log fails), ``anchored``
    with only --expect-head (rows up to that head are proven; later ones are not), else
    ``unverified`` (the hashes are consistent, which a file writer can always arrange)."""
    return "verified" if signed else "anchored" if anchored else "unverified"


@click.command()
@click.option("--store", "store_path", required=True, type=click.Path(dir_okay=False),
              help="SQLite store or postgresql://…[?schema=NAME] (the audit log lives there).")
@click.option("--event", "event_id", type=click.IntRange(1, 2**63 - 1), default=None, help="Event id (default: the latest event).")
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--check", "check_chain", is_flag=True, help="Only verify the audit log's hash chain.")
@click.option("--expect-head", default=None, metavar="SHA256",
              help="A head hash published earlier (e.g. from an attestation): the log must still contain it.")
@click.option("--deep", is_flag=True, help="Scan the store's files (and --backup files) once each for erased text "
                                           "that is not also retained, and for erased versions that still decrypt.")
@click.option("--backup", "backups", multiple=True, type=click.Path(dir_okay=False),
              help="With --deep: a backup to check (SQLite copy or pg_dump plain dump); repeatable.")
@click.option("--text", "texts", multiple=True, help="With --deep: erased text to look for (a marker); repeatable.")
@handle_errors
def audit(store_path: str, event_id: int | None, fmt: str, as_json: bool, check_chain: bool,
          expect_head: str | None, deep: bool, backups: tuple[str, ...], texts: tuple[str, ...]) -> None:
    """Attest what an event did: barrier, withdrawn cascade, republished successors and the
    support they were built from, failures, the roots' erasure, and checks anyone can re-run.

    With --check, verify the hash chain over the whole audit log and name the first row that
    was altered, inserted, deleted or truncated, and check every stored event, policy and plan
    against the digests its chained rows pin. With MEMSTEWARD_AUDIT_KEY set (the key every writer
    used), the signed audit head must verify too, so appended, rewritten or reordered rows are
    detected without --expect-head. Whoever can rewrite the database can recompute
    every hash, so keep the attestation's audit head somewhere else and pass it back with
    --expect-head to prove the log was not rewritten since. Exit 0 when everything holds, 1 when a check fails,
    2 when the store or event does not exist.
    """
    from ..repair.attestation import attest, check_records, render_markdown
    from ..repair.auditchain import first_broken, seal_format, signing_key
    from ..store.opening import open_store

    fmt = "json" if as_json else fmt
    store = open_store(store_path)
    if deep:
        _deep(store, store_path, list(backups), list(texts), fmt)
        return
    if check_chain:
        rows = store.audit_rows()
        key = signing_key()
        stored_seal = store.audit_seal()
        broken = first_broken(rows, store.audit_head(), expect_head, stored_seal, key, store.audit_binding())
        records = check_records(store) if broken is None else None
        ok = broken is None and records is None
        if fmt == "json":
            emit_json({"store": shown_location(store_path), "rows": len(rows), "ok": ok, "signed": key is not None,
                       "integrity": integrity_claim(key is not None, expect_head is not None),
                       "seal_format": seal_format(stored_seal),
                       "head": rows[-1][6] if rows else None,
                       "first_broken": None if broken is None else {"seq": broken[0], "reason": broken[1]},
                       "records": None if records is None else {"event": records[0], "reason": records[1]}})
        elif broken is not None:
            click.echo(f"{terminal(shown_location(store_path))}: audit chain BROKEN at row {broken[0]}: {broken[1]}")
        elif records is not None:
            click.echo(f"{terminal(shown_location(store_path))}: event {records[0]}: {records[1]}")
        else:
            click.echo(f"{terminal(shown_location(store_path))}: audit chain intact ({len(rows)} rows, head "
                       f"{rows[-1][6][:16] if rows else '-'}…{', signature verified' if key else ''}"
                       f"{', anchored to --expect-head' if expect_head else ''}); "
                       "every event, policy and plan matches its pinned digest")
            if key is None:
                click.echo(UNPROVEN_NOTE)
            elif seal_format(stored_seal) == 1:
                click.echo(LEGACY_SEAL_NOTE)
        sys.exit(0 if ok else EXIT_FINDINGS)
    attestation = attest(store, event_id, expect_head)
    if fmt == "json":
        emit_json(attestation)
    else:
        click.echo(render_markdown(attestation), nl=False)
    sys.exit(0 if attestation["ok"] else EXIT_FINDINGS)


def _deep(store: Any, store_path: str, backups: list[str], texts: list[str], fmt: str) -> None:
    """`audit --deep`: memsteward.store.deep_audit; exit 1 when anything erased is found."""
    report = store.deep_audit(backups, texts)
    if fmt == "json":
        emit_json(report)
    else:
        scan = report["scan"]
        for f in scan["files"]:
            found = ", ".join(f"{label}: {n}" for label, n in f["found"].items())
            click.echo(terminal(f"{f['file']}: {f['bytes']} bytes, " + (f"ERASED TEXT FOUND ({found})" if found
                                                                        else "clean")))
        for d in report["decryptable"]:
            click.echo(terminal(f"{d['backup']}: erased version {d['id']} v{d['version']} STILL DECRYPTS"))
        click.echo(terminal(f"{store_path}: deep audit {'clean' if report['clean'] else 'FAILED'} "
                            f"({report['erased_versions']} erased versions, {scan['needles']} needles, "
                            f"{scan['retained_windows']} windows left out as retained)"))
    if not report["clean"]:
        sys.exit(EXIT_FINDINGS)
