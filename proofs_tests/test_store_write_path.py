"""The write path (Store.record / record_many / `store put`) and the retrieval guard (Store.servable).

References are independent of the code under test: digests are computed here with hashlib over
hand-written canonical JSON, servable sets from the raw states table, fencing by hand-picked states.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from memsteward.cli import main
from memsteward.errors import InputError, WriteRefused
from memsteward.policy.loader import load_policy_source
from memsteward.repair.auditchain import first_broken
from memsteward.repair.events import parse_event
from memsteward.repair.execute import dry_run, policy_document, recover, run_event
from memsteward.repair.plan import compute_plan
from memsteward.store import Store, content_digest
from memsteward.store.api import BarrierSpec

pytestmark = pytest.mark.usefixtures("store_backend")  # the store suite runs on SQLite and PostgreSQL
from memsteward.repair.writes import MAX_CONTENT_BYTES

ROOT = Path(__file__).resolve().parent.parent
POLICY = str(ROOT / "policies" / "default.yaml")


def _policy():
    return load_policy_source(POLICY).policy


def _notes_store(path: str = ":memory:") -> Store:
    """n1, n2 → s (summary of both); n3 alone; c (cache) ← n3."""
    s = Store(path)
    s.record({"id": "n1", "kind": "record", "content": "Alice lives in Paris"})
    s.record({"id": "n2", "kind": "record", "content": "Alice likes tea"})
    s.record({"id": "n3", "kind": "record", "content": "Bob likes chess"})
    s.record({"id": "s", "kind": "summary", "content": "Alice lives in Paris. Alice likes tea"}, inputs=["n1", "n2"])
    return s


def _delete(store: Store, *roots: str):
    return run_event(store, _policy(), parse_event({"type": "delete", "roots": list(roots)}, store.snapshot()))


def _unchanged_except_audit(before: dict, after: dict) -> None:
    assert {k: v for k, v in before.items() if k != "audit"} == {k: v for k, v in after.items() if k != "audit"}


def test_record_appends_versions_and_influence_edges():
    s = _notes_store()
    assert s.get("s").version == 1 and s.get("s").content == "Alice lives in Paris. Alice likes tea"
    assert sorted(s.snapshot().influence_edges()) == [("n1", "s"), ("n2", "s")]
    again = s.record({"id": "s", "kind": "summary", "content": "Alice: Paris, tea"}, inputs=["n2"], semantic=["n3"])
    assert again.version == 2 and s.get("s").version == 2 and s.get("s").content == "Alice: Paris, tea"
    assert [v for v, _, _ in s.versions("s")] == [1, 2]
    assert s.version_of("s", 1).content == "Alice lives in Paris. Alice likes tea"   # the old version is kept
    # provenance only grows: n1 is still an ancestor (version 1 was built from it)
    assert sorted(s.snapshot().influence_edges()) == [("n1", "s"), ("n2", "s")]
    assert [(e.src, e.dst) for e in s.snapshot().edges if e.type == "semantic"] == [("n3", "s")]
    rows = [r for r in s.audit_log() if r["action"] == "record"]
    assert len(rows) == 5 and rows[-1]["artifact_id"] == "s" and rows[-1]["detail"]["version"] == 2


def test_tombstone_digest_matches_independent_sha256():
    s = _notes_store()
    _delete(s, "n1")
    # hand-written canonical JSON of the erased root's content
    want = hashlib.sha256(b'"Alice lives in Paris"').hexdigest()
    assert content_digest("Alice lives in Paris") == want
    # the store keeps it keyed: HMAC-SHA256 under its index key (memsteward.shred.digests)
    keyed = hmac.new(s.vault._index, b'"Alice lives in Paris"', hashlib.sha256).hexdigest()
    held = {r[0] for r in s.conn.execute("SELECT digest FROM tombstones")}
    assert keyed in held and want not in held
    assert hmac.new(s.vault._index, b'"Alice likes tea"', hashlib.sha256).hexdigest() not in held
    # callers ask with the text and get the store's own (keyed) digest back
    assert s.tombstone_of("Alice lives in Paris") in held and s.tombstone_of("Alice likes tea") is None
    assert content_digest({"b": [1, "é"], "a": None}) == \
        hashlib.sha256('{"a":null,"b":[1,"é"]}'.encode()).hexdigest()


def test_fenced_writes_are_refused_and_audited():
    s = _notes_store()
    s.record({"id": "n4", "kind": "record", "content": "Alice owns a cat"})
    s.record({"id": "t", "kind": "summary", "content": "Alice owns a cat"}, inputs=["n4"])
    policy = _policy()
    # leave an event at its barrier: n4 and t are withdrawn, the event is unfinished
    ev = parse_event({"type": "delete", "roots": ["n4"]}, s.snapshot())
    plan = compute_plan(policy, s.snapshot(), ev)
    s.barrier(BarrierSpec(plan.to_json(), policy_document(policy), {}))
    # the write rule during an event: unrelated writes go on, held ids and erased content wait
    assert s.record({"id": "x", "kind": "summary", "content": "about Bob"}, inputs=["n3"]).version == 1
    for write in ({"id": "t", "kind": "summary", "content": "other"}, {"id": "y", "kind": "record",
                                                                       "content": "Alice owns a cat"}):
        with pytest.raises(WriteRefused) as exc:
            s.record(write, wait=0)
        assert exc.value.reason == "busy" and exc.value.retry_after is not None
    recover(s)
    assert s.states()["n4"][0] == "erased"
    withdrawn = [i for i, (st_, _) in s.states().items() if st_ == "withdrawn"]
    for bad_input, state in [("n4", "erased")] + [(i, "withdrawn") for i in withdrawn]:
        before = s.dump_state()
        with pytest.raises(WriteRefused) as exc:
            s.record({"id": "new", "kind": "summary", "content": f"from {bad_input}"}, inputs=["n3", bad_input])
        assert exc.value.reason == "fenced" and exc.value.field == "inputs[1]"
        assert state in exc.value.message and bad_input in exc.value.message
        after = s.dump_state()
        _unchanged_except_audit(before, after)
        assert after["audit"][-1][2:] == ("refuse", "new")
        assert s.audit_log()[-1]["detail"] == {"reason": "fenced", "inputs": {bad_input: state}}
    assert first_broken(s.audit_rows(), s.audit_head(), None) is None
    # a semantic link to a withdrawn artifact is not an influence input: allowed
    assert s.record({"id": "ok", "kind": "summary", "content": "Bob plays"}, inputs=["n3"], semantic=["n4"]).version == 1


def test_reingested_deleted_content_is_refused_without_storing_the_text():
    s = _notes_store()
    _delete(s, "n2")
    before = s.dump_state()
    with pytest.raises(WriteRefused) as exc:
        s.record({"id": "n2-again", "kind": "record", "content": "Alice likes tea"})
    assert exc.value.reason == "tombstone" and exc.value.field == "content"
    _unchanged_except_audit(before, s.dump_state())
    last = s.audit_log()[-1]
    assert last["action"] == "refuse" and last["detail"]["reason"] == "tombstone"
    assert "Alice likes tea" not in json.dumps(s.audit_log())
    # different content is fine; so is a near-duplicate (a digest matches exact content only)
    assert s.record({"id": "n2-new", "kind": "record", "content": "Alice likes green tea"}).version == 1


def test_not_servable_ids_and_kind_changes_are_not_rerecorded():
    s = _notes_store()
    _delete(s, "n1")
    state_s = s.states()["s"][0]
    with pytest.raises(InputError) as exc:
        s.record({"id": "n1", "kind": "record", "content": "something else"})
    assert "erased" in exc.value.message
    if state_s == "withdrawn":
        with pytest.raises(WriteRefused):
            s.record({"id": "s", "kind": "summary", "content": "fresh"})
    with pytest.raises(InputError) as exc:
        s.record({"id": "n3", "kind": "summary", "content": "x"})
    assert exc.value.field == "kind"


@pytest.mark.parametrize("artifact,inputs,field,words", [
    ({"id": "a", "kind": "record", "content": "x"}, ["ghost"], "inputs[0]", "unknown artifact 'ghost'"),
    ({"id": "a", "kind": "record", "content": {"x": math.nan}}, [], "content.x", "finite"),
    ({"id": "a", "kind": "record", "content": object()}, [], "content", "not JSON"),
    ({"id": "a", "kind": "record", "content": {1: "x"}}, [], "content", "object key is not a string"),
    ({"id": "a", "kind": "record", "content": {"b": {None: 2}}}, [], "content.b", "object key is not a string"),
    ({"id": "a", "kind": "record", "content": {"\ud800": 1}}, [], "content", "key holds a lone surrogate"),
    ({"id": "a", "kind": "record", "content": "x" * (MAX_CONTENT_BYTES + 1)}, [], "content", "byte limit"),
    ({"id": "a", "kind": "wid get", "content": "x"}, [], "artifact.kind", "kind must be one of"),
    ({"id": "a", "kind": "k" * 65, "content": "x"}, [], "artifact.kind", "kind must be one of"),
    ({"id": "a", "kind": "", "content": "x"}, [], "artifact.kind", "kind must be one of"),
    ({"id": "a", "kind": "profile", "arch": "quantum", "content": "x"}, [], "artifact.arch", "only skills"),
    ({"id": "a", "kind": "record", "content": "x", "version": 3}, [], "version", "assigned by the store"),
    ({"id": "a", "kind": "record", "content": "x"}, ["n1", "n1"], "inputs", "twice"),
    ({"id": "a", "kind": "record", "content": "x"}, "n1", "inputs", "list of artifact ids"),
])
def test_bad_writes_change_nothing(artifact, inputs, field, words):
    s = _notes_store()
    before = s.dump_state()
    with pytest.raises(InputError) as exc:
        s.record(artifact, inputs=inputs)
    assert field in exc.value.field and words in exc.value.message, (exc.value.field, exc.value.message)
    assert s.dump_state() == before  # not even an audit row
    assert s.record({"id": "a", "kind": "record", "content": "fine"}).version == 1  # the next valid write succeeds


@pytest.mark.parametrize("artifact, links, field", [
    ({"id": "a\x00b", "kind": "record", "content": "x"}, {}, "id"),
    ({"id": "a", "kind": "summary", "content": "x"}, {"inputs": ["n\x001"]}, "inputs[0]"),
    ({"id": "a", "kind": "summary", "content": "x"}, {"semantic": ["n1", "n\x002"]}, "semantic[1]"),
    ({"id": "a", "kind": "summary", "content": "x"}, {"inputs": ["n\ud8001"]}, "inputs[0]"),
])
def test_ids_postgresql_text_cannot_hold_are_refused_on_both_backends(artifact, links, field):
    """A NUL (or a lone surrogate) in an id or an id list is an InputError naming the field on SQLite
    and PostgreSQL alike (PostgreSQL raised UntranslatableCharacter, SQLite stored it), before the
    store is touched; single writes, batches and `store put` documents alike."""
    s = Store()  # the module's store_backend: SQLite, then PostgreSQL
    s.record({"id": "n1", "kind": "record", "content": "Alice lives in Paris"})
    before = s.dump_state()
    for attempt in (lambda: s.record(artifact, **links),
                    lambda: s.record_many([{"id": "ok", "kind": "record", "content": "fine"}, {**artifact, **links}])):
        with pytest.raises(InputError) as exc:
            attempt()
        assert exc.value.field.endswith(field) and "NUL" in exc.value.message, (exc.value.field, exc.value.message)
        assert s.dump_state() == before  # not even an audit row
    assert s.record({"id": "a", "kind": "summary", "content": "fine"}, inputs=["n1"]).version == 1


def test_store_put_of_a_nul_id_is_exit_2_on_both_backends(store_at, tmp_path: Path):
    """`store put` of an id holding NUL: one error line naming the field, exit 2 (PostgreSQL gave
    "internal error", exit 3); nothing stored, the next put succeeds."""
    import subprocess
    import sys

    cli = str(Path(sys.executable).with_name("memsteward"))
    url = store_at("put")

    def put(doc: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([cli, "store", "put", "--store", url], input=doc, capture_output=True, text=True,
                              timeout=300)

    assert put('{"id": "ok", "kind": "record", "content": "fine"}').returncode == 0
    fingerprint = store_at.fingerprint(url)
    for doc, field in (('{"id": "a\\u0000b", "kind": "record", "content": "x"}', "id"),
                       ('{"id": "s", "kind": "summary", "content": "x", "inputs": ["ok", "o\\u0000k"]}', "inputs[1]")):
        r = put(doc)
        assert r.returncode == 2 and f"{field}]" in r.stderr + r.stdout and "NUL" in r.stderr + r.stdout, r
        assert "internal error" not in r.stderr + r.stdout
        assert store_at.fingerprint(url) == fingerprint
    assert put('{"id": "ok2", "kind": "record", "content": "fine"}').returncode == 0


def test_an_event_naming_a_nul_root_is_exit_2_on_both_backends(store_at, tmp_path: Path):
    """`repair --event` with a root id holding NUL: PostgreSQL could not even be asked about it
    ("internal error", exit 3, found in review after the write path was fixed); now one error
    naming ``roots[0]``, exit 2, the store unchanged."""
    import json
    import subprocess
    import sys

    cli = str(Path(sys.executable).with_name("memsteward"))
    url = store_at("event")
    assert subprocess.run([cli, "store", "put", "--store", url], input='{"id": "a", "kind": "record", "content": "x"}',
                          capture_output=True, text=True, timeout=300).returncode == 0
    fingerprint = store_at.fingerprint(url)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"type": "delete", "roots": ["a\u0000b"]}))
    policy = str(Path(__file__).resolve().parent.parent / "policies" / "default.yaml")
    r = subprocess.run([cli, "repair", "--store", url, "--policy", policy, "--event", str(event)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "roots[0]]" in r.stderr + r.stdout and "internal error" not in r.stderr, r
    assert store_at.fingerprint(url) == fingerprint


@pytest.mark.parametrize("options, field", [
    ({"reingest": "bogus"}, "reingest"), ({"reingest": 3}, "reingest"), ({"reingest": None}, "reingest"),
    ({"wait": "1"}, "wait"), ({"wait": -1}, "wait"), ({"wait": math.nan}, "wait"), ({"wait": math.inf}, "wait"),
    ({"wait": True}, "wait"),
])
@pytest.mark.parametrize("backend", ["store", "memory"])
def test_reingest_and_wait_are_checked_before_anything_is_written(backend, options, field):
    """A bad ``reingest`` was accepted unless a tombstone matched (then a plain ValueError) and
    ``wait="1"`` was a TypeError: now an InputError naming the argument, whether the content is
    tombstoned or not, with nothing written (not even a refusal's audit row)."""
    from memsteward.store.memory_log import MemoryStore

    s = _notes_store() if backend == "store" else MemoryStore()
    s.record({"id": "pin", "kind": "record", "content": "Bob's bank PIN is 482913"})
    _delete(s, "pin")
    before = s.dump_state()
    for content in ("unrelated text", "Bob's bank PIN is 482913"):  # a tombstone matches the second
        doc = {"id": "x", "kind": "record", "content": content}
        for batch in (False, True):
            with pytest.raises(InputError) as exc:
                s.record_many([doc], **options) if batch else s.record(doc, **options)
            assert exc.value.field == field and field in exc.value.message, (exc.value.field, exc.value.message)
            assert s.dump_state() == before
    assert s.record({"id": "x", "kind": "record", "content": "fine"}, reingest="review", wait=0.5).version == 1


def test_batch_is_all_or_nothing_and_may_chain():
    s = _notes_store()
    out = s.record_many([{"id": "m1", "kind": "record", "content": "m1"},
                         {"id": "m2", "kind": "summary", "content": "m1!", "inputs": ["m1"]},
                         {"id": "m1", "kind": "record", "content": "m1 v2"}])
    assert [(a.id, a.version) for a in out] == [("m1", 1), ("m2", 1), ("m1", 2)]
    assert ("m1", "m2") in s.snapshot().influence_edges()
    _delete(s, "n1")
    before = s.dump_state()
    with pytest.raises(WriteRefused):
        s.record_many([{"id": "k1", "kind": "record", "content": "k1"},
                       {"id": "k2", "kind": "summary", "content": "k", "inputs": ["k1", "n1"]}])
    _unchanged_except_audit(before, s.dump_state())
    with pytest.raises(InputError) as exc:
        s.record_many([{"id": "k1", "kind": "record", "content": "k1"},
                       {"id": "k2", "kind": "summary", "content": "k", "inputs": ["k3"]}])
    assert exc.value.field == "writes[1].inputs[0]"


def test_a_large_batch_of_new_and_known_ids_matches_single_writes():
    """A batch large enough to go as COPY on PostgreSQL: its new ids' rows (artifacts, index) are plain
    INSERTs, a known id's are updated, an id written twice gets one row; the same rows as one write at a time."""
    writes = [{"id": f"b{k}", "kind": "record", "content": f"batch note {k} about Paris"} for k in range(100)]
    writes += [{"id": "n3", "kind": "record", "content": "Bob likes chess"},  # known, same text: same index rows
               {"id": "b7", "kind": "record", "content": "batch note seven again"}]  # new, written twice
    batched, single = _notes_store(), _notes_store()
    out = batched.record_many(writes)
    for w in writes:
        single.record(w)
    assert [(a.id, a.version) for a in out[-2:]] == [("n3", 2), ("b7", 2)]
    assert batched.get("b7").content == "batch note seven again" and batched.states()["b7"] == ("servable", 2)
    tables = ["artifacts", "versions", "shingles"]
    assert batched.row_counts(tables) == single.row_counts(tables)
    assert batched.states() == single.states()


def test_cycle_created_by_a_write_is_allowed_and_non_executable_at_the_next_event():
    s = _notes_store()
    s.record({"id": "n5", "kind": "record", "content": "Alice reads"})
    s.record({"id": "s2", "kind": "summary", "content": "about s"}, inputs=["s", "n3", "n5"])
    s.record({"id": "s", "kind": "summary", "content": "Alice again"}, inputs=["s2", "n3", "n5"])  # s → s2 → s
    plan = dry_run(s, _policy(), parse_event({"type": "delete", "roots": ["n1"]}, s.snapshot()))
    assert {"s", "s2"} <= set(plan.cascade)
    on_cycle = [c for c in plan.candidates if c.id in ("s", "s2")]
    assert on_cycle and all(not c.executable and "cycle" in c.reason for c in on_cycle)
    assert not {"s", "s2"} & set(plan.republished)


def test_servable_filters_against_the_states_table():
    s = _notes_store()
    s.record({"id": "c", "kind": "summary", "content": "Bob"}, inputs=["n3"])
    _delete(s, "n1")
    states = s.states()
    ids = ["zz", "c", "n1", "s", "n2", "n3", "n2"]
    assert s.servable(ids) == [i for i in ids if states.get(i, ("none",))[0] in ("servable", "republished")]
    assert "n1" not in s.servable(ids) and s.servable([]) == []
    assert {a.id for a in s.serve()} == set(s.servable(list(states)))


@settings(max_examples=30)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.lists(st.sampled_from("abcd"), max_size=3,
                                                                           unique=True)), max_size=12))
