"""memsteward: declarative governance of agent memory (MemoRepair + MeClear).

The public API (everything in ``__all__``) — see the README section "Use it from Python":

>>> import memsteward
>>> store = memsteward.open_store()
>>> _ = store.record({"id": "n1", "kind": "record", "content": "Alice lives in Paris"})
>>> store.servable(["n1"])
['n1']
"""

from .api import (apply_event, attest, bundled_path, check_policy, clear_context, load_policy, open_store,
                  verify_plan)
from .errors import InputError, WriteRefused
from .policy.model import Policy
from .repair.artifacts import Artifact
from .repair.events import Event
from .repair.plan import TransitionPlan
from .repair.store import Store, content_digest
from .clearance.plan import ClearancePlan

__version__ = "0.1.0"

__all__ = ["Artifact", "ClearancePlan", "Event", "InputError", "Policy", "Store", "TransitionPlan",
           "WriteRefused", "__version__", "apply_event", "attest", "bundled_path", "check_policy",
           "clear_context", "content_digest", "load_policy", "open_store", "verify_plan"]
