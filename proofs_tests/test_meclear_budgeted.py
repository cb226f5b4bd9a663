"""Budget-aware MeClear (search: budgeted) and the shapiq estimators (issue 32).

* every estimator path keeps G3 (ĝ(ĵ) ≥ 0; ĵ > 0 ⇒ ĝ(ĵ) > 0 and ν(M̃) = 1 at the game's trials;
  ĵ = min argmax over the verified prefix) and never spends more than the call budget;
* a search that stopped at the gain ceiling selects the paper's ĵ of its chain (Eq. 20);
* every shapiq approximator against exact Shapley (Eq. 3) on small games, through the cache;
* the policy refuses budgets that cannot pay for the screen and one verified candidate.
"""

from __future__ import annotations

import random

import pytest
from clear_helpers import all_subsets, table_game
from pydantic import ValidationError

from memsteward.clearance import budgeted
from memsteward.clearance.attribution import exact_contribution
from memsteward.clearance.budgeted import run_budgeted
from memsteward.clearance.case import case_game, parse_case
from memsteward.clearance.cohort import synthetic_cohort
from memsteward.clearance.game import Game
from memsteward.clearance.pipeline import run_meclear
from memsteward.clearance.selection import EPS, gains, select
from memsteward.clearance.shapiq_games import shapiq_contribution
from memsteward.policy.model import SHAPIQ_ESTIMATORS, ClearanceSpec, Estimator

pytest.importorskip("shapiq")

ESTIMATORS = ["permutation", "stratified", "exact", *(f"shapiq:{n}" for n in SHAPIQ_ESTIMATORS)]
EXACT_AT_FULL_BUDGET = ("KernelSHAP", "UnbiasedKernelSHAP", "kADDSHAP", "SVARM")


def _cases(k: int, n: int = 6, noise: float = 0.05):
    return [parse_case(c) for c in synthetic_cohort(n, seed=k, k=k, noise=noise)]


def _g3(game: Game, plan) -> None:
    """Theorem 2 on the plan, re-read from the game's cache at full trials (no new calls)."""
    assert plan.cleared_value >= plan.baseline_value - EPS
    assert plan.selected in plan.admissible
    if plan.selected > 0:
        assert plan.cleared_value > plan.baseline_value + EPS
        assert game.recovery.holds(plan.cleared_value)
        assert plan.recovered
    best = max(plan.gains[j] for j in plan.admissible)
    assert plan.selected == min(j for j in plan.admissible if plan.gains[j] >= best - EPS)
    assert plan.removed == plan.chain[: plan.selected]


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("budget", [16, 40, 96])
def test_g3_and_the_hard_budget_on_every_estimator(estimator: str, budget: int) -> None:
    k = 5
    if estimator == "exact":
        budget += 64  # exact under search: budgeted needs 2^K·1 + K + 2·trials
    spec = ClearanceSpec(retrieval_budget=k, search="budgeted", call_budget=budget, estimator=estimator)
    for case in _cases(k):
        game = case_game(case, spec)
        plan = run_meclear(game, spec)
        assert plan.evaluator_calls <= budget
        assert plan.evaluator_calls == game.evaluator_calls
        _g3(game, plan)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_g3_and_the_hard_budget_on_every_estimator_refining(estimator: str) -> None:
    """after_verified: refine keeps G3 and B on every estimator path (rounds go on past the ceiling)."""
    k, budget = 5, 104 if estimator == "exact" else 40
    spec = ClearanceSpec(retrieval_budget=k, search="budgeted", call_budget=budget, estimator=estimator,
                         after_verified="refine")
    for case in _cases(k):
        game = case_game(case, spec)
        plan = run_meclear(game, spec)
        assert plan.evaluator_calls <= budget
        assert plan.evaluator_calls == game.evaluator_calls
        _g3(game, plan)


@pytest.mark.parametrize("estimator", ["stratified", "permutation", "shapiq:KernelSHAP"])
def test_g3_at_k_20_within_64_calls(estimator: str) -> None:
    spec = ClearanceSpec(retrieval_budget=20, search="budgeted", call_budget=64, estimator=estimator)
    for case in _cases(20, n=4):
        game = case_game(case, spec)
        plan = run_meclear(game, spec)
        assert plan.evaluator_calls <= 64
        _g3(game, plan)


