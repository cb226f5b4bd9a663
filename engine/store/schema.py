"""The store's tables, per backend, and the steps that migrate an older store (``store migrate``).

Both backends hold the same tables with the same columns in the same order (``SELECT *`` rows
compare across backends); PostgreSQL's text columns use collation "C", so ids order as in SQLite.
Each backend's migrations are one list (:data:`SQLITE_MIGRATIONS`, :data:`PG_MIGRATIONS`): the step at
position v − 1 takes a store from schema version v to v + 1 (the position is the version).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..errors import InputError
from ..repair.lineage import index_hashes

__all__ = ["CORE_TABLES", "PG_MIGRATIONS", "SQLITE_MIGRATIONS", "Migration", "PG_SCHEMA", "PG_TABLES", "SCHEMA_VERSION", "SQLITE_SCHEMA", "check_version"]

# Schema versions (``memsteward store migrate`` brings an older store to SCHEMA_VERSION):
#   1  every store written before versioning (SQLite: no ``memsteward_schema`` table; PostgreSQL: version 1)
#   2  ``event_lease.session``: the holder's PostgreSQL session (backend pid and start), so a lease held by
#      a dead process on another host is recognised; SQLite gains the ``memsteward_schema`` table.
#   3  ``shingles``: the lineage index (word-trigram hashes of every current content, see
#      memsteward.repair.lineage), filled by the migration from the stored contents.
#   4  ``events.plan`` may hold a plan in its packed form (memsteward.store.planstore), which a release of
#      version 3 would misread; no table changes, and the plans stored before stay as they are (their
#      SHA-256 pins in the audit log name that text), so the migration only records the version.
#   5  ``edges_parents`` ON edges(dst, type, src) replaces ``edges_dst`` ON edges(dst): the influence parents
#      of a set of ids are read from the index alone (no table row per edge), each id's parents in src order
#      (planning at 10^6 artifacts: 0.48 → 0.29 s for the 3.3·10^5 parent edges of a 30 % migration).
#   6  ``store_keys``: the store's id (bound into every ciphertext's associated data) and whether every version
#      is sealed. Content and meta are encrypted at rest under per-version DEKs kept in a key store apart from
#      the data (memsteward.shred); a release of version 5 would serve ciphertext, so it must refuse the store.
#      The migration adds the table; existing rows stay plaintext until `memsteward store migrate --encrypt`.
#   7  ``policies``: each policy document an event ran under, stored once by its SHA-256 (the digest the
#      barrier's audit row pins); ``events.policy`` holds that digest, not the document (issue 25: a policy
#      expanded per event grew the store by the policy's size with every event). The migration adds the
#      table; events recorded before keep their policy inline (readers take either: LEFT JOIN on the digest).
#   8  ``events_unfinished`` ON events(id) WHERE status != 'done': the unfinished event (``recover``, and every
#      write's check for a running event) is found from this partial index, which holds only the events not yet
#      published, instead of a scan of every event (in SQLite a scan that reads each event's plan to reach its status).
#   9  ``versions.dek``: the id of the pooled data key a version was sealed under (memsteward.shred.vault:
#      a write takes a key made ahead instead of committing a new one to the key store, so it waits for
#      one durable commit, not two); NULL: the version's own key, ref (id, version), as before. The
#      column stays when the version is erased: erasure destroys the key by it, and the audit checks it
#      is gone. The migration adds the column (existing rows: NULL).
#  10  ``erasing_digests``: the normalised-text digests (keyed, as ``tombstones`` holds them; never text) of each
#      version a delete / privacy correction will tombstone, written by its barrier (synced) and deleted by its
#      publication, which reads them there when a crash took the versions' keys before its commit (`recover`
#      then writes the tombstones an uninterrupted publication writes); and ``versions_dek`` ON versions(dek),
#      so collecting orphaned pooled keys (``recover``) finds the versions naming them without a scan of
#      every version. The migration adds the table and the index.
# ANY change to a table or column of either schema (a new table included: `CREATE TABLE IF NOT EXISTS`
# reaches new stores only) bumps SCHEMA_VERSION and appends one step to each backend's list; a store
# of an older version is refused (exit 2, nothing changed) until `memsteward store migrate` ran.
SCHEMA_VERSION = 10
CORE_TABLES = frozenset({"artifacts", "versions", "edges", "events", "audit"})  # what makes a database a store

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS artifacts(
  id TEXT PRIMARY KEY, kind TEXT NOT NULL, arch TEXT, version INTEGER NOT NULL,
  state TEXT NOT NULL, staged_version INTEGER);
CREATE TABLE IF NOT EXISTS versions(
  id TEXT NOT NULL, version INTEGER NOT NULL, content TEXT, meta TEXT NOT NULL,
  event_id INTEGER, erased INTEGER NOT NULL DEFAULT 0, sha256 TEXT, dek TEXT, PRIMARY KEY(id, version));
CREATE TABLE IF NOT EXISTS edges(
  src TEXT NOT NULL, dst TEXT NOT NULL, type TEXT NOT NULL, PRIMARY KEY(src, dst, type));
CREATE TABLE IF NOT EXISTS events(
  id INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, event TEXT NOT NULL,
  policy TEXT NOT NULL, plan TEXT NOT NULL, status TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS plan_steps(
  event_id INTEGER NOT NULL, seq INTEGER NOT NULL, artifact_id TEXT NOT NULL, mode TEXT NOT NULL,
  status TEXT NOT NULL, version INTEGER, report TEXT, PRIMARY KEY(event_id, seq));
CREATE TABLE IF NOT EXISTS audit(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, event_id INTEGER, action TEXT NOT NULL,
  artifact_id TEXT, detail TEXT, hash TEXT);
CREATE TABLE IF NOT EXISTS audit_head(
  one INTEGER PRIMARY KEY CHECK (one = 1), seq INTEGER NOT NULL, hash TEXT NOT NULL, seal TEXT);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
  BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
  BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TABLE IF NOT EXISTS tombstones(
  digest TEXT PRIMARY KEY, root TEXT NOT NULL, event_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS event_lease(
  event_id INTEGER PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
  started TEXT, acquired TEXT NOT NULL, session TEXT);
CREATE TABLE IF NOT EXISTS memsteward_schema(one INTEGER PRIMARY KEY CHECK (one = 1), version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS shingles(
  h INTEGER NOT NULL, id TEXT NOT NULL, PRIMARY KEY(h, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_parents ON edges(dst, type, src);
CREATE INDEX IF NOT EXISTS plan_steps_artifact ON plan_steps(event_id, artifact_id);
CREATE INDEX IF NOT EXISTS shingles_id ON shingles(id);
CREATE TABLE IF NOT EXISTS store_keys(one INTEGER PRIMARY KEY CHECK (one = 1), store_id TEXT NOT NULL,
  sealed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS policies(digest TEXT PRIMARY KEY, policy TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS events_unfinished ON events(id) WHERE status != 'done';
CREATE INDEX IF NOT EXISTS versions_dek ON versions(dek);
CREATE TABLE IF NOT EXISTS erasing_digests(
  event_id INTEGER NOT NULL, id TEXT NOT NULL, version INTEGER NOT NULL, digest TEXT NOT NULL,
  PRIMARY KEY(event_id, id, version, digest));
"""

