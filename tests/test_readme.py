"""The README starts with the start and stays true: the set-up-and-go commands near the top are
real make targets, its example runs as written, its demo excerpt is what the demo prints, its
statements about keys hold, and every page it points to exists. What the pages themselves say is
checked in tests/test_docs.py."""

import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")


def section(title: str) -> str:
    start = TEXT.index(f"\n## {title}")
    end = TEXT.find("\n## ", start + 1)
    return TEXT[start:end if end != -1 else len(TEXT)]


def test_the_readme_is_short_and_opens_with_the_two_commands():
    lines = TEXT.splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    first_block = TEXT[TEXT.index("```sh\n") + 6:]
    first_block = first_block[:first_block.index("```")]
    assert TEXT.index("```sh\n") < TEXT.index("\n## "), "the set-up-and-go block comes before any section"
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"], f"exactly two set-up-and-go commands: the main job, the tests; {commands}"


def test_the_make_targets_the_readme_names_run_what_it_says():
    makefile = (ROOT / "Makefile").read_text()

    def recipe(target):
        match = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", makefile, re.M)
        assert match, f"Makefile: no target {target}"
        return match.group(1)

    assert "loopwright demo" in recipe("demo") and "loopwright demo routine" in recipe("demo-routine")
    assert "pytest" in recipe("test")
    for target in re.findall(r"`make ([a-z-]+)`", TEXT):
        recipe(target)


def test_the_simulator_example_in_the_readme_runs():
    blocks = re.findall(r"```python\n(.*?)```", TEXT, re.S)
    [example] = [b for b in blocks if "Simulator(" in b]
    exec(compile(example, "README.md", "exec"), {})  # its own asserts check the outcome


def test_the_demo_excerpt_is_what_the_demo_prints(tmp_path):
    from loopwright.cli.commands import demo

    out = io.StringIO()
    assert demo.run(out=out, keep=tmp_path) == 0
    said = section("The demo")
    excerpt = said[said.index("```\n") + 4:]
    excerpt = excerpt[:excerpt.index("```")]

    def masked(text):  # durations, retry delays and costs vary from run to run; the rest is scripted
        return re.sub(r"\$\d+\.\d+", "$N", re.sub(r"\d+\.\d+s\b", "N.Ns", text))

    printed = masked(out.getvalue())
    lines = [line for line in excerpt.splitlines() if line.strip() and line.strip() != "…"]
    assert len(lines) >= 5
    missing = [line for line in lines if masked(line) not in printed]
    assert not missing, f"README demo excerpt lines the demo does not print: {missing}"


def test_the_key_statements_hold():
    from loopwright.core.errors import UsageError
    from loopwright.providers.anthropic import AnthropicModel

    keys = section("An API key, or a model of your own")
    for needle in ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "openai-compatible:", "OPENAI_API_KEY"]:
        assert needle in keys, needle
    assert "A URL on this machine needs no key" in keys and "a remote one without a key\nis refused" in keys
    AnthropicModel.from_env({"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})  # a placeholder key, no error
    with pytest.raises(UsageError, match="ANTHROPIC_API_KEY"):
        AnthropicModel.from_env({"ANTHROPIC_BASE_URL": "https://gateway.example.com"})


def test_every_link_in_the_readme_leads_to_a_file():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", TEXT)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(local) >= 20
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README links to nothing: {missing}"
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    linked = {Path(link).name for link in local if link.startswith("docs/") and link.endswith(".md")}
    for page in ["goals.md", "time-based.md", "routines.md", "attempts.md", "workflows.md", "workers.md",
                 "sdk.md", "web.md", "permissions.md", "hooks.md", "settings.md", "testing.md", "speed.md",
                 "contributing.md"]:
        assert page in pages and page in linked, page


def test_the_first_make_demo_says_what_it_installs_and_how_long(tmp_path):
    # before: a first `make demo` spent about 35 s in a silent `pip --quiet`
    import subprocess

    out = subprocess.run(["make", "-n", "-C", str(ROOT), "demo", f"VENV={tmp_path / 'venv'}"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    said = out.stdout
    assert "first run: installing loopwright and its dependencies" in said and "about 30-60 s, once" in said
    assert said.index("first run") < said.index("-m venv")  # said before the wait, not after