def test_stop_at_the_ceiling_selects_the_papers_j_hat() -> None:
    """Eq. 20 on the whole chain (every candidate verified, no budget) gives the same ĵ."""
    spec = ClearanceSpec(retrieval_budget=10, search="budgeted", call_budget=64, estimator="stratified")
    stopped = 0
    for case in _cases(10, n=12):
        game = case_game(case, spec)
        plan = run_budgeted(game, spec)
        if plan.stop != "verified":
            continue
        stopped += 1
        free = game.fork(call_budget=None)
        g = gains(free, plan.chain)
        full = free.grand
        j_set = [0] + [j for j in range(1, len(plan.chain) + 1)
                       if g[j] > EPS and free.recovered(full - frozenset(plan.chain[:j]))]
        assert select(g, j_set) == plan.selected
    assert stopped >= 6


def test_a_redundant_pair_is_cleared_after_the_screen_misses_it() -> None:
    """LOO sees nothing (Thm 1); an estimation round finds the pair and verification keeps it."""
    ids = [f"m{i}" for i in range(1, 9)]
    faults = {"m3", "m6"}
    game = table_game(ids, lambda s: float("m1" in s and not (s & faults)), trials=2)
    spec = ClearanceSpec(retrieval_budget=8, search="budgeted", call_budget=64, estimator="stratified")
    plan = run_budgeted(game, spec)
    assert all(d == 0 for d in plan.loo.values())
    assert faults <= set(plan.removed) and plan.recovered and plan.stop == "verified"
    assert plan.evaluator_calls <= 64
    asked = game.evaluator.asked  # type: ignore[attr-defined]
    # no coalition paid twice, except a one-trial sample that a verification re-reads at two trials
    again = [c for c in set(asked) if asked.count(c) > 1]
    assert all(asked.count(c) == 2 and c in game.store.partial for c in again)


@pytest.mark.parametrize("name", SHAPIQ_ESTIMATORS)
def test_every_shapiq_approximator_against_exact_shapley(name: str) -> None:
    rng = random.Random(7)
    ids = ["a", "b", "c", "d"]
    table = {s: rng.random() for s in all_subsets(ids)}
    game = table_game(ids, lambda s: table[s], trials=1)
    exact = exact_contribution(game.fork())
    est = game.fork()
    budget = 16 if name in EXACT_AT_FULL_BUDGET else 4000
    psi = shapiq_contribution(est, f"shapiq:{name}", budget, seed=0)
    assert psi is not None
    tol = 1e-6 if name in EXACT_AT_FULL_BUDGET else 0.1
    assert max(abs(psi[i] - exact[i]) for i in ids) <= tol
    assert est.evaluator_calls <= 16  # 2^4 coalitions, each paid once however often shapiq asks
    asked = game.evaluator.asked  # type: ignore[attr-defined]
    assert len(asked) == len(set(asked))


def test_shapiq_spends_no_more_than_its_allowance() -> None:
    ids = [f"m{i}" for i in range(8)]
    game = table_game(ids, lambda s: len(s) / 8, trials=2)
    psi = shapiq_contribution(game, "shapiq:KernelSHAP", 30, seed=1)
    assert psi is not None and game.evaluator_calls <= 30
    assert shapiq_contribution(game.fork(), "shapiq:KernelSHAP", 3, seed=1) is None  # < 2 coalitions


def test_the_shapiq_names_are_the_policys() -> None:
    names = {e for e in Estimator.__args__ if e.startswith("shapiq:")}  # type: ignore[attr-defined]
    assert names == {f"shapiq:{n}" for n in SHAPIQ_ESTIMATORS}


@pytest.mark.parametrize("fields, message", [
    ({"search": "budgeted"}, "needs a call_budget"),
    ({"search": "budgeted", "retrieval_budget": 20, "call_budget": 23}, "K + 2·trials = 24"),
    ({"search": "budgeted", "retrieval_budget": 10, "call_budget": 100, "estimator": "exact"}, "2^K"),
    ({"retrieval_budget": 20, "estimator": "exact"}, "≤ 16"),
    ({"estimator": "shapiq:Nope"}, "shapiq:KernelSHAP"),
    ({"search": "budgeted", "call_budget": 10_000_001}, "less than or equal"),
])
def test_the_policy_refuses_budgets_that_cannot_verify(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("^", r"\^").replace("+", r"\+")):
        ClearanceSpec(**fields)


