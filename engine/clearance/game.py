"""The clearance game (M_t, v̂): one query, a frozen context, a cached value function.

MeClear (the paper) treats the K retrieved memories of one query as players and the
task value v̂(S) ∈ [0, 1] of a coalition S ⊆ M_t (Eq. 2) as the characteristic function.
Every approximator in :mod:`memsteward.clearance.attribution` and :mod:`memsteward.clearance.baselines`
consumes this one interface — ``values(coalitions)`` — and nothing else, so caching, trial
seeds, call accounting and budgets live here only (Appendix C: "repeated coalition values may
be cached without changing the sampled estimator").

* A coalition is identified by the frozenset of its memory ids; the evaluator is asked about
  each coalition at most once per :class:`OutcomeStore` (shared by all methods run on a case).
* v̂(S) is the mean of ``trials`` independent 0/1 (or [0, 1]) trial scores with fixed seeds.
* ν(S) (``recovered``) is the policy's :class:`~memsteward.policy.model.Recovery` rule on v̂(S).
* ``values(…, trials=t)`` with t below the game's trials (coalitions that only feed a sampled
  estimate, issue 15) reads the first t scores of a full evaluation, or evaluates t trials into
  ``OutcomeStore.partial``; a later full read evaluates the coalition again (paid in full).
* ``call_budget`` is advisory: samplers ask :meth:`Game.affordable` before spending, while
  the LOO screen and the verification of Eq. 19 always run (Theorem 2 needs them).
* Each :class:`Game` view counts the distinct coalitions *it* needed and the evaluator calls
  they cost, so methods sharing one store still report their stand-alone cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..policy.model import Recovery

Coalition = frozenset[str]


def coalition_key(coalition: Iterable[str]) -> str:
    """Canonical text key of a coalition: sorted ids joined by commas ("" for ∅)."""
    return ",".join(sorted(coalition))


@dataclass(frozen=True)
class Memory:
    """One retrieved memory m_i = (x_i, ξ_i): id, text and auxiliary metadata (Eq. 1)."""

    id: str
    text: str = ""
    meta: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Task:
    """A query q_t, its reference answer, and the frozen retrieved context M_t (Eq. 6)."""

    query: str
    reference: str
    context: tuple[Memory, ...]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.context)

    def memory(self, memory_id: str) -> Memory:
        for m in self.context:
            if m.id == memory_id:
                return m
        raise KeyError(memory_id)

    def memories(self, coalition: Coalition) -> tuple[Memory, ...]:
        """The memories of a coalition, in context (retrieval) order."""
        return tuple(m for m in self.context if m.id in coalition)


@dataclass(frozen=True)
class Evaluation:
    """The outcome of evaluating one coalition: per-trial scores and the calls it cost."""

    scores: tuple[float, ...]
    calls: int

    @property
    def value(self) -> float:
        """v̂(S): the mean of the trials' scores (Eq. 2, empirical)."""
        return sum(self.scores) / len(self.scores) if self.scores else 0.0


class Evaluator(Protocol):
    """Agent + judge behind one interface: scores coalitions in batches (Eq. 2)."""

    def evaluate(self, task: Task, coalitions: Sequence[Coalition], trials: int,
                 seed: int) -> list[Evaluation]:
        """Evaluate every coalition (in one batch, concurrently where it helps)."""
        ...

    def rate(self, task: Task, memory: Memory) -> tuple[float, int]:
        """Harm rating in [0, 1] of one memory for the direct-flagging baseline, and calls."""
        ...


@dataclass
class OutcomeStore:
    """The one cache of evaluated coalitions of one task (shared by all methods)."""

    evaluations: dict[Coalition, Evaluation] = field(default_factory=dict)
    ratings: dict[str, tuple[float, int]] = field(default_factory=dict)
    partial: dict[Coalition, Evaluation] = field(default_factory=dict)  # fewer trials than the game's
    requests: int = 0  # evaluator.evaluate batches sent


