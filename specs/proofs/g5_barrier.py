"""G5 barrier isolation (MemoRepair §2.2, Algorithm 1 lines 2, 7–8) by bounded model checking.

The transition system: artifact 0 is the root F (a deletion), artifacts 1..n−1 its cascade
D(F); prerequisites P̄_i ⊆ {1..i−1} and the selection S (closed under P̄) are *symbolic*, so
every DAG and every closed selection on n artifacts is covered at once. States per artifact:
servable, withdrawn, staged, republished, failed, erased; a durable flag `validated`.

Steps (exactly one per time step, any interleaving):
  check         — the barrier's scope check, before it takes the store's write lock: the plan's scope
                  read again, so every write committed so far that derived from a member of C(F) is
                  seen (the plan is made again with it);
  barrier       — one transaction, after the check: under the write lock it checks the writes committed
                  since the check (their ids and inputs), then the root is erased and every descendant
                  withdrawn;
  execute(i)    — i ∈ S withdrawn and every prerequisite staged or republished → staged;
  validate(i)   — staged → validated (ok) or failed (fail);
  publish(i)    — staged ∧ validated ∧ every prerequisite republished → republished;
  serve         — retrieval reads the store (no change; the invariant is checked every step);
  crash         — the process dies: staged successors not yet validated are lost (→ withdrawn);
                  validated ones and everything published stay (each is its own commit);
  recover       — roll forward: staged successors not yet validated are withdrawn;
  write(w)      — an agent write (the write rule, ``memsteward.store.live``), at any time: writer slot
                  w records a new artifact derived from its *symbolic* input k_w — a member of C(F)
                  (0..n−1) or an artifact outside it (n, always servable). Write fencing: k_w must
                  be servable or republished now. Its ``fresh`` flag records whether what it read is
                  still valid after the event: outside C(F), or a republished validated successor.
                  A write before the barrier that read a member of C(F) is a new derivation the plan
                  must include: the barrier withdraws it, whether the check saw it or the barrier's own
                  check of the writes since found it (either way the event is planned again with it).

Invariant (checked at every step after the barrier): an artifact of C(F) is servable only if it
is a republished, validated successor whose prerequisites are all republished; the root never is;
a written artifact is servable only if what it read is still valid (no write is published against
a withdrawn input); and a write outside C(F) is never withdrawn (no write is lost).
"""

from __future__ import annotations

import z3

from .result import ProofResult, check_unsat, run

CLAIM = "after the barrier no artifact of C(F) is servable unless validated with republished prerequisites"

SERVABLE, WITHDRAWN, STAGED, REPUBLISHED, FAILED, ERASED = range(6)
STATE_NAMES = ["servable", "withdrawn", "staged", "republished", "failed", "erased"]
ACTIONS = ["barrier", "execute", "validate_ok", "validate_fail", "publish", "serve", "crash", "recover", "write",
           "check"]
UNWRITTEN = -1  # a writer slot before its write (else SERVABLE or WITHDRAWN)


