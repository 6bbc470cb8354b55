"""Agent, Session, Run: an agent is an immutable description (changed by `replace`, checked again
each time); a conversation carries across prompts only through a `Session`; a `Run` changes the
agent it runs as between prompts without touching the one it was opened with. Real HTTP to the
loopback simulator."""

import dataclasses

import pytest

from loopwright import Agent, Run, Session
from loopwright.compose.outfit import Outfit
from loopwright.core.sandboxconfig import SandboxConfig
from loopwright.permissions.rules import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator

pytestmark = pytest.mark.anyio


def user_texts(body):
    return [b["text"] for m in body["messages"] if m["role"] == "user" for b in m["content"] if b["type"] == "text"]


def test_an_agent_cannot_be_changed_in_place_and_replace_checks_the_new_one(tmp_path):
    agent = Agent(model="sonnet", cwd=tmp_path, tools=[])
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.model = "opus"  # type: ignore[misc]
    other = agent.replace(model="opus")
    assert isinstance(other, Agent) and other.model != agent.model and agent.model == Agent(model="sonnet").model
    assert other.model == Agent(model="opus").model  # the alias is resolved again, as for a new agent
    with pytest.raises(ValueError):
        agent.replace(output_schema={"type": "object", "properties": {"x": {"type": "nosuch"}}})


def test_a_conversation_carries_over_only_through_a_session(tmp_path):
    script = [{"text": "one"}, {"text": "two"}, {"text": "three"}]
    with Simulator(script) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=tmp_path, tools=[])
        session = Session()
        agent.run_sync("first", session=session)
        agent.run_sync("second", session=session)
        agent.run_sync("alone")  # a new session each time one is not given
        bodies = [r.body for r in sim.message_requests]
    assert user_texts(bodies[1]) == ["first", "second"]
    assert user_texts(bodies[2]) == ["alone"]
    assert [m.text for m in session.history] == ["first", "one", "second", "two"]


async def test_a_run_replaces_its_agent_between_prompts_and_leaves_the_original_alone(tmp_path):
    script = [{"text": "on sonnet"}, {"text": "on opus"}]
    with Simulator(script) as sim:
        agent = Agent(model="sonnet", model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"),
                      cwd=tmp_path, tools=[], permissions=PermissionRules())
        async with agent.open(Session()) as run:
            assert isinstance(run, Run)
            await run.prompt("first")
            run.update(model="opus", append_system_prompt="Be brief.")
            await run.prompt("second")
            assert len(run.session.history) == 4
        bodies = [r.body for r in sim.message_requests]
    assert [b["model"] for b in bodies] == [Agent(model="sonnet").model, Agent(model="opus").model]
    assert "Be brief." in str(bodies[1]["system"]) and "Be brief." not in str(bodies[0]["system"])
    assert agent.model == Agent(model="sonnet").model and agent.append_system_prompt == ""


def test_a_session_names_what_it_expects_of_its_source():
    with pytest.raises(ValueError, match="Session source: expected one of startup, resume, fork"):
        Session(source="restart")


class Outfitted(Outfit):
    """An outfit (core.ports.Outfit) of a test's own: the standard parts, but its model clients
    go to the simulator and its sandbox says it cannot run here."""

    def __init__(self, base_url):
        self.base_url, self.clients = base_url, []

    def model_client(self, model, env, env_origins):
        self.clients.append(AnthropicModel(base_url=self.base_url, api_key="sk-test"))
        return self.clients[-1]

    def sandbox_unavailable(self):
        return "no bwrap in this test's world"

    def sandbox_warning(self, sandbox):
        return "sandbox off in this test's world" if sandbox is not None and sandbox.enabled else None


async def test_an_agent_given_its_own_outfit_takes_the_outside_world_from_it(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # the standard outfit would refuse to start
    with Simulator([{"text": "hello"}]) as sim:
        outfit = Outfitted(sim.base_url)
        agent = Agent(cwd=tmp_path, tools=[], outfit=outfit)
        assert agent.permissions.strict  # the sandbox it reports cannot run: the gate is strict instead
        assert not Agent(cwd=tmp_path, tools=[], outfit=outfit, sandbox=SandboxConfig(enabled=False)
                         ).permissions.strict
        events = []
        result = await agent.run("hi", on_event=events.append)
        assert result.result == "hello" and len(sim.message_requests) == 1
    assert len(outfit.clients) == 1  # the run made its client through the outfit
    warnings = [e.text for e in events if getattr(e, "type", "") == "notice" and e.level == "warning"]
    assert warnings == ["sandbox off in this test's world"]
    assert agent.replace(model="opus").outfit is outfit  # an agent's variants keep its outfit