# Same tables, same column order (``SELECT *`` compares across backends), PostgreSQL types.
PG_SCHEMA = """
CREATE TABLE IF NOT EXISTS memsteward_schema(one INTEGER PRIMARY KEY CHECK (one = 1), version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS artifacts(
  id TEXT COLLATE "C" PRIMARY KEY, kind TEXT COLLATE "C" NOT NULL, arch TEXT COLLATE "C", version BIGINT NOT NULL,
  state TEXT COLLATE "C" NOT NULL, staged_version BIGINT);
CREATE TABLE IF NOT EXISTS versions(
  id TEXT COLLATE "C" NOT NULL, version BIGINT NOT NULL, content TEXT, meta TEXT NOT NULL,
  event_id BIGINT, erased INTEGER NOT NULL DEFAULT 0, sha256 TEXT COLLATE "C", dek TEXT COLLATE "C",
  PRIMARY KEY(id, version));
CREATE TABLE IF NOT EXISTS edges(
  src TEXT COLLATE "C" NOT NULL, dst TEXT COLLATE "C" NOT NULL, type TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY(src, dst, type));
CREATE TABLE IF NOT EXISTS events(
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, type TEXT NOT NULL, event TEXT NOT NULL,
  policy TEXT NOT NULL, plan TEXT NOT NULL, status TEXT COLLATE "C" NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS plan_steps(
  event_id BIGINT NOT NULL, seq BIGINT NOT NULL, artifact_id TEXT COLLATE "C" NOT NULL,
  mode TEXT COLLATE "C" NOT NULL, status TEXT COLLATE "C" NOT NULL, version BIGINT, report TEXT,
  PRIMARY KEY(event_id, seq));
CREATE TABLE IF NOT EXISTS audit(
  seq BIGINT PRIMARY KEY, at TEXT NOT NULL, event_id BIGINT, action TEXT COLLATE "C" NOT NULL,
  artifact_id TEXT COLLATE "C", detail TEXT, hash TEXT);
CREATE TABLE IF NOT EXISTS audit_head(
  one INTEGER PRIMARY KEY CHECK (one = 1), seq BIGINT NOT NULL, hash TEXT NOT NULL, seal TEXT);
CREATE OR REPLACE FUNCTION memsteward_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'audit log is append-only'; END $$;
CREATE OR REPLACE TRIGGER audit_no_update BEFORE UPDATE ON audit
  FOR EACH ROW EXECUTE FUNCTION memsteward_audit_append_only();
CREATE OR REPLACE TRIGGER audit_no_delete BEFORE DELETE ON audit
  FOR EACH ROW EXECUTE FUNCTION memsteward_audit_append_only();
CREATE TABLE IF NOT EXISTS tombstones(
  digest TEXT COLLATE "C" PRIMARY KEY, root TEXT COLLATE "C" NOT NULL, event_id BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS event_lease(
  event_id BIGINT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid BIGINT NOT NULL,
  started TEXT, acquired TEXT NOT NULL, session TEXT);
CREATE TABLE IF NOT EXISTS shingles(
  h BIGINT NOT NULL, id TEXT COLLATE "C" NOT NULL, PRIMARY KEY(h, id));
CREATE INDEX IF NOT EXISTS edges_parents ON edges(dst, type, src);
CREATE INDEX IF NOT EXISTS plan_steps_artifact ON plan_steps(event_id, artifact_id);
CREATE INDEX IF NOT EXISTS shingles_id ON shingles(id);
CREATE TABLE IF NOT EXISTS store_keys(one INTEGER PRIMARY KEY CHECK (one = 1), store_id TEXT NOT NULL,
  sealed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS policies(digest TEXT COLLATE "C" PRIMARY KEY, policy TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS events_unfinished ON events(id) WHERE status != 'done';
CREATE INDEX IF NOT EXISTS versions_dek ON versions(dek);
CREATE TABLE IF NOT EXISTS erasing_digests(
  event_id BIGINT NOT NULL, id TEXT COLLATE "C" NOT NULL, version BIGINT NOT NULL, digest TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY(event_id, id, version, digest));
"""
PG_TABLES = frozenset({"memsteward_schema", "artifacts", "versions", "edges", "events", "plan_steps", "audit",
                       "audit_head", "tombstones", "event_lease", "shingles", "store_keys", "policies",
                       "erasing_digests"})

