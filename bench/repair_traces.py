"""Generated provenance traces for the MemoRepair benchmarks (pure, seeded functions).

Two shapes, after the paper's two benchmarks (MemoRepair §3):

* :func:`tool_agent_trace` — a tool-using agent (ToolBench-like): API specs and trajectories
  (records) → cached outputs (replayable) → chain procedures and prompt skills → summaries;
  events delete or correct a trajectory, or migrate an API (tool renames, argument renames and,
  sometimes, a retired tool, so some chains cannot be rewritten).
* :func:`assistant_trace` — a long-horizon assistant (MemoryArena-like): conversation records →
  session summaries → preference profiles → neural skills (bag-of-words models trained on
  records) and prompt skills; events delete or correct a record, or migrate a session's records
  to a new schema (collection-level, several roots).

A trace is a store document (the JSON exchange format of :mod:`memsteward.repair.artifacts`),
event documents (validated later by :func:`memsteward.repair.events.parse_event`), and diagnostic
tasks (the artifacts each post-event action trace reads). Values w_i follow task usage
(``meta.value``) and repair costs c_i are drawn per artifact (``meta.cost``), so the selection
is not degenerate; :func:`bench_policy` makes a policy read them.

Also here: seeded failure injection (:func:`flaky_operators`, :func:`flaky_oracles`) — a failure
is a deterministic function of (seed, event, artifact), so every selector sees the same failures
for the same candidate — :func:`drop_edges` for the provenance ablation, and
:func:`scale_snapshot` for the large planning instances.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from memsteward.repair import neural
from memsteward.repair.artifacts import Artifact, Edge, Snapshot
from memsteward.repair.bundled import artifact_doc
from memsteward.repair.operators import OperatorError, OperatorRegistry, ParamRetrain, Recompute, RegenChain, RegenText
from memsteward.repair.oracles import ORACLES, OracleInput, Report

CITIES = ["Paris", "Lyon", "Nice", "Berlin", "Rome", "Oslo", "Lima", "Kyoto", "Cairo", "Quito",
          "Dakar", "Perth", "Tunis", "Bern", "Riga", "Porto"]
WEATHER = ["sunny", "rainy", "windy", "cloudy", "snowy", "foggy", "stormy", "mild"]
TOPICS = {  # label → sentence templates for the assistant's records
    "diet": ["The user prefers {a} meals and avoids {b}.", "The user cooks {a} dishes on weekends."],
    "travel": ["The user plans a trip to {c} in {m}.", "The user flew to {c} last {m}."],
    "work": ["The user works on {a} projects with the {b} team.", "The user has a {a} deadline in {m}."],
    "family": ["The user's sister visits from {c} in {m}.", "The user's son plays {a} football."],
    "hobby": ["The user enjoys {a} concerts in {c}.", "The user reads {a} novels before bed."],
    "health": ["The user is allergic to {b} and carries medicine.", "The user runs {a} kilometres weekly."],
    "language": ["The user's preferred language is English.", "The user writes emails in English."],
}
WORDS = ["vegetarian", "spicy", "jazz", "classic", "modern", "green", "quiet", "local", "remote",
         "urgent", "science", "garden", "mountain", "ocean", "coffee", "peanuts", "gluten", "dairy"]
MONTHS = ["March", "April", "May", "June", "July", "October", "November", "December"]


@dataclass(frozen=True)
class Trace:
    """One generated trace: a store document, its events (by type) and diagnostic tasks."""

    shape: str
    seed: int
    store: Mapping[str, Any]
    events: Mapping[str, tuple[Mapping[str, Any], ...]]
    tasks: tuple[tuple[str, ...], ...]
    info: Mapping[str, Any] = field(default_factory=dict)


def _cost(rng: random.Random, base: float, spread: float = 1.0) -> float:
    """A per-artifact repair cost: lognormal around ``base`` (rounded, so exact rationals stay small)."""
    return round(base * math.exp(rng.gauss(0.0, spread)), 2)


def _tasks_and_values(rng: random.Random, arts: list[dict], derived: list[str], n_tasks: int,
                      weights: Mapping[str, float]) -> list[tuple[str, ...]]:
    """Diagnostic tasks read 1–3 derived artifacts (popular ones more often); an artifact's value
    w_i = base(kind) · (1 + uses/2) — what a successor is worth grows with how often tasks use it."""
    pop = [rng.paretovariate(1.2) for _ in derived]
    tasks = []
    for _ in range(n_tasks):
        k = rng.choice((1, 2, 2, 3))
        tasks.append(tuple(sorted(set(rng.choices(derived, weights=pop, k=k)))))
    uses: dict[str, int] = {}
    for t in tasks:
        for x in t:
            uses[x] = uses.get(x, 0) + 1
    by_id = {a["id"]: a for a in arts}
    for x in derived:
        a = by_id[x]
        base = weights.get(a.get("arch") or a["kind"], 1.0)
        a["meta"]["value"] = round(base * (1 + uses.get(x, 0) / 2), 2)
    return tasks


# --------------------------------------------------------------------------- tool-using agent


def _api(k: int, rng: random.Random) -> dict[str, Any]:
    tools = {}
    for j in range(2):
        name = f"t{k}_{j}"
        params = {"city": "string", "days": "integer"} if j == 0 else {"q": "string", "limit": "integer"}
        tools[name] = {"params": params, "required": [sorted(params)[0]]}
    return {"name": f"api{k}", "version": 1, "tools": tools}


def _migrated(api: Mapping[str, Any], rng: random.Random, retire: float) -> dict[str, Any]:
    """κ_e after a migration: every tool renamed, one argument renamed, sometimes a tool retired."""
    tools, renames, arg_renames = {}, {}, {}
    names = sorted(api["tools"])
    retired = names[-1] if rng.random() < retire else None
    for name in names:
        if name == retired:
            continue
        spec = api["tools"][name]
        new = f"{name}_v2"
        params = dict(spec["params"])
        old_arg = sorted(params)[0]
        params[f"{old_arg}_v2"] = params.pop(old_arg)
        tools[new] = {"params": params, "required": [f"{old_arg}_v2"]}
        renames[name] = new
        arg_renames[new] = {old_arg: f"{old_arg}_v2"}
    return {"name": api["name"], "version": 2, "tools": tools, "renames": renames, "arg_renames": arg_renames}


def tool_agent_trace(seed: int = 0, n_apis: int = 12, n_traj: int = 120, n_events: int = 20,
                     retire: float = 0.25, n_tasks: int = 200) -> Trace:
    """A ToolBench-shaped trace (about 3.3 artifacts per trajectory) with ``n_events`` events per type."""
    rng = random.Random(f"tool-agent/{seed}")
    arts: list[dict[str, Any]] = []
    inf: list[tuple[str, str]] = []
    apis = {f"api-{k}": _api(k, rng) for k in range(n_apis)}
    arts += [artifact_doc(i, "record", spec) for i, spec in apis.items()]
    trajs: dict[str, dict[str, Any]] = {}
    uses_api: dict[str, list[str]] = {a: [] for a in apis}
    for k in range(n_traj):
        city, w = rng.choice(CITIES), rng.choice(WEATHER)
        used = rng.sample(sorted(apis), 1 if rng.random() < 0.85 else 2)
        calls = []
        for a in used:
            tool = rng.choice(sorted(apis[a]["tools"]))
            params = apis[a]["tools"][tool]["params"]
            args = {p: (city if t == "string" else rng.randint(1, 7)) for p, t in sorted(params.items())
                    if rng.random() < 0.8 or p == sorted(params)[0]}
            calls.append({"tool": tool, "args": args})
            uses_api[a].append(f"traj-{k}")
        result = f"The weather in {city} is {w} for {rng.randint(1, 7)} days. Trip {k} to {city} was planned."
        trajs[f"traj-{k}"] = {"task": f"Plan trip {k} to {city}.", "calls": calls, "result": result, "apis": used}
        arts.append(artifact_doc(f"traj-{k}", "record", {"task": trajs[f"traj-{k}"]["task"], "calls": calls,
                                                  "result": result}))
    derived: list[str] = []
    # cached outputs: one trajectory each (some fan out to many upstream calls: never replayed)
    caches = []
    for k, t in enumerate(sorted(trajs, key=lambda x: int(x.split("-")[1]))):
        if rng.random() < 0.7:
            cid = f"cache-{k}"
            calls = rng.choice((1, 1, 2, 3, 5, 8, 30))
            arts.append(artifact_doc(cid, "cache", trajs[t]["result"], transform="texts", age_days=rng.randint(0, 60),
                             calls=calls, cost=_cost(rng, 1.0 + 0.2 * calls)))
            inf.append((t, cid))
            caches.append((cid, t))
    derived += [c for c, _ in caches]
    # chain procedures: one API plus 1–3 trajectories that called it
    chains = []
    for a in sorted(apis):
        users = uses_api[a]
        for j in range(max(1, len(users) // 2)):
            if not users:
                break
            src = sorted(set(rng.sample(users, min(len(users), rng.choice((1, 2, 3))))))
            cid = f"chain-{a[4:]}-{j}"
            calls = [c for t in src for c in trajs[t]["calls"] if c["tool"] in apis[a]["tools"]]
            arts.append(artifact_doc(cid, "skill", {"goal": f"Use {a} like trips {', '.join(src)}.", "calls": calls},
                             "chain", cost=_cost(rng, 4.0)))
            inf += [(a, cid)] + [(t, cid) for t in src]
            chains.append(cid)
    derived += chains
    # prompt skills: from 2–4 cached outputs (replayed first: requirement edges) or trajectories
    prompts = []
    cache_pop = [rng.paretovariate(1.0) for _ in caches]  # a few popular caches feed many prompts
    for j in range(n_traj // 4):
        picks = list({c: None for c in rng.choices(caches, weights=cache_pop, k=rng.choice((2, 3, 4)))})
        pid = f"prompt-{j}"
        text = " ".join(arts[[x["id"] for x in arts].index(c)]["content"] for c, _ in picks)
        probe_city = trajs[picks[0][1]]["result"].split(" in ")[1].split(" ")[0]
        arts.append(artifact_doc(pid, "skill", "Check the forecast first. " + text, "prompt", cost=_cost(rng, 3.0),
                         probes=[{"query": f"weather in {probe_city}", "expect": probe_city}]))
        inf += [(c, pid) for c, _ in picks]
        if rng.random() < 0.3:
            inf.append((rng.choice(sorted(trajs)), pid))
        prompts.append(pid)
    derived += prompts
    # summaries over trajectories and cached outputs; weekly digests over summaries and chains
    sums = []
    for j in range(n_traj // 5):
        src = rng.sample(sorted(trajs), rng.choice((2, 3, 4)))
        if caches and rng.random() < 0.5:
            src.append(rng.choice(caches)[0])
        if prompts and rng.random() < 0.3:
            src.append(rng.choice(prompts))
        sid = f"sum-{j}"
        arts.append(artifact_doc(sid, "summary", " ".join(f"Trip to {trajs[t]['task'].split(' to ')[1]}" if t in trajs
                                                  else "A cached forecast." for t in src),
                         cost=_cost(rng, 1.5)))
        inf += [(s, sid) for s in src]
        sums.append(sid)
    digests = []
    for j in range(n_traj // 12):
        src = rng.sample(sums, 2) + ([rng.choice(chains + prompts)] if rng.random() < 0.6 else [])
        did = f"digest-{j}"
        arts.append(artifact_doc(did, "summary", "Weekly digest of trips and forecasts.", cost=_cost(rng, 3.0)))
        inf += [(s, did) for s in src]
        digests.append(did)
    for j in range(n_traj // 40):
        src = rng.sample(digests, min(len(digests), rng.choice((2, 3))))
        mid = f"monthly-{j}"
        arts.append(artifact_doc(mid, "summary", "Monthly report of trips.", cost=_cost(rng, 3.0)))
        inf += [(s, mid) for s in src]
        digests.append(mid)
    sums += digests
    derived += sums
    tasks = _tasks_and_values(rng, arts, derived, n_tasks, {"chain": 3.0, "prompt": 3.0, "cache": 1.0,
                                                            "summary": 1.0})
    events: dict[str, list[dict[str, Any]]] = {"delete": [], "correct": [], "migrate": []}
    traj_ids = sorted(trajs)
    for t in rng.sample(traj_ids, min(n_events, len(traj_ids))):
        events["delete"].append({"type": "delete", "roots": [t]})
    for t in rng.sample(traj_ids, min(n_events, len(traj_ids))):
        city = rng.choice(CITIES)
        old = trajs[t]
        calls = [{"tool": c["tool"], "args": {k: (city if isinstance(v, str) else v) for k, v in c["args"].items()}}
                 for c in old["calls"]]
        events["correct"].append({"type": "correct", "roots": [t], "replacements": [artifact_doc(
            t, "record", {"task": old["task"], "calls": calls,
                          "result": f"The weather in {city} is {rng.choice(WEATHER)} (corrected)."}, corrected=1)]})
    for k in range(n_events):
        a = sorted(apis)[k % len(apis)]
        events["migrate"].append({"type": "migrate", "roots": [a], "interface": _migrated(apis[a], rng, retire)})
    store = {"artifacts": arts, "edges": [{"src": s, "dst": d, "type": "influence"} for s, d in inf]}
    return Trace("tool-agent", seed, store, {k: tuple(v) for k, v in events.items()}, tuple(tasks),
                 {"artifacts": len(arts), "influence_edges": len(inf)})


# --------------------------------------------------------------------------- long-horizon assistant


def _sentence(rng: random.Random, label: str) -> str:
    return rng.choice(TOPICS[label]).format(a=rng.choice(WORDS), b=rng.choice(WORDS), c=rng.choice(CITIES),
                                            m=rng.choice(MONTHS))


def assistant_trace(seed: int = 0, n_sessions: int = 40, per_session: int = 6, n_events: int = 20,
                    n_tasks: int = 200) -> Trace:
    """A MemoryArena-shaped trace: records → session summaries → preferences → neural/prompt skills."""
    rng = random.Random(f"assistant/{seed}")
    arts: list[dict[str, Any]] = []
    inf: list[tuple[str, str]] = []
    labels = sorted(TOPICS)
    records: dict[str, dict[str, str]] = {}
    sessions: list[list[str]] = []
    for s in range(n_sessions):
        ids = []
        for j in range(per_session):
            y = rng.choice(labels)
            rid = f"rec-{s}-{j}"
            records[rid] = {"text": _sentence(rng, y), "label": y}
            arts.append(artifact_doc(rid, "record", records[rid]))
            ids.append(rid)
        sessions.append(ids)
    derived: list[str] = []
    sums = []
    for s, ids in enumerate(sessions):
        for j in range(2):
            src = sorted(rng.sample(ids, rng.choice((3, 4, 5))))
            sid = f"sum-{s}-{j}"
            sens = 3 if any(records[r]["label"] == "health" for r in src) and rng.random() < 0.5 else rng.randint(0, 2)
            arts.append(artifact_doc(sid, "summary", " ".join(records[r]["text"] for r in src), sessions=1,
                             sensitivity=sens, cost=_cost(rng, 2.0)))
            inf += [(r, sid) for r in src]
            sums.append(sid)
    derived += sums
    prefs = []
    for j in range(n_sessions // 2):
        src = rng.sample(sums, rng.choice((2, 3)))
        extra = rng.sample(sorted(records), rng.choice((0, 1, 2)))
        pid = f"pref-{j}"
        arts.append(artifact_doc(pid, "summary", "Preferences: " + " ".join(records[r]["text"] for r in extra)
                         + " The user's preferred language is English.", sessions=len(src),
                         sensitivity=rng.randint(0, 2), cost=_cost(rng, 3.0)))
        inf += [(x, pid) for x in src + extra]
        prefs.append(pid)
    derived += prefs
    skills = []
    for j in range(max(2, n_sessions // 5)):
        src = sorted(set(rng.sample(sorted(records), rng.choice((8, 10, 12)))))
        nid = f"neural-{j}"
        model = neural.train([(records[r]["text"], records[r]["label"]) for r in src])
        arts.append(artifact_doc(nid, "skill", model, "neural", cost=_cost(rng, 8.0)))
        inf += [(r, nid) for r in src]
        skills.append(nid)
    for j in range(n_sessions // 4):
        src = rng.sample(prefs, rng.choice((1, 2, 3)))
        pid = f"prompt-{j}"
        arts.append(artifact_doc(pid, "skill", "Answer in the user's preferred language, English. Respect preferences.",
                         "prompt", cost=_cost(rng, 3.0)))
        inf += [(x, pid) for x in src]
        skills.append(pid)
    derived += skills
    tasks = _tasks_and_values(rng, arts, derived, n_tasks, {"summary": 2.0, "neural": 3.0, "prompt": 3.0})
    events: dict[str, list[dict[str, Any]]] = {"delete": [], "correct": [], "migrate": []}
    rec_ids = sorted(records)
    for r in rng.sample(rec_ids, min(n_events, len(rec_ids))):
        events["delete"].append({"type": "delete", "roots": [r]})
    for r in rng.sample(rec_ids, min(n_events, len(rec_ids))):
        y = records[r]["label"]
        events["correct"].append({"type": "correct", "roots": [r], "replacements": [
            artifact_doc(r, "record", {"text": _sentence(rng, y), "label": y}, corrected=1)]})
    for s in rng.sample(range(n_sessions), min(n_events, n_sessions)):
        roots = sorted(rng.sample(sessions[s], rng.choice((1, 2, 3))))
        events["migrate"].append({"type": "migrate", "roots": roots,
                                  "interface": {r: {"schema": "records/v2", "session": s} for r in roots}
                                  if len(roots) > 1 else {"schema": "records/v2", "session": s}})
    store = {"artifacts": arts, "edges": [{"src": s, "dst": d, "type": "influence"} for s, d in inf]}
    return Trace("assistant", seed, store, {k: tuple(v) for k, v in events.items()}, tuple(tasks),
                 {"artifacts": len(arts), "influence_edges": len(inf)})


SHAPES: dict[str, Callable[..., Trace]] = {"tool-agent": tool_agent_trace, "assistant": assistant_trace}
POLICY_OF: dict[str, str] = {"tool-agent": "policies/tool-agent.yaml", "assistant": "policies/assistant.yaml"}


def bench_policy(policy: Any, tradeoff: float | None = None) -> Any:
    """The policy with w_i / c_i read from ``meta.value`` / ``meta.cost`` (as tool-agent.yaml does)
    and, optionally, another λ. The mode rules and oracles are the policy's own."""
    sel = policy.selection
    update: dict[str, Any] = {"value": sel.value.model_copy(update={"from_meta": "value"}),
                              "cost": sel.cost.model_copy(update={"from_meta": "cost"})}
    if tradeoff is not None:
        update["tradeoff"] = tradeoff
    return policy.model_copy(update={"selection": sel.model_copy(update=update)})


