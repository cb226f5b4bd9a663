"""memsteward: declarative governance of agent memory (MemoRepair + MeClear).

The public API (everything in ``__all__``) — see the README section "Use it from Python":

>>> import memsteward
>>> store = memsteward.open_store()
>>> _ = store.record({"id": "n1", "kind": "record", "content": "Alice lives in Paris"})
>>> store.servable(["n1"])
['n1']

The names are loaded on first use (PEP 562 ``__getattr__``): ``import memsteward`` alone does not
import the engine, so the command line starts fast and each command imports only what it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazyexports import lazy_exports

__version__ = "0.1.0"

# name → the module (relative to this package) that defines it: the one table of the public API
_EXPORTS: dict[str, str] = {
    "Artifact": ".repair.artifacts",
    "ClearancePlan": ".clearance.plan",
    "Event": ".repair.events",
    "InputError": ".errors",
    "Policy": ".policy.model",
    "Store": ".repair.store",
    "TransitionPlan": ".repair.plan",
    "WriteRefused": ".errors",
    "apply_event": ".api",
    "attest": ".api",
    "bundled_path": ".api",
    "check_policy": ".api",
    "clear_context": ".api",
    "content_digest": ".repair.store",
    "load_policy": ".api",
    "open_store": ".api",
    "verify_plan": ".api",
}

__all__ = sorted([*_EXPORTS, "__version__"])


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), __all__)


if TYPE_CHECKING:  # static analysers and IDEs see the eager imports
    from .api import (
        apply_event,
        attest,
        bundled_path,
        check_policy,
        clear_context,
        load_policy,
        open_store,
        verify_plan,
    )
    from .clearance.plan import ClearancePlan
    from .errors import InputError, WriteRefused
    from .policy.model import Policy
    from .repair.artifacts import Artifact
    from .repair.events import Event
    from .repair.plan import TransitionPlan
    from .repair.store import Store, content_digest
