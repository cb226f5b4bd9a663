"""The policy language: model, safe loading, the Φ_μ domain, and Z3 analysis.

The names are loaded on first access (PEP 562 ``__getattr__``, as in :mod:`memsteward`):
importing :mod:`memsteward.policy.model` does not import the YAML loader, the domain or Z3, so an
engine that runs a remembered policy (:mod:`memsteward.policy.verdicts`) never imports ``yaml``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazyexports import lazy_exports

# name → the module (relative to this package) that defines it: the one table of the exports
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("Cell", "decide", "enumerate_cells", "firing_rule", "matches"), ".domain"),
    "Finding": ".findings",
    **dict.fromkeys(("PolicySchemaError", "PolicySource", "load_policy", "load_policy_source"), ".loader"),
    **dict.fromkeys(("ARCHITECTURES", "EVENTS", "KINDS", "MODES", "ORACLES", "ClearanceSpec", "Endpoint",
                     "Evaluator", "ModeRule", "Policy", "Recovery", "SelectionSpec", "SupportSpec",
                     "ValidationRule", "When"), ".model"),
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), __all__)


if TYPE_CHECKING:  # static analysers and IDEs see the eager imports
    from .domain import Cell, decide, enumerate_cells, firing_rule, matches
    from .findings import Finding
    from .loader import PolicySchemaError, PolicySource, load_policy, load_policy_source
    from .model import (
        ARCHITECTURES,
        EVENTS,
        KINDS,
        MODES,
        ORACLES,
        ClearanceSpec,
        Endpoint,
        Evaluator,
        ModeRule,
        Policy,
        Recovery,
        SelectionSpec,
        SupportSpec,
        ValidationRule,
        When,
    )