# --------------------------------------------------------------------------- failure injection


def _unit(*parts: object) -> float:
    """A uniform number in [0, 1) from a hash of ``parts`` (deterministic across processes)."""
    h = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2**64


@dataclass(frozen=True)
class Flaky:
    """An operator that fails (OperatorError) for a seeded ``rate`` of artifacts, else delegates."""

    inner: Any
    rate: float
    salt: str

    @property
    def name(self) -> str:
        return self.inner.name

    def check(self, artifact: Artifact) -> str | None:
        return self.inner.check(artifact)

    def __call__(self, artifact: Artifact, ctx: Any) -> Any:
        if self.rate > 0 and _unit(self.salt, "op", artifact.id) < self.rate:
            raise OperatorError("injected operator failure")
        return self.inner(artifact, ctx)


def flaky_operators(rate: float, salt: str) -> OperatorRegistry:
    """The default offline operators, each failing for a seeded ``rate`` of artifacts."""
    reg = OperatorRegistry()
    reg.register("recompute", Flaky(Recompute(), rate, salt))
    reg.register("regen", Flaky(RegenText(), rate, salt))
    reg.register("regen", Flaky(RegenChain(), rate, salt), kind="skill", arch="chain")
    reg.register("param", Flaky(ParamRetrain(), rate, salt))
    return reg


