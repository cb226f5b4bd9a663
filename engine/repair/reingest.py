"""The re-ingestion rule: what a write whose content equals an erased item's content may do.

A tombstone keeps digests of a deleted root's content (exact and normalised text; keyed in a sealed
store). A later write whose content one of them matches (:meth:`Store.tombstone_of`) is one of two things:

* **first-hand** (no influence inputs): the user says the thing again. Under ``allow`` it is a new
  memory (a new incarnation), under ``review`` it is recorded but held back until approved (the
  adapter's duty: :mod:`memsteward.integrations.langgraph` keeps it unservable), under ``refuse``
  it is refused;
* **derived** (it names inputs): a summary or profile rebuilt from somewhere else that carries the
  deleted content again. That is the leak path, refused under every rule.

The rule is a pure function; the store calls it inside the write's transaction.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["REINGEST_RULES", "Reingest", "verdict"]

Reingest = Literal["allow", "refuse", "review"]
Verdict = Literal["write", "refuse", "review"]
REINGEST_RULES: tuple[str, ...] = ("allow", "refuse", "review")


def verdict(rule: str, first_hand: bool, tombstoned: bool) -> Verdict:
    """What a write may do under ``rule``.

    Raises
    ------
    ValueError
        ``rule`` is not one of :data:`REINGEST_RULES`.

    Examples
    --------
    >>> verdict("allow", first_hand=True, tombstoned=True)
    'write'
    >>> verdict("allow", first_hand=False, tombstoned=True)
    'refuse'
    >>> verdict("review", first_hand=True, tombstoned=True)
    'review'
    >>> verdict("refuse", first_hand=True, tombstoned=False)
    'write'
    """
    if rule not in REINGEST_RULES:
        raise ValueError(f"reingest must be one of {', '.join(REINGEST_RULES)}, got {rule!r}")
    if not tombstoned:
        return "write"
    if not first_hand or rule == "refuse":
        return "refuse"
    return "review" if rule == "review" else "write"