def test_a_budget_that_pays_for_the_screen_only_removes_nothing_unverified() -> None:
    ids = [f"m{i}" for i in range(1, 7)]
    game = table_game(ids, lambda s: float("m1" in s and "m2" not in s), trials=2)
    spec = ClearanceSpec(retrieval_budget=6, search="budgeted", call_budget=10, estimator="stratified")
    plan = run_budgeted(game, spec)
    assert plan.evaluator_calls <= 10
    assert plan.removed == ("m2",) and plan.recovered  # the screen's d found it, one verification paid


@pytest.mark.parametrize("estimator", ["stratified", "permutation"])
def test_later_rounds_extend_the_sample_until_the_budget_is_spent(estimator: str) -> None:
    """A case the search cannot clear spends (almost) all of B: each round draws further along its
    seeded stream instead of re-reading the prefix an earlier round paid for."""
    ids = [f"m{i}" for i in range(1, 17)]
    game = table_game(ids, lambda s: 0.0, trials=2)  # nothing ever recovers
    spec = ClearanceSpec(retrieval_budget=16, search="budgeted", call_budget=64, estimator=estimator)
    plan = run_budgeted(game, spec)
    assert plan.stop == "budget" and plan.removed == ()
    assert 64 - 2 * 16 <= plan.evaluator_calls <= 64 if estimator == "permutation" else 60 <= plan.evaluator_calls <= 64


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_g3_on_the_papers_search_with_every_estimator(estimator: str) -> None:
    """search: paper (Algorithm 1 as published) with each estimator, shapiq's included."""
    spec = ClearanceSpec(retrieval_budget=6, estimator=estimator, exact="never", interactions="none")
    for case in _cases(6, n=4):
        game = case_game(case, spec)
        plan = run_meclear(game, spec)
        _g3(game, plan)
        assert plan.estimator == ("exact" if estimator == "exact" else estimator)


@pytest.mark.parametrize("k, budget, estimator", [
    (5, 40, "stratified"), (5, 64, "permutation"), (10, 64, "stratified"), (10, 48, "shapiq:KernelSHAP")])
def test_refine_recovers_what_stop_recovers_with_a_removal_no_larger(k: int, budget: int, estimator: str) -> None:
    """after_verified: refine (Theorem E, part f): G3 and the budget on the refine path; the same
    recovery as stop, case by case, at the same gain, with a removal no larger; and a ceiling stop
    still selects the paper's ĵ of the reported chain (Eq. 20 over every candidate)."""
    refined = 0
    for case in _cases(k, n=8, noise=0.02):
        plans = {}
        for after in ("stop", "refine"):
            spec = ClearanceSpec(retrieval_budget=k, search="budgeted", call_budget=budget, estimator=estimator,
                                 after_verified=after)
            game = case_game(case, spec)
            plans[after] = plan = run_budgeted(game, spec)
            assert plan.evaluator_calls <= budget
            _g3(game, plan)
            if after == "refine" and plan.stop == "verified":
                free = game.fork(call_budget=None)
                g = gains(free, plan.chain)
                j_set = [0] + [j for j in range(1, len(plan.chain) + 1)
                               if g[j] > EPS and free.recovered(free.grand - frozenset(plan.chain[:j]))]
                assert select(g, j_set) == plan.selected
        stop, refine = plans["stop"], plans["refine"]
        assert refine.recovered == stop.recovered
        assert refine.cleared_value == pytest.approx(stop.cleared_value)
        assert len(refine.removed) <= len(stop.removed)
        assert refine.evaluator_calls >= stop.evaluator_calls
        refined += stop.stop == "verified" and refine.evaluator_calls > stop.evaluator_calls
    assert refined  # the refine path ran past a verified removal in some case


def test_refine_needs_the_budgeted_search() -> None:
    with pytest.raises(ValidationError, match="after_verified 'refine' needs search 'budgeted'"):
        ClearanceSpec(after_verified="refine")


def test_full_reads_make_s2_the_exact_shapley_value_at_full_trials() -> None:
    """(S2) over every middle coalition, each held at the game's trials, is Eq. 3 at those trials
    (prefer_full); reading first scores only (the default) is Eq. 3 of a noisier game."""
    from memsteward.clearance.attribution import all_coalitions
    from memsteward.clearance.stratified import estimate

    case = _cases(5, n=6, noise=0.3)[0]
    game = case_game(case, ClearanceSpec(retrieval_budget=5))
    game.values(all_coalitions(game.players))  # every coalition at the game's two trials
    full = game.grand
    d = {i: game.value(full) - game.value(full - {i}) for i in game.players}
    middle = [c for c in all_coalitions(game.players) if 1 <= len(c) <= 3]
    exact = exact_contribution(game)
    mixed = estimate(game, d, middle, trials=1, prefer_full=True).contribution
    first = estimate(game, d, middle, trials=1).contribution
    assert max(abs(mixed[i] - exact[i]) for i in game.players) < 1e-9
    assert max(abs(first[i] - exact[i]) for i in game.players) > 1e-3  # the noise the re-reads remove


