"""Executors: where the per-candidate work of a transition plan runs (MemoRepair Alg. 1 line 7).

Planning stays a pure value (:class:`~memsteward.repair.plan.TransitionPlan`); the barrier and the
publication stay one transaction each, in the coordinator (:mod:`memsteward.repair.execute`). An
executor only runs the work of one candidate i ∈ S_ρ — operator π_i, stage z_i, oracles, record
the outcome — and the coordinator submits i only once every prerequisite j ∈ P̄_i (the edges of
E^req[S_ρ]) has validated, so the work forms a task graph whose dependencies are the prerequisite
edges; a prerequisite that failed blocks its dependents without running them (Alg. 1 line 8).

* ``sequential`` — in the calling thread, one candidate at a time in plan order (the reference).
* ``pool[:N]`` — N local workers (default: the CPU count, at most :data:`MAX_WORKERS`): threads
  for I/O-bound operators (LLM ``regen``, ``recompute``), processes for CPU-bound ``param``
  retraining when the store can be opened by another process (a SQLite file or PostgreSQL) and
  the operators/oracles can be pickled; otherwise those run on threads too.
* ``ray[:N]`` / ``ray://host:port[:N]`` — Ray tasks (``memsteward[ray]``) on a local instance or a
  cluster, at most N in flight (default 32).

Workers stage and validate into the shared store themselves, acting under the event's lease
(:meth:`RepairLog.act_for`): a worker that dies mid-task is a crash like any other. The coordinator
raises :class:`WorkerLost`, publishes nothing, and the event stays unfinished: its successors stay
withdrawn and ``memsteward recover`` finishes it (G5 is unchanged: nothing of C(F) is servable
before the one publication transaction).
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import re
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..errors import InputError, WorkerLost
from ..store.api import Locator, RepairLog

__all__ = ["DEFAULT_RAY_WORKERS", "EXECUTORS", "MAX_WORKERS", "Executor", "LocalPool", "RayExecutor",
           "Sequential", "Session", "Shared", "WorkerLost", "executor_from", "locator_of", "parse_executor"]

MAX_WORKERS = 256  # bounds every number that drives work: threads, processes, Ray tasks in flight
DEFAULT_RAY_WORKERS = 32
CPU_BOUND_MODES = frozenset({"param"})  # retraining: processes locally, a whole CPU on Ray
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Shared:
    """What every task of one event needs. ``fn(store, payload, task)`` is a module-level function
    (shipped by reference); ``payload`` is sent once per worker, not per task; ``store`` is the
    coordinator's store behind its :class:`Serialized` lock (threads use it as it is); ``locator``
    = (url, lease owner) lets a worker process open the same store and write as the event's lease
    holder (None: the store lives in this process only, e.g. an in-memory dry-run copy)."""

    fn: Callable[[Any, Any, Any], Any]
    payload: Any
    store: RepairLog
    locator: tuple[str, str] | None


class Session(Protocol):
    """One event's scheduling: at most ``capacity`` tasks in flight."""

    capacity: int

    def submit(self, key: str, mode: str, task: Any) -> None: ...

    def next_done(self) -> tuple[str, Any]:
        """The key and result of one finished task (its exception re-raised; a dead worker:
        :class:`WorkerLost`)."""

    def close(self) -> None: ...


