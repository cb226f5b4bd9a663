"""Block search: adaptive group testing for a recovering removal (issue 32, beyond the paper).

When no single removal recovers — a redundant pair (Eq. 8) masks both LOO effects (Thm 1) — the
budgeted search can spend its calls on *blocks* instead of waiting for ψ̂ to rank both faults first.
A test of a block R ⊆ M is a verification (Eq. 18–19 for a removal that is not a chain prefix):
v̂(M ∖ R) read at the game's trials, and R *recovers* when ĝ = v̂(M ∖ R) − v̂(M) > ε and ν(M ∖ R) = 1.

* **Splits.** The members, ranked (most harmful first), are bisected recursively into balanced halves;
  bit l of a member's code says which half it fell in at level l. Split s = 1, 2, 3, … (a mask over
  the levels) puts a member on side ``popcount(code & s) mod 2``; side 0 of split 1 is the first half of
  the ranking. Within the first three splits (levels 0, 1 and their parity) any two members share a
  side (:func:`pair_together`), so a removal that needs both members of a pair is among the first
  six tests whenever the kept half still answers.
* **Find, then shrink** (ddmin-style). The sides of the splits of M are tested in order until one
  recovers; then the sides of the splits of that block, until one recovers, and so on down to one
  member, or until no side of the current block recovers (then the block has no recovering half; at
  three members or fewer its sides are all its proper subsets, so it is a minimal recovering
  removal), or until a test is not affordable.

Every recovering test is kept: they are nested (each one is a side of the one before), so they are
prefixes of one chain, which :func:`memsteward.clearance.budgeted.block_round` reports.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .game import Game
from .selection import EPS


def levels(n: int) -> int:
    """Bisection levels of n members (at least one)."""
    return max(1, math.ceil(math.log2(max(2, n))))


def codes(order: Sequence[str]) -> dict[str, int]:
    """Bit l of a member's code: whether it fell in the second half at bisection level l
    (halves balanced, the first the larger)."""
    out = {m: 0 for m in order}
    stack: list[tuple[Sequence[str], int]] = [(order, 0)]
    while stack:
        part, level = stack.pop()
        if len(part) < 2:
            continue
        half = (len(part) + 1) // 2
        for m in part[half:]:
            out[m] |= 1 << level
        stack += [(part[:half], level + 1), (part[half:], level + 1)]
    return out


def sides(order: Sequence[str]) -> Iterator[tuple[str, ...]]:
    """The proper, non-empty sides of splits 1, 2, … of ``order``, side 0 first, each once."""
    code, seen = codes(order), set()
    for mask in range(1, 2 ** levels(len(order))):
        for side in (0, 1):
            block = tuple(m for m in order if bin(code[m] & mask).count("1") % 2 == side)
            if 0 < len(block) < len(order) and block not in seen:
                seen.add(block)
                yield block


def pair_together(order: Sequence[str], a: str, b: str) -> bool:
    """Whether one of the first three splits (levels 0 and 1 and their parity) puts a and b on one side."""
    code = codes(order)
    return any(bin((code[a] ^ code[b]) & mask).count("1") % 2 == 0 for mask in (1, 2, 3))


def recovers(game: Game, block: Sequence[str]) -> bool | None:
    """The test of a block: ĝ > ε and ν(M ∖ R) at the game's trials; None when the budget cannot pay."""
    rest = game.grand - frozenset(block)
    if not game.holds_full(rest) and not game.affordable([rest]):
        return None
    return game.value(rest) - game.value(game.grand) > EPS and game.recovered(rest)


@dataclass(frozen=True)
class BlockSearch:
    """The recovering blocks found, largest first (nested), and whether the search ran to its end."""

    found: tuple[tuple[str, ...], ...]
    complete: bool  # False: a test the budget could not pay for ended it


def first_recovering(game: Game, order: Sequence[str]) -> tuple[tuple[str, ...] | None, bool]:
    """The first side of ``order``'s splits that recovers, and whether the budget paid for every test."""
    for block in sides(order):
        ok = recovers(game, block)
        if ok is None:
            return None, False
        if ok:
            return block, True
    return None, True


def search_blocks(game: Game, order: Sequence[str]) -> BlockSearch:
    """Find a recovering side of M's splits, then shrink it side by side (module doc)."""
    found: list[tuple[str, ...]] = []
    current: Sequence[str] = order
    while len(current) > 1:
        block, paid = first_recovering(game, current)
        if block is None:
            return BlockSearch(tuple(found), paid)
        found.append(block)
        current = block
    return BlockSearch(tuple(found), True)
