"""Shared pytest setup: Hypothesis profiles (CI runs a smaller example budget)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


# ----------------------------------------------------------------------------- master key
# Stores seal their versions under DEKs wrapped by a master key (memsteward.shred). The suite uses one
# made for this session (a 0600 file in a temporary folder), never the user's ~/.config/memsteward key;
# child processes inherit it.
if not os.environ.get("MEMSTEWARD_MASTER_KEY") and not os.environ.get("MEMSTEWARD_MASTER_KEY_FILE"):
    import tempfile

    from memsteward.shred.master import create_key_file

    _key_dir = tempfile.mkdtemp(prefix="memsteward-test-key-")
    create_key_file(os.path.join(_key_dir, "master.key"))
    os.environ["MEMSTEWARD_MASTER_KEY_FILE"] = os.path.join(_key_dir, "master.key")


# ----------------------------------------------------------------------------- audit key
# A key in the user's environment would seal every test store's audit head (and the child processes'):
# tests of sealed heads set MEMSTEWARD_AUDIT_KEY themselves, so the suite runs as CI does, without one
# (with it set, test_store_schema_faults' hand-made older store, whose head is unsigned, was refused).
for _var in ("MEMSTEWARD_AUDIT_KEY", "MEMSTEWARD_AUDIT_KEY_FILE"):
    os.environ.pop(_var, None)


# ----------------------------------------------------------------------------- store backends
# The store suite runs once per backend: a module opts in with
#     pytestmark = pytest.mark.usefixtures("store_backend")
# and every `Store()` it makes (an in-memory SQLite store) becomes, under the "postgres" param, a
# PostgreSQL store on a fresh schema of MEMSTEWARD_PG_DSN, closed and dropped after the test.
# New tests take `store_factory` (a fresh empty store per call), `store_at` (a store location per
# backend: a SQLite file path or a fresh schema's URL, for tests that go through `Store.open`, the CLI
# or child processes) or `pg_url` (a fresh schema's URL).
# Without MEMSTEWARD_PG_DSN the postgres params skip with that reason; CI (.ci/run) always sets it,
# and a DSN that is set but unreachable is an error, never a skip.

import uuid

import pytest

PG_DSN_ENV = "MEMSTEWARD_PG_DSN"
BACKENDS = ["sqlite", "postgres"]
PG_EXAMPLES, MAX_OPEN = 15, 4


def pg_dsn() -> str:
    dsn = os.environ.get(PG_DSN_ENV, "")
    if not dsn:
        pytest.skip(f"{PG_DSN_ENV} is not set: PostgreSQL backend tests skipped (CI sets it)")
    return dsn


class _PgSchemas:
    """Fresh schemas on the test server; drops them (and closes their stores) at teardown."""

    def __init__(self, dsn: str) -> None:
        self.dsn, self.names, self.stores = dsn, [], []

    def url(self) -> str:
        name = f"t_{uuid.uuid4().hex[:16]}"
        self.names.append(name)
        return f"{self.dsn}{'&' if '?' in self.dsn else '?'}schema={name}"

    def store(self):
        from memsteward.store import Store

        s = Store.open(self.url(), create=True)
        self.stores.append(s)
        return s

    def cleanup(self) -> None:
        import psycopg

        for s in self.stores:
            try:
                s.close()
            except Exception:  # noqa: BLE001 — a test may have closed it or killed its server side
                pass
        if self.names:
            with psycopg.connect(self.dsn, autocommit=True) as con:
                for name in self.names:
                    tenants = con.execute("SELECT schema_name FROM information_schema.schemata WHERE "
                                          "starts_with(schema_name, %s)", (f"{name}__",)).fetchall()
                    for schema in [name, *(t for (t,) in tenants)]:  # its tenants' schemas too
                        con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                        con.execute(f'DROP SCHEMA IF EXISTS "{schema}_keys" CASCADE')  # its key store (memsteward.shred)


@pytest.fixture
def pg_schemas():
    schemas = _PgSchemas(pg_dsn())
    yield schemas
    schemas.cleanup()


@pytest.fixture
def pg_url(pg_schemas):
    return pg_schemas.url()


@pytest.fixture(params=BACKENDS)
def store_backend(request, monkeypatch):
    """Run the requesting module's tests once per backend (see above)."""
    if request.param == "sqlite":
        yield "sqlite"
        return
    from memsteward.store import Store
    from memsteward.store.pg_connect import connect_postgres

    schemas = _PgSchemas(pg_dsn())

    class LoopbackStore(Store):
        """`Store()` of the test module → a PostgreSQL store on a fresh schema."""

        def __init__(self, path: str = ":memory:", conn=None) -> None:
            if conn is None and path == ":memory:":
                url = schemas.url()
                super().__init__(url, conn=connect_postgres(url))
                schemas.stores.append(self)
                for older in schemas.stores[:-MAX_OPEN]:  # Hypothesis makes one per example: bound connections
                    if not older.conn.raw.closed:
                        older.close()
            else:
                super().__init__(path, conn)

    monkeypatch.setattr(request.module, "Store", LoopbackStore)
    fn = getattr(request.node, "function", None)
    budget = getattr(fn, "_hypothesis_internal_use_settings", None)
    if budget is not None:  # property tests: a small example budget on the server (each example is a schema)
        monkeypatch.setattr(fn, "_hypothesis_internal_use_settings",
                            settings(budget, max_examples=min(budget.max_examples, PG_EXAMPLES)))
    yield "postgres"
    schemas.cleanup()