class Game:
    """The cached cooperative game (M_t, v̂) of one query, with call accounting."""

    def __init__(self, task: Task, evaluator: Evaluator, *, trials: int = 2, seed: int = 0,
                 recovery: Recovery | None = None, call_budget: int | None = None,
                 store: OutcomeStore | None = None) -> None:
        if trials < 1:
            raise ValueError("trials must be ≥ 1")
        self.task = task
        self.evaluator = evaluator
        self.trials = trials
        self.seed = seed
        self.recovery = recovery or Recovery()
        self.call_budget = call_budget
        self.store = store if store is not None else OutcomeStore()
        self._players = task.ids
        self._player_set = frozenset(self._players)
        self._seen: dict[Coalition, int] = {}  # coalition → trials read by this view (FULL: all)
        self._rated: set[str] = set()
        self._calls = 0

    # ---- the interface approximators use -------------------------------------------------

    @property
    def players(self) -> tuple[str, ...]:
        """Memory ids in context order."""
        return self._players

    @property
    def n_players(self) -> int:
        return len(self._players)

    @property
    def grand(self) -> Coalition:
        """M_t."""
        return self._player_set

    def values(self, coalitions: Iterable[Iterable[str]], trials: int | None = None) -> list[float]:
        """v̂(S) for each coalition; uncached ones are evaluated in one batch (Eq. 2).

        ``trials`` below the game's: the mean of the first ``trials`` scores (see module doc).
        """
        wanted = [self._coalition(c) for c in coalitions]
        if trials is None or trials >= self.trials:
            self._ensure(wanted)
            return [self.store.evaluations[c].value for c in wanted]
        self._ensure_partial(wanted, trials)
        return [self._partial_value(c, trials) for c in wanted]

    def value(self, coalition: Iterable[str]) -> float:
        """v̂(S) of one coalition."""
        return self.values([coalition])[0]

    def recovered(self, coalition: Iterable[str]) -> bool:
        """ν(S): the recovery predicate on v̂(S) (Eq. 19, 22)."""
        return self.recovery.holds(self.value(coalition))

    def holds_full(self, coalition: Iterable[str]) -> bool:
        """Whether this view has paid for v̂(S) at the game's trials (reading it again is free)."""
        return self._seen.get(self._coalition(coalition), 0) >= FULL

    def cost_of(self, coalitions: Iterable[Iterable[str]], trials: int | None = None) -> int:
        """Upper bound of the calls evaluating these coalitions would add to this view."""
        partial = trials is not None and trials < self.trials
        cost = 0
        for c in {self._coalition(c) for c in coalitions}:
            if self._seen.get(c, 0) >= (trials if partial else FULL):
                continue
            known = self.store.evaluations.get(c)
            if not partial:
                cost += known.calls if known is not None else self.trials
            elif c not in self._seen:
                cost += _share(known, trials) if known is not None else trials
        return cost

    def affordable(self, coalitions: Iterable[Iterable[str]], trials: int | None = None) -> bool:
        """Whether evaluating these coalitions stays within the call budget."""
        if self.call_budget is None:
            return True
        return self._calls + self.cost_of(coalitions, trials) <= self.call_budget

    def rate(self, memory_id: str) -> float:
        """The evaluator's direct harm rating of one memory (direct-flagging baseline)."""
        if memory_id not in self._player_set:
            raise KeyError(memory_id)
        if memory_id not in self.store.ratings:
            self.store.ratings[memory_id] = self.evaluator.rate(self.task, self.task.memory(memory_id))
        if memory_id not in self._rated:
            self._rated.add(memory_id)
            self._calls += self.store.ratings[memory_id][1]
        return self.store.ratings[memory_id][0]

    def fork(self, call_budget: int | None = None) -> Game:
        """A fresh accounting view over the same cache (for running another method)."""
        return Game(self.task, self.evaluator, trials=self.trials, seed=self.seed,
                    recovery=self.recovery, call_budget=call_budget, store=self.store)

    # ---- accounting ----------------------------------------------------------------------

    @property
    def coalitions_evaluated(self) -> int:
        """Distinct coalitions this view needed."""
        return len(self._seen)

    @property
    def evaluator_calls(self) -> int:
        """Evaluator (agent + judge) calls the coalitions and ratings of this view cost."""
        return self._calls

    @property
    def seen(self) -> frozenset[Coalition]:
        return frozenset(self._seen)

    # ---- internals -----------------------------------------------------------------------

    def _coalition(self, members: Iterable[str]) -> Coalition:
        c = members if isinstance(members, frozenset) else frozenset(members)
        if not c <= self._player_set:
            unknown = sorted(c - self._player_set)
            raise KeyError(f"not in the context: {', '.join(unknown)}")
        return c

    def _partial_value(self, c: Coalition, trials: int) -> float:
        """v̂_t(S): the mean of the first t scores, whichever evaluation holds them."""
        ev = self.store.evaluations.get(c) or self.store.partial[c]
        scores = ev.scores[:trials]
        return sum(scores) / len(scores) if scores else 0.0

    def _ensure_partial(self, wanted: list[Coalition], trials: int) -> None:
        new_here = list(dict.fromkeys(c for c in wanted if c not in self._seen))
        missing = [c for c in new_here if c not in self.store.evaluations and c not in self.store.partial]
        if missing:
            results = self.evaluator.evaluate(self.task, missing, trials, self.seed)
            if len(results) != len(missing):
                raise RuntimeError("evaluator returned a wrong number of evaluations")
            self.store.requests += 1
            for c, ev in zip(missing, results):
                self.store.partial[c] = ev
        for c in new_here:
            full = self.store.evaluations.get(c)
            self._calls += _share(full, trials) if full is not None else self.store.partial[c].calls
            self._seen[c] = trials

    def _ensure(self, wanted: list[Coalition]) -> None:
        new_here = list(dict.fromkeys(c for c in wanted if self._seen.get(c, 0) < FULL))
        if not new_here:
            return
        missing = [c for c in new_here if c not in self.store.evaluations]
        if missing:
            results = self.evaluator.evaluate(self.task, missing, self.trials, self.seed)
            if len(results) != len(missing):
                raise RuntimeError("evaluator returned a wrong number of evaluations")
            self.store.requests += 1
            for c, ev in zip(missing, results):
                self.store.evaluations[c] = ev
        for c in new_here:
            self._seen[c] = FULL
            self._calls += self.store.evaluations[c].calls  # after a partial read too: re-evaluated


FULL = 1 << 30  # "every trial of the game" in Game._seen


def _share(ev: Evaluation, trials: int) -> int:
    """Stand-alone calls of reading the first ``trials`` scores of a stored evaluation."""
    n = len(ev.scores)
    return ev.calls if n <= trials else -(-ev.calls * trials // n)


def context_from(items: Sequence[Memory] | Sequence[Mapping[str, object]]) -> tuple[Memory, ...]:
    """Build a context tuple from memories or ``{"id", "text", "meta"}`` mappings."""
    out: list[Memory] = []
    for item in items:
        if isinstance(item, Memory):
            out.append(item)
        else:
            out.append(Memory(str(item["id"]), str(item.get("text", "")),
                              dict(item.get("meta", {}) or {})))  # type: ignore[arg-type]
    return tuple(out)
