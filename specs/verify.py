"""Run the Z3 proofs of the catalog (``memsteward verify``)."""

from __future__ import annotations

from collections.abc import Callable

from .catalog import CATALOG
from .code_checks import CHECKS as CODE_CHECKS
from .code_checks import CodeResult
from .code_checks import verify_code as verify_code_check
from .proofs import g1_efficiency, g2_blind_spot, g3_non_degradation, g4_closure, g5_barrier, g6_erasure
from .proofs.result import ProofResult


def engine_selector(backend: str = "ortools") -> Callable:
    """The engine's min-cut selector (memsteward.repair.closure) on a G4 instance (p_i, v_i, P̄_i)."""

    def select(weights, executable, prereqs) -> set[int]:
        from memsteward.repair.candidates import Candidate
        from memsteward.repair.closure import max_weight_closure

        cands = [Candidate(str(i), "summary", None, "regen", "regen", tuple(str(j) for j in prereqs[i]),
                           bool(executable[i]), float(max(p, 0)), float(max(-p, 0)))
                 for i, p in enumerate(weights)]
        return {int(i) for i in max_weight_closure(cands, 1.0, backend).selected}

    return select


PROOFS: dict[str, Callable[[], ProofResult]] = {
    "G1": lambda: g1_efficiency.prove(max_players=6, max_permutations=16),
    "G2": lambda: g2_blind_spot.prove(max_players=7),
    "G3": lambda: g3_non_degradation.prove(max_chain=16),
    "G4": lambda: g4_closure.prove(max_symbolic=6, sizes=(8, 64, 256), selector=engine_selector()),
    "G5": lambda: g5_barrier.prove(artifacts=4, depth=16),
    "G6": lambda: g6_erasure.prove(artifacts=7),
}


def verify(ids: list[str] | None = None) -> list[ProofResult]:
    """Prove the selected guarantees (all by default), in catalog order."""
    wanted = [g.id for g in CATALOG if not ids or g.id in ids]
    return [PROOFS[gid]() for gid in wanted]


def verify_code(ids: list[str] | None = None) -> dict[str, CodeResult]:
    """The code-level checks (engine functions against the models, bounded, with a broken variant
    that must be refuted) of the selected guarantees, keyed by check id (a guarantee may have
    several: ``G5`` and ``G5-lease``)."""
    wanted = [g.id for g in CATALOG if not ids or g.id in ids]
    return {key: verify_code_check(key) for gid in wanted for key in CODE_CHECKS if guarantee_of(key) == gid}


def guarantee_of(check_id: str) -> str:
    """The guarantee a code check belongs to: ``G5`` for ``G5`` and ``G5-lease``."""
    return check_id.split("-", 1)[0]