@pytest.mark.parametrize("after", ["stop", "refine"])
def test_once_every_coalition_is_drawn_the_rest_of_b_rereads_them(after: str) -> None:
    """K = 5: the stratified stream holds 25 middle coalitions; a search that cannot clear then spends
    what is left re-reading them at full trials (the bound B still holds)."""
    ids = [f"m{i}" for i in range(1, 6)]
    game = table_game(ids, lambda s: 0.0, trials=2)
    spec = ClearanceSpec(retrieval_budget=5, search="budgeted", call_budget=64, estimator="stratified",
                         after_verified=after)
    plan = run_budgeted(game, spec)
    assert plan.removed == () and 56 <= plan.evaluator_calls <= 64  # without re-reads: 39 (12 + 2 + 25)
    assert sum(game.holds_full(c) for c in game.seen if 1 <= len(c) <= 3) >= 10


class _TrialTable:
    """Per-trial 0/1 outcomes (the first ``trials`` of them are read), else a fixed value."""

    def __init__(self, outcomes: dict, default: float) -> None:
        self.outcomes, self.default = outcomes, default

    def evaluate(self, task, coalitions, trials, seed):
        from memsteward.clearance.game import Evaluation

        return [Evaluation(tuple(self.outcomes.get(c, (self.default,) * trials)[:trials]), trials) for c in coalitions]

    def rate(self, task, memory):
        return 0.0, 1


def test_a_verification_that_re_reads_a_loo_coalition_re_ranks_the_chain() -> None:
    """The one-trial screen ties a spurious m1 with the fault m2 (d = −1, context order puts m1 first);
    verifying C_1 = {m1} reads M ∖ {m1} at two trials (v̂ = 0.5): that read replaces d_1, and the LOO
    chain, verified again, clears m2 alone — within a budget too small for any estimation round."""
    from memsteward.clearance.game import Memory, Task

    ids = [f"m{i}" for i in range(1, 7)]
    full = frozenset(ids)
    outcomes = {full - {"m1"}: (1.0, 0.0), full - {"m2"}: (1.0, 1.0), full - {"m1", "m2"}: (1.0, 0.0)}
    task = Task("q", "r", tuple(Memory(i, f"memory {i}") for i in ids))
    game = Game(task, _TrialTable(outcomes, 0.0), trials=2)
    spec = ClearanceSpec(retrieval_budget=6, search="budgeted", call_budget=14, estimator="stratified")
    plan = run_budgeted(game, spec)
    assert plan.loo["m1"] == plan.loo["m2"] == -1.0  # the screen, at one trial
    assert plan.removed == ("m2",) and plan.recovered and plan.stop == "verified"
    assert plan.evaluator_calls <= 14
    _g3(game, plan)


def test_the_loo_control_variate_is_dropped_until_a_verified_removal_recovers() -> None:
    """A redundant pair at K = 16 whose one-trial LOO screen reads three false d_i = −1 (Δ < 1 lets
    M ∖ {m_i} succeed in one trial): with d as (S2)'s control variate the noise outweighs 64 calls of
    samples; without it (no LOO candidate verified, so d explained nothing) the pair is found."""
    raw = next(c for c in synthetic_cohort(24, seed=116, k=16, noise=0.02) if c["name"] == "syn-116-redundant-0005")
    case = parse_case(raw)
    spec = ClearanceSpec(retrieval_budget=16, search="budgeted", call_budget=64, estimator="stratified")
    game = case_game(case, spec)
    plan = run_budgeted(game, spec)
    assert sorted(v for v in plan.loo.values() if v < 0) == [-1.0, -1.0, -1.0]
    assert set(plan.removed) == set(case.faults) and plan.recovered
    assert plan.evaluator_calls <= 64
    _g3(game, plan)
    free = game.fork(call_budget=None)
    rounds = [budgeted.verify(free, plan.loo, spec.harm_tolerance, None)]
    assert budgeted.control_variate(free, rounds, plan.loo) == {i: 0.0 for i in free.players}
    faults_first = {**plan.loo, **{f: -2.0 for f in case.faults}}
    admissible = budgeted.verify(free, faults_first, spec.harm_tolerance, None)
    assert admissible.selected == 2
    assert budgeted.control_variate(free, [*rounds, admissible], plan.loo) == dict(plan.loo)