class Executor(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def workers(self) -> int: ...

    def open(self, shared: Shared) -> Session: ...

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[fn(x) for x in items]``, in order, spread over the workers (fn module-level)."""


def locator_of(store: RepairLog) -> Locator | None:
    """(url, lease owner) a worker in another process opens the store with; None for a store
    that only this process can reach (``:memory:``): :meth:`RepairLog.locator`."""
    return store.locator()


class Serialized:
    """A store shared by threads: each call holds one lock (a SQLite or psycopg connection is
    not safe to use from two threads at once, and a transaction must not interleave)."""

    def __init__(self, store: RepairLog, lock: threading.RLock | None = None) -> None:
        shared: Serialized | None = store if isinstance(store, Serialized) else None
        if shared is not None:  # already shared: keep its one lock
            store, lock = shared._store, shared._lock
        self._store: RepairLog = store
        self._lock: threading.RLock = lock or threading.RLock()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        if not callable(value):
            return value
        lock = self._lock

        def locked(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return value(*args, **kwargs)
        return locked


# ---------------------------------------------------------------------------- worker processes

_WORKER_STORES: dict[tuple[str, str], Any] = {}  # insertion order = age
_WORKER_SHARED: dict[str, Any] = {}
MAX_WORKER_STORES = 4  # a long-lived worker (Ray) keeps at most this many connections open


def worker_store(locator: tuple[str, str]) -> Any:
    """This worker process's connection to the shared store, writing as the lease holder."""
    store = _WORKER_STORES.pop(locator, None)
    if store is None:
        from ..store.opening import open_store

        store = open_store(locator[0])
        store.act_for(locator[1])
        while len(_WORKER_STORES) >= MAX_WORKER_STORES:
            _WORKER_STORES.pop(next(iter(_WORKER_STORES))).close()
    _WORKER_STORES[locator] = store
    return store


def _init_process(fn: Callable[..., Any], payload: Any, locator: tuple[str, str] | None) -> None:
    _WORKER_SHARED.update(fn=fn, payload=payload, locator=locator)


def _process_task(task: Any) -> Any:
    return _WORKER_SHARED["fn"](worker_store(_WORKER_SHARED["locator"]), _WORKER_SHARED["payload"], task)


def _picklable(*objs: Any) -> bool:
    try:
        pickle.dumps(objs)
    except Exception:  # noqa: BLE001 — closures, locks, connections: keep that work on threads
        return False
    return True


# ---------------------------------------------------------------------------- sequential


class _InlineSession:
    capacity = 1

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.done: list[tuple[str, Any]] = []

    def submit(self, key: str, mode: str, task: Any) -> None:
        self.done.append((key, self.shared.fn(self.shared.store, self.shared.payload, task)))

    def next_done(self) -> tuple[str, Any]:
        return self.done.pop(0)

    def close(self) -> None:
        self.done.clear()


@dataclass(frozen=True)
class Sequential:
    """One candidate at a time, in the calling thread, in plan order (today's behaviour)."""

    name: str = "sequential"
    workers: int = 1

    def open(self, shared: Shared) -> Session:
        return _InlineSession(shared)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return [fn(x) for x in items]


# ---------------------------------------------------------------------------- local pool


class _PoolSession:
    def __init__(self, shared: Shared, workers: int) -> None:
        self.capacity = workers
        self.shared = shared
        self.store = shared.store  # Serialized by the coordinator: its calls and the threads' share one lock
        self.threads = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="memsteward-op")
        self.processes: ProcessPoolExecutor | None = None
        self.use_processes = shared.locator is not None and _picklable(shared.fn, shared.payload)
        self.futures: dict[Future, str] = {}

    def _process_pool(self) -> ProcessPoolExecutor:
        if self.processes is None:
            ctx = multiprocessing.get_context("forkserver")
            self.processes = ProcessPoolExecutor(self.capacity, mp_context=ctx, initializer=_init_process,
                                                 initargs=(self.shared.fn, self.shared.payload, self.shared.locator))
        return self.processes

    def submit(self, key: str, mode: str, task: Any) -> None:
        if mode in CPU_BOUND_MODES and self.use_processes:
            fut = self._process_pool().submit(_process_task, task)
        else:
            fut = self.threads.submit(self.shared.fn, self.store, self.shared.payload, task)
        self.futures[fut] = key

    def next_done(self) -> tuple[str, Any]:
        done, _ = wait(list(self.futures), return_when=FIRST_COMPLETED)
        fut = min(done, key=lambda f: self.futures[f])  # deterministic pick among simultaneous ones
        key = self.futures.pop(fut)
        try:
            return key, fut.result()
        except BrokenProcessPool:
            raise WorkerLost(f"a worker process died while running {key!r}; the event is unfinished: "
                             "run `memsteward recover`") from None

    def close(self) -> None:
        self.threads.shutdown(wait=True, cancel_futures=True)
        if self.processes is not None:
            self.processes.shutdown(wait=True, cancel_futures=True)
        self.futures.clear()


