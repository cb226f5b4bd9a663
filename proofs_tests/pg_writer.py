"""A writer process for the multi-writer PostgreSQL test (run as a script, not collected).

argv: store URL, writer number, steps, seed. It records new artifacts (inputs drawn from every id,
deleted ones included, so some writes are fenced) and applies overlapping delete / correct events,
waiting (bounded, jittered) while another writer's event is unfinished. Prints one JSON report.
"""

import json
import random
import sys
import time

from memsteward.api import apply_event, bundled_path, load_policy
from memsteward.errors import InputError, WriteRefused
from memsteward.store import Store, content_digest

WAIT_TRIES = 400


def main() -> None:
    url, me, steps, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    store = Store.open(url)
    policy = load_policy(bundled_path("policies", "default.yaml"))
    topics = sorted({i[1:-1] for i in store.states() if i.startswith("n") and i.endswith("a")})
    report = {"recorded": [], "fenced": [], "events": [], "skipped": [], "waits": 0}
    for k in range(steps):
        action = rng.choice(["record", "record", "delete", "correct"])
        t = rng.choice(topics)
        for _ in range(WAIT_TRIES):
            try:
                if action == "record":
                    ids = sorted(store.states())
                    inputs = rng.sample(ids, min(2, len(ids)))
                    wid, content = f"w{me}-{k}", f"writer {me} note {k} on {', '.join(inputs)}"
                    try:
                        art = store.record({"id": wid, "kind": "record", "content": content}, inputs=inputs)
                        report["recorded"].append([wid, art.version, content_digest(content), inputs])
                    except WriteRefused as exc:
                        if exc.reason != "fenced":
                            raise
                        report["fenced"].append([wid, inputs])
                elif action == "delete":
                    plan = apply_event(store, policy, {"type": "delete", "roots": [f"n{t}b"]})
                    report["events"].append(["delete", f"n{t}b", list(plan.barrier)])
                else:
                    repl = {"id": f"n{t}a", "kind": "record", "content": f"topic {t} fact a, corrected by {me} at {k}"}
                    plan = apply_event(store, policy, {"type": "correct", "roots": [f"n{t}a"], "replacements": [repl]})
                    report["events"].append(["correct", f"n{t}a", list(plan.barrier)])
                break
            except WriteRefused as exc:
                if exc.reason != "busy":
                    raise
            except InputError as exc:
                text = str(exc)
                if "erased" in text or "withdrawn" in text or "not servable" in text:
                    report["skipped"].append([action, t, text[:120]])  # a root another writer deleted
                    break
                if "unfinished event" not in text and "changed while" not in text:
                    raise
            report["waits"] += 1
            time.sleep(rng.uniform(0.01, 0.08))
        else:
            raise SystemExit(f"writer {me}: step {k} waited {WAIT_TRIES} times")
    store.close()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
