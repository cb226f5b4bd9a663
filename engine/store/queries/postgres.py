"""The SQL store's statements in PostgreSQL's dialect (psycopg 3: ``%s`` placeholders).

A JSON array parameter is read as one array matched by an index (``column = ANY(…)``, :data:`_ANY`) or, where
a statement needs each id, through :data:`_IDS`, one ``value`` column; both in collation "C" (ids compare and
order as in SQLite); ``ON CONFLICT DO NOTHING`` where SQLite says ``INSERT OR IGNORE``; no join-order hints.
A barrier's withdraw rows go in by one COPY (:meth:`~memsteward.store.driver.PgDriver.bulk_insert`), so the
dialect has no ``insert_withdrawals_part``.
"""

from __future__ import annotations

from . import Queries

__all__ = ["POSTGRES"]

# a JSON array parameter as rows of ``value``, in the store's collation (where a statement needs each id itself)
_IDS = '(SELECT x COLLATE "C" AS value FROM json_array_elements_text(%s::json) AS t(x))'
# ``column = _ANY``: the same parameter as one array, matched by the column's index whatever the planner's
# statistics (a store just imported has none: a join of _IDS then seq-scanned ``versions`` in parallel and spilled
# a sort, 130 ms against 0.1 ms at 2·10^5 artifacts; an IN (SELECT …) is planned as the same join)
_ANY = 'ANY(ARRAY(SELECT x COLLATE "C" FROM json_array_elements_text(%s::json) AS t(x)))'