# Columns added after a table first shipped: (table, column, type). SQLite has no ADD COLUMN IF NOT
# EXISTS, so its version-1 step adds those a store lacks (stores from before chaining, signing, digests).
_SQLITE_LATE_COLUMNS = (("audit", "hash", "TEXT"), ("audit_head", "seal", "TEXT"), ("versions", "sha256", "TEXT"),
                        ("event_lease", "session", "TEXT"))


def _sqlite_v1_to_v2(conn: Any) -> str:
    """Tables a version-1 store may lack (it was written by any earlier release), then late columns."""
    present = {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t, _, _ in _SQLITE_LATE_COLUMNS}
    adds = [f"ALTER TABLE {t} ADD COLUMN {c} {k};" for t, c, k in _SQLITE_LATE_COLUMNS if present[t] and c not in present[t]]
    return SQLITE_SCHEMA + "\n".join(adds)


def _pg_v1_to_v2(conn: Any) -> str:
    return "ALTER TABLE event_lease ADD COLUMN IF NOT EXISTS session TEXT"


# every version a store still holds, content and meta, as the write path indexes them (issue 25)
_INDEX_CONTENTS = ("SELECT v.id AS id, '[[' || COALESCE(v.content, 'null') || ',' || v.meta || ']]' AS content FROM versions v "
                   "WHERE v.erased = 0")