def test_the_pair_score_singles_out_a_redundant_pair_from_held_samples() -> None:
    """With no removal recovering, the held coalitions that omit both faults are the ones that succeed,
    so the pair score picks the pair; ranked first, the pair is C_2 of its chain and verifies."""
    ids = [f"m{i}" for i in range(1, 9)]
    faults = {"m3", "m6"}
    game = table_game(ids, lambda s: float("m1" in s and not (s & faults)), trials=2)
    game.values([game.grand - {i} for i in ids], 1)  # the one-trial screen: every d_i = 0
    game.values([frozenset({"m1", x, y}) for x, y in (("m2", "m4"), ("m5", "m7"), ("m3", "m8"), ("m6", "m2"))], 1)
    psi = {i: 0.0 for i in ids}
    assert budgeted.best_pair(game, psi) == ("m3", "m6")
    r = budgeted.verify(game, budgeted.pair_first(game, psi, ("m3", "m6")), 0.05, None, "pair")
    assert set(r.chain[:2]) == faults and r.selected == 2 and r.best_gain == 1.0


def test_a_pair_the_samples_point_at_is_verified_before_the_chain_reaches_it() -> None:
    """K = 10, B = 64: the stratified chains' first candidates do not recover; the pair round verifies
    the redundant pair itself (the search without it removes a third memory with the pair)."""
    case = next(c for c in _cases(10, n=12) if c.name == "syn-10-redundant-0000.1")
    spec = ClearanceSpec(retrieval_budget=10, search="budgeted", call_budget=64, estimator="stratified",
                         block_search=False)  # the pair round alone (the block search would find it first)
    game = case_game(case, spec)
    plan = run_budgeted(game, spec)
    assert plan.estimator == "pair" and plan.selected == 2
    assert set(plan.removed) == set(case.faults) and plan.recovered and plan.stop == "verified"
    assert plan.evaluator_calls <= 64
    _g3(game, plan)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_g3_on_pair_ranked_removals_on_every_estimator(estimator: str) -> None:
    """The pair round is a path of every estimator: some removal is ranked by it, and G3 and B hold."""
    budget = 160 if estimator == "exact" else 96
    spec = ClearanceSpec(retrieval_budget=5, search="budgeted", call_budget=budget, estimator=estimator,
                         block_search=False)
    paired = 0
    for case in _cases(5, n=12, noise=0.2):  # noisy trials: gains of one trial in two, ν false
        game = case_game(case, spec)
        plan = run_meclear(game, spec)
        assert plan.evaluator_calls <= budget
        _g3(game, plan)
        paired += plan.estimator == "pair" and plan.selected > 0
    assert paired >= 1


# --------------------------------------------------------------------------- the block search (step 2′)


