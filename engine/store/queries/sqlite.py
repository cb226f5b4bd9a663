"""The SQL store's statements in SQLite's dialect (``?`` placeholders, ``json_each``, ``INSERT OR IGNORE``)."""

from __future__ import annotations

from ...repair.artifacts import ABSENT, SERVABLE_STATES
from . import Queries

__all__ = ["SQLITE"]

_SERVABLE = ", ".join(f"'{s}'" for s in sorted(SERVABLE_STATES))
# the states whose versions the content scan reads (issue 25): what is served, and what an earlier event
# left withdrawn (its text is still stored); never an erased artifact
_SCANNED = "('servable', 'republished', 'withdrawn')"
_CURRENT = ("SELECT a.id, a.kind, a.arch, a.version, a.state, v.content, v.meta FROM artifacts a "
            "JOIN versions v ON v.id = a.id AND v.version = a.version ")
# an event row with its policy document: from ``policies`` by the digest ``events.policy`` holds (schema 7),
# or inline (an event recorded before)
_EVENT = ("SELECT e.id, e.type, e.event, COALESCE(p.policy, e.policy), e.plan, e.status, e.created FROM events e "
          "LEFT JOIN policies p ON p.digest = e.policy ")
_PLAIN = "erased = 0 AND substr(meta, 1, 4) != 'ms1:'"

