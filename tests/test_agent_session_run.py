"""Agent, Session, Run: an agent is an immutable description (changed by `replace`, checked again
each time); a conversation carries across prompts only through a `Session`; a `Run` changes the
agent it runs as between prompts without touching the one it was opened with. Real HTTP to the
loopback simulator."""

import dataclasses

import pytest

from loopwright import Agent, Run, Session
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
