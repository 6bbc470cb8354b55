"""`@path` at the interactive prompt, driven through a real pseudo-terminal against the
simulator: a file named is attached as the Read tool shows it; a path the Read rules deny, one
outside the project (by `..` or through a symlink) and one in loopwright's own home are refused
with the reason and nothing is sent; a name that is no file stays text."""

from __future__ import annotations

import os

from test_interactive import terminal  # noqa: F401  (the fixture)


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