def test_versions_count_like_a_dict_model(writes):
    """Against a plain model: each accepted write bumps the id's version; unknown inputs are refused."""
    s = Store()
    model: dict[str, int] = {}
    for ident, inputs in writes:
        try:
            s.record({"id": ident, "kind": "record", "content": [ident, model.get(ident, 0)]}, inputs=inputs)
        except InputError:
            assert any(i not in model and i != ident for i in inputs)
            continue
        model[ident] = model.get(ident, 0) + 1
    assert {i: v for i, (_, v) in s.states().items()} == model


def test_store_put_cli(tmp_path: Path):
    db = str(tmp_path / "m.db")
    run = CliRunner()
    r = run.invoke(main, ["store", "put", "--store", db], input='{"id": "n1", "kind": "record", "content": "hi"}')
    assert r.exit_code == 0 and "recorded 'n1' v1" in r.output, r.output
    doc = tmp_path / "s.json"
    doc.write_text('{"id": "s", "kind": "summary", "content": "hi!", "inputs": ["n1"]}')
    r = run.invoke(main, ["store", "put", "--store", db, str(doc), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["version"] == 1 and out["inputs"] == ["n1"] and out["sha256"] == hashlib.sha256(b'"hi!"').hexdigest()
    r = run.invoke(main, ["store", "put", "--store", db], input='{"id": "x", "kind": "record", "content": }')
    assert r.exit_code == 2 and "<stdin>:1" in r.output and "invalid JSON" in r.output and "Traceback" not in r.output
    r = run.invoke(main, ["store", "put", "--store", db],
                   input='{"id": "x", "kind": "record", "content": 1, "inputs": ["nope"]}')
    assert r.exit_code == 2 and "unknown artifact 'nope'" in r.output and "[inputs[0]]" in r.output
    store = Store.open(db)
    _delete(store, "n1")
    store.close()
    r = run.invoke(main, ["store", "put", "--store", db],
                   input='{"id": "y", "kind": "summary", "content": 1, "inputs": ["n1"]}')
    assert r.exit_code == 2 and "refused" in r.output and "erased" in r.output, r.output
    r = run.invoke(main, ["store", "put", "--store", db], input='{"id": "y", "kind": "record", "content": "hi"}')
    assert r.exit_code == 2 and "tombstone" in r.output
    actions = [row["action"] for row in Store.open(db).audit_log()]
    assert actions[-2:] == ["refuse", "refuse"]


def test_a_write_failing_its_checks_leaves_no_chain_tail_behind(store_at):
    """A write reads the audit chain's tail together with its checks (one round trip on PostgreSQL), under
    the write lock. A write that then fails a check (an unknown input: InputError, nothing written) must
    not leave that tail to a later transaction of the same store: after another writer appended to the
    chain, this store's next event chains on the real tail and the chain verifies."""
    url = store_at("tail")
    s = Store.open(url, create=True)
    s.record({"id": "n1", "kind": "record", "content": "Alice lives in Paris"})
    with pytest.raises(InputError):
        s.record({"id": "x", "kind": "summary", "content": "from nothing"}, inputs=["no-such-input"])
    other = Store.open(url)
    other.record({"id": "n2", "kind": "record", "content": "Bob likes chess"})
    other.close()
    _delete(s, "n1")
    assert s.states()["n1"][0] == "erased"
    assert first_broken(s.audit_rows(), s.audit_head(), None) is None
    assert [r[0] for r in s.audit_rows()] == list(range(1, len(s.audit_rows()) + 1))
    s.close()