@dataclass(frozen=True)
class LocalPool:
    """A bounded local pool: threads for I/O-bound operators, processes for ``param``."""

    workers: int
    name: str = "pool"

    def open(self, shared: Shared) -> Session:
        return _PoolSession(shared, self.workers)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="memsteward-map") as pool:
            return list(pool.map(fn, items))


# ---------------------------------------------------------------------------- Ray


def _ray_task(fn: Callable, payload: Any, locator: tuple[str, str], task: Any) -> Any:
    """One candidate's work in a Ray worker: its own connection to the shared store."""
    return fn(worker_store(locator), payload, task)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError("the ray executor needs Ray: pip install 'memsteward[ray]'", file="--executor") from None
    return ray


def _ray_lost(exc: BaseException, what: str) -> WorkerLost:
    return WorkerLost(f"a Ray worker died while running {what} ({type(exc).__name__}); the event is "
                      "unfinished: run `memsteward recover`")


class _RaySession:
    def __init__(self, shared: Shared, workers: int) -> None:
        ray = _ray()
        self.ray = ray
        self.capacity = workers
        self.locator = shared.locator
        self.fn = shared.fn
        self.payload = ray.put(shared.payload)  # once per event, not per task
        self.remote = ray.remote(max_retries=0)(_ray_task)
        self.refs: dict[Any, str] = {}

    def submit(self, key: str, mode: str, task: Any) -> None:
        cpus = 1 if mode in CPU_BOUND_MODES else 0  # I/O-bound (an LLM call) holds no CPU
        ref = self.remote.options(num_cpus=cpus).remote(self.fn, self.payload, self.locator, task)
        self.refs[ref] = key

    def next_done(self) -> tuple[str, Any]:
        ready, _ = self.ray.wait(list(self.refs), num_returns=1)
        key = self.refs.pop(ready[0])
        exc_mod = self.ray.exceptions
        try:
            return key, self.ray.get(ready[0])
        except exc_mod.RayTaskError as exc:  # the task raised: re-raise what it raised
            cause = getattr(exc, "cause", None)
            raise (cause if isinstance(cause, BaseException) else exc) from None
        except (exc_mod.WorkerCrashedError, exc_mod.NodeDiedError, exc_mod.ObjectLostError,
                exc_mod.RaySystemError, exc_mod.TaskCancelledError) as exc:
            raise _ray_lost(exc, repr(key)) from None

    def close(self) -> None:
        for ref in list(self.refs):
            try:
                self.ray.get(ref)  # let running tasks end: recover must not race a live writer
            except Exception:  # noqa: BLE001 — already failing; the first error is the one raised
                pass
        self.refs.clear()


@dataclass(frozen=True)
class RayExecutor:
    """Ray tasks (``memsteward[ray]``): ``address`` None joins or starts a local instance
    (``ray.init()``), else ``ray://host:port``. At most ``workers`` tasks in flight."""

    workers: int = DEFAULT_RAY_WORKERS
    address: str | None = None
    name: str = "ray"

    def check(self) -> None:
        """Probe the cluster's address (cheap; no Ray instance is started)."""
        if self.address is not None:
            _reachable(self.address)

    def connect(self) -> None:
        """Join (or start) the Ray instance; an unreachable address is bad input (exit 2)."""
        ray = _ray()
        self.check()
        if ray.is_initialized():
            return
        try:
            if self.address is None:
                ray.init(include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=self.address, log_to_driver=False)
        except Exception as exc:  # noqa: BLE001 — ConnectionError, TimeoutError, RuntimeError, grpc errors
            detail = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            raise InputError(f"cannot reach the Ray cluster at {self.address or 'a local instance'}: {detail}",
                             file="--executor") from None

    def open(self, shared: Shared) -> Session:
        if shared.locator is None:
            raise InputError("the ray executor needs a store its workers can open (a SQLite file or "
                             "postgresql://…), not an in-memory store", file="--executor")
        self.connect()
        return _RaySession(shared, self.workers)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        self.connect()
        ray = _ray()
        remote = ray.remote(max_retries=0)(fn)
        out: list[Any] = [None] * len(items)
        pending: dict[Any, int] = {}
        queue = iter(enumerate(items))
        for k, x in _take(queue, self.workers):
            pending[remote.remote(x)] = k
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            k = pending.pop(ready[0])
            try:
                out[k] = ray.get(ready[0])
            except ray.exceptions.RayTaskError as exc:
                cause = getattr(exc, "cause", None)
                raise (cause if isinstance(cause, BaseException) else exc) from None
            except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as exc:
                raise _ray_lost(exc, f"item {k}") from None
            for j, y in _take(queue, 1):
                pending[remote.remote(y)] = j
        return out