def _index_hashes_json(content: str | None) -> str:
    return "[]" if content is None else json.dumps(sorted(index_hashes(json.loads(content))))


def _sqlite_v2_to_v3(conn: Any) -> str:
    """The lineage index, created and filled in SQL: the trigram hashes of each current content come
    from a function registered on this connection (the same :func:`~memsteward.repair.lineage.index_hashes`
    the write path uses)."""
    conn.create_function("memsteward_index_hashes", 1, _index_hashes_json, deterministic=True)
    return ("\nCREATE TABLE IF NOT EXISTS shingles(h INTEGER NOT NULL, id TEXT NOT NULL, PRIMARY KEY(h, id)) WITHOUT ROWID;"
            "CREATE INDEX IF NOT EXISTS shingles_id ON shingles(id); DELETE FROM shingles;"
            "INSERT OR IGNORE INTO shingles(h, id) SELECT j.value, c.id FROM (" + _INDEX_CONTENTS + ") c, "
            "json_each(memsteward_index_hashes(c.content)) j;")


def _pg_v2_to_v3(conn: Any) -> str:
    """The lineage index: created, then filled from the stored contents inside the migration's transaction."""
    conn.execute('CREATE TABLE IF NOT EXISTS shingles(h BIGINT NOT NULL, id TEXT COLLATE "C" NOT NULL, '
                 "PRIMARY KEY(h, id))")
    conn.execute("CREATE INDEX IF NOT EXISTS shingles_id ON shingles(id)")
    conn.execute("DELETE FROM shingles")
    rows = sorted({(h, i) for i, c in conn.execute(_INDEX_CONTENTS) for h in index_hashes(json.loads(c))})
    if rows:
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO shingles(h, id) VALUES (%s, %s)", rows)
    return "SELECT 1"


def _sqlite_v3_to_v4(conn: Any) -> str:
    """Nothing to change: a plain stored plan reads as it is (planstore.read_plan)."""
    return ""


def _pg_v3_to_v4(conn: Any) -> str:
    """Nothing to change: a plain stored plan reads as it is (planstore.read_plan)."""
    return "SELECT 1"


_PARENTS_INDEX = "DROP INDEX IF EXISTS edges_dst; CREATE INDEX IF NOT EXISTS edges_parents ON edges(dst, type, src);"


def _sqlite_v4_to_v5(conn: Any) -> str:
    """The covering parents index replaces the one on ``dst`` alone."""
    return _PARENTS_INDEX


def _pg_v4_to_v5(conn: Any) -> str:
    """The covering parents index replaces the one on ``dst`` alone."""
    return _PARENTS_INDEX


_STORE_KEYS = ("CREATE TABLE IF NOT EXISTS store_keys(one INTEGER PRIMARY KEY CHECK (one = 1), "
               "store_id TEXT NOT NULL, sealed INTEGER NOT NULL)")


def _sqlite_v5_to_v6(conn: Any) -> str:
    """The store id table; the store writes its row (and makes its key store) when it opens."""
    return _STORE_KEYS + ";"


def _pg_v5_to_v6(conn: Any) -> str:
    """The store id table; the store writes its row (and makes its key store) when it opens."""
    return _STORE_KEYS


def _sqlite_v6_to_v7(conn: Any) -> str:
    """The policies table (events recorded before keep their policy inline)."""
    return "CREATE TABLE IF NOT EXISTS policies(digest TEXT PRIMARY KEY, policy TEXT NOT NULL);"


