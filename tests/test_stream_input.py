"""`--input-format stream-json`: JSON user messages on stdin, each a turn of one session, through
the real CLI and the loopback simulator."""

import json

import pytest

from loopwright.testing import Simulator
from test_cli import cli


def user(content, **extra):
    return json.dumps({"type": "user", "message": {"role": "user", "content": content}, **extra})


def lines(out):
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_each_message_is_a_turn_of_one_session(tmp_path):
    stdin = "\n".join([user("first"), "", user("for later", shouldQuery=False),
                       user([{"type": "text", "text": "second"}])]) + "\n"
    with Simulator([{"text": "one"}, {"text": "two"}]) as sim:
        out = cli(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"], sim.base_url,
                  stdin=stdin, cwd=tmp_path)
        bodies = [r.body for r in sim.message_requests]
    assert out.returncode == 0, out.stderr
    results = [line for line in lines(out) if line["type"] == "result"]
    assert [r["result"] for r in results] == ["one", "two"]
    assert len({r["session_id"] for r in results}) == 1
    texts = [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in bodies[1]["messages"]]
    assert texts == ["first", "one", "for later\n\nsecond"]  # the held message went with the next turn


def test_a_message_never_followed_by_a_turn_is_reported(tmp_path):
    with Simulator([{"text": "one"}]) as sim:
        out = cli(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"], sim.base_url,
                  stdin=user("go") + "\n" + user("dangling", shouldQuery=False) + "\n", cwd=tmp_path)
    assert out.returncode == 0 and "1 message(s) with shouldQuery false were never sent" in out.stderr


@pytest.mark.parametrize(("args", "stdin", "needle"), [
    (["--output-format", "json"], user("x"), "--input-format stream-json needs --output-format stream-json"),
    (["--output-format", "stream-json", "a prompt"], user("x"), "give no prompt argument"),
    (["--output-format", "stream-json"], "not json", "stdin line 1: not JSON"),
    (["--output-format", "stream-json"], json.dumps({"type": "assistant"}), "stdin line 1: expected a user message"),
    (["--output-format", "stream-json"], user([{"type": "image", "source": {}}]), "other block types are not supported"),
    (["--output-format", "stream-json"], user("/goal tests pass"), "stdin line 1: /goal is not supported in stream-json"),
])
def test_bad_stream_input_is_one_clear_line(tmp_path, args, stdin, needle):
    with Simulator([{"text": "never"}]) as sim:
        out = cli(["-p", "--input-format", "stream-json", *args], sim.base_url, stdin=stdin + "\n", cwd=tmp_path)
        requests = len(sim.message_requests)
    assert out.returncode == 2 and needle in out.stderr and requests == 0, out.stderr


def test_a_client_composed_message_is_delivered_as_written(tmp_path):
    """The Agent SDK's verbatim_prompts: `client_composed: true` means a leading /name is text."""
    (tmp_path / "home").mkdir()
    (tmp_path / ".claude" / "commands").mkdir(parents=True)
    (tmp_path / ".claude" / "commands" / "greet.md").write_text("GREET-BODY $ARGUMENTS\n")
    stdin = "\n".join([user("/greet you", client_composed=True), user("/nothere at all", client_composed=True),
                       user("/greet me"), user("/goal is text here", client_composed=True)]) + "\n"
    with Simulator([{"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "four"}]) as sim:
        out = cli(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"], sim.base_url,
                  stdin=stdin, cwd=tmp_path, env={"HOME": str(tmp_path / "home")})
        sent = [r.body["messages"][-1]["content"] for r in sim.message_requests]
    assert out.returncode == 0, out.stderr
    sent = [c if isinstance(c, str) else c[-1]["text"] for c in sent]
    assert sent[:2] == ["/greet you", "/nothere at all"] and sent[3] == "/goal is text here"
    assert sent[2].startswith("<command-name>/greet</command-name>") and "GREET-BODY me" in sent[2]


def test_client_composed_must_be_true_or_false(tmp_path):
    with Simulator([]) as sim:
        out = cli(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"], sim.base_url,
                  stdin=user("hi", client_composed="yes") + "\n", cwd=tmp_path)
    assert out.returncode != 0 and "stdin line 1: client_composed: expected true or false, got 'yes'" in out.stderr
