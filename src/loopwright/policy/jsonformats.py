"""The JSON Schema `format` values structured output enforces, each checked as its standard
reads it (RFC 3339 times and dates, RFC 5322-style addresses in their common form, RFC 3986
URIs, RFC 4122 UUIDs, IP addresses, RFC 1123 host names). A format not listed here is refused
when the schema is checked, never ignored. Pure."""

from __future__ import annotations

import ipaddress
import re
from datetime import date
from typing import Callable

_TIME = r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)"
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_LABEL = r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)"
_HOST = re.compile(rf"{_LABEL}(\.{_LABEL})*\.?")
_EMAIL = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@" + _HOST.pattern)
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]*")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _date(text: str) -> bool:
    m = _DATE.fullmatch(text)
    if not m:
        return False
    try:
        date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return False
    return True


def _date_time(text: str) -> bool:
    day, sep, clock = text.partition("T") if "T" in text else text.partition("t")
    return bool(sep) and _date(day) and re.fullmatch(_TIME, clock) is not None


def _ip(version: int) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            return ipaddress.ip_address(text).version == version
        except ValueError:
            return False
    return check


FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": _date_time,
    "date": _date,
    "time": lambda t: re.fullmatch(_TIME, t) is not None,
    "email": lambda t: len(t) <= 254 and _EMAIL.fullmatch(t) is not None,
    "uri": lambda t: _URI.fullmatch(t) is not None,
    "uuid": lambda t: _UUID.fullmatch(t) is not None,
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "hostname": lambda t: len(t) <= 253 and _HOST.fullmatch(t) is not None,
}
