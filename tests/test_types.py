"""The package type-checks: mypy, configured in pyproject.toml ([tool.mypy]: strict for the
layers below the front ends and the public API, the default level elsewhere), reports nothing
beyond the errors known when the check was introduced (tests/mypy_known_errors.txt: file, error
code, count). The list only shrinks: fix errors and delete their lines; an error it does not
list fails the test. A misspelt hook event or finish reason is a type error, not a hook that
never runs."""

import re
import subprocess
from collections import Counter
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mypy", reason="mypy is in the `test` extra")


def mypy(*args):
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.timeout(600)
def test_the_package_has_no_new_type_errors():
    out = mypy()
    assert "error:" in out.stdout or out.returncode == 0, out.stdout + out.stderr  # mypy ran
    errors = re.findall(r"^(src/\S+?):\d+: error: .*\[([a-z-]+)\]$", out.stdout, re.M)
    found = Counter(errors)
    known = Counter()
    for line in (ROOT / "tests" / "mypy_known_errors.txt").read_text().splitlines():
        path, code, count = line.split()
        known[(path, code)] = int(count)
    new = found - known
    shown = [line for line in out.stdout.splitlines() if any(line.startswith(p + ":") and line.endswith(f"[{c}]")
                                                              for p, c in new)]
    assert not new, "type errors beyond tests/mypy_known_errors.txt:\n" + "\n".join(shown)


@pytest.mark.timeout(600)
def test_a_misspelt_hook_event_or_finish_reason_is_a_type_error(tmp_path):
    bad = tmp_path / "misspelt.py"
    bad.write_text(textwrap.dedent("""
        from loopwright import HookRunner
        from loopwright.policy.stop import Finish

        HookRunner().on("PreToolUs", print)
        Finish("success", "complete", False)
    """))
    out = mypy(str(bad))
    assert 'Argument 1 to "on" of "HookRunner" has incompatible type "Literal[\'PreToolUs\']"' in out.stdout, out.stdout
    assert "Argument 2 to \"Finish\" has incompatible type \"Literal['complete']\"" in out.stdout, out.stdout


@pytest.mark.timeout(600)
def test_the_adapters_implement_the_optional_ports_they_are_used_through(tmp_path):
    """The optional methods of the session ports are Protocols, not names probed with getattr:
    a log the Recorder batches fsyncs for, or keeps subagents' transcripts beside, a store that
    lists them, and the recorder whose last record id a replayed prompt carries. A renamed or
    re-typed method is a type error here, not a feature that silently switches off."""
    fits = tmp_path / "fits.py"
    fits.write_text(textwrap.dedent("""
        from loopwright.core.ports import EventRecorder
        from loopwright.core.storeports import DeferredSync, KeepsSidechains, ListsSidechains
        from loopwright.session.recorder import Recorder
        from loopwright.stores.jsonl import JsonlLog, JsonlStore
        from loopwright.stores.postgres import PgLog, PgSessionStore

        def fits(log: JsonlLog, pg: PgLog, files: JsonlStore, rows: PgSessionStore, rec: Recorder) -> None:
            batched: DeferredSync = log
            beside: list[KeepsSidechains] = [log, pg]
            listing: list[ListsSidechains] = [files, rows]
            recorder: EventRecorder = rec
    """))
    out = mypy(str(fits))
    assert out.returncode == 0 and "error:" not in out.stdout, out.stdout + out.stderr
