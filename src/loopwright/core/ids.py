"""Random ids: UUID version 4 in its usual text form, made without the `uuid` module, whose
import brings `platform` along (~3 ms of start-up)."""

from __future__ import annotations

import os


def uuid4() -> str:
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
