"""The hook events have one definition (core/hookevents.py); every table that lists them is
derived from it, so the engine, the Python-hook API, the answer rules and the settings check
agree on which events exist and what each can do."""

from typing import get_args

import anyio

from loopwright.core.hookevents import EVENTS, FOREIGN_EVENTS, HookEvent, facts_of
from loopwright.hooks import EVENTS as REGISTRABLE, HookRunner, PermissionDeniedInput
from loopwright.hooks.output import BLOCKABLE, CONTEXT_EVENTS, NO_CONTINUE, PLAIN_CONTEXT
from loopwright.hooks.spec import TOOL_EVENTS
from loopwright.settings import known


def test_every_list_of_events_comes_from_the_one_table():
    assert set(REGISTRABLE) == set(get_args(HookEvent)) == set(EVENTS)
    assert not set(EVENTS) & set(FOREIGN_EVENTS)
    assert known.CLAUDE_CODE_ONLY_EVENTS == set(FOREIGN_EVENTS)
    assert known.TOOL_EVENTS == {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied",
                                 "PermissionRequest"}
    assert TOOL_EVENTS == known.TOOL_EVENTS - set(FOREIGN_EVENTS)
    assert known.NO_MATCHER_EVENTS == {"UserPromptSubmit", "Stop", "PostToolBatch", "MessageDisplay", "TaskCreated",
                                       "TaskCompleted", "TeammateIdle", "CwdChanged", "WorktreeCreate",
                                       "WorktreeRemove"}


def test_what_each_event_can_do_matches_claude_codes_hooks_reference():
    assert BLOCKABLE == {"UserPromptSubmit", "UserPromptExpansion", "PostToolUse", "PostToolUseFailure",
                         "PostToolBatch", "Stop", "SubagentStop", "PreCompact"}
    assert PLAIN_CONTEXT == {"UserPromptSubmit", "UserPromptExpansion", "SessionStart"}
    assert CONTEXT_EVENTS == {"SessionStart", "UserPromptSubmit", "UserPromptExpansion", "PreToolUse", "PostToolUse",
                              "PostToolUseFailure", "PostToolBatch", "Stop", "SubagentStart", "SubagentStop"}
    assert NO_CONTINUE == {"SessionStart", "SubagentStart", "SessionEnd", "Notification", "StopFailure", "PreCompact",
                           "PostCompact"}
    assert facts_of("Stop") is EVENTS["Stop"] and facts_of("stop") is None and facts_of("Setup") is None


def test_a_python_hook_on_permission_denied_gets_its_typed_input_and_may_grant_a_retry():
    """PermissionDenied fires in auto mode (engine/dispatch.py); it used to be missing from the
    events a Python hook could register for."""
    seen = []

    def hook(event):
        seen.append(event)
        return {"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": True}}

    runner = HookRunner().on("PermissionDenied", hook, matcher="Bash")
    payload = {"hook_event_name": "PermissionDenied", "tool_name": "Bash", "tool_input": {"command": "rm x"},
               "tool_use_id": "toolu_1", "reason": "blocked by the auto-mode classifier: risky"}
    result = anyio.run(lambda: runner.run("PermissionDenied", payload, match="Bash"))
    assert result.retry is True
    assert isinstance(seen[0], PermissionDeniedInput) and seen[0].reason == payload["reason"]
    assert seen[0].tool_name == "Bash" and seen[0]["tool_use_id"] == "toolu_1"
