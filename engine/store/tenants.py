"""Tenants: one store per tenant, beside the base store (``…?tenant=alice``, ``open_store(url, tenant=…)``).

A tenant's store is a whole memsteward store of its own — its own provenance graph, event lock,
audit chain and signed head, tombstones — placed by name next to the base store:

* PostgreSQL: the schema ``<schema>__<tenant>`` of the same database (``memsteward__alice``), so
  tenants share one server and one URL, and their writers and events never wait for each other
  (each schema has its own advisory lock and its own tables);
* SQLite: the file ``<tenants dir>/<tenant>.db``, the directory being the base file's name plus
  ``.tenants`` (``mem.db.tenants/alice.db``).

Nothing in the store's SQL knows about tenants, so no query can forget one: an input naming another
tenant's artifact is an unknown id, refused like any other (a cascade never crosses tenants). The
tenant name is checked before anything is opened: lower-case letters and digits, words joined by
single ``_``, at most :data:`MAX_TENANT` characters (no path or SQL metacharacter can reach a file
name or an identifier).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import InputError
from .connection import is_postgres_url, redact

__all__ = ["MAX_TENANT", "TENANT_SEP", "check_tenant", "is_tenant_name", "list_tenants", "sqlite_tenant_path", "split_tenant",
           "tenant_schema", "with_tenant"]

MAX_TENANT = 32
TENANT_SEP = "__"
_NAME = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")
_SCHEMA_MAX = 63  # PostgreSQL's identifier length


def is_tenant_name(name: str) -> bool:
    """Whether ``name`` is a valid tenant name (:func:`check_tenant` without the message)."""
    return len(name) <= MAX_TENANT and _NAME.fullmatch(name) is not None


def check_tenant(name: str, file: str = "<store>") -> str:
    """``name`` if it is a valid tenant name, else InputError (the name itself is not echoed)."""
    if not name:
        raise InputError("the tenant name is empty", file=file, field="tenant")
    if len(name) > MAX_TENANT:
        raise InputError(f"the tenant name is longer than {MAX_TENANT} characters", file=file, field="tenant")
    if not _NAME.fullmatch(name):
        raise InputError("a tenant name is lower-case letters and digits, words joined by single '_' "
                         "(no path, quote or SQL characters)", file=file, field="tenant")
    return name


def split_tenant(url: str) -> tuple[str, str | None]:
    """(the store URL or path without its ``tenant`` parameter, the tenant named there or None).
    A PostgreSQL URL keeps its other parameters; a SQLite path takes ``?tenant=`` as its whole query."""
    if "?" not in url:
        return url, None
    base, _, query = url.partition("?")
    pairs = parse_qsl(query, keep_blank_values=True)
    named = [v for k, v in pairs if k == "tenant"]
    if not named:
        return url, None
    shown = redact(url) if is_postgres_url(url) else base
    if len(named) > 1:
        raise InputError("the store URL names more than one tenant", file=shown, field="tenant")
    rest = [(k, v) for k, v in pairs if k != "tenant"]
    if not is_postgres_url(url) and rest:
        raise InputError("a SQLite store path takes no URL parameter but ?tenant=", file=shown, field="tenant")
    return (base + ("?" + urlencode(rest) if rest else "")), check_tenant(named[0], shown)


def with_tenant(url: str, tenant: str | None) -> str:
    """A PostgreSQL URL that names ``tenant`` (what an executor's worker reopens the same tenant with)."""
    if tenant is None:
        return url
    parts = urlsplit(url)
    query = [*parse_qsl(parts.query, keep_blank_values=True), ("tenant", tenant)]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))


def tenant_schema(schema: str, tenant: str, file: str = "<store>") -> str:
    """The PostgreSQL schema of ``tenant`` beside the base ``schema``."""
    name = f"{schema}{TENANT_SEP}{tenant}"
    if len(name) > _SCHEMA_MAX:
        raise InputError(f"schema and tenant name together are longer than {_SCHEMA_MAX} characters",
                         file=file, field="tenant")
    return name


def sqlite_tenant_path(path: str, tenant: str) -> str:
    """The SQLite file of ``tenant`` beside the base store file ``path``."""
    if path in ("", ":memory:"):
        raise InputError("an in-memory store has no tenants: name a store file or a postgresql:// URL",
                         file=path or ":memory:", field="tenant")
    base = Path(path)
    return str(base.with_name(base.name + ".tenants") / f"{tenant}.db")


def list_tenants(url: str) -> list[str]:
    """The tenants that have a store beside the base store ``url`` (sorted)."""
    url, tenant = split_tenant(url)
    if tenant is not None:
        raise InputError("list the tenants of the base store (without ?tenant=)", file=redact(url), field="tenant")
    if is_postgres_url(url):
        from .pg_connect import pg_tenants

        return pg_tenants(url)
    path = url[len("sqlite:///"):] if url.startswith("sqlite:///") else url
    folder = Path(sqlite_tenant_path(path, "x")).parent
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.db") if is_tenant_name(p.stem))
