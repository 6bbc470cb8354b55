"""The documentation in docs/ stays true: the site builds with `mkdocs build --strict` (a broken
link, a broken anchor or a page left out of the nav fails it) with no network, the examples marked
on the pages run, and the statements the README used to carry are on the pages they moved to."""

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.testing import Simulator

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def offline() -> list[str]:
    """A prefix that runs a command in a network namespace of its own (nothing to reach), where
    bubblewrap can make one; the build must not need the network (no web fonts, no downloads)."""
    bwrap = shutil.which("bwrap")
    prefix = [bwrap, "--dev-bind", "/", "/", "--unshare-net", "--"] if bwrap else []
    if prefix and subprocess.run([*prefix, "true"], capture_output=True, timeout=30).returncode == 0:
        return prefix
    return []


def build(root: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about MkDocs 2, not ours
    return subprocess.run([*offline(), sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--config-file", str(root / "mkdocs.yml"), "--site-dir", str(site)],
                          capture_output=True, text=True, timeout=300, env=env)


def test_the_site_builds_strictly_without_the_network(tmp_path):
    out = build(ROOT, tmp_path / "site")
    assert out.returncode == 0, out.stdout + out.stderr
    warnings = [line for line in (out.stdout + out.stderr).splitlines() if "WARNING" in line]
    assert not warnings, warnings
    pages = sorted(p.stem for p in DOCS.glob("*.md"))
    built = sorted(p.parent.name if p.parent != tmp_path / "site" else "index"
                   for p in (tmp_path / "site").glob("**/index.html") if "search" not in p.parts)
    assert built == pages, (built, pages)
    for html in (tmp_path / "site").glob("**/*.html"):  # nothing loaded from elsewhere when read
        text = html.read_text(encoding="utf-8")
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, html
        assert not re.search(r'<(script|img)[^>]+src="https?:|<link[^>]+href="https?:', text), html


def test_a_broken_link_an_anchor_or_a_page_left_out_fails_the_build(tmp_path):
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    goals = tmp_path / "docs" / "goals.md"
    goals.write_text(goals.read_text() + "\nSee [nothing](no-such-page.md) and [no part](result.md#no-such-part).\n")
    (tmp_path / "docs" / "orphan.md").write_text("# Not in the nav\n")
    out = build(tmp_path, tmp_path / "site")
    said = out.stdout + out.stderr
    assert out.returncode != 0, said
    for needle in ["no-such-page.md", "no-such-part", "orphan.md"]:
        assert needle in said, needle


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_every_terminal_reason_is_listed():
    import typing

    from loopwright.core.events import TerminalReason

    text = page("result.md")
    listed = text[text.index("`terminal_reason` is one of"):]
    listed = listed.split("\n\n")[0]
    missing = [r for r in typing.get_args(TerminalReason) if f"`{r}`" not in listed]
    assert not missing, f"docs/result.md: terminal reasons not in the list: {missing}"


def test_the_contract_tables_have_the_never_silent_rows():
    contract = page("loop-contract.md")
    rows = [line for line in contract.splitlines() if line.startswith("| ")]
    for needle, bound in [("input is not a JSON object", "`malformed_tool_input`"),
                          ("a stop or finish reason loopwright does not know", "`warnings`"),
                          ("connection refused or no such host", "`api_unreachable`")]:
        [row] = [r for r in rows if needle in r]
        assert bound in row, row


def test_the_security_page_covers_workspace_trust():
    security = page("security.md")
    for needle in ["asks once whether you trust it, before any project hook runs", "`loopwright trust [PATH]`",
                   "**`-p` does not ask and trusts the folder", '`"disableAllHooks": true`', "`--bare`"]:
        assert needle in security, needle


# --- The examples on the pages run ------------------------------------------------------------
#
# A fenced block right after an HTML comment `<!-- test -->` or `<!-- test: {JSON} -->` is run as
# the page shows it (the comment is invisible on the site). The JSON may say:
#   "simulator": a script (a list or {"rules": …}) or a path from the repository's root: the
#                simulator serves it and the block gets its address as $URL and ANTHROPIC_BASE_URL;
#   "file":      write the block to this path in the project instead, then run "run" (a shell line);
#   "expect":    strings the standard output must hold; "sent": strings some request to the
#                simulator must hold (what the example's tools really did).
# Every block runs in a fresh project folder with a home of its own and no keys of yours.

MARKED = re.compile(r"^<!-- test(?::\s*(?P<spec>.*?))? -->\n```(?P<lang>\w+)[^\n]*\n(?P<body>.*?)^```$", re.M | re.S)


def examples():
    found = []
    for path in sorted(DOCS.glob("*.md")):
        for match in MARKED.finditer(path.read_text(encoding="utf-8")):
            spec = json.loads(match["spec"]) if match["spec"] else {}
            line = path.read_text(encoding="utf-8")[:match.start()].count("\n") + 1
            found.append(pytest.param(match["lang"], match["body"], spec, id=f"{path.name}:{line}"))
    return found


def test_the_pages_have_runnable_examples():
    ids = [p.id for p in examples()]
    for page in ["python.md", "testing.md", "goals.md", "workflows.md", "permissions.md"]:
        assert any(i.startswith(page + ":") for i in ids), f"docs/{page}: no example marked <!-- test -->"


def served(spec):
    script = spec.get("simulator")
    if isinstance(script, str):
        script = json.loads((ROOT / script).read_text(encoding="utf-8"))
    return Simulator(script) if script is not None else contextlib.nullcontext()


@pytest.mark.parametrize("lang, body, spec", examples())
def test_the_example_runs(lang, body, spec, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOPWRIGHT_"))}
    env.update(HOME=str(tmp_path / "home"), LOOPWRIGHT_HOME=str(tmp_path / "home" / ".loopwright"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    if "file" in spec:
        target = project / spec["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
        command = ["bash", "-euo", "pipefail", "-c", spec["run"]]
    elif lang == "python":
        command = [sys.executable, "-c", body]
    else:
        assert lang in ("sh", "bash"), f"a marked {lang} block needs a 'file' to go to and a 'run' line"
        command = ["bash", "-euo", "pipefail", "-c", body]
    with served(spec) as sim:
        if sim is not None:
            env.update(URL=sim.base_url, ANTHROPIC_BASE_URL=sim.base_url)
        out = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=120)
        sent = json.dumps([r.body for r in sim.requests]) if sim is not None else ""
        unmatched = sim.unmatched if sim is not None else []
    assert out.returncode == 0, out.stdout + out.stderr
    for needle in spec.get("expect", []):
        assert needle in out.stdout, f"{needle!r} not in the output:\n{out.stdout}{out.stderr}"
    for needle in spec.get("sent", []):
        assert needle in sent, f"{needle!r} in no request to the simulator"
    assert not unmatched, f"requests the script did not answer: {[r.body for r in unmatched]}"