@pytest.fixture(params=BACKENDS)
def store_factory(request, tmp_path):
    """A fresh, empty store of each backend per call (SQLite: a WAL file in tmp_path)."""
    from memsteward.store import Store

    if request.param == "sqlite":
        made = []

        def make():
            made.append(Store(str(tmp_path / f"s{len(made)}.db")))
            return made[-1]
        yield make
        for s in made:
            s.close()
        return
    schemas = _PgSchemas(pg_dsn())
    yield schemas.store
    schemas.cleanup()


class StoreLocations:
    """``store_at(name)``: where the test's store called ``name`` lives on this backend — a SQLite
    file in tmp_path, or the URL of a fresh PostgreSQL schema (the same name gives the same place).
    ``fingerprint(loc)`` changes with any committed write (file bytes, or every row of every table)."""

    def __init__(self, backend: str, tmp_path, schemas: "_PgSchemas | None") -> None:
        self.backend, self.tmp_path, self.schemas, self.made = backend, tmp_path, schemas, {}

    def __call__(self, name: str = "store") -> str:
        if name not in self.made:
            self.made[name] = (str(self.tmp_path / f"{name}.db") if self.schemas is None else self.schemas.url())
        return self.made[name]

    fingerprint = staticmethod(lambda loc: store_fingerprint(loc))
    exists = staticmethod(lambda loc: store_exists(loc))


def store_fingerprint(loc: str) -> str:
    """Changes with any committed write: the SQLite file and WAL bytes, or every row of every table
    of a PostgreSQL store (read without opening it as a store, so reading changes nothing)."""
    import hashlib
    from pathlib import Path

    if not loc.startswith("postgresql://"):
        wal = Path(loc + "-wal")
        return (hashlib.sha256(Path(loc).read_bytes()).hexdigest() + "/"
                + hashlib.sha256(wal.read_bytes() if wal.exists() else b"").hexdigest())
    import psycopg

    dsn, schema = loc.rsplit("?schema=", 1)
    h = hashlib.sha256()
    with psycopg.connect(dsn, autocommit=True) as con:
        tables = [t for (t,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
                                            "ORDER BY 1", (schema,))]
        for table in tables:
            rows = con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()
            h.update(f"{table}:{sorted(map(repr, rows))}".encode())
    return h.hexdigest()


def store_exists(loc: str) -> bool:
    """Whether anything exists at a store location (a file, or a PostgreSQL schema)."""
    from pathlib import Path

    if not loc.startswith("postgresql://"):
        return Path(loc).exists()
    import psycopg

    dsn, schema = loc.rsplit("?schema=", 1)
    with psycopg.connect(dsn, autocommit=True) as con:
        return con.execute("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = %s",
                           (schema,)).fetchone()[0] > 0


@pytest.fixture(params=BACKENDS)
def store_at(request, tmp_path):
    """Per backend, store locations by name (see :class:`StoreLocations`)."""
    if request.param == "sqlite":
        yield StoreLocations("sqlite", tmp_path, None)
        return
    schemas = _PgSchemas(pg_dsn())
    yield StoreLocations("postgres", tmp_path, schemas)
    schemas.cleanup()


# ----------------------------------------------------------------------------- Ray
# One real local Ray instance per session (2 CPUs, no dashboard), started by the first test that
# asks for it; its workers can import this folder (test operators are shipped by reference).
# Ray is installed by `make test` (the `ray` extra): a missing Ray is an error, never a skip.


@pytest.fixture(scope="session")
def ray_cluster():
    import sys

    import ray

    here = os.path.dirname(os.path.abspath(__file__))
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([here, *sys.path])}})
    yield
    ray.shutdown()
