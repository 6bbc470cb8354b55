"""The simulator under load (issue 14 part 4): hundreds of concurrent keep-alive clients on one
event loop, each request answered correctly, all of them in flight at once; the model delay
option from Python and from the command line."""

import asyncio
import json
import subprocess
import sys

import httpx
import pytest

from loopwright.testing import Simulator

CLIENTS, ROUNDS = 300, 5
ASK = {"model": "claude-sonnet-5", "max_tokens": 64}
HEADERS = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


def load_script() -> list[dict]:
    # Every client's first request waits long enough for all first requests to arrive; a second
    # request can only come after its client's first answer, so the first CLIENTS taken are these.
    first = {"text": "first", "delay": 1.5, "repeat": CLIENTS}
    rest = {"text": "again", "delay": 0.05, "repeat": CLIENTS * (ROUNDS - 1)}
    return [first, rest]


async def one_client(http: httpx.AsyncClient, n: int) -> list[str]:
    texts = []
    for round_ in range(ROUNDS):
        body = ASK | {"messages": [{"role": "user", "content": f"client {n} round {round_}"}]}
        if round_ % 2:  # every other request streams, so SSE is under load too
            body["stream"] = True
            async with http.stream("POST", "/v1/messages", json=body) as response:
                assert response.status_code == 200
                raw = (await response.aread()).decode()
            deltas = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: ")]
            texts.append("".join(d["delta"].get("text", "") for d in deltas if d["type"] == "content_block_delta"))
        else:
            response = await http.post("/v1/messages", json=body)
            assert response.status_code == 200
            texts.append(response.json()["content"][0]["text"])
    return texts


def test_three_hundred_concurrent_keep_alive_clients_are_all_in_flight_at_once() -> None:
    async def main(sim: Simulator) -> list[list[str]]:
        # A client each, as separate loops would have: one shared httpx pool scans all its
        # connections for every request, which costs more than the whole simulator here.
        async def client(n: int) -> list[str]:
            async with httpx.AsyncClient(base_url=sim.base_url, headers=HEADERS, timeout=60, verify=False) as http:
                return await one_client(http, n)

        return await asyncio.gather(*(client(n) for n in range(CLIENTS)))

    with Simulator(load_script()) as sim:
        answers = asyncio.run(main(sim))
        assert sim.peak_in_flight == CLIENTS
        assert len(sim.message_requests) == CLIENTS * ROUNDS
        assert sim.connections == CLIENTS  # each client kept its connection for all its requests
        assert sim.errors == [] and sim.unmatched == [] and sim.remaining() == []
        assert all(r.response_status == 200 for r in sim.requests)
    assert answers == [["first"] + ["again"] * (ROUNDS - 1)] * CLIENTS


def test_peak_in_flight_counts_overlap_and_reset_clears_it() -> None:
    async def two_at_once(sim: Simulator) -> None:
        async with httpx.AsyncClient(base_url=sim.base_url, headers=HEADERS) as http:
            body = ASK | {"messages": [{"role": "user", "content": "hi"}]}
            await asyncio.gather(http.post("/v1/messages", json=body), http.post("/v1/messages", json=body))

    with Simulator([{"text": "slow", "delay": 0.3, "repeat": 2}, {"text": "one"}]) as sim:
        asyncio.run(two_at_once(sim))
        assert sim.peak_in_flight == 2
        sim.reset([{"text": "one"}])
        assert sim.peak_in_flight == 0
        httpx.post(f"{sim.base_url}/v1/messages", json=ASK | {"messages": [{"role": "user", "content": "x"}]},
                   headers=HEADERS)
        assert sim.peak_in_flight == 1


def test_the_model_delay_holds_back_every_scripted_reply() -> None:
    body = ASK | {"messages": [{"role": "user", "content": "x"}]}
    with Simulator([{"text": "late"}, {"text": "never"}], delay=5) as sim:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{sim.base_url}/v1/messages", json=body, headers=HEADERS, timeout=0.5)
        # validation errors are the API's own, not the model's: no delay for them
        refused = httpx.post(f"{sim.base_url}/v1/messages", json=ASK, headers=HEADERS, timeout=30)
    assert refused.status_code == 400
    assert [r.response_status for r in sim.requests] == [None, 400]


@pytest.mark.parametrize("delay", [-1, "1", True, float("nan")])
def test_a_bad_model_delay_is_refused_by_name(delay: object) -> None:
    with pytest.raises(ValueError, match="Simulator delay: expected seconds >= 0"):
        Simulator([], delay=delay)


def test_the_command_line_takes_a_delay(tmp_path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from the shell"}]))
    cmd = [sys.executable, "-m", "loopwright.testing.simulator", "--script", str(script)]
    bad = subprocess.run([*cmd, "--delay", "soon"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--delay: expected seconds >= 0, got 'soon'" in bad.stderr
    proc = subprocess.Popen([*cmd, "--delay", "0.1"], stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().split()[-1]
        response = httpx.post(f"{url}/v1/messages", json=ASK | {"messages": [{"role": "user", "content": "x"}]},
                              headers=HEADERS, timeout=30)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert response.json()["content"][0]["text"] == "from the shell"
