"""Hypothesis strategies shared by the repair tests: candidate families and provenance graphs."""

from __future__ import annotations

from hypothesis import strategies as st

from memsteward.repair.candidates import Candidate

WEIGHTS = st.sampled_from([0.0, 0.05, 0.15, 0.45, 0.5, 1.0, 1.5, 2.0, 3.0, 0.3, 4.0])


@st.composite
def candidate_families(draw, max_size: int = 10, allow_cycles: bool = True) -> list[Candidate]:
    """Random q_i families: DAG prerequisites (ids ordered), optional back edges, missing prereqs."""
    n = draw(st.integers(0, max_size))
    ids = [f"d{k}" for k in range(n)]
    out = []
    for k, i in enumerate(ids):
        pre = set(draw(st.lists(st.sampled_from(ids[:k]), max_size=3))) if k else set()
        if allow_cycles and k + 1 < n and draw(st.integers(0, 9)) == 0:
            pre.add(draw(st.sampled_from(ids[k + 1:])))
        if draw(st.integers(0, 11)) == 0:
            pre.add("removed-" + i)
        executable = draw(st.integers(0, 7)) != 0
        out.append(Candidate(i, "summary", None, "regen", "op", tuple(sorted(pre)), executable,
                             draw(WEIGHTS), draw(WEIGHTS)))
    return _mark_cycles(out)


def _mark_cycles(cands: list[Candidate]) -> list[Candidate]:
    """Apply the paper's executability rules: removed prerequisites and E^req cycles ⇒ v_i = 0."""
    import networkx as nx

    from memsteward.repair.graph import cyclic_nodes

    ids = {c.id for c in cands}
    g = nx.DiGraph()
    g.add_nodes_from(ids)
    g.add_edges_from((j, c.id) for c in cands for j in c.prerequisites if j in ids)
    cyc = cyclic_nodes(g, ids)
    fixed = []
    for c in cands:
        bad = c.id in cyc or any(j not in ids for j in c.prerequisites)
        fixed.append(Candidate(c.id, c.kind, c.arch, c.mode, c.operator, c.prerequisites,
                               c.executable and not bad, c.value, c.cost, "x" if bad else c.reason))
    return fixed


TRADEOFFS = st.sampled_from([0.0, 0.1, 0.15, 0.3, 0.35, 0.5, 1.0, 2.0])
