"""Grep and Glob leave out what the project ignores, as ripgrep does: `.gitignore` and `.ignore`
(deeper files and negations deciding), the repository's `info/exclude`, git's global excludes
file, and hidden folders — and say how much they left out. Naming an ignored place as the path,
or a hidden folder in the pattern, searches it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from loopwright.core.ports import ToolContext
from loopwright.testing import Simulator
from loopwright.tools.search import GlobTool, GrepTool

pytestmark = pytest.mark.anyio


async def call(t, raw, cwd):
    return await t.run(t.validate(raw), ToolContext(cwd=cwd))


def tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text("secret-notes.txt\n")
    files = {
        ".gitignore": ".venv/\n*.log\nbuild/\n!build/keep.py\n/top-only.py\n",
        "app/main.py": "needle\n",
        "app/.gitignore": "generated_*.py\n!generated_ok.py\n",
        "app/generated_x.py": "needle\n",
        "app/generated_ok.py": "needle\n",
        "app/top-only.py": "needle\n",
        "top-only.py": "needle\n",
        "debug.log": "needle\n",
        "secret-notes.txt": "needle\n",
        "docs/.ignore": "draft.md\n",
        "docs/draft.md": "needle\n",
        "docs/final.md": "needle\n",
        ".hidden/tool.py": "needle\n",
        ".env": "needle\n",
    }
    files.update({f".venv/lib/site-packages/pkg{i}/mod.py": "needle\n" for i in range(50)})
    files["build/out.py"] = "needle\n"
    tree(root, files)
    return root


def found(text):
    return {line for line in text.splitlines() if line.startswith("/")}


async def test_grep_skips_ignored_and_hidden_and_says_how_much(repo):
    out = await call(GrepTool(), {"pattern": "needle"}, repo)
    names = {os.path.relpath(p, repo) for p in found(out.content)}
    # the ignored virtual environment (50 files) is not searched; the rest decides by its rules
    assert names == {"app/main.py", "app/generated_ok.py", "app/top-only.py", "docs/final.md", ".env"}
    assert "ignored entries not searched" in out.content


async def test_glob_skips_ignored_and_hidden(repo):
    out = await call(GlobTool(), {"pattern": "**/*.py"}, repo)
    names = {os.path.relpath(p, repo) for p in found(out.content)}
    assert names == {"app/main.py", "app/generated_ok.py", "app/top-only.py"}
    assert "ignored entr" in out.content


async def test_naming_an_ignored_place_searches_it(repo):
    out = await call(GrepTool(), {"pattern": "needle", "path": ".venv"}, repo)
    assert len(found(out.content)) == 50
    out = await call(GlobTool(), {"pattern": ".venv/lib/site-packages/pkg1/*.py"}, repo)
    assert [os.path.relpath(p, repo) for p in found(out.content)] == [".venv/lib/site-packages/pkg1/mod.py"]
    out = await call(GlobTool(), {"pattern": ".hidden/*.py"}, repo)
    assert len(found(out.content)) == 1
    out = await call(GrepTool(), {"pattern": "needle", "glob": "**/.hidden/*.py"}, repo)
    assert {os.path.relpath(p, repo) for p in found(out.content)} == {".hidden/tool.py"}


async def test_a_folder_outside_any_repository_uses_its_own_ignore_files(tmp_path):
    tree(tmp_path, {".gitignore": "*.tmp\n", "a.txt": "x\n", "b.tmp": "x\n", "node_modules/m.js": "x\n",
                    "sub/.ignore": "node_modules\n", "sub/node_modules/n.js": "x\n", "sub/c.txt": "x\n"})
    out = await call(GrepTool(), {"pattern": "x"}, tmp_path)
    assert {os.path.relpath(p, tmp_path) for p in found(out.content)} == {"a.txt", "node_modules/m.js", "sub/c.txt"}


async def test_hostile_ignore_patterns_stay_linear_and_links_are_not_read(tmp_path):
    evil = "\n".join(["*" * 200 + "a" * 50 + "[", "**/**/**/**/**/**/**/*x*x*x*x*x*x*x*x*x*", "\\"] * 500) + "\n*.txt\n"
    tree(tmp_path, {".gitignore": evil, "x.txt": "needle\n", "y.md": "needle\n"})
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").symlink_to("/etc/passwd")
    (tmp_path / "sub" / "z.md").write_text("needle\n")
    out = await call(GrepTool(), {"pattern": "needle"}, tmp_path)
    assert {os.path.relpath(p, tmp_path) for p in found(out.content)} == {"y.md", "sub/z.md"}


def test_the_global_excludes_file_through_the_cli(tmp_path):
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "ignore").write_text("*.swp\n")
    project = tmp_path / "project"
    tree(project, {"a.py": "needle\n", "a.py.swp": "needle\n"})
    subprocess.run(["git", "init", "-q", str(project)], check=True, env={**os.environ, "HOME": str(home)})
    script = [{"tool_use": {"name": "Grep", "input": {"pattern": "needle"}}}, {"text": "done"}]
    with Simulator(script) as sim:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "XDG_", "GIT_"))}
        env.update(ANTHROPIC_BASE_URL=sim.base_url, ANTHROPIC_API_KEY="sk-test", HOME=str(home))
        out = subprocess.run([sys.executable, "-m", "loopwright", "-p", "find it", "--output-format", "json"],
                             capture_output=True, text=True, env=env, cwd=project, timeout=60)
        assert out.returncode == 0, out.stderr
        result = [b for m in sim.message_requests[1].body["messages"] for b in m["content"]
                  if isinstance(b, dict) and b.get("type") == "tool_result"][0]
    text = json.dumps(result["content"])
    assert "a.py" in text and "a.py.swp" not in text and "1 ignored entry" in text
