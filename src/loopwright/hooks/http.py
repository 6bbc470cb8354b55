"""HTTP hooks: POST the event JSON to a URL; a 2xx body is read like a command's stdout, any
other status is a non-blocking error. The transport is injected (`PostJson`), built on httpx."""

from __future__ import annotations

import re
from typing import Awaitable, Callable, Mapping

from .output import Answer, from_text, no_answer
from .spec import HttpSpec

PostJson = Callable[[str, Mapping[str, str], bytes, float], Awaitable[tuple[int, bytes]]]
"""`post_json(url, headers, body, timeout_s) -> (status, body)`; raises on transport failure."""

_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def headers(spec: HttpSpec, env: Mapping[str, str]) -> dict[str, str]:
    """Header values may name environment variables (`$TOKEN`, `${TOKEN}`); only those listed in
    `allowedEnvVars` are filled in, the rest become empty, so settings cannot leak the rest."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return env.get(name, "") if name in spec.allowed_env else ""

    out = {"Content-Type": "application/json"}
    out.update({key: _VAR.sub(fill, value) for key, value in spec.headers})
    return out


async def post(post_json: PostJson, spec: HttpSpec, event: str, body: bytes, env: Mapping[str, str],
               timeout: float) -> tuple[Answer, str]:
    status, content = await post_json(spec.url, headers(spec, env), body, timeout)
    text = content.decode("utf-8", "replace")
    if not 200 <= status < 300:
        return no_answer(f"HTTP {status} from {spec.url}: {text.strip()[:200]}"), text
    return from_text(event, text), text
