"""Store URLs as people may see them."""

from __future__ import annotations


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
