"""What an agent's hooks and last resort use of the outside world: the http hooks' POST and
the crash log, imported only when used."""

from __future__ import annotations

from typing import Mapping


def crash_log(exc: BaseException) -> str | None:
    from ..stores.crashlog import write_crash_log

    return write_crash_log(exc)


async def http_post_json(url: str, headers: Mapping[str, str], body: bytes, timeout: float) -> tuple[int, bytes]:
    """The transport of http hooks (`loopwright.hooks.PostJson`). A body longer than a command
    hook's output may be is refused (ValueError) as soon as it is, not read to its end."""
    import httpx

    from ..hooks.command import MAX_OUTPUT_BYTES

    async with httpx.AsyncClient(timeout=timeout) as client:
        async with client.stream("POST", url, content=body, headers=dict(headers)) as response:
            content = bytearray()
            async for chunk in response.aiter_bytes():
                content += chunk
                if len(content) > MAX_OUTPUT_BYTES:
                    raise ValueError(f"the response body went past {MAX_OUTPUT_BYTES} bytes")
            return response.status_code, bytes(content)
