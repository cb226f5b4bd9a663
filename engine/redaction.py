"""No secret in any message: how a store location is shown (issue 25, item 2).

A PostgreSQL store is named by a libpq URL, which may carry a password in its userinfo
(``postgresql://user:pw@host/db``) or in its query string (``?password=…``, ``sslpassword``,
``sslkey``, a token). Every message, log line, report and ``Store.path`` shows the URL through
:func:`redact`; :class:`memsteward.errors.InputError` applies :func:`shown_location` to its ``file``.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

#: URL query parameters shown as they are; every other parameter's value (password, sslpassword,
#: sslkey, passfile, a token …) is shown as ``***``.
SHOWN_QUERY = frozenset({"schema", "sslmode", "connect_timeout", "application_name", "target_session_attrs",
                         "host", "hostaddr", "port", "dbname", "user", "gssencmode", "channel_binding",
                         "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count"})


def redact(url: str) -> str:
    """The URL without secrets, for messages and ``Store.path``: the userinfo password and the value of
    every query parameter outside :data:`SHOWN_QUERY` become ``***``.

    >>> redact("postgresql://u:pw@h:5/db?password=x&schema=s")
    'postgresql://u:***@h:5/db?password=***&schema=s'
    """
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            host = parts.netloc.rpartition("@")[2]
            netloc = f"{parts.username}:***@{host}"
        query = "&".join(f"{k}={v if k.lower() in SHOWN_QUERY else '***'}" if sep else k
                         for k, sep, v in (item.partition("=") for item in parts.query.split("&") if item))
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        return "<invalid URL>"


def shown_location(location: str) -> str:
    """A file path as it is; a URL (anything with ``://``) through :func:`redact`."""
    return redact(location) if "://" in location else location


__all__ = ["SHOWN_QUERY", "redact", "shown_location"]
