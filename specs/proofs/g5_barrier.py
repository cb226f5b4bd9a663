"""G5 barrier isolation (MemoRepair §2.2, Algorithm 1 lines 2, 7–8) by bounded model checking.

The transition system: artifact 0 is the root F (a deletion), artifacts 1..n−1 its cascade
D(F); prerequisites P̄_i ⊆ {1..i−1} and the selection S (closed under P̄) are *symbolic*, so
every DAG and every closed selection on n artifacts is covered at once. States per artifact:
servable, withdrawn, staged, republished, failed, erased; a durable flag `validated`.

Steps (exactly one per time step, any interleaving):
  barrier       — one transaction: the root is erased and every descendant withdrawn;
  execute(i)    — i ∈ S withdrawn and every prerequisite staged or republished → staged;
  validate(i)   — staged → validated (ok) or failed (fail);
  publish(i)    — staged ∧ validated ∧ every prerequisite republished → republished;
  serve         — retrieval reads the store (no change; the invariant is checked every step);
  crash         — the process dies: staged successors not yet validated are lost (→ withdrawn);
                  validated ones and everything published stay (each is its own commit);
  recover       — roll forward: staged successors not yet validated are withdrawn.

Invariant (checked at every step after the barrier): an artifact of C(F) is servable only if it
is a republished, validated successor whose prerequisites are all republished; the root never is.
"""

from __future__ import annotations

import z3

from .result import ProofResult, check_unsat, run

CLAIM = "after the barrier no artifact of C(F) is servable unless validated with republished prerequisites"

SERVABLE, WITHDRAWN, STAGED, REPUBLISHED, FAILED, ERASED = range(6)
STATE_NAMES = ["servable", "withdrawn", "staged", "republished", "failed", "erased"]
ACTIONS = ["barrier", "execute", "validate_ok", "validate_fail", "publish", "serve", "crash", "recover"]


