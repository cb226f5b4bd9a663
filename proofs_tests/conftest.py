"""Shared pytest setup: Hypothesis profiles (CI runs a smaller example budget)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


# ----------------------------------------------------------------------------- store backends
# The store suite runs once per backend: a module opts in with
#     pytestmark = pytest.mark.usefixtures("store_backend")
# and every `Store()` it makes (an in-memory SQLite store) becomes, under the "postgres" param, a
# PostgreSQL store on a fresh schema of MEMSTEWARD_PG_DSN, closed and dropped after the test.
# New tests take `store_factory` (a fresh empty store per call) or `pg_url` (a fresh schema's URL).
# Without MEMSTEWARD_PG_DSN the postgres params skip with that reason; CI (.ci/run) always sets it,
# and a DSN that is set but unreachable is an error, never a skip.

import uuid

import pytest

PG_DSN_ENV = "MEMSTEWARD_PG_DSN"
BACKENDS = ["sqlite", "postgres"]
PG_EXAMPLES, MAX_OPEN = 6, 4


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
        from memsteward.repair.store import Store

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
                    con.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


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
    from memsteward.repair.dialect import connect_postgres
    from memsteward.repair.store import Store

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
    from memsteward.repair.store import Store

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
