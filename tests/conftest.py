import os

import pytest
from hypothesis import HealthCheck, settings

# `pg_cluster` / `pg_db`: a private PostgreSQL cluster on 127.0.0.1 (tests/pgcluster.py).
pytest_plugins = ("pgcluster",)

# The loop fuzzes (test_loop_fuzz.py, test_hostile_fuzz.py) at length: `pytest
# tests/test_loop_fuzz.py --hypothesis-profile loop-long`. A new seed each run; CI runs the same
# tests with a fixed seed and a few examples.
settings.register_profile("loop-long", max_examples=3000, deadline=None)
# The shell gate's differential fuzz (test_gate_fuzz.py) at length: `--hypothesis-profile gate-long`.
settings.register_profile("gate-long", max_examples=20_000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(params=["httpx", "aiohttp"])
def http_library(request, monkeypatch):
    """The module's tests once with the model clients on httpx (the default) and once on aiohttp
    (`LOOPWRIGHT_HTTP`); processes the tests start inherit the choice."""
    monkeypatch.setenv("LOOPWRIGHT_HTTP", request.param)
    return request.param


@pytest.fixture(autouse=True, scope="session")
def private_loopwright_home(tmp_path_factory):
    """Transcripts and schedules of every test (and every process a test starts) go to a
    temporary home, never to the developer's ~/.loopwright."""
    old = os.environ.get("LOOPWRIGHT_HOME")
    os.environ["LOOPWRIGHT_HOME"] = str(tmp_path_factory.mktemp("loopwright-home"))
    yield
    if old is None:
        os.environ.pop("LOOPWRIGHT_HOME", None)
    else:
        os.environ["LOOPWRIGHT_HOME"] = old
