"""The policy language: model, safe loading, the Φ_μ domain, and Z3 analysis."""

from .domain import Cell, decide, enumerate_cells, firing_rule, matches
from .findings import Finding
from .loader import PolicySchemaError, PolicySource, load_policy, load_policy_source
from .model import (
    ARCHITECTURES, EVENTS, KINDS, MODES, ORACLES, ClearanceSpec, Endpoint, Evaluator, ModeRule,
    Policy, Recovery, SelectionSpec, SupportSpec, ValidationRule, When,
)

__all__ = [
    "ARCHITECTURES", "EVENTS", "KINDS", "MODES", "ORACLES", "Cell", "ClearanceSpec", "Endpoint",
    "Evaluator", "Finding", "ModeRule", "Policy", "PolicySchemaError", "PolicySource", "Recovery",
    "SelectionSpec", "SupportSpec", "ValidationRule", "When", "decide", "enumerate_cells",
    "firing_rule", "load_policy", "load_policy_source", "matches",
]
