"""`@path` at the interactive prompt, driven through a real pseudo-terminal against the
simulator: a file named is attached as the Read tool shows it; a path the Read rules deny, one
outside the project (by `..` or through a symlink) and one in loopwright's own home are refused
with the reason and nothing is sent; a name that is no file stays text."""

from __future__ import annotations

import json
import os
from pathlib import Path

from loopwright.testing import Simulator
from test_cli import cli
from test_interactive import terminal  # noqa: F401  (the fixture)
from test_stream_input import user


def sent(sim):
    return [str(r.body["messages"][-1]["content"]) for r in sim.message_requests]


def test_a_named_file_is_attached_and_an_email_address_is_not(terminal, tmp_path):  # noqa: F811
    (tmp_path / "notes.txt").write_text("alpha-line\nbravo-line\n")
    t, sim = terminal([{"text": "read them"}])
    t.expect("› ").send("summarise @notes.txt for me@example.com").expect("@ attached")
    t.expect("notes.txt").expect("read them").expect("› ").send("/exit")
    assert t.close() == 0
    (prompt,) = sent(sim)
    assert "summarise @notes.txt for me@example.com" in prompt and "bravo-line" in prompt, prompt
    assert "Called the Read tool" in prompt and str(tmp_path / "notes.txt") in prompt


def test_denied_outside_and_symlinked_paths_are_refused_and_nothing_is_sent(terminal, tmp_path):  # noqa: F811
    (tmp_path / "secret.txt").write_text("top-secret\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("far-away\n")
    os.symlink(outside, tmp_path / "link.txt")
    t, sim = terminal([{"text": "only this"}], args=("--disallowedTools", "Read(./secret.txt)"))
    t.expect("› ").send("look at @secret.txt").expect("@secret.txt may not be read").expect("deny rule")
    t.expect("nothing was sent").expect("› ")
    t.send(f"look at @../{outside.name}").expect(f"@../{outside.name} may not be read").expect("outside")
    t.expect("› ").send("look at @link.txt").expect("@link.txt may not be read").expect(str(outside))
    t.expect("› ").send("look at @nobody here").expect("only this").expect("› ").send("/exit")
    assert t.close() == 0
    assert len(sent(sim)) == 1 and "look at @nobody here" in sent(sim)[0]
    assert not any(word in p for p in sent(sim) for word in ("top-secret", "far-away"))


# Headless: `-p` and stream-json user messages attach `@path`s under the same rules.

def _transcript(home, cwd, sid):
    from loopwright.stores.jsonl import project_name

    return Path(home) / "projects" / project_name(str(cwd)) / f"{sid}.jsonl"


def test_print_mode_attaches_a_named_file_and_records_it(tmp_path):
    (tmp_path / "a.txt").write_text("alpha-content\n")
    with Simulator([{"text": "seen"}]) as sim:
        out = cli(["-p", "look at @a.txt", "--output-format", "json"], sim.base_url, cwd=tmp_path)
        (prompt,) = sent(sim)
    assert out.returncode == 0, out.stderr
    assert "look at @a.txt" in prompt and "alpha-content" in prompt and str(tmp_path / "a.txt") in prompt
    sid = json.loads(out.stdout)["session_id"]
    records = [json.loads(line) for line in _transcript(os.environ["LOOPWRIGHT_HOME"], tmp_path, sid).open()]
    users = [r for r in records if r.get("type") == "user"]
    assert any("alpha-content" in json.dumps(r["message"]) for r in users)  # the transcript holds what was sent


def test_print_mode_says_what_it_attached_and_leaves_piped_text_alone(tmp_path):
    (tmp_path / "a.txt").write_text("alpha-content\n")
    (tmp_path / "b.txt").write_text("bravo-content\n")
    with Simulator([{"text": "seen"}]) as sim:
        out = cli(["-p", "compare @a.txt with this"], sim.base_url, stdin="piped mentions @b.txt\n", cwd=tmp_path)
        (prompt,) = sent(sim)
    assert out.returncode == 0 and out.stdout.strip() == "seen", out.stderr
    assert f"@ attached {tmp_path / 'a.txt'}" in out.stderr
    assert "alpha-content" in prompt and "piped mentions @b.txt" in prompt and "bravo-content" not in prompt


def test_print_mode_refuses_a_denied_or_outside_path_and_sends_nothing(tmp_path):
    (tmp_path / "secret.txt").write_text("top-secret\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("far-away\n")
    with Simulator([{"text": "never"}]) as sim:
        denied = cli(["-p", "look at @secret.txt", "--disallowedTools", "Read(./secret.txt)"], sim.base_url,
                     cwd=tmp_path)
        far = cli(["-p", f"look at @../{outside.name}"], sim.base_url, cwd=tmp_path)
        requests = len(sim.message_requests)
    assert requests == 0
    assert denied.returncode == 2 and "@secret.txt may not be read" in denied.stderr and "deny rule" in denied.stderr
    assert far.returncode == 2 and f"@../{outside.name} may not be read" in far.stderr and "outside" in far.stderr
    assert "nothing was sent" in far.stderr


def test_print_mode_with_a_goal_attaches_the_prompts_files(tmp_path):
    (tmp_path / "a.txt").write_text("alpha-content\n")
    judge = {"match": {"system_contains": "You decide whether an agent has met its goal"},
             "responses": [{"text": json.dumps({"ok": True, "reason": "done"}), "repeat": -1}]}
    with Simulator({"rules": [judge, {"responses": [{"text": "did it"}]}]}) as sim:
        out = cli(["-p", "fix @a.txt", "--goal", "a.txt is fixed", "--output-format", "json"], sim.base_url,
                  cwd=tmp_path)
        first = next(str(r.body["messages"][-1]["content"]) for r in sim.message_requests
                     if "You decide" not in str(r.body.get("system")))
    assert out.returncode == 0, out.stderr
    assert "a.txt is fixed" in first and "fix @a.txt" in first and "alpha-content" in first


def test_stream_json_messages_attach_files_unless_client_composed(tmp_path):
    (tmp_path / "a.txt").write_text("alpha-content\n")
    (tmp_path / "secret.txt").write_text("top-secret\n")
    stdin = "\n".join([user("look at @a.txt"), user("as written @a.txt", client_composed=True),
                       user("and @secret.txt"), user("still here")]) + "\n"
    with Simulator([{"text": "one"}, {"text": "two"}, {"text": "three"}]) as sim:
        out = cli(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                   "--disallowedTools", "Read(./secret.txt)"], sim.base_url, stdin=stdin, cwd=tmp_path)
        prompts = sent(sim)
    assert out.returncode == 0, out.stderr
    assert len(prompts) == 3 and "alpha-content" in prompts[0]
    assert "as written @a.txt" in prompts[1] and "alpha-content" not in prompts[1]
    assert "still here" in prompts[2] and "top-secret" not in "".join(prompts)
    results = [d for d in map(json.loads, out.stdout.splitlines()) if d["type"] == "result"]
    assert [r["is_error"] for r in results] == [False, False, True, False]
    assert "@secret.txt may not be read" in results[2]["errors"][0]
