"""The public Python API: a small, stable surface over the engine (re-exported by ``memsteward``).

Each function is a thin composition of the engine's modules; the ``memsteward`` command line is
built on the same functions. Plans are frozen values with ``to_json()``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InputError
from .policy.model import Policy
from .repair.closure import DEFAULT_BACKEND
from .repair.events import Event, parse_event
from .repair.plan import TransitionPlan
from .store.api import Storage

if TYPE_CHECKING:  # the public signatures name the SQL store class (``memsteward.Store``)
    from memsteward.specs.certificates import Clause

    from .clearance.case import Case
    from .clearance.plan import ClearancePlan
    from .policy.findings import Finding
    from .repair.executors import Executor
    from .store.sqlstore import SqlStore

__all__ = ["apply_event", "attest", "bundled_path", "check_policy", "clear_context", "load_policy",
           "open_store", "recover_event", "verify_plan"]


def bundled_path(*parts: str) -> Path:
    """Path of data shipped inside the package (policies, example cases and stores).

    Examples
    --------
    >>> bundled_path("policies", "default.yaml").name
    'default.yaml'
    """
    from importlib import resources  # not at import: it loads tempfile, zipfile, shutil

    return Path(str(resources.files("memsteward").joinpath("data", *parts)))


def load_policy(path: str | Path) -> Policy:
    """Load a policy YAML file for execution (frozen :class:`Policy`).

    Raises
    ------
    InputError
        unreadable or unparsable file, a schema error, or any error ``check_policy`` reports.

    Examples
    --------
    >>> policy = load_policy(bundled_path("policies", "default.yaml"))
    >>> policy.name, policy.selection.tradeoff
    ('default', 0.3)
    """
    from .policy.loader import load_policy as _load

    return _load(path)


def check_policy(path: str | Path) -> list[Finding]:
    """Validate a policy and analyse its mode map with Z3 (totality, dead rules, type safety, ranges).

    Returns the findings (``severity`` error / warning / info, with file, line and field); an empty
    list is a clean policy. Raises :class:`InputError` when the file cannot be read or parsed.

    Examples
    --------
    >>> findings = check_policy(bundled_path("policies", "default.yaml"))
    >>> [f.code for f in findings if f.severity == "error"]
    []
    """
    from .policy.analysis import analyze
    from .policy.loader import PolicySchemaError, load_policy_source

    try:
        src = load_policy_source(path)
    except PolicySchemaError as exc:
        return list(exc.findings)
    return list(analyze(src))


def open_store(path: str | Path = ":memory:", create: bool = True, tenant: str | None = None) -> SqlStore:
    """Open a store: a SQLite file (created when missing and ``create``), ``":memory:"``, a
    ``postgresql://`` URL, or a ``.json`` export (read into memory, never written back). ``tenant``
    (or ``?tenant=name`` in the URL) opens that tenant's own store beside it: its own provenance,
    event lock and audit chain (:mod:`memsteward.store.tenants`).

    Examples
    --------
    >>> store = open_store()
    >>> store.record({"id": "n1", "kind": "record", "content": "Alice lives in Paris"}).version
    1
    >>> store.servable(["n1", "unknown"])
    ['n1']
    """
    from .store.opening import open_store as open_url

    return open_url(str(path), create=create, tenant=tenant)


def apply_event(store: Storage, policy: Policy, event: Event | Mapping[str, Any], *, dry_run: bool = False,
                selector: str = "mincut", backend: str = DEFAULT_BACKEND,
                executor: Executor | str | None = None,
                progress: Callable[[int, int], None] | None = None) -> TransitionPlan:
    """Apply a delete / correct / migrate event (MemoRepair Algorithm 1): barrier, repair,
    validate, publish. With ``dry_run`` the plan is executed on an in-memory copy and the store
    is untouched. ``event`` is an :class:`Event` or its JSON object. ``executor`` runs the
    candidates' operators and oracles: ``"sequential"`` (None), ``"pool[:N]"``, ``"ray[:N]"``,
    ``"ray://host:port[:N]"`` or an executor object (:mod:`memsteward.repair.executors`).
    ``progress(done, total)`` is called after every repair step's outcome (total = |S_ρ|).
    ``backend`` is the min-cut solver (``"ortools"``, as in the CLI, or ``"networkx"``).

    Raises
    ------
    InputError
        the event names unknown or erased artifacts, the store has an unfinished event, or the
        executor is malformed or cannot be reached (nothing changed).
    WorkerLost
        a worker died mid-task: the event is unfinished, :func:`recover_event` completes it.

    Examples
    --------
    >>> store = open_store()
    >>> _ = store.record({"id": "n1", "kind": "record", "content": "Alice lives in Paris"})
    >>> _ = store.record({"id": "n2", "kind": "record", "content": "Alice likes tea"})
    >>> _ = store.record({"id": "s", "kind": "summary", "content": "Alice lives in Paris. Alice likes tea"},
    ...                  inputs=["n1", "n2"])
    >>> policy = load_policy(bundled_path("policies", "default.yaml"))
    >>> plan = apply_event(store, policy, {"type": "delete", "roots": ["n1"]})
    >>> plan.barrier, plan.republished
    (('n1', 's'), ('s',))
    >>> store.get("s").content, store.servable(["n1", "n2", "s"])
    ('Alice likes tea', ['n2', 's'])
    """
    from .repair.execute import dry_run as simulate
    from .repair.execute import run_event
    from .repair.executors import executor_from

    runner = executor_from(executor)  # a malformed executor is refused before anything is read
    ev = event if isinstance(event, Event) else parse_event(dict(event), store)
    return (simulate if dry_run else run_event)(store, policy, ev, selector, backend, executor=runner,
                                                progress=progress)


def recover_event(store: Storage, executor: Executor | str | None = None,
                  progress: Callable[[int, int], None] | None = None) -> TransitionPlan | None:
    """Roll an interrupted event forward (``memsteward recover``); None when nothing is pending.
    ``executor`` and ``progress`` as for :func:`apply_event`."""
    from .repair.execute import recover
    from .repair.executors import executor_from

    return recover(store, executor=executor_from(executor), progress=progress)


def clear_context(case: Case | Mapping[str, Any] | str | Path, policy: Policy | None = None,
                  method: str = "meclear") -> ClearancePlan:
    """Clear the harmful memories from ONE query's context (MeClear Algorithm 1); the memory bank
    is never changed. ``case`` is a :class:`Case`, its JSON object or a path to it; ``policy``
    supplies the clearance settings (the bundled default when None).

    Examples
    --------
    >>> plan = clear_context(bundled_path("cases", "redundant.json"))
    >>> plan.removed, plan.recovered
    (('m3', 'm5'), True)
    """
    from .clearance.case import Case as _Case
    from .clearance.case import case_game, load_case, parse_case
    from .clearance.pipeline import run_method

    spec = (policy or load_policy(bundled_path("policies", "default.yaml"))).clearance
    if isinstance(case, (str, Path)):
        loaded = load_case(case)
    elif isinstance(case, _Case):
        loaded = case
    else:
        loaded = parse_case(dict(case))
    return run_method(method, case_game(loaded, spec), spec)


def verify_plan(plan: TransitionPlan | ClearancePlan | Mapping[str, Any]) -> list[Clause]:
    """Re-check a plan's guarantees (G3 for clearance, G4/G5 for transition plans) clause by clause.

    Every clause has ``ok``; the first failing one names its witness. A malformed plan document
    raises :class:`InputError`.

    Examples
    --------
    >>> plan = clear_context(bundled_path("cases", "redundant.json"))
    >>> all(c.ok for c in verify_plan(plan))
    True
    """
    from memsteward.specs.certificates import check_plan

    try:
        return check_plan(plan.to_json() if hasattr(plan, "to_json") else dict(plan))
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError, IndexError, OverflowError) as exc:
        raise InputError(f"not a valid plan: {exc}", file="<plan>") from None


def attest(store: Storage, event_id: int | None = None, expect_head: str | None = None) -> dict[str, Any]:
    """The deletion attestation of one event (the latest when None): what was withdrawn and when,
    what was republished from which support, the erasure, and the checks (``ok`` when all pass).

    Examples
    --------
    >>> store = open_store()
    >>> _ = store.record({"id": "n1", "kind": "record", "content": "Alice lives in Paris"})
    >>> _ = apply_event(store, load_policy(bundled_path("policies", "default.yaml")),
    ...                 {"type": "delete", "roots": ["n1"]})
    >>> report = attest(store)
    >>> report["ok"], report["erasure"][0]["content_remaining"]
    (True, [])
    """
    from .repair.attestation import attest as _attest

    return _attest(store, event_id, expect_head)
