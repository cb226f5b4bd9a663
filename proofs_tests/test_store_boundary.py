"""The store is its own package (issue 26): nothing outside ``engine/store/`` touches a database.

An AST scan of every module of the installed package (``engine/`` and ``specs/``) outside
``engine/store/``: none imports ``sqlite3`` or ``psycopg``, none imports the concrete SQL store class
(or a module of the store other than its protocols, records, errors and the opening edge), and none
reads a store's connection (``.conn``). Stores are opened through ``memsteward.store.opening.open_store``,
the one edge that picks a backend from a path or URL, and used through the protocols of
``memsteward.store.api``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "engine" / "store"
DRIVERS = frozenset({"sqlite3", "psycopg"})
# what a module outside the store may import from it: the protocols and records, the opening edge,
# the URL helpers and the error tuple, the schema version (``store migrate`` prints it)
ALLOWED = frozenset({"api", "opening", "connection", "schema", "planstore"})
CONCRETE = frozenset({"SqlStore", "Store", "StoreCore"})


# The exceptions, each for its reason:
# * the public front door (``memsteward`` and ``memsteward.api``) names ``memsteward.Store`` in its
#   signatures: imports of it under ``if TYPE_CHECKING:`` there are for type checkers only;
# * the key stores of crypto-shredding (issue 27) keep the data keys in their own SQLite file or PostgreSQL
#   schema, apart from the data by design (a backup of the data must not hold its keys).
# * the LangGraph adapter's scrub and TTL sweep open the *wrapped LangGraph store's* SQLite file (its own
#   VACUUM and expiry), not a memsteward store.
# * the crash harness (``python -m memsteward.testing.crash``) wraps a store in ``CrashingStore`` for the
#   kill -9 tests: fault injection sits beside the store, as SQLite's crash layer sits beside its VFS.
EXEMPT = {ROOT / "engine" / "testing" / "crash.py", ROOT / "engine" / "shred" / "keyfile.py", ROOT / "engine" / "shred" / "pgkeys.py",
          ROOT / "engine" / "integrations" / "langgraph" / "physical.py",
          ROOT / "engine" / "integrations" / "langgraph" / "ttl.py"}
FRONT_DOOR = {ROOT / "engine" / "__init__.py", ROOT / "engine" / "api.py"}


def _modules() -> list[Path]:
    files = sorted((ROOT / "engine").rglob("*.py")) + sorted((ROOT / "specs").rglob("*.py"))
    return [f for f in files if STORE not in f.parents and f not in EXEMPT]


def _store_part(module: str, level: int, path: Path) -> str | None:
    """The module of the store package an import names (``api``, ``sqlstore``, …), '' for the
    package itself, None for an import from elsewhere."""
    if level:
        pkg = path.parent.relative_to(ROOT).parts  # engine/repair/x.py → ("engine", "repair")
        base = pkg[:len(pkg) - level + 1] if level > 1 else pkg
        full = [*(["memsteward"] if base[:1] == ("engine",) else ["memsteward", "specs"]), *base[1:],
                *(module.split(".") if module else [])]
    else:
        full = module.split(".")
    if full[:2] != ["memsteward", "store"]:
        return None
    return ".".join(full[2:])


def violations(path: Path, text: str | None = None) -> list[str]:
    """What the module at ``path`` (its text, or ``text`` as if it sat there) does that it must not."""
    tree = ast.parse(path.read_text() if text is None else text, str(path))
    typing_only = {id(n) for block in ast.walk(tree) if path in FRONT_DOOR and isinstance(block, ast.If)
                   and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                   for n in ast.walk(block)}
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in DRIVERS:
                    found.append(f"imports {alias.name}")
                part = _store_part(alias.name, 0, path)
                if part is not None and part.split(".")[0] not in ALLOWED:
                    found.append(f"imports memsteward.store.{part}")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if not node.level and module.split(".")[0] in DRIVERS:
                found.append(f"imports {module}")
            part = _store_part(module, node.level, path)
            if part is not None:
                names = {a.name for a in node.names}
                if names & CONCRETE:
                    found.append(f"imports the concrete store class ({sorted(names & CONCRETE)})")
                elif part.split(".")[0] not in ALLOWED and not (part == "" and names <= ALLOWED | {"open_store"}):
                    found.append(f"imports {sorted(names)} from memsteward.store{'.' + part if part else ''}")
        elif isinstance(node, ast.Attribute) and node.attr == "conn":
            found.append(f"reads .conn (line {node.lineno})")
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_outside_the_store_touches_a_database(path: Path):
    assert violations(path) == []


def test_the_scan_catches_each_kind_of_breach():
    """The scan itself: each breach, as if written into a module of the engine, is reported."""
    probe = ROOT / "engine" / "repair" / "probe.py"
    for code, what in [("import sqlite3", "imports sqlite3"), ("from psycopg import sql", "imports psycopg"),
                       ("from ..store.sqlstore import SqlStore", "concrete store class"),
                       ("from ..store.sqlstore import open_url", "from memsteward.store.sqlstore"),
                       ("from ..store import Store", "concrete store class"),
                       ("from memsteward.store.sqlstore import SqlStore", "concrete store class"),
                       ("import memsteward.store.core", "imports memsteward.store.core"),
                       ("def f(store):\n    return store.conn", "reads .conn")]:
        assert any(what in v for v in violations(probe, code)), (code, violations(probe, code))
    assert violations(probe, "from ..store.api import RepairLog\nfrom ..store.opening import open_store\n") == []
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .store.sqlstore import SqlStore\n"
    assert violations(ROOT / "engine" / "api.py", typed) == []  # the front door's type-only import
    assert violations(probe, typed.replace(".store", "..store")) != []  # anywhere else it counts


def test_attestation_reads_through_the_reader():
    """attestation.py is typed against the Reader protocol and never reaches into the connection."""
    text = (ROOT / "engine" / "repair" / "attestation.py").read_text()
    assert "store: Reader" in text and ".conn" not in text
