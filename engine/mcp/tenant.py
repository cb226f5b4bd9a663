"""One tenant per server process: a validated name and the id namespace it owns.

``memsteward mcp --tenant T`` serves the artifacts whose ids start with ``T:`` and no others.
What this guarantees (and what it does not), exactly:

* every id the server mints is ``T:<tag>-<16 hex>`` (random: no content is ever put in an id);
* every id a tool call names is checked with :meth:`Tenant.owns` before anything is read, and an
  id of another tenant is answered exactly like an unknown id (no existence leak);
* lists, searches and resources read only ids the tenant owns;
* provenance (``derived_from``) may name only the tenant's ids, so an influence edge created
  through the server never crosses tenants, and a forget plan whose cascade would leave the
  tenant (an edge made outside the server) is refused before the barrier;
* NOT isolated (issue 28 builds that): the store file, its event lock, its audit chain, its key
  scope and its tombstones are shared by every tenant of the same store — a tenant writing exactly
  a content another tenant erased is refused, which tells it that content was erased here.

A tenant name is 1–64 characters of ``[A-Za-z0-9_-]``, starting with a letter or digit: no
path separators, dots, quotes, ``;``, ``%`` or whitespace, so a name is safe as a path part, a
SQL literal fragment or a URI segment, and ``T:`` prefixes of two tenants never overlap.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from ..errors import InputError

__all__ = ["DEFAULT_TENANT", "MAX_ID", "Tenant", "parse_tenant"]

DEFAULT_TENANT = "default"
MAX_TENANT = 64
MAX_ID = 160
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class Tenant:
    """A validated tenant name; ``prefix`` is the id namespace it owns."""

    name: str

    @property
    def prefix(self) -> str:
        return f"{self.name}:"

    def mint(self, tag: str) -> str:
        """A fresh id ``T:<tag>-<16 hex>`` (64 random bits; the store refuses a reused id)."""
        return f"{self.prefix}{tag}-{secrets.token_hex(8)}"

    def owns(self, ident: object) -> bool:
        """Whether ``ident`` is an id of this tenant (a bounded string in its namespace)."""
        return isinstance(ident, str) and len(ident) <= MAX_ID and ident.startswith(self.prefix)


def parse_tenant(text: str | None) -> Tenant:
    """The tenant named ``text`` (``default`` when None).

    Raises
    ------
    InputError
        empty, longer than 64 characters, or a character outside ``[A-Za-z0-9_-]`` (the message
        never repeats the name).

    Examples
    --------
    >>> parse_tenant("alice").prefix
    'alice:'
    >>> parse_tenant("../etc").name
    Traceback (most recent call last):
    ...
    memsteward.errors.InputError: a tenant is 1-64 characters of [A-Za-z0-9_-], starting with a letter or digit
    """
    name = DEFAULT_TENANT if text is None else text
    if not (0 < len(name) <= MAX_TENANT and _NAME.fullmatch(name)):
        raise InputError("a tenant is 1-64 characters of [A-Za-z0-9_-], starting with a letter or digit",
                         file="<command line>", field="--tenant")
    return Tenant(name)
