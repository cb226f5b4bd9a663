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
    "Store": ".store.sqlstore",
    "TransitionPlan": ".repair.plan",
    "WriteRefused": ".errors",
    "apply_event": ".api",
    "attest": ".api",
    "bundled_path": ".api",
    "check_policy": ".api",
    "clear_context": ".api",
    "content_digest": ".repair.writes",
    "load_policy": ".api",
    "open_store": ".api",
    "verify_plan": ".api",
}

# static, so type checkers know the public names (a test checks it equals the table plus __version__)
__all__ = [
    "Artifact",
    "ClearancePlan",
    "Event",
    "InputError",
    "Policy",
    "Store",
    "TransitionPlan",
    "WriteRefused",
    "__version__",
    "apply_event",
    "attest",
    "bundled_path",
    "check_policy",
    "clear_context",
    "content_digest",
    "load_policy",
    "open_store",
    "verify_plan",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), __all__)


if TYPE_CHECKING:  # static analysers and IDEs see the eager imports, re-exported explicitly (`X as X`)
    from .api import apply_event as apply_event
    from .api import attest as attest
    from .api import bundled_path as bundled_path
    from .api import check_policy as check_policy
    from .api import clear_context as clear_context
    from .api import load_policy as load_policy
    from .api import open_store as open_store
    from .api import verify_plan as verify_plan
    from .clearance.plan import ClearancePlan as ClearancePlan
    from .errors import InputError as InputError
    from .errors import WriteRefused as WriteRefused
    from .policy.model import Policy as Policy
    from .repair.artifacts import Artifact as Artifact
    from .repair.events import Event as Event
    from .repair.plan import TransitionPlan as TransitionPlan
    from .repair.writes import content_digest as content_digest
    from .store.sqlstore import Store as Store