def flaky_oracles(rate: float, salt: str) -> dict[str, Callable[[Any, OracleInput], Report]]:
    """The offline oracles; each successor additionally fails validation with probability ``rate``
    (one seeded draw per successor, reported by the first oracle that runs)."""
    def wrap(name: str, fn: Callable[[Any, OracleInput], Report]) -> Callable[[Any, OracleInput], Report]:
        def oracle(spec: Any, x: OracleInput) -> Report:
            if rate > 0 and _unit(salt, "val", x.artifact.id) < rate:
                return Report(name, False, "injected validation failure")
            return fn(spec, x)
        return oracle
    return {name: wrap(name, fn) for name, fn in ORACLES.items()}


def drop_edges(store: Mapping[str, Any], p: float, salt: str) -> dict[str, Any]:
    """The store document with each influence edge dropped independently with probability p."""
    edges = [e for e in store["edges"]
             if e["type"] != "influence" or _unit(salt, "drop", e["src"], e["dst"]) >= p]
    return {"artifacts": store["artifacts"], "edges": edges}


# --------------------------------------------------------------------------- large planning instances


def scale_snapshot(n: int, seed: int = 0, event_share: float = 0.1) -> tuple[Snapshot, dict[str, Any]]:
    """A tool-agent-shaped store of about ``n`` artifacts (no bulky content) and a migrate event
    over ``event_share`` of its APIs, so |C(F)| is roughly ``event_share`` of the store: every batch
    of :func:`scale_batches` in one snapshot."""
    arts: dict[str, Artifact] = {}
    edges: list[Edge] = []
    for batch in scale_batches(n, seed):
        arts.update((a.id, a) for a in batch.artifacts.values())
        edges += batch.edges
    return Snapshot(arts, tuple(dict.fromkeys(edges))), scale_event(n, event_share)


