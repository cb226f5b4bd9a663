"""Child processes of test_store_live_writes (run as scripts, not collected).

``holder URL ROOT``: plan a delete of ROOT, run its barrier, print ``ready``, wait for a line on
stdin, then complete the event (publication) and print the final plan's withdrawn and republished
ids as one JSON line.
``writer URL WRITES``: record each write of the JSON list (id, kind, content, inputs, wait), one at a
time, printing each outcome as one JSON line as it comes: [id, "ok", version, content] or [id, reason].
``stream URL N``: record N unrelated artifacts one by one, printing each acknowledged one as it commits
(a process to kill -9 mid-transaction).
"""

import json
import sys

from memsteward.errors import WriteRefused
from memsteward.policy.loader import load_policy_source
from memsteward.repair.events import parse_event
from memsteward.repair.execute import barrier, recover
from memsteward.repair.plan import compute_plan
from memsteward.store import Store


def holder(url: str, root: str) -> None:
    store = Store.open(url)
    policy = load_policy_source(sys.argv[4]).policy
    generation = store.generation()
    plan = compute_plan(policy, store, parse_event({"type": "delete", "roots": [root]}, store))
    barrier(store, policy, plan, generation)
    print("ready", flush=True)
    sys.stdin.readline()
    final = recover(store)
    assert final is not None
    print(json.dumps({"withdrawn": list(final.withdrawn), "republished": list(final.republished)}), flush=True)
    store.close()


def writer(url: str, writes: str) -> None:
    store = Store.open(url)
    for w in json.loads(writes):
        art = {"id": w["id"], "kind": w["kind"], "content": w["content"]}
        try:
            got = store.record(art, inputs=w.get("inputs", []), wait=w.get("wait", 0))
            out = [w["id"], "ok", got.version, w["content"]]
        except WriteRefused as exc:
            out = [w["id"], exc.reason]
        print(json.dumps(out), flush=True)
    store.close()


def stream(url: str, n: int) -> None:
    store = Store.open(url)
    for k in range(n):
        content = f"stream note {k}"
        got = store.record({"id": f"x{k}", "kind": "record", "content": content}, inputs=["m0"] if k % 2 else [])
        print(json.dumps([got.id, "ok", got.version, content]), flush=True)
    store.close()


if __name__ == "__main__":
    if sys.argv[1] == "holder":
        holder(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "stream":
        stream(sys.argv[2], int(sys.argv[3]))
    else:
        writer(sys.argv[2], sys.argv[3])