def _pg_v6_to_v7(conn: Any) -> str:
    """The policies table (events recorded before keep their policy inline)."""
    return 'CREATE TABLE IF NOT EXISTS policies(digest TEXT COLLATE "C" PRIMARY KEY, policy TEXT NOT NULL)'


_UNFINISHED_INDEX = "CREATE INDEX IF NOT EXISTS events_unfinished ON events(id) WHERE status != 'done'"


def _sqlite_v7_to_v8(conn: Any) -> str:
    """The partial index of the unfinished events."""
    return _UNFINISHED_INDEX + ";"


def _pg_v7_to_v8(conn: Any) -> str:
    """The partial index of the unfinished events."""
    return _UNFINISHED_INDEX


def _sqlite_v8_to_v9(conn: Any) -> str:
    """The pooled key id of a version (NULL for every existing row: its own key); a store that has it is
    left as it is (SQLite has no ADD COLUMN IF NOT EXISTS)."""
    present = {r[1] for r in conn.execute("PRAGMA table_info(versions)")}
    return "" if "dek" in present else "ALTER TABLE versions ADD COLUMN dek TEXT;"


def _pg_v8_to_v9(conn: Any) -> str:
    """The pooled key id of a version (NULL for every existing row: its own key)."""
    return 'ALTER TABLE versions ADD COLUMN IF NOT EXISTS dek TEXT COLLATE "C"'


_DEK_INDEX = "CREATE INDEX IF NOT EXISTS versions_dek ON versions(dek)"


def _sqlite_v9_to_v10(conn: Any) -> str:
    """The normalised digests a running event's barrier records for its publication (none before)."""
    return ("CREATE TABLE IF NOT EXISTS erasing_digests(event_id INTEGER NOT NULL, id TEXT NOT NULL, "
            "version INTEGER NOT NULL, digest TEXT NOT NULL, PRIMARY KEY(event_id, id, version, digest)); "
            + _DEK_INDEX)


def _pg_v9_to_v10(conn: Any) -> str:
    """The normalised digests a running event's barrier records for its publication (none before)."""
    return ('CREATE TABLE IF NOT EXISTS erasing_digests(event_id BIGINT NOT NULL, id TEXT COLLATE "C" NOT NULL, '
            'version BIGINT NOT NULL, digest TEXT COLLATE "C" NOT NULL, PRIMARY KEY(event_id, id, version, digest)); '
            + _DEK_INDEX)


Migration = Callable[[Any], str]
"""One step: given the connection (it may read the store to decide), the SQL that takes a store one version up."""

# MIGRATIONS[v - 1](conn) takes a store from version v to v + 1; the store runs every pending step and
# the new version in ONE write transaction.
SQLITE_MIGRATIONS: list[Migration] = [_sqlite_v1_to_v2, _sqlite_v2_to_v3, _sqlite_v3_to_v4, _sqlite_v4_to_v5,
                                      _sqlite_v5_to_v6, _sqlite_v6_to_v7, _sqlite_v7_to_v8, _sqlite_v8_to_v9,
                                      _sqlite_v9_to_v10]
PG_MIGRATIONS: list[Migration] = [_pg_v1_to_v2, _pg_v2_to_v3, _pg_v3_to_v4, _pg_v4_to_v5, _pg_v5_to_v6, _pg_v6_to_v7,
                                  _pg_v7_to_v8, _pg_v8_to_v9, _pg_v9_to_v10]
assert len(SQLITE_MIGRATIONS) == len(PG_MIGRATIONS) == SCHEMA_VERSION - 1


def check_version(version: int, schema: str, shown: str, migrate: bool) -> None:
    """Refuse a store of another schema version (InputError, exit 2) unless it is older and ``migrate``."""
    if version > SCHEMA_VERSION:
        raise InputError(f"{schema} is a memsteward store of schema version {version}, written by a newer "
                         f"release; this release reads version {SCHEMA_VERSION} (upgrade memsteward)",
                         file=shown, field="schema")
    if version < SCHEMA_VERSION and not migrate:
        raise InputError(f"{schema} is a memsteward store of schema version {version}; this release needs "
                         f"version {SCHEMA_VERSION}: run `memsteward store migrate --store {shown}` (nothing was changed)",
                         file=shown, field="schema")