SQLITE = Queries(
    audit_tail="SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1",
    insert_withdrawals_part=(
        "INSERT INTO audit(seq, at, event_id, action, artifact_id, detail, hash) SELECT ? + j.key, "
        "?, ?, 'withdraw', j.value, '{}', CAST(substr(?, 64 * (j.key - ?) + 1, 64) AS TEXT) "
        "FROM json_each(?) j WHERE j.key >= ? AND j.key < ?"),
    upsert_audit_head=("INSERT INTO audit_head(one, seq, hash, seal) VALUES (1, ?, ?, ?) ON CONFLICT(one) "
                       "DO UPDATE SET seq = excluded.seq, hash = excluded.hash, seal = excluded.seal"),
    audit_head="SELECT seq, hash FROM audit_head WHERE one = 1",
    audit_head_sealed="SELECT seq, hash, seal FROM audit_head WHERE one = 1",
    reseal_head="UPDATE audit_head SET seal = ? WHERE one = 1",
    audit_seal="SELECT seal FROM audit_head WHERE one = 1",
    audit_rows_from=("SELECT seq, at, event_id, action, artifact_id, detail, hash FROM audit "
                     "WHERE seq >= ? ORDER BY seq LIMIT 2"),
    audit_rows="SELECT seq, at, event_id, action, artifact_id, detail, hash FROM audit ORDER BY seq",
    audit_log="SELECT seq, at, event_id, action, artifact_id, detail FROM audit ORDER BY seq",
    generation="SELECT COALESCE(MAX(seq), 0) FROM audit",
    audit_changed_since="SELECT 1 FROM audit WHERE seq > ? AND action NOT IN ('record', 'refuse') LIMIT 1",
    audit_since="SELECT action, artifact_id, detail FROM audit WHERE seq > ? ORDER BY seq LIMIT ?",
    erase_rows_of_event="SELECT artifact_id, detail FROM audit WHERE action = 'erase' AND event_id = ? ORDER BY seq",
    physical_row="SELECT detail FROM audit WHERE action = 'physical-erasure' AND event_id = ? ORDER BY seq LIMIT 1",
    pending_physical=("SELECT DISTINCT e.event_id FROM audit e WHERE e.action = 'erase' AND NOT EXISTS "
                      "(SELECT 1 FROM audit p WHERE p.action = 'physical-erasure' AND p.event_id = e.event_id) "
                      "ORDER BY 1"),
    audit_log_of_event="SELECT seq, at, event_id, action, artifact_id, detail FROM audit WHERE event_id = ? ORDER BY seq",
    dump_audit="SELECT seq, event_id, action, artifact_id FROM audit",

    current_all=_CURRENT + " ORDER BY a.id",
    current_servable=_CURRENT + "WHERE a.state IN (?, ?) ORDER BY a.id",
    current_one=_CURRENT + "WHERE a.id = ? ORDER BY a.id",
    artifacts_of=("SELECT a.id, a.kind, a.arch, a.version, a.state, v.content, v.meta FROM json_each(?) j "
                  "CROSS JOIN artifacts a ON a.id = j.value JOIN versions v ON v.id = a.id AND v.version = a.version"),
    artifacts_of_no_content=(
        "SELECT a.id, a.kind, a.arch, a.version, a.state, NULL, v.meta FROM json_each(?) j "
        "CROSS JOIN artifacts a ON a.id = j.value JOIN versions v ON v.id = a.id AND v.version = a.version"),
    unservable_of=(f"SELECT j.value, coalesce(a.state, '{ABSENT}') FROM json_each(?) j LEFT JOIN artifacts a "
                   f"ON a.id = j.value WHERE a.state IS NULL OR a.state NOT IN ({_SERVABLE})"),
    last_with_prefix=("SELECT j.value, a.id, a.state FROM json_each(?) j JOIN artifacts a ON a.id = "
                      "(SELECT x.id FROM artifacts x WHERE x.id >= j.value AND x.id < j.value || '~' "
                      "ORDER BY x.id DESC LIMIT 1)"),
    ids_with_prefix="SELECT id, state FROM artifacts WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
    version_of=("SELECT a.kind, a.arch, v.content, v.meta, a.state FROM artifacts a JOIN versions v "
                "ON v.id = a.id WHERE a.id = ? AND v.version = ?"),
    states="SELECT id, state, version FROM artifacts",
    versions_of="SELECT version, erased, event_id FROM versions WHERE id = ? ORDER BY version",
    versions_held=("SELECT id, version, erased, content IS NOT NULL FROM versions WHERE id IN "
                   "(SELECT value FROM json_each(?)) ORDER BY id, version"),
    is_erased="SELECT erased FROM versions WHERE id = ? AND version = ?",
    version_count="SELECT COUNT(*) FROM versions",
    servable=("SELECT id FROM artifacts WHERE id IN (SELECT value FROM json_each(?)) "
              "AND state IN ('servable', 'republished')"),
    event_by_id=_EVENT + "WHERE e.id = ?",
    event_latest=_EVENT + "ORDER BY e.id DESC LIMIT 1",
    event_ids="SELECT id FROM events ORDER BY id",
    artifacts_named="SELECT id FROM artifacts WHERE id IN (SELECT value FROM json_each(?))",
    artifact_ids="SELECT id FROM artifacts",

    reach_recursive=("WITH RECURSIVE c(id) AS (SELECT value FROM json_each(?) UNION SELECT e.dst FROM edges e "
                     "JOIN c ON e.src = c.id WHERE e.type = 'influence') SELECT id FROM c"),
    reach_level="SELECT e.dst FROM json_each(?) j CROSS JOIN edges e ON e.src = j.value WHERE e.type = 'influence'",
    parent_edges=("SELECT e.src, e.dst FROM json_each(?) j CROSS JOIN edges e ON e.dst = j.value "
                  "WHERE e.type = 'influence' ORDER BY e.dst, e.src"),
    shingle_candidates=(
        "SELECT a.id, v.version, v.content, v.meta FROM json_each(?) j CROSS JOIN artifacts a ON a.id = j.value "
        "JOIN versions v ON v.id = a.id WHERE a.state IN " + _SCANNED + " AND v.erased = 0 ORDER BY a.id, v.version"),
    posting="SELECT id FROM shingles WHERE h = ?",
    posting_limited="SELECT id FROM shingles WHERE h = ? LIMIT ?",
    delete_shingles="DELETE FROM shingles WHERE id IN (SELECT value FROM json_each(?))",
    insert_shingles="INSERT OR IGNORE INTO shingles(h, id) VALUES (?, ?)",
    reindex_versions=("SELECT v.id, v.version, v.content, v.meta FROM json_each(?) j JOIN versions v ON v.id = j.value "
                      "WHERE v.erased = 0 ORDER BY v.id, v.version"),

    upsert_lease=("INSERT INTO event_lease(event_id, owner, host, pid, started, acquired, session) "
                  "VALUES (?,?,?,?,?,?,?) ON CONFLICT(event_id) DO UPDATE SET owner = excluded.owner, "
                  "host = excluded.host, pid = excluded.pid, started = excluded.started, "
                  "acquired = excluded.acquired, session = excluded.session"),
    event_status="SELECT status FROM events WHERE id = ?",
    lease_of="SELECT owner, host, pid, started, acquired, session FROM event_lease WHERE event_id = ?",
    lease_running="SELECT owner, host, pid, started, session FROM event_lease WHERE event_id = ?",
    lease_check="SELECT owner, host, pid, acquired FROM event_lease WHERE event_id = ?",
    lease_owner="SELECT owner FROM event_lease WHERE event_id = ?",
    delete_lease="DELETE FROM event_lease WHERE event_id = ?",

    erasable_versions=("SELECT id, version, content, sha256, dek FROM versions WHERE erased = 0 AND id IN "
                       "(SELECT value FROM json_each(?)) ORDER BY id, version"),
    version_deks=("SELECT id, version, dek FROM versions WHERE dek IS NOT NULL AND id IN "
                  "(SELECT value FROM json_each(?))"),
    named_deks="SELECT DISTINCT dek FROM versions WHERE dek IN (SELECT value FROM json_each(?))",
    erase_version="UPDATE versions SET content = NULL, meta = '{}', erased = 1, sha256 = ? WHERE id = ? AND version = ?",
    erase_versions=None,
    insert_tombstones="INSERT OR IGNORE INTO tombstones(digest, root, event_id) VALUES (?,?,?)",
    tombstones_of_digests="SELECT digest, root, event_id FROM tombstones WHERE digest IN (SELECT value FROM json_each(?))",
    insert_erasing_digests="INSERT OR IGNORE INTO erasing_digests(event_id, id, version, digest) VALUES (?,?,?,?)",
    erasing_digests_of="SELECT id, version, digest FROM erasing_digests WHERE event_id = ?",
    delete_erasing_digests="DELETE FROM erasing_digests WHERE event_id = ?",
    erased_versions="SELECT id, version, sha256 FROM versions WHERE erased = 1",
    erased_version_ids="SELECT id, version FROM versions WHERE erased = 1",
    all_tombstones="SELECT digest, root, event_id FROM tombstones",
    has_tombstones="SELECT 1 FROM tombstones LIMIT 1",
    tombstones_of="SELECT digest, root FROM tombstones WHERE digest IN (SELECT value FROM json_each(?))",

    store_sealed="SELECT sealed FROM store_keys WHERE one = 1",
    store_id="SELECT store_id FROM store_keys WHERE one = 1",
    insert_store_keys="INSERT INTO store_keys(one, store_id, sealed) VALUES (1, ?, ?) ON CONFLICT(one) DO NOTHING",
    set_store_keys="UPDATE store_keys SET store_id = ?, sealed = ?",
    set_sealed="UPDATE store_keys SET sealed = ?",
    mark_sealed="UPDATE store_keys SET sealed = 1 WHERE one = 1",
    count_plaintext="SELECT COUNT(*) FROM versions WHERE " + _PLAIN,
    plaintext_batch="SELECT id, version, content, meta FROM versions WHERE " + _PLAIN + " ORDER BY id, version LIMIT ?",
    reseal_version="UPDATE versions SET content = ?, meta = ?, sha256 = ? WHERE id = ? AND version = ?",
    retained_versions="SELECT id, version, content, meta FROM versions WHERE erased = 0 ORDER BY id, version",

    upsert_artifacts=("INSERT INTO artifacts(id, kind, arch, version, state) VALUES (?,?,?,?,'servable') "
                      "ON CONFLICT(id) DO UPDATE SET version = excluded.version, state = 'servable', "
                      "staged_version = NULL"),
    insert_edges="INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?,?,?)",
    edges_all="SELECT src, dst, type FROM edges ORDER BY src, dst, type",
    known_artifacts="SELECT id, kind, arch, state FROM artifacts WHERE id IN (SELECT value FROM json_each(?))",
    live_event="SELECT id, event FROM events WHERE status != 'done' ORDER BY id LIMIT 1",
    pending_dead_versions=("SELECT id, version, content FROM versions WHERE erased = 0 AND id IN "
                           "(SELECT value FROM json_each(?)) AND (event_id IS NULL OR event_id != ?) "
                           "ORDER BY id, version"),

    unfinished_event=("SELECT e.id, e.event, COALESCE(p.policy, e.policy), e.plan FROM events e "
                      "LEFT JOIN policies p ON p.digest = e.policy WHERE e.status != 'done' ORDER BY e.id LIMIT 1"),
    max_versions="SELECT id, MAX(version) FROM versions WHERE id IN (SELECT value FROM json_each(?)) GROUP BY id",
    insert_policy="INSERT INTO policies(digest, policy) VALUES (?, ?) ON CONFLICT(digest) DO NOTHING",
    insert_event=("INSERT INTO events(id, type, event, policy, plan, status, created) "
                  "VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM events),?,?,?,?,?,?) RETURNING id"),
    withdraw=("UPDATE artifacts SET state = 'withdrawn', staged_version = NULL "
              "WHERE id IN (SELECT value FROM json_each(?)) AND state != 'erased'"),
    max_version="SELECT MAX(version) FROM versions WHERE id = ?",
    insert_version="INSERT INTO versions(id, version, content, meta, event_id, sha256) VALUES (?,?,?,?,?,?)",
    set_staged_version="UPDATE artifacts SET staged_version = ? WHERE id = ?",
    event_versions=("SELECT id, MIN(version) FROM versions WHERE event_id = ? AND id IN "
                    "(SELECT value FROM json_each(?)) GROUP BY id"),
    staged_version="SELECT staged_version FROM artifacts WHERE id = ?",
    plan_steps_of="SELECT artifact_id, status, version, report FROM plan_steps WHERE event_id = ?",
    event_plan="SELECT plan FROM events WHERE id = ?",
    record_step_version=("INSERT INTO plan_steps(event_id, seq, artifact_id, mode, status, version) "
                         "VALUES (?,?,?,?,?,?) ON CONFLICT(event_id, seq) DO UPDATE SET status = excluded.status, "
                         "version = excluded.version"),
    record_step_report=("INSERT INTO plan_steps(event_id, seq, artifact_id, mode, status, report) "
                        "VALUES (?,?,?,?,?,?) ON CONFLICT(event_id, seq) DO UPDATE SET status = excluded.status, "
                        "report = excluded.report"),
    set_state_staged="UPDATE artifacts SET state = 'staged' WHERE id = ?",
    set_state_withdrawn="UPDATE artifacts SET state = 'withdrawn' WHERE id = ?",
    republish=("UPDATE artifacts SET version = staged_version, staged_version = NULL, "
               "state = 'republished' WHERE id = ? AND staged_version IS NOT NULL"),
    current_version_content=("SELECT v.version, v.content FROM artifacts a JOIN versions v ON v.id = a.id "
                             "AND v.version = a.version WHERE a.id = ?"),
    set_state_erased="UPDATE artifacts SET state = 'erased', staged_version = NULL WHERE id = ?",
    withdraw_unpublished=("UPDATE artifacts SET state = 'withdrawn', staged_version = NULL WHERE id IN "
                          "(SELECT value FROM json_each(?)) AND state IN ('staged', 'withdrawn')"),
    close_event="UPDATE events SET status = 'done', plan = ? WHERE id = ?",

    select_all={
        'artifacts': 'SELECT * FROM artifacts',
        'versions': 'SELECT * FROM versions',
        'edges': 'SELECT * FROM edges',
        'policies': 'SELECT * FROM policies',
        'events': 'SELECT * FROM events',
        'plan_steps': 'SELECT * FROM plan_steps',
        'audit': 'SELECT * FROM audit',
        'audit_head': 'SELECT * FROM audit_head',
        'tombstones': 'SELECT * FROM tombstones',
        'shingles': 'SELECT * FROM shingles',
    },
    insert_row={
        'artifacts': 'INSERT INTO artifacts VALUES (?,?,?,?,?,?)',
        'versions': 'INSERT INTO versions VALUES (?,?,?,?,?,?,?,?)',
        'edges': 'INSERT INTO edges VALUES (?,?,?)',
        'policies': 'INSERT INTO policies VALUES (?,?)',
        'events': 'INSERT INTO events VALUES (?,?,?,?,?,?,?)',
        'plan_steps': 'INSERT INTO plan_steps VALUES (?,?,?,?,?,?,?)',
        'audit': 'INSERT INTO audit VALUES (?,?,?,?,?,?,?)',
        'audit_head': 'INSERT INTO audit_head VALUES (?,?,?,?)',
        'tombstones': 'INSERT INTO tombstones VALUES (?,?,?)',
        'shingles': 'INSERT INTO shingles VALUES (?,?)',
    },
    count_rows={
        'artifacts': 'SELECT COUNT(*) FROM artifacts',
        'versions': 'SELECT COUNT(*) FROM versions',
        'edges': 'SELECT COUNT(*) FROM edges',
        'policies': 'SELECT COUNT(*) FROM policies',
        'events': 'SELECT COUNT(*) FROM events',
        'plan_steps': 'SELECT COUNT(*) FROM plan_steps',
        'audit': 'SELECT COUNT(*) FROM audit',
        'audit_head': 'SELECT COUNT(*) FROM audit_head',
        'tombstones': 'SELECT COUNT(*) FROM tombstones',
        'shingles': 'SELECT COUNT(*) FROM shingles',
    },
    restart_event_ids=None,  # AUTOINCREMENT follows the largest id inserted
)
