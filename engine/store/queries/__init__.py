"""Every statement the SQL store runs, by name, once per dialect (no translation between them).

:class:`Queries` names the statements; :data:`~memsteward.store.queries.sqlite.SQLITE` and
:data:`~memsteward.store.queries.postgres.POSTGRES` each give all of them in their backend's own
spelling (SQLite: ``?`` placeholders, ``json_each``, ``INSERT OR IGNORE``; PostgreSQL: ``%s``,
``json_array_elements_text``, ``ON CONFLICT DO NOTHING``). The driver picks one
(:attr:`~memsteward.store.driver.Driver.queries`); a statement missing from a dialect is an error when
the module is imported (every field is required), not when the PostgreSQL tests happen to run.

A JSON array parameter (``ids``) is read as rows of ``value``: the store passes ids as one parameter
whatever their number, so a statement's text never depends on its arguments. The statements of the
store's tables that :meth:`~memsteward.store.transfer.Transfer.copy_into` copies are per table
(:data:`TABLES`), written out in full in each dialect.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ARTIFACT_COLUMNS", "AUDIT_COLUMNS", "SHINGLE_COLUMNS", "TABLES", "VERSION_COLUMNS",
           "WRITTEN_VERSION_COLUMNS", "Queries"]

TABLES = ("artifacts", "versions", "edges", "policies", "events", "plan_steps", "audit", "audit_head", "tombstones",
          "shingles")
"""The tables a copy reads and writes, in that order (parents before the rows that name them)."""

# The columns the core's bulk inserts write (:meth:`~memsteward.store.driver.Driver.bulk_insert`: new
# rows of one table, named the same in both dialects; the driver writes the statement, or the COPY)
AUDIT_COLUMNS = ("seq", "at", "event_id", "action", "artifact_id", "detail", "hash")
ARTIFACT_COLUMNS = ("id", "kind", "arch", "version", "state")
VERSION_COLUMNS = ("id", "version", "content", "meta", "erased", "sha256")
WRITTEN_VERSION_COLUMNS = (*VERSION_COLUMNS, "dek")  # the write path's: the pooled key each version names
SHINGLE_COLUMNS = ("h", "id")


@dataclass(frozen=True)
class Queries:
    """The SQL store's statements in one dialect. Names say what a statement does; ``None``: the
    dialect has no such step (the core skips it)."""

    # the audit chain (memsteward.store.audit)
    audit_tail: str
    insert_withdrawals_part: str | None  # SQLite: one part of a barrier's withdraw rows by INSERT … SELECT
    upsert_audit_head: str
    audit_head: str
    audit_head_sealed: str
    reseal_head: str
    audit_seal: str
    audit_rows_from: str
    audit_rows: str
    audit_log: str
    audit_log_of_event: str  # audit_log's rows of one event
    generation: str
    audit_changed_since: str
    audit_since: str  # (action, artifact_id, detail) of the rows after a seq, at most n
    erase_rows_of_event: str
    physical_row: str
    pending_physical: str
    dump_audit: str
    # reads (memsteward.store.reads)
    current_all: str
    current_servable: str
    current_one: str
    artifacts_of: str
    artifacts_of_no_content: str
    unservable_of: str
    last_with_prefix: str
    ids_with_prefix: str
    version_of: str
    states: str
    versions_of: str
    versions_held: str  # (id, version, erased, content kept) of every version of a list of ids
    is_erased: str
    version_count: str
    servable: str
    event_by_id: str
    event_latest: str
    event_ids: str
    artifacts_named: str
    artifact_ids: str
    # planning reads and the lineage index (memsteward.store.planning)
    reach_recursive: str
    reach_level: str
    parent_edges: str
    shingle_candidates: str
    posting: str
    posting_limited: str
    delete_shingles: str
    insert_shingles: str
    reindex_versions: str
    # leases (memsteward.store.leases)
    upsert_lease: str
    event_status: str
    lease_of: str
    lease_running: str
    lease_check: str
    lease_owner: str
    delete_lease: str
    # erasure (memsteward.store.erasure)
    erasable_versions: str
    version_deks: str  # (id, version, dek) of the ids' versions sealed under pooled keys
    named_deks: str  # which of the pooled key ids (a JSON array) a version names (erased ones included)
    erase_version: str
    erase_versions: str | None  # PostgreSQL: every erased version in one UPDATE (SQLite: None, erase_version per row)
    insert_tombstones: str
    tombstones_of_digests: str
    insert_erasing_digests: str  # (event, id, version, digest): a barrier's normalised digests (schema 10)
    erasing_digests_of: str  # (id, version, digest) the event's barrier recorded
    delete_erasing_digests: str
    erased_versions: str
    erased_version_ids: str
    all_tombstones: str
    has_tombstones: str
    tombstones_of: str
    # sealing and encryption at rest (memsteward.store.sealing, .encryption, .deep_audit)
    store_sealed: str
    store_id: str
    insert_store_keys: str
    set_store_keys: str
    set_sealed: str
    mark_sealed: str
    count_plaintext: str
    plaintext_batch: str
    reseal_version: str
    retained_versions: str
    # import and the write path (memsteward.store.transfer, .writepath)
    upsert_artifacts: str
    insert_edges: str
    edges_all: str
    known_artifacts: str
    live_event: str
    pending_dead_versions: str
    # the repair log (memsteward.store.repairlog)
    unfinished_event: str
    max_versions: str
    insert_policy: str
    insert_event: str
    withdraw: str
    max_version: str
    insert_version: str
    set_staged_version: str
    event_versions: str
    staged_version: str
    plan_steps_of: str
    event_plan: str
    record_step_version: str
    record_step_report: str
    set_state_staged: str
    set_state_withdrawn: str
    republish: str
    current_version_content: str
    set_state_erased: str
    withdraw_unpublished: str
    close_event: str
    # copy and counts, per table of TABLES (memsteward.store.transfer)
    select_all: Mapping[str, str]
    insert_row: Mapping[str, str]
    count_rows: Mapping[str, str]
    restart_event_ids: str | None  # after a copy: the next event id follows the copied ones
