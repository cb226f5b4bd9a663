"""Outcome of one proof obligation."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import z3


@dataclass(frozen=True)
class ProofResult:
    """``proved`` only when every obligation up to ``bound`` was unsat for the negated claim."""

    guarantee: str
    claim: str
    bound: str
    proved: bool
    seconds: float
    obligations: int
    counterexample: dict[str, Any] | None = None
    failure: str = ""
    details: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "proved" if self.proved else ("refuted" if self.counterexample is not None else "failed")

    def as_dict(self) -> dict[str, Any]:
        return {"guarantee": self.guarantee, "claim": self.claim, "bound": self.bound, "result": self.status,
                "seconds": round(self.seconds, 3), "obligations": self.obligations,
                "counterexample": self.counterexample, "failure": self.failure}


class Refuted(Exception):
    def __init__(self, where: str, witness: dict[str, Any]) -> None:
        super().__init__(where)
        self.where = where
        self.witness = witness


def check_unsat(negated: z3.BoolRef | list, where: str, timeout_ms: int = 20_000,
                witness: Callable[[z3.ModelRef], dict[str, Any]] | None = None) -> None:
    """Demand ``unsat`` for the negated claim; raise :class:`Refuted` or TimeoutError."""
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(negated)
    r = s.check()
    if r == z3.unsat:
        return
    if r == z3.sat:
        m = s.model()
        raise Refuted(where, witness(m) if witness else _model_dict(m))
    raise TimeoutError(f"{where}: Z3 returned unknown ({s.reason_unknown()}) — a timeout is a failure")


def _model_dict(m: z3.ModelRef, limit: int = 40) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for d in sorted(m.decls(), key=lambda d: d.name())[:limit]:
        v = m[d]
        out[d.name()] = str(v)
    return out


def run(guarantee: str, claim: str, bound: str, body: Callable[[], int]) -> ProofResult:
    """Run ``body`` (which returns the number of obligations discharged) and time it."""
    start = time.perf_counter()
    try:
        n = body()
        return ProofResult(guarantee, claim, bound, True, time.perf_counter() - start, n)
    except Refuted as exc:
        return ProofResult(guarantee, claim, bound, False, time.perf_counter() - start, 0,
                           counterexample={"at": exc.where, **exc.witness})
    except TimeoutError as exc:
        return ProofResult(guarantee, claim, bound, False, time.perf_counter() - start, 0, failure=str(exc))