def scale_event(n: int, event_share: float) -> dict[str, Any]:
    """The migration of the first ``event_share`` of the APIs of :func:`scale_batches` (n)."""
    u = max(1, n // 100)
    iface = {"tools": {"t": {"params": {"q": "string"}, "required": ["q"]}}}
    roots = [f"api-{k}" for k in range(max(1, round(event_share * u)))]
    return {"type": "migrate", "roots": roots, "interface": {r: iface for r in roots} if len(roots) > 1 else iface}


def scale_batches(n: int, seed: int = 0, batch: int = 200_000) -> Iterator[Snapshot]:
    """The store of :func:`scale_snapshot` as snapshots of about ``batch`` artifacts each, in
    creation order (an edge's source is always in the same or an earlier batch), so a store of
    10^7 artifacts can be written to disk without holding it in memory.

    Per 100 artifacts: 1 API, 24 trajectories, 20 cached outputs (low value, so mostly negative
    profit), 20 chains (API + 1–3 trajectories), 15 prompt skills (2–3 caches, popular ones more
    often), 15 summaries (2 of chains/prompts) and 5 digests (2 summaries).
    """
    rng = random.Random(f"scale/{seed}/{n}")
    u = max(1, n // 100)
    arts: dict[str, Artifact] = {}
    edges: list[Edge] = []

    def add(ident: str, kind: str, arch: str | None = None, **meta: Any) -> Iterator[Snapshot]:
        nonlocal arts, edges
        arts[ident] = Artifact(ident, kind, arch, 1, None, meta)
        if len(arts) >= batch:
            yield flush()

    def flush() -> Snapshot:
        nonlocal arts, edges
        out = Snapshot(arts, tuple(dict.fromkeys(edges)))
        arts, edges = {}, []
        return out

    for k in range(u):
        yield from add(f"api-{k}", "record")
    for k in range(24 * u):
        yield from add(f"traj-{k}", "record")
    for k in range(20 * u):
        cost = _cost(rng, 1.0)
        edges.append(Edge(f"traj-{rng.randrange(24 * u)}", f"cache-{k}"))
        yield from add(f"cache-{k}", "cache", transform="texts", calls=1, value=0.3, cost=cost)
    for k in range(20 * u):
        meta = {"value": round(3 * rng.paretovariate(2), 2), "cost": _cost(rng, 1.5)}
        edges.append(Edge(f"api-{k % u}", f"chain-{k}"))
        for t in {rng.randrange(24 * u) for _ in range(rng.choice((1, 2, 3)))}:
            edges.append(Edge(f"traj-{t}", f"chain-{k}"))
        yield from add(f"chain-{k}", "skill", "chain", **meta)
    for k in range(15 * u):
        meta = {"value": round(3 * rng.paretovariate(2), 2), "cost": _cost(rng, 1.5)}
        for c in {int(20 * u * rng.random() ** 3) for _ in range(rng.choice((2, 3)))}:
            edges.append(Edge(f"cache-{c}", f"prompt-{k}"))
        yield from add(f"prompt-{k}", "skill", "prompt", **meta)
    n_chain, n_prompt = 20 * u, 15 * u
    for k in range(15 * u):
        meta = {"value": round(rng.paretovariate(2), 2), "cost": _cost(rng, 1.5)}
        for x in {_pool(rng.randrange(n_chain + n_prompt), n_chain) for _ in range(2)}:
            edges.append(Edge(x, f"sum-{k}"))
        yield from add(f"sum-{k}", "summary", **meta)
    for k in range(5 * u):
        meta = {"value": round(rng.paretovariate(2), 2), "cost": _cost(rng, 1.5)}
        for x in {rng.randrange(15 * u) for _ in range(2)}:
            edges.append(Edge(f"sum-{x}", f"digest-{k}"))
        yield from add(f"digest-{k}", "summary", **meta)
    if arts:
        yield flush()


def _pool(k: int, n_chain: int) -> str:
    """The k-th of [chain-0 … chain-(n_chain−1), prompt-0 …] without building the list."""
    return f"chain-{k}" if k < n_chain else f"prompt-{k - n_chain}"


def barrier_snapshot(n_desc: int) -> tuple[Snapshot, dict[str, Any]]:
    """One ``corpus`` record with ``n_desc`` descendants (half cached outputs replayed from it, half
    summaries over two of them) and the event deleting it: |C(F)| = n_desc + 1."""
    half = n_desc // 2
    arts = {"corpus": Artifact("corpus", "record", None, 1, {"text": "corpus"}, {})}
    edges = []
    for k in range(half):
        arts[f"cache-{k}"] = Artifact(f"cache-{k}", "cache", None, 1, f"cached output {k}", {"transform": "texts"})
        edges.append(Edge("corpus", f"cache-{k}"))
    for k in range(n_desc - half):
        arts[f"sum-{k}"] = Artifact(f"sum-{k}", "summary", None, 1, f"summary {k}", {})
        edges += [Edge(f"cache-{k % half}", f"sum-{k}"), Edge(f"cache-{(k * 7 + 1) % half}", f"sum-{k}")]
    return Snapshot(arts, tuple(dict.fromkeys(edges))), {"type": "delete", "roots": ["corpus"]}