def test_any_two_members_share_a_side_among_the_first_six_blocks() -> None:
    """The splits' guarantee (specs/BUDGETED_SEARCH.md, step 2′): for every K ≤ 20 and every pair, one of
    the first six blocks tested (both sides of splits 1–3) holds both, and every block is a proper subset."""
    from memsteward.clearance.blocks import sides

    for n in range(3, 21):  # (at n = 2 a pair is all of M: no proper block holds it)
        order = [f"m{i}" for i in range(n)]
        blocks = list(sides(order))
        assert all(0 < len(b) < n for b in blocks) and len(set(blocks)) == len(blocks)
        assert blocks[0] == tuple(order[: (n + 1) // 2])  # the first half of the ranking first
        for x, a in enumerate(order):
            for b in order[x + 1:]:
                assert any(a in blk and b in blk for blk in blocks[:6]), (n, a, b)


class _Lazy:
    """A deterministic evaluator from a value function, read per coalition (no 2^K table)."""

    def __init__(self, fn) -> None:
        self.fn = fn

    def evaluate(self, task, coalitions, trials, seed):
        from memsteward.clearance.game import Evaluation

        return [Evaluation((self.fn(c),) * trials, trials) for c in coalitions]

    def rate(self, task, memory):
        return 0.0, 1


def _redundant_pair_game(k: int, faults: set[str], gold: set[str], trials: int = 2) -> Game:
    """v(S) = 1 when S holds a gold memory and no fault (either fault alone sustains the failure)."""
    from memsteward.clearance.game import Memory, Task

    task = Task("q", "r", tuple(Memory(f"m{i}", f"memory m{i}") for i in range(1, k + 1)))
    return Game(task, _Lazy(lambda s: float(bool(s & gold) and not (s & faults))), trials=trials)


def test_the_block_search_clears_a_redundant_pair_at_k_16_within_32_calls() -> None:
    """K = 16, B = 32: the one-trial screen (18 calls) sees nothing (Thm 1) and leaves 7 verifications.
    The block search finds a recovering half (3 tests) and shrinks it to four memories holding the pair
    (4 tests); without it (the estimation rounds and the pair round on 14 calls) nothing is cleared.
    At B = 48 the shrinking goes on to the pair itself."""
    from memsteward.specs.certificates import check_plan

    faults, gold = {"m3", "m12"}, {"m5", "m16"}
    spec = ClearanceSpec(retrieval_budget=16, search="budgeted", call_budget=32, estimator="stratified")
    game = _redundant_pair_game(16, faults, gold)
    plan = run_budgeted(game, spec)
    assert all(d == 0 for d in plan.loo.values())
    assert faults <= set(plan.removed) and len(plan.removed) == 4 and plan.recovered
    assert plan.estimator == "block" and plan.stop == "block" and plan.evaluator_calls <= 32
    _g3(game, plan)
    assert all(c.ok for c in check_plan(plan.to_json())), [c for c in check_plan(plan.to_json()) if not c.ok]
    assert None in plan.gains  # candidates of the reported chain the search did not read
    off = _redundant_pair_game(16, faults, gold)
    unblocked = run_budgeted(off, spec.model_copy(update={"block_search": False}))
    assert not unblocked.recovered and unblocked.evaluator_calls <= 32
    wider = _redundant_pair_game(16, faults, gold)
    plan = run_budgeted(wider, spec.model_copy(update={"call_budget": 48}))
    assert set(plan.removed) == faults and plan.recovered and plan.evaluator_calls <= 48
    _g3(wider, plan)


def test_the_block_search_ends_at_a_block_with_no_recovering_side() -> None:
    """Halving-minimality: a search that ran to its end reports a block none of whose tested sides
    recovers; at ≤ 3 members those sides are all its proper subsets (a minimal recovering removal).
    Every test is a read at the game's trials."""
    from memsteward.clearance.blocks import search_blocks, sides

    faults = {"m2", "m7", "m10"}  # all three must go (a redundant triple)
    game = _redundant_pair_game(12, faults, {"m1", "m5"})
    result = search_blocks(game, game.players)
    assert result.complete and set(result.found[-1]) == faults
    assert all(set(b) > set(c) for b, c in zip(result.found, result.found[1:]))  # nested, shrinking
    for side in sides(result.found[-1]):
        assert not game.recovered(game.grand - frozenset(side))
    assert all(game.holds_full(c) for c in game.seen)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_g3_on_block_search_removals_on_every_estimator(estimator: str) -> None:
    """The block search runs before any estimator: on every estimator's path some removal comes from it,
    and G3, the budget and the plan certificate (`verify --plan`, unread gains null) hold; every block
    the search reports as recovering has ĝ > 0 and ν = 1 at the game's trials."""
    from memsteward.clearance.blocks import search_blocks
    from memsteward.specs.certificates import check_plan

    k, budget = 6, (110 if estimator == "exact" else 40)
    spec = ClearanceSpec(retrieval_budget=k, search="budgeted", call_budget=budget, estimator=estimator)
    blocked = 0
    for case in _cases(k, n=12, noise=0.2):  # noisy trials: gains of one trial in two, ν false
        game = case_game(case, spec)
        plan = run_meclear(game, spec)
        assert plan.evaluator_calls <= budget
        _g3(game, plan)
        assert all(c.ok for c in check_plan(plan.to_json()))
        blocked += plan.estimator == "block" and plan.selected > 0
        free = game.fork(call_budget=None)
        for block in search_blocks(free, budgeted.ranked(free, plan.loo)).found:
            rest = free.grand - frozenset(block)
            assert free.value(rest) > free.value(free.grand) + EPS and free.recovered(rest)
    assert blocked >= 1