class Model:
    """The unrolled transition system for ``n`` artifacts up to ``depth`` steps."""

    def __init__(self, n: int, depth: int, variant: str | None = None, writers: int = 2) -> None:
        self.n, self.depth, self.variant, self.writers = n, depth, variant, writers
        self.prereq = {(i, j): z3.Bool(f"P[{i}][{j}]") for i in range(1, n) for j in range(1, i)}
        self.selected = [z3.Bool(f"S[{i}]") for i in range(n)]
        self.state = [[z3.Int(f"state[{t}][{i}]") for i in range(n)] for t in range(depth + 1)]
        self.valid = [[z3.Bool(f"validated[{t}][{i}]") for i in range(n)] for t in range(depth + 1)]
        self.barrier = [z3.Bool(f"barrier[{t}]") for t in range(depth + 1)]
        self.action = [z3.Int(f"action[{t}]") for t in range(depth)]
        self.target = [z3.Int(f"target[{t}]") for t in range(depth)]
        self.reads = [z3.Int(f"input[w{w}]") for w in range(writers)]  # k_w: what writer w derives from
        self.wstate = [[z3.Int(f"wstate[{t}][w{w}]") for w in range(writers)] for t in range(depth + 1)]
        self.fresh = [[z3.Bool(f"fresh[{t}][w{w}]") for w in range(writers)] for t in range(depth + 1)]
        self.checked = [z3.Bool(f"checked[{t}]") for t in range(depth + 1)]  # the barrier's scope check ran
        self.seen = [[z3.Bool(f"seen[{t}][w{w}]") for w in range(writers)] for t in range(depth + 1)]  # by it

    def prereqs(self, i: int) -> list[tuple[int, z3.BoolRef]]:
        return [(j, self.prereq[(i, j)]) for j in range(1, i)]

    def initial(self) -> z3.BoolRef:
        closed = [z3.Implies(z3.And(self.selected[i], edge), self.selected[j])
                  for i in range(1, self.n) for j, edge in self.prereqs(i)]
        start = [z3.And(self.state[0][i] == SERVABLE, z3.Not(self.valid[0][i])) for i in range(self.n)]
        writers = [z3.And(0 <= k, k <= self.n) for k in self.reads] + [
            z3.And(w == UNWRITTEN, z3.Not(f), z3.Not(seen)) for w, f, seen in zip(self.wstate[0], self.fresh[0],
                                                                                  self.seen[0])]
        return z3.And(*closed, z3.Not(self.selected[0]), *start, *writers, z3.Not(self.barrier[0]),
                      z3.Not(self.checked[0]))

    def _input_state(self, t: int, w: int) -> z3.ArithRef:
        """The state of writer w's input at step t (outside C(F): always servable)."""
        k, out = self.reads[w], z3.IntVal(SERVABLE)
        for i in range(self.n):
            out = z3.If(k == i, self.state[t][i], out)
        return out

    def _input_valid(self, t: int, w: int) -> z3.BoolRef:
        k, out = self.reads[w], z3.BoolVal(False)
        for i in range(self.n):
            out = z3.If(k == i, self.valid[t][i], out)
        return out

    def _writes(self, t: int) -> list[z3.BoolRef]:
        """write(w) as an option of step t, the artifacts and the other writers unchanged."""
        s, s2, v, v2, b, b2 = self.state[t], self.state[t + 1], self.valid[t], self.valid[t + 1], \
            self.barrier[t], self.barrier[t + 1]
        ws, ws2, fr, fr2 = self.wstate[t], self.wstate[t + 1], self.fresh[t], self.fresh[t + 1]
        same = [z3.And(s2[i] == s[i], v2[i] == v[i]) for i in range(self.n)]
        out = []
        for w in range(self.writers):
            read = self._input_state(t, w)
            fenced = z3.Or(read == SERVABLE, read == REPUBLISHED)  # only servable inputs (write fencing)
            if self.variant == "broken-write-reads-withdrawn":
                fenced = read != ERASED  # the broken rule: a withdrawn or staged input may be read
            outside = self.reads[w] == self.n
            fresh = z3.Or(outside, z3.And(b, read == REPUBLISHED, self._input_valid(t, w)))
            others = [z3.And(ws2[u] == ws[u], fr2[u] == fr[u]) for u in range(self.writers) if u != w]
            out.append(z3.And(self.action[t] == 8, self.target[t] == w, ws[w] == UNWRITTEN, fenced,
                              ws2[w] == SERVABLE, fr2[w] == fresh, b2 == b, *same, *others, *self._keep_check(t)))
        return out

    def _keep_check(self, t: int) -> list[z3.BoolRef]:
        return [self.checked[t + 1] == self.checked[t]] + [
            self.seen[t + 1][w] == self.seen[t][w] for w in range(self.writers)]

    def step(self, t: int) -> z3.BoolRef:
        s, s2, v, v2 = self.state[t], self.state[t + 1], self.valid[t], self.valid[t + 1]
        b, b2, act, tgt = self.barrier[t], self.barrier[t + 1], self.action[t], self.target[t]
        n, broken = self.n, self.variant

        def frame(changed: int | None = None) -> list[z3.BoolRef]:
            return [z3.And(s2[i] == s[i], v2[i] == v[i]) for i in range(n) if i != changed]

        options = []
        ws, ws2, fr, fr2 = self.wstate[t], self.wstate[t + 1], self.fresh[t], self.fresh[t + 1]
        keep_writes = [z3.And(ws2[w] == ws[w], fr2[w] == fr[w]) for w in range(self.writers)]
        keep_check = self._keep_check(t)
        # check: the scope read again before the write lock; every write committed so far is seen by it
        options.append(z3.And(act == 9, z3.Not(b), z3.Not(self.checked[t]), self.checked[t + 1], b2 == b, *frame(),
                              *keep_writes, *[self.seen[t + 1][w] == (ws[w] != UNWRITTEN) for w in range(self.writers)]))
        # barrier: one transaction over C(F), after the check — as re-planned by it and by its own check of
        # the writes since, so it includes every write since planning that derived from a member of C(F)
        # (a stale plan would leave it out; a barrier trusting the check alone, the writes in between)
        withdraw = [s2[0] == ERASED] + [
            (s2[i] == WITHDRAWN) if broken != "broken-no-withdraw" else (s2[i] == s[i]) for i in range(1, n)]
        caught = [z3.BoolVal(broken != "broken-stale-plan") if broken != "broken-unchecked-gap" else self.seen[t][w]
                  for w in range(self.writers)]
        derived = [z3.And(fr2[w] == fr[w], ws2[w] == z3.If(
            z3.And(ws[w] == SERVABLE, self.reads[w] < n, caught[w]), WITHDRAWN, ws[w]))
            for w in range(self.writers)]
        options.append(z3.And(act == 0, z3.Not(b), b2, self.checked[t], *withdraw, *[v2[i] == v[i] for i in range(n)],
                              *derived, *keep_check))
        for i in range(1, n):
            ready = z3.And([z3.Implies(e, z3.Or(s[j] == STAGED, s[j] == REPUBLISHED)) for j, e in self.prereqs(i)])
            guard = z3.And(b, self.selected[i], s[i] == WITHDRAWN, ready)
            options.append(z3.And(act == 1, tgt == i, guard, s2[i] == STAGED, z3.Not(v2[i]), b2 == b, *frame(i), *keep_writes, *keep_check))
            options.append(z3.And(act == 2, tgt == i, s[i] == STAGED, z3.Not(v[i]), s2[i] == STAGED, v2[i], b2 == b, *frame(i), *keep_writes, *keep_check))
            options.append(z3.And(act == 3, tgt == i, s[i] == STAGED, z3.Not(v[i]), s2[i] == FAILED, z3.Not(v2[i]), b2 == b, *frame(i), *keep_writes, *keep_check))
            pre_ok = z3.And([z3.Implies(e, s[j] == REPUBLISHED) for j, e in self.prereqs(i)])
            if broken == "broken-skip-failed-dependency":
                pre_ok = z3.BoolVal(True)
            checked = v[i] if broken != "broken-publish-before-validation" else z3.BoolVal(True)
            options.append(z3.And(act == 4, tgt == i, s[i] == STAGED, checked, pre_ok,
                                  s2[i] == REPUBLISHED, v2[i] == v[i], b2 == b, *frame(i), *keep_writes, *keep_check))
        options.append(z3.And(act == 5, b2 == b, *frame(), *keep_writes, *keep_check))
        # a crash loses only what was not committed: a staged successor whose validation has not
        # been recorded goes back to withdrawn; validated successors stay staged (durable commits)
        in_flight = [z3.And(s[i] == STAGED, z3.Not(v[i])) for i in range(n)]
        lost = [z3.And(s2[i] == z3.If(in_flight[i], WITHDRAWN, s[i]), v2[i] == v[i]) for i in range(n)]
        if broken == "broken-crash-loses-barrier":
            lost = [s2[i] == z3.If(s[i] == WITHDRAWN, SERVABLE, s[i]) for i in range(n)] + [v2[i] == v[i] for i in range(n)]
        options.append(z3.And(act == 6, b2 == b, *lost, *keep_writes, *keep_check))  # writes are commits
        roll = [z3.And(s2[i] == z3.If(z3.And(s[i] == STAGED, z3.Not(v[i])), WITHDRAWN, s[i]), v2[i] == v[i])
                for i in range(n)]
        options.append(z3.And(act == 7, b2 == b, *roll, *keep_writes, *keep_check))
        options += self._writes(t)
        return z3.Or(options)

    def safe(self, t: int) -> z3.BoolRef:
        s, v = self.state[t], self.valid[t]
        ok = [s[0] != SERVABLE, s[0] != REPUBLISHED]
        for i in range(1, self.n):
            visible = z3.Or(s[i] == SERVABLE, s[i] == REPUBLISHED)
            allowed = z3.And(s[i] == REPUBLISHED, v[i],
                             *[z3.Implies(e, s[j] == REPUBLISHED) for j, e in self.prereqs(i)])
            ok.append(z3.Implies(visible, allowed))
        for w in range(self.writers):  # no write published against a withdrawn input, none lost
            ok.append(z3.Implies(self.wstate[t][w] == SERVABLE, self.fresh[t][w]))
            ok.append(z3.Implies(self.reads[w] == self.n, self.wstate[t][w] != WITHDRAWN))
        return z3.Implies(self.barrier[t], z3.And(ok))

    def trace(self, m: z3.ModelRef, until: int) -> dict:
        ev = lambda e: m.eval(e, model_completion=True)  # noqa: E731
        steps = []
        for t in range(until):
            a = ev(self.action[t]).as_long()
            name = ACTIONS[a] if 0 <= a < len(ACTIONS) else str(a)
            if name in {"execute", "validate_ok", "validate_fail", "publish"}:
                name += f"({ev(self.target[t]).as_long()})"
            if name == "write":
                w = ev(self.target[t]).as_long()
                k = ev(self.reads[w]).as_long()
                name += f"(w{w} ← {'outside' if k == self.n else k})"
            steps.append(name)
        final = {i: STATE_NAMES[ev(self.state[until][i]).as_long()] for i in range(self.n)}
        edges = [f"{j}→{i}" for (i, j), e in self.prereq.items() if z3.is_true(ev(e))]
        return {"trace": steps, "states": final, "prerequisites": edges,
                "selected": [i for i in range(self.n) if z3.is_true(ev(self.selected[i]))]}


def prove(artifacts: int = 4, depth: int = 10, variant: str | None = None, writers: int = 2) -> ProofResult:
    """BMC: for every depth d ≤ ``depth``, no reachable state at step d violates the invariant."""

    def body() -> int:
        model = Model(artifacts, depth, variant, writers)
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

    bound = (f"{artifacts} artifacts (root + {artifacts - 1} descendants, every DAG and closed selection), "
             f"{writers} agent writers (each input any artifact of C(F) or outside it), all interleavings to depth {depth}")
    return run("G5", CLAIM, bound, body)


__all__ = ["prove", "check_unsat"]
