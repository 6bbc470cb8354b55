"""The official SDK pointed at the simulator, shared by the simulator's fidelity tests."""

from __future__ import annotations

import atexit

import anthropic
import httpx

from loopwright.testing import Simulator

# Shared transports: building one costs ~40 ms (TLS context), far more than a simulated call.
SDK_HTTP = anthropic.DefaultHttpxClient()
HTTP = httpx.Client(verify=False)
atexit.register(SDK_HTTP.close)
atexit.register(HTTP.close)


def sdk(sim: Simulator, **kw: object) -> anthropic.Anthropic:
    """The official client in strict mode: any off-schema payload from the simulator raises."""
    kw.setdefault("max_retries", 0)
    return anthropic.Anthropic(
        base_url=sim.base_url, api_key="sk-test", http_client=SDK_HTTP, _strict_response_validation=True, **kw
    )