CONNECT_TIMEOUT = 5.0  # seconds for the TCP probe of a ray:// address (Ray's own client retries ~30 s)


def _reachable(address: str) -> None:
    """Probe ``ray://host:port`` with one TCP connection before Ray's client retries for long."""
    hostport = address[len("ray://"):]
    host, _, port = hostport.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise InputError(f"cannot reach the Ray cluster at {address}: {reason}", file="--executor") from None


def _take(it: Iterator[T], n: int) -> list[T]:
    out = []
    for x in it:
        out.append(x)
        if len(out) == n:
            break
    return out


# ---------------------------------------------------------------------------- parsing

EXECUTORS = ("sequential", "pool[:N]", "ray[:N]", "ray://HOST:PORT[:N]")
_SPEC = re.compile(r"^(?P<kind>sequential|pool|ray)(?::(?P<n>[^:/]*))?$")
_RAY_URL = re.compile(r"^(?P<address>ray://[A-Za-z0-9.\-\[\]]+:\d{1,5})(?::(?P<n>[^:/]*))?$")


def _workers(raw: str | None, default: int, text: str) -> int:
    if raw is None:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_WORKERS:
        raise InputError(f"the worker count in {text!r} must be an integer from 1 to {MAX_WORKERS}",
                         file="--executor")
    return int(raw)


def parse_executor(text: str) -> Executor:
    """``sequential`` | ``pool[:N]`` | ``ray[:N]`` | ``ray://host:port[:N]`` → an executor
    (InputError naming the field ``executor`` otherwise; N is bounded by :data:`MAX_WORKERS`)."""
    text = text.strip()
    m = _RAY_URL.match(text)
    if m:
        return RayExecutor(_workers(m["n"], DEFAULT_RAY_WORKERS, text), m["address"])
    m = _SPEC.match(text)
    if m is None:
        raise InputError(f"unknown executor {text!r}: use one of {', '.join(EXECUTORS)}", file="--executor")
    if m["kind"] == "sequential":
        if m["n"] is not None:
            raise InputError("the sequential executor takes no worker count", file="--executor")
        return Sequential()
    if m["kind"] == "pool":
        return LocalPool(_workers(m["n"], min(os.cpu_count() or 1, MAX_WORKERS), text))
    return RayExecutor(_workers(m["n"], DEFAULT_RAY_WORKERS, text))


def executor_from(spec: str | Executor | None) -> Executor:
    """The executor a caller named (None: sequential). Strings are parsed here, at the edge."""
    if spec is None:
        return Sequential()
    if isinstance(spec, str):
        return parse_executor(spec)
    workers = getattr(spec, "workers", 1)
    if not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise InputError(f"an executor's worker count must be from 1 to {MAX_WORKERS}", file="--executor")
    return spec


def prepare(executor: Executor) -> None:
    """Reach the executor's resources before anything is written (a Ray address is checked
    before the barrier: an unreachable cluster changes nothing)."""
    connect = getattr(executor, "connect", None)
    if connect is not None:
        connect()