class Model:
    """The unrolled transition system for ``n`` artifacts up to ``depth`` steps."""

    def __init__(self, n: int, depth: int, variant: str | None = None) -> None:
        self.n, self.depth, self.variant = n, depth, variant
        self.prereq = {(i, j): z3.Bool(f"P[{i}][{j}]") for i in range(1, n) for j in range(1, i)}
        self.selected = [z3.Bool(f"S[{i}]") for i in range(n)]
        self.state = [[z3.Int(f"state[{t}][{i}]") for i in range(n)] for t in range(depth + 1)]
        self.valid = [[z3.Bool(f"validated[{t}][{i}]") for i in range(n)] for t in range(depth + 1)]
        self.barrier = [z3.Bool(f"barrier[{t}]") for t in range(depth + 1)]
        self.action = [z3.Int(f"action[{t}]") for t in range(depth)]
        self.target = [z3.Int(f"target[{t}]") for t in range(depth)]

    def prereqs(self, i: int) -> list[tuple[int, z3.BoolRef]]:
        return [(j, self.prereq[(i, j)]) for j in range(1, i)]

    def initial(self) -> z3.BoolRef:
        closed = [z3.Implies(z3.And(self.selected[i], edge), self.selected[j])
                  for i in range(1, self.n) for j, edge in self.prereqs(i)]
        start = [z3.And(self.state[0][i] == SERVABLE, z3.Not(self.valid[0][i])) for i in range(self.n)]
        return z3.And(*closed, z3.Not(self.selected[0]), *start, z3.Not(self.barrier[0]))

    def step(self, t: int) -> z3.BoolRef:
        s, s2, v, v2 = self.state[t], self.state[t + 1], self.valid[t], self.valid[t + 1]
        b, b2, act, tgt = self.barrier[t], self.barrier[t + 1], self.action[t], self.target[t]
        n, broken = self.n, self.variant

        def frame(changed: int | None = None) -> list[z3.BoolRef]:
            return [z3.And(s2[i] == s[i], v2[i] == v[i]) for i in range(n) if i != changed]

        options = []
        # barrier: one transaction over C(F)
        withdraw = [s2[0] == ERASED] + [
            (s2[i] == WITHDRAWN) if broken != "broken-no-withdraw" else (s2[i] == s[i]) for i in range(1, n)]
        options.append(z3.And(act == 0, z3.Not(b), b2, *withdraw, *[v2[i] == v[i] for i in range(n)]))
        for i in range(1, n):
            ready = z3.And([z3.Implies(e, z3.Or(s[j] == STAGED, s[j] == REPUBLISHED)) for j, e in self.prereqs(i)])
            guard = z3.And(b, self.selected[i], s[i] == WITHDRAWN, ready)
            options.append(z3.And(act == 1, tgt == i, guard, s2[i] == STAGED, z3.Not(v2[i]), b2 == b, *frame(i)))
            options.append(z3.And(act == 2, tgt == i, s[i] == STAGED, z3.Not(v[i]), s2[i] == STAGED, v2[i], b2 == b, *frame(i)))
            options.append(z3.And(act == 3, tgt == i, s[i] == STAGED, z3.Not(v[i]), s2[i] == FAILED, z3.Not(v2[i]), b2 == b, *frame(i)))
            pre_ok = z3.And([z3.Implies(e, s[j] == REPUBLISHED) for j, e in self.prereqs(i)])
            if broken == "broken-skip-failed-dependency":
                pre_ok = z3.BoolVal(True)
            checked = v[i] if broken != "broken-publish-before-validation" else z3.BoolVal(True)
            options.append(z3.And(act == 4, tgt == i, s[i] == STAGED, checked, pre_ok,
                                  s2[i] == REPUBLISHED, v2[i] == v[i], b2 == b, *frame(i)))
        options.append(z3.And(act == 5, b2 == b, *frame()))
        # a crash loses only what was not committed: a staged successor whose validation has not
        # been recorded goes back to withdrawn; validated successors stay staged (durable commits)
        in_flight = [z3.And(s[i] == STAGED, z3.Not(v[i])) for i in range(n)]
        lost = [z3.And(s2[i] == z3.If(in_flight[i], WITHDRAWN, s[i]), v2[i] == v[i]) for i in range(n)]
        if broken == "broken-crash-loses-barrier":
            lost = [s2[i] == z3.If(s[i] == WITHDRAWN, SERVABLE, s[i]) for i in range(n)] + [v2[i] == v[i] for i in range(n)]
        options.append(z3.And(act == 6, b2 == b, *lost))
        roll = [z3.And(s2[i] == z3.If(z3.And(s[i] == STAGED, z3.Not(v[i])), WITHDRAWN, s[i]), v2[i] == v[i])
                for i in range(n)]
        options.append(z3.And(act == 7, b2 == b, *roll))
        return z3.Or(options)

    def safe(self, t: int) -> z3.BoolRef:
        s, v = self.state[t], self.valid[t]
        ok = [s[0] != SERVABLE, s[0] != REPUBLISHED]
        for i in range(1, self.n):
            visible = z3.Or(s[i] == SERVABLE, s[i] == REPUBLISHED)
            allowed = z3.And(s[i] == REPUBLISHED, v[i],
                             *[z3.Implies(e, s[j] == REPUBLISHED) for j, e in self.prereqs(i)])
            ok.append(z3.Implies(visible, allowed))
        return z3.Implies(self.barrier[t], z3.And(ok))

    def trace(self, m: z3.ModelRef, until: int) -> dict:
        ev = lambda e: m.eval(e, model_completion=True)  # noqa: E731
        steps = []
        for t in range(until):
            a = ev(self.action[t]).as_long()
            name = ACTIONS[a] if 0 <= a < len(ACTIONS) else str(a)
            if name in {"execute", "validate_ok", "validate_fail", "publish"}:
                name += f"({ev(self.target[t]).as_long()})"
            steps.append(name)
        final = {i: STATE_NAMES[ev(self.state[until][i]).as_long()] for i in range(self.n)}
        edges = [f"{j}→{i}" for (i, j), e in self.prereq.items() if z3.is_true(ev(e))]
        return {"trace": steps, "states": final, "prerequisites": edges,
                "selected": [i for i in range(self.n) if z3.is_true(ev(self.selected[i]))]}


def prove(artifacts: int = 4, depth: int = 10, variant: str | None = None) -> ProofResult:
    """BMC: for every depth d ≤ ``depth``, no reachable state at step d violates the invariant."""

    def body() -> int:
        model = Model(artifacts, depth, variant)
        solver = z3.Solver()
        solver.set("timeout", 60_000)
        solver.add(model.initial())
        for t in range(depth + 1):
            solver.push()
            solver.add(z3.Not(model.safe(t)))
            r = solver.check()
            if r == z3.sat:
                from .result import Refuted
                raise Refuted(f"depth {t}", model.trace(solver.model(), t))
            if r != z3.unsat:
                raise TimeoutError(f"depth {t}: Z3 returned unknown ({solver.reason_unknown()})")
            solver.pop()
            if t < depth:
                solver.add(model.step(t))
        return depth + 1

    bound = f"{artifacts} artifacts (root + {artifacts - 1} descendants, every DAG and closed selection), all interleavings to depth {depth}"
    return run("G5", CLAIM, bound, body)


__all__ = ["prove", "check_unsat"]
