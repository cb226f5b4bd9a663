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

# static, so type checkers know the public names (a test checks it equals the table)
__all__ = [
    "ARCHITECTURES",
    "Cell",
    "ClearanceSpec",
    "EVENTS",
    "Endpoint",
    "Evaluator",
    "Finding",
    "KINDS",
    "MODES",
    "ModeRule",
    "ORACLES",
    "Policy",
    "PolicySchemaError",
    "PolicySource",
    "Recovery",
    "SelectionSpec",
    "SupportSpec",
    "ValidationRule",
    "When",
    "decide",
    "enumerate_cells",
    "firing_rule",
    "load_policy",
    "load_policy_source",
    "matches",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), __all__)


if TYPE_CHECKING:  # static analysers and IDEs see the eager imports, re-exported explicitly (`X as X`)
    from .domain import Cell as Cell
    from .domain import decide as decide
    from .domain import enumerate_cells as enumerate_cells
    from .domain import firing_rule as firing_rule
    from .domain import matches as matches
    from .findings import Finding as Finding
    from .loader import PolicySchemaError as PolicySchemaError
    from .loader import PolicySource as PolicySource
    from .loader import load_policy as load_policy
    from .loader import load_policy_source as load_policy_source
    from .model import ARCHITECTURES as ARCHITECTURES
    from .model import EVENTS as EVENTS
    from .model import KINDS as KINDS
    from .model import MODES as MODES
    from .model import ORACLES as ORACLES
    from .model import ClearanceSpec as ClearanceSpec
    from .model import Endpoint as Endpoint
    from .model import Evaluator as Evaluator
    from .model import ModeRule as ModeRule
    from .model import Policy as Policy
    from .model import Recovery as Recovery
    from .model import SelectionSpec as SelectionSpec
    from .model import SupportSpec as SupportSpec
    from .model import ValidationRule as ValidationRule
    from .model import When as When
