"""Symbolic contracts on the pure planning, oracle and endpoint functions (CrossHair, issue 33).

Each ``contract_*`` function is a CrossHair *asserts* contract: the leading ``assert`` statements are
preconditions (they bound the inputs), the later ones are the property. ``crosshair check
--analysis_kind=asserts`` explores the paths symbolically and reports an input that makes a later
assert fail. When it exhausts every path within the bounds the contract is **proved for those
bounds**; when its time runs out first it is only **checked** (no counterexample found). The
bounds are stated in :data:`CONTRACTS`, and ``proofs_tests/test_specs_contracts.py`` runs every
contract in ``make test`` with a time limit and reports which were exhausted.

Each property also has a broken variant (``broken_*``): the same contract over a deliberately
wrong implementation, which CrossHair must refute, so a contract that can never fail is caught.

| contract | property (paper / module) |
|---|---|
| generation order | every requirement edge j → i puts j before i, and the order is a permutation (Algorithm 1 line 7; ``scope.generation_order``) |
| support counting | membership in Ret(e) without materialising it agrees with Ret(e) (§2.1; ``scope.is_retained``) |
| grounded | a sentence none of whose content words occurs in the retained support is never published (``oracles.grounding_problems``) |
| endpoint policy | an empty key-variable allow-list admits no variable, and memsteward's own secrets are never admitted (``endpoints.EndpointRules``) |
"""

from __future__ import annotations

from memsteward.policy.endpoints import EndpointRules, own_secret
from memsteward.repair.oracles import grounding_problems
from memsteward.repair.scope import generation_order, is_retained, retained

MAX_NODES = 5
WORDS = ("apple", "river", "mountain", "teacher", "violin", "garden", "lantern", "harbor")
#: pieces of environment-variable names: the search covers memsteward's own prefixes, case and the defaults
PIECES = ("MEMSTEWARD_", "AUDIT_", "KEY", "OPENAI_", "API_", "PG", "DSN", "master_", "X")


def _dag(n: int, edges: list[tuple[int, int]]) -> tuple[list[str], list[tuple[str, str]]]:
    nodes = [f"n{k}" for k in range(n)]
    return nodes, [(nodes[a], nodes[b]) for a, b in edges]


def contract_generation_order(n: int, edges: list[tuple[int, int]]) -> None:
    assert 0 <= n <= MAX_NODES
    assert len(edges) <= 6
    assert all(0 <= a < b < n for a, b in edges)  # a < b: acyclic by construction
    nodes, named = _dag(n, edges)
    order = generation_order(nodes, named)
    pos = {x: k for k, x in enumerate(order)}
    assert sorted(order) == sorted(nodes)
    assert all(pos[a] < pos[b] for a, b in named)


def _retained_case(n: int, affected: list[int], replacements: list[int], correct: bool):
    nodes = [f"n{k}" for k in range(n)]
    aff = [f"n{a}" for a in affected]
    repl = [f"n{r}" for r in replacements]
    event = "correct" if correct else "delete"
    return nodes, aff, repl, event, retained(nodes, aff, event, repl)


def contract_support_counting(n: int, affected: list[int], replacements: list[int], correct: bool) -> None:
    assert 0 <= n <= MAX_NODES
    assert all(0 <= a < n for a in affected) and all(0 <= r < n + 2 for r in replacements)
    nodes, aff, repl, event, ret = _retained_case(n, affected, replacements, correct)
    assert all(is_retained(x, aff, event, repl) == (x in ret) for x in nodes)
    assert all(x not in ret for x in aff if not (correct and x in repl))


def _grounding(first: tuple[int, int], second: int, support: tuple[int, int]) -> list[str]:
    text = f"The {WORDS[first[0]]} {WORDS[first[1]]}. A {WORDS[second]}."
    return grounding_problems(text, [f"{WORDS[support[0]]} and {WORDS[support[1]]}"], [], [], 0.5)


def contract_grounded(a: int, b: int, c: int, s: int, t: int) -> None:
    assert all(0 <= w < len(WORDS) for w in (a, b, c, s, t))
    problems = _grounding((a, b), c, (s, t))
    if c not in (s, t) or not {a, b} & {s, t}:  # a sentence with no supported word
        assert problems
    if {a, b, c} <= {s, t}:
        assert not problems


def contract_endpoint_policy(p: int, q: int, r: int, allow: int) -> None:
    assert all(0 <= x < len(PIECES) for x in (p, q, r, allow))
    name = PIECES[p] + PIECES[q] + PIECES[r]
    assert not EndpointRules(key_envs=()).key_env_allowed(name)
    if own_secret(name):
        assert not EndpointRules(key_envs=(PIECES[allow] + "*", "*")).key_env_allowed(name)


# ----------------------------------------------------------------------------- broken variants

def broken_generation_order(n: int, edges: list[tuple[int, int]]) -> None:
    assert 0 <= n <= MAX_NODES
    assert len(edges) <= 6
    assert all(0 <= a < b < n for a, b in edges)
    nodes, named = _dag(n, edges)
    order = sorted(nodes, reverse=True)  # broken: ignores the edges
    pos = {x: k for k, x in enumerate(order)}
    assert all(pos[a] < pos[b] for a, b in named)


def broken_support_counting(n: int, affected: list[int], replacements: list[int], correct: bool) -> None:
    assert 0 <= n <= MAX_NODES
    assert all(0 <= a < n for a in affected) and all(0 <= r < n + 2 for r in replacements)
    nodes, aff, repl, event, ret = _retained_case(n, affected, replacements, correct)
    assert all((x not in aff) == (x in ret) for x in nodes)  # broken: a correction's replacement is not support


def broken_grounded(a: int, b: int, c: int, s: int, t: int) -> None:
    assert all(0 <= w < len(WORDS) for w in (a, b, c, s, t))
    pooled = {a, b, c}  # broken: the words of the whole text are pooled, not scored per sentence
    grounded = len(pooled & {s, t}) / len(pooled) >= 0.5
    if c not in (s, t) or not {a, b} & {s, t}:
        assert not grounded


def broken_endpoint_policy(p: int, q: int, r: int, allow: int) -> None:
    assert all(0 <= x < len(PIECES) for x in (p, q, r, allow))
    name = PIECES[p] + PIECES[q] + PIECES[r]
    configured: tuple[str, ...] = ()
    envs = configured or EndpointRules().key_envs  # broken: an empty allow-list falls back to the defaults
    assert name not in envs


#: name → (the bounds in words, the broken variant CrossHair must refute)
CONTRACTS: dict[str, tuple[str, str]] = {
    "contract_generation_order": (f"DAGs of ≤ {MAX_NODES} nodes and ≤ 6 edges", "broken_generation_order"),
    "contract_support_counting": (f"≤ {MAX_NODES} nodes, delete and correct", "broken_support_counting"),
    "contract_grounded": (f"two sentences (2 words, 1 word) over {len(WORDS)} words, 2 support words",
                          "broken_grounded"),
    "contract_endpoint_policy": (f"names of 3 of {len(PIECES)} pieces, one prefix pattern",
                                 "broken_endpoint_policy"),
}
