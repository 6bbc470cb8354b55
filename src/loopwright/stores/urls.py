"""Store URLs as people may see them."""

from __future__ import annotations

from typing import Mapping


def redact(url: str) -> str:
    """The URL with any password hidden, fit for messages and `transcript_path`."""
    scheme, sep, rest = url.partition("://")
    if not sep:  # not a URL's shape: what comes before an '@' may be a user and password
        head, at, host = url.rpartition("@")
        return f"{head.partition(':')[0]}:***@{host}" if at else url
    netloc, slash, tail = rest.partition("/")
    userinfo, at, host = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}:***@{host}"
    tail, q, query = tail.partition("?")
    if "password=" in query:
        query = "&".join("password=***" if p.startswith("password=") else p for p in query.split("&"))
    return f"{scheme}{sep}{netloc}{slash}{tail}{q}{query}"


CONNECT_TIMEOUT_S = 10  # a PostgreSQL server that accepts but never answers: an error, not a hang


def bounded(url: str, env: Mapping[str, str] | None = None) -> str:
    """A PostgreSQL URL with a connect timeout (unless it names one, or PGCONNECT_TIMEOUT does, which
    libpq reads itself): without one, a host that takes the connection and never answers holds the
    command for as long as TCP waits. Other URLs as they are."""
    import os

    if not url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        return url
    query = url.partition("?")[2]
    if "connect_timeout=" in query or (os.environ if env is None else env).get("PGCONNECT_TIMEOUT"):
        return url
    return f"{url}{'&' if query else '?' if not url.endswith('?') else ''}connect_timeout={CONNECT_TIMEOUT_S}"