POSTGRES = Queries(
    audit_tail='SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1',
    insert_withdrawals_part=None,
    upsert_audit_head=('INSERT INTO audit_head(one, seq, hash, seal) VALUES (1, %s, %s, %s) ON CONFLICT(one) DO UPDATE '
                       'SET seq = excluded.seq, hash = excluded.hash, seal = excluded.seal'),
    audit_head='SELECT seq, hash FROM audit_head WHERE one = 1',
    audit_head_sealed='SELECT seq, hash, seal FROM audit_head WHERE one = 1',
    reseal_head='UPDATE audit_head SET seal = %s WHERE one = 1',
    audit_seal='SELECT seal FROM audit_head WHERE one = 1',
    audit_rows_from=('SELECT seq, at, event_id, action, artifact_id, detail, hash FROM audit WHERE seq >= %s ORDER BY '
                     'seq LIMIT 2'),
    audit_rows='SELECT seq, at, event_id, action, artifact_id, detail, hash FROM audit ORDER BY seq',
    audit_log='SELECT seq, at, event_id, action, artifact_id, detail FROM audit ORDER BY seq',
    generation='SELECT COALESCE(MAX(seq), 0) FROM audit',
    audit_changed_since="SELECT 1 FROM audit WHERE seq > %s AND action NOT IN ('record', 'refuse') LIMIT 1",
    audit_since="SELECT action, artifact_id, detail FROM audit WHERE seq > %s ORDER BY seq LIMIT %s",
    erase_rows_of_event="SELECT artifact_id, detail FROM audit WHERE action = 'erase' AND event_id = %s ORDER BY seq",
    physical_row=("SELECT detail FROM audit WHERE action = 'physical-erasure' AND event_id = %s ORDER BY seq LIMIT "
                  '1'),
    pending_physical=("SELECT DISTINCT e.event_id FROM audit e WHERE e.action = 'erase' AND NOT EXISTS (SELECT 1 FROM "
                      "audit p WHERE p.action = 'physical-erasure' AND p.event_id = e.event_id) ORDER BY 1"),
    audit_log_of_event=('SELECT seq, at, event_id, action, artifact_id, detail FROM audit WHERE event_id = %s '
                        'ORDER BY seq'),
    dump_audit='SELECT seq, event_id, action, artifact_id FROM audit',
    current_all=('SELECT a.id, a.kind, a.arch, a.version, a.state, v.content, v.meta FROM artifacts a JOIN '
                 'versions v ON v.id = a.id AND v.version = a.version  ORDER BY a.id'),
    current_servable=('SELECT a.id, a.kind, a.arch, a.version, a.state, v.content, v.meta FROM artifacts a JOIN '
                      'versions v ON v.id = a.id AND v.version = a.version WHERE a.state IN (%s, %s) ORDER BY a.id'),
    current_one=('SELECT a.id, a.kind, a.arch, a.version, a.state, v.content, v.meta FROM artifacts a JOIN '
                 'versions v ON v.id = a.id AND v.version = a.version WHERE a.id = %s ORDER BY a.id'),
    artifacts_of=('SELECT a.id, a.kind, a.arch, a.version, a.state, v.content, v.meta FROM artifacts a JOIN versions v '
                  'ON v.id = a.id AND v.version = a.version WHERE a.id = ' + _ANY),
    artifacts_of_no_content=('SELECT a.id, a.kind, a.arch, a.version, a.state, NULL, v.meta FROM artifacts a JOIN '
                             'versions v ON v.id = a.id AND v.version = a.version WHERE a.id = ' + _ANY),
    # one primary-key probe per id (LATERAL … LIMIT 1: never flattened into a join the planner may hash)
    unservable_of=("SELECT j.value, coalesce(a.state, 'absent') FROM "
                   + _IDS
                   + (' AS j LEFT JOIN LATERAL (SELECT x.state FROM artifacts x WHERE x.id = j.value LIMIT 1) a ON true '
                      "WHERE a.state IS NULL OR a.state NOT IN ('republished', 'servable')")),
    last_with_prefix=('SELECT j.value, a.id, a.state FROM '
                      + _IDS
                      + (' AS j JOIN LATERAL (SELECT x.id, x.state FROM artifacts x WHERE x.id >= j.value AND '
                         "x.id < j.value || '~' ORDER BY x.id DESC LIMIT 1) a ON true")),
    ids_with_prefix='SELECT id, state FROM artifacts WHERE id >= %s AND id < %s ORDER BY id LIMIT %s',
    version_of=('SELECT a.kind, a.arch, v.content, v.meta, a.state FROM artifacts a JOIN versions v ON v.id = '
                'a.id WHERE a.id = %s AND v.version = %s'),
    states='SELECT id, state, version FROM artifacts',
    versions_of='SELECT version, erased, event_id FROM versions WHERE id = %s ORDER BY version',
    versions_held=('SELECT id, version, erased, content IS NOT NULL FROM versions WHERE id = ' + _ANY
                   + ' ORDER BY id, version'),
    is_erased='SELECT erased FROM versions WHERE id = %s AND version = %s',
    version_count='SELECT COUNT(*) FROM versions',
    servable=('SELECT id FROM artifacts WHERE id = ' + _ANY + " AND state IN ('servable', 'republished')"),
    event_by_id=('SELECT e.id, e.type, e.event, COALESCE(p.policy, e.policy), e.plan, e.status, e.created FROM '
                 'events e LEFT JOIN policies p ON p.digest = e.policy WHERE e.id = %s'),
    event_latest=('SELECT e.id, e.type, e.event, COALESCE(p.policy, e.policy), e.plan, e.status, e.created FROM '
                  'events e LEFT JOIN policies p ON p.digest = e.policy ORDER BY e.id DESC LIMIT 1'),
    event_ids='SELECT id FROM events ORDER BY id',
    artifacts_named=('SELECT id FROM artifacts WHERE id = ' + _ANY),
    artifact_ids='SELECT id FROM artifacts',
    reach_recursive=('WITH RECURSIVE c(id) AS (SELECT value FROM '
                     + _IDS
                     + (' AS je UNION SELECT x.dst FROM c JOIN LATERAL (SELECT e.dst FROM edges e WHERE e.src = c.id '
                        "AND e.type = 'influence' OFFSET 0) x ON true) SELECT id FROM c")),
    reach_level="SELECT e.dst FROM edges e WHERE e.type = 'influence' AND e.src = " + _ANY,
    parent_edges=("SELECT e.src, e.dst FROM edges e WHERE e.type = 'influence' AND e.dst = " + _ANY
                  + ' ORDER BY e.dst, e.src'),
    shingle_candidates=('SELECT a.id, v.version, v.content, v.meta FROM artifacts a JOIN versions v ON v.id = a.id WHERE '
                        "a.state IN ('servable', 'republished', 'withdrawn') AND v.erased = 0 AND a.id = " + _ANY
                        + ' ORDER BY a.id, v.version'),
    posting='SELECT id FROM shingles WHERE h = %s',
    posting_limited='SELECT id FROM shingles WHERE h = %s LIMIT %s',
    delete_shingles=('DELETE FROM shingles WHERE id = ' + _ANY),
    insert_shingles='INSERT INTO shingles(h, id) VALUES (%s, %s) ON CONFLICT DO NOTHING',
    reindex_versions=('SELECT v.id, v.version, v.content, v.meta FROM versions v WHERE v.erased = 0 AND v.id = ' + _ANY
                      + ' ORDER BY v.id, v.version'),
    upsert_lease=('INSERT INTO event_lease(event_id, owner, host, pid, started, acquired, session) VALUES '
                  '(%s,%s,%s,%s,%s,%s,%s) ON CONFLICT(event_id) DO UPDATE SET owner = excluded.owner, host = '
                  'excluded.host, pid = excluded.pid, started = excluded.started, acquired = excluded.acquired, '
                  'session = excluded.session'),
    event_status='SELECT status FROM events WHERE id = %s',
    lease_of='SELECT owner, host, pid, started, acquired, session FROM event_lease WHERE event_id = %s',
    lease_running='SELECT owner, host, pid, started, session FROM event_lease WHERE event_id = %s',
    lease_check='SELECT owner, host, pid, acquired FROM event_lease WHERE event_id = %s',
    lease_owner='SELECT owner FROM event_lease WHERE event_id = %s',
    delete_lease='DELETE FROM event_lease WHERE event_id = %s',
    erasable_versions=('SELECT id, version, content, sha256, dek FROM versions WHERE erased = 0 AND id = ' + _ANY
                       + ' ORDER BY id, version'),
    version_deks=('SELECT id, version, dek FROM versions WHERE dek IS NOT NULL AND id = ' + _ANY),
    named_deks=('SELECT DISTINCT dek FROM versions WHERE dek = ' + _ANY),
    erase_version=("UPDATE versions SET content = NULL, meta = '{}', erased = 1, sha256 = %s WHERE id = %s AND "
                   'version = %s'),
    # one JSON array of {"sha", "id", "version"}: its ids as one array matched by the primary key (_ANY's reason),
    # its rows joined to it (2,000 versions: one statement, against 2,000 in a pipeline)
    erase_versions=('WITH u AS (SELECT sha, id COLLATE "C" AS id, version FROM json_to_recordset(%s::json) '
                    "AS t(sha text, id text, version integer)) "
                    "UPDATE versions AS v SET content = NULL, meta = '{}', erased = 1, sha256 = u.sha FROM u "
                    "WHERE v.id = ANY(ARRAY(SELECT id FROM u)) AND v.id = u.id AND v.version = u.version"),
    insert_tombstones='INSERT INTO tombstones(digest, root, event_id) VALUES (%s,%s,%s) ON CONFLICT DO NOTHING',
    tombstones_of_digests=('SELECT digest, root, event_id FROM tombstones WHERE digest = ' + _ANY),
    insert_erasing_digests=('INSERT INTO erasing_digests(event_id, id, version, digest) VALUES (%s,%s,%s,%s) '
                            'ON CONFLICT DO NOTHING'),
    erasing_digests_of='SELECT id, version, digest FROM erasing_digests WHERE event_id = %s',
    delete_erasing_digests='DELETE FROM erasing_digests WHERE event_id = %s',
    erased_versions='SELECT id, version, sha256 FROM versions WHERE erased = 1',
    erased_version_ids='SELECT id, version FROM versions WHERE erased = 1',
    all_tombstones='SELECT digest, root, event_id FROM tombstones',
    has_tombstones='SELECT 1 FROM tombstones LIMIT 1',
    tombstones_of=('SELECT digest, root FROM tombstones WHERE digest = ' + _ANY),
    store_sealed='SELECT sealed FROM store_keys WHERE one = 1',
    store_id='SELECT store_id FROM store_keys WHERE one = 1',
    insert_store_keys='INSERT INTO store_keys(one, store_id, sealed) VALUES (1, %s, %s) ON CONFLICT(one) DO NOTHING',
    set_store_keys='UPDATE store_keys SET store_id = %s, sealed = %s',
    set_sealed='UPDATE store_keys SET sealed = %s',
    mark_sealed='UPDATE store_keys SET sealed = 1 WHERE one = 1',
    count_plaintext="SELECT COUNT(*) FROM versions WHERE erased = 0 AND substr(meta, 1, 4) != 'ms1:'",
    plaintext_batch=('SELECT id, version, content, meta FROM versions WHERE erased = 0 AND substr(meta, 1, 4) != '
                     "'ms1:' ORDER BY id, version LIMIT %s"),
    reseal_version='UPDATE versions SET content = %s, meta = %s, sha256 = %s WHERE id = %s AND version = %s',
    retained_versions='SELECT id, version, content, meta FROM versions WHERE erased = 0 ORDER BY id, version',
    upsert_artifacts=("INSERT INTO artifacts(id, kind, arch, version, state) VALUES (%s,%s,%s,%s,'servable') ON "
                      "CONFLICT(id) DO UPDATE SET version = excluded.version, state = 'servable', staged_version = NULL"),
    insert_edges='INSERT INTO edges(src, dst, type) VALUES (%s,%s,%s) ON CONFLICT DO NOTHING',
    edges_all='SELECT src, dst, type FROM edges ORDER BY src, dst, type',
    known_artifacts=('SELECT id, kind, arch, state FROM artifacts WHERE id = ' + _ANY),
    live_event="SELECT id, event FROM events WHERE status != 'done' ORDER BY id LIMIT 1",
    pending_dead_versions=('SELECT id, version, content FROM versions WHERE erased = 0 AND id = ' + _ANY
                           + ' AND (event_id IS NULL OR event_id != %s) ORDER BY id, version'),
    unfinished_event=('SELECT e.id, e.event, COALESCE(p.policy, e.policy), e.plan FROM events e LEFT JOIN policies p '
                      "ON p.digest = e.policy WHERE e.status != 'done' ORDER BY e.id LIMIT 1"),
    max_versions=('SELECT id, MAX(version) FROM versions WHERE id = ' + _ANY + ' GROUP BY id'),
    insert_policy='INSERT INTO policies(digest, policy) VALUES (%s, %s) ON CONFLICT(digest) DO NOTHING',
    insert_event=('INSERT INTO events(id, type, event, policy, plan, status, created) VALUES ((SELECT '
                  'COALESCE(MAX(id), 0) + 1 FROM events),%s,%s,%s,%s,%s,%s) RETURNING id'),
    withdraw=("UPDATE artifacts SET state = 'withdrawn', staged_version = NULL WHERE state != 'erased' AND id = "
              + _ANY),
    max_version='SELECT MAX(version) FROM versions WHERE id = %s',
    insert_version='INSERT INTO versions(id, version, content, meta, event_id, sha256) VALUES (%s,%s,%s,%s,%s,%s)',
    set_staged_version='UPDATE artifacts SET staged_version = %s WHERE id = %s',
    event_versions=('SELECT id, MIN(version) FROM versions WHERE event_id = %s AND id = ' + _ANY + ' GROUP BY id'),
    staged_version='SELECT staged_version FROM artifacts WHERE id = %s',
    plan_steps_of='SELECT artifact_id, status, version, report FROM plan_steps WHERE event_id = %s',
    event_plan='SELECT plan FROM events WHERE id = %s',
    record_step_version=('INSERT INTO plan_steps(event_id, seq, artifact_id, mode, status, version) VALUES '
                         '(%s,%s,%s,%s,%s,%s) ON CONFLICT(event_id, seq) DO UPDATE SET status = excluded.status, version '
                         '= excluded.version'),
    record_step_report=('INSERT INTO plan_steps(event_id, seq, artifact_id, mode, status, report) VALUES '
                        '(%s,%s,%s,%s,%s,%s) ON CONFLICT(event_id, seq) DO UPDATE SET status = excluded.status, report = '
                        'excluded.report'),
    set_state_staged="UPDATE artifacts SET state = 'staged' WHERE id = %s",
    set_state_withdrawn="UPDATE artifacts SET state = 'withdrawn' WHERE id = %s",
    republish=("UPDATE artifacts SET version = staged_version, staged_version = NULL, state = 'republished' "
               'WHERE id = %s AND staged_version IS NOT NULL'),
    current_version_content=('SELECT v.version, v.content FROM artifacts a JOIN versions v ON v.id = a.id AND v.version = '
                             'a.version WHERE a.id = %s'),
    set_state_erased="UPDATE artifacts SET state = 'erased', staged_version = NULL WHERE id = %s",
    withdraw_unpublished=("UPDATE artifacts SET state = 'withdrawn', staged_version = NULL WHERE state IN ('staged', "
                          "'withdrawn') AND id = " + _ANY),
    close_event="UPDATE events SET status = 'done', plan = %s WHERE id = %s",
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
        'artifacts': 'INSERT INTO artifacts VALUES (%s,%s,%s,%s,%s,%s)',
        'versions': 'INSERT INTO versions VALUES (%s,%s,%s,%s,%s,%s,%s,%s)',
        'edges': 'INSERT INTO edges VALUES (%s,%s,%s)',
        'policies': 'INSERT INTO policies VALUES (%s,%s)',
        'events': 'INSERT INTO events VALUES (%s,%s,%s,%s,%s,%s,%s)',
        'plan_steps': 'INSERT INTO plan_steps VALUES (%s,%s,%s,%s,%s,%s,%s)',
        'audit': 'INSERT INTO audit VALUES (%s,%s,%s,%s,%s,%s,%s)',
        'audit_head': 'INSERT INTO audit_head VALUES (%s,%s,%s,%s)',
        'tombstones': 'INSERT INTO tombstones VALUES (%s,%s,%s)',
        'shingles': 'INSERT INTO shingles VALUES (%s,%s)',
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
    restart_event_ids=("SELECT setval(pg_get_serial_sequence('events', 'id'), (SELECT COALESCE(MAX(id), 0) + 1 FROM "
                       'events), false)'),
)
