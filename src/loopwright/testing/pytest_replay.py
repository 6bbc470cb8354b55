"""A pytest plugin for recorded sessions: add `pytest_plugins = ["loopwright.testing.pytest_replay"]`
to a `conftest.py`, then a test takes the `assert_replays` fixture and calls it with a transcript
(`assert_replays("tests/sessions/fix-bug.jsonl")`); it replays in the test's own project folder
(pytest's rootdir) unless given `cwd`, and fails with the divergence report."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from .replay import assert_replays as _assert_replays


@pytest.fixture
def assert_replays(request: pytest.FixtureRequest) -> Callable[..., Any]:
    root = str(request.config.rootpath)

    def check(path: Any, *flags: str, **options: Any) -> Any:
        options.setdefault("cwd", root)
        return _assert_replays(path, *flags, **options)

    return check
