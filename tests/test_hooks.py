"""The hook engine's rules, table first: how an exit code, stdout and stderr (or a JSON body, a
Python return value, an evaluator's answer) become a decision, and how answers merge."""

import pytest

from loopwright.core.errors import UsageError
from loopwright.hooks import HookOutput, HookRunner, Matcher
from loopwright.hooks.http import headers
from loopwright.hooks.output import Answer, from_process, merge
from loopwright.hooks.prompt import render, verdict
from loopwright.hooks import PreToolUseInput
from loopwright.hooks.python import to_answer, typed_input
from loopwright.hooks.spec import HttpSpec, parse_handler, rule_applies

DENY = '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", ' \
       '"permissionDecisionReason": "json no"}}'

PROCESS_CASES = [
    # event, exit code, stdout, stderr -> decision, reason, context, error?
    ("PreToolUse", 0, DENY, "", "deny", "json no", (), False),
    ("PreToolUse", 0, '{"decision": "approve", "reason": "old style"}', "", "allow", "old style", (), False),
    ("PreToolUse", 0, '{"decision": "block", "reason": "old block"}', "", "deny", "old block", (), False),
    ("PreToolUse", 0, '{"hookSpecificOutput": {"permissionDecision": "defer"}}', "", "ask", None, (), False),
    ("PreToolUse", 2, "", "stderr reason\n", "deny", "stderr reason", (), False),
    ("PreToolUse", 2, '{"hookSpecificOutput": {"permissionDecision": "allow"}}', "why", "deny", "why", (), False),
    ("PreToolUse", 2, '{"reason": "json reason wins"}', "stderr", "deny", "json reason wins", (), False),
    ("PreToolUse", 1, "", "boom\nmore", None, None, (), True),
    ("PreToolUse", 1, DENY, "", "deny", "json no", (), False),
    ("PreToolUse", 127, "", "sh: nope: not found", None, None, (), True),
    ("PreToolUse", 0, "plain text is debug output here", "", None, None, (), False),
    ("PreToolUse", 0, "{broken", "", None, None, (), True),
    ("PreToolUse", 0, '{"decision": "maybe"}', "", None, None, (), True),
    ("PreToolUse", 0, '{"hookSpecificOutput": {"hookEventName": "Stop"}}', "", None, None, (), True),
    ("UserPromptSubmit", 0, "today is Friday\n", "", None, None, ("today is Friday",), False),
    ("UserPromptSubmit", 2, "", "not this prompt", "block", "not this prompt", (), False),
    ("SessionStart", 0, "notes", "", None, None, ("notes",), False),
    ("Stop", 0, '{"decision": "block", "reason": "keep going"}', "", "block", "keep going", (), False),
    ("Stop", 0, '{"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "more"}}', "", None, None,
     ("more",), False),
    ("Stop", 2, "", "tests fail", "block", "tests fail", (), False),
    ("PostToolUse", 2, "", "shown to the model", "block", "shown to the model", (), False),
    ("PreCompact", 0, '{"decision": "block", "reason": "no"}', "", "block", "no", (), False),
    ("Notification", 2, "", "for the user", None, None, (), False),
    ("SessionEnd", 0, '{"decision": "block"}', "", None, None, (), False),
]


@pytest.mark.parametrize("event,code,stdout,stderr,decision,reason,context,error", PROCESS_CASES)
def test_exit_codes_and_json(event, code, stdout, stderr, decision, reason, context, error):
    a = from_process(event, code, stdout, stderr)
    assert (a.decision, a.reason, a.context, a.error is not None) == (decision, reason, context, error)


def test_non_blocking_error_names_the_status_and_first_stderr_line():
    assert from_process("Stop", 1, "", "\nboom\nmore").error == "Failed with non-blocking status code 1: boom"


def test_exit_2_where_it_cannot_block_is_a_notice_for_the_user():
    assert from_process("SessionStart", 2, "", "careful").notice == "careful"


@pytest.mark.parametrize("event,stops", [("Stop", True), ("PostToolBatch", True), ("PreToolUse", True),
                                         ("PreCompact", False), ("StopFailure", False), ("Notification", False)])
def test_continue_false(event, stops):
    a = from_process(event, 0, '{"continue": false, "stopReason": "halt"}', "")
    assert a.stop is stops and a.stop_reason == ("halt" if stops else None)


def test_merge_precedence_context_and_last_finisher():
    answers = [Answer("allow", "fine", {"v": 1}, ("a",)), Answer("deny", "no"), Answer("ask", "hmm", {"v": 2}, ("b",)),
               Answer("deny", "never"), Answer(system_message="note")]
    r = merge(answers, finished=[2, 0, 1, 3, 4])
    assert r.decision == "deny" and r.reason == "no\nnever"
    assert r.updated_input == {"v": 1}  # handler 0 finished after handler 2
    assert r.additional_context == ("a", "b") and r.system_messages == ("note",)
    assert merge([Answer("allow"), Answer("ask", "check")]).decision == "ask"
    assert merge([]).decision is None


def test_merge_continue_false_beats_everything():
    r = merge([Answer("allow"), Answer(stop=True, stop_reason="enough")], event="PreToolUse")
    assert r.stop and r.stop_reason == "enough" and r.decision == "deny" and r.reason == "enough"
    assert merge([Answer("block", "x"), Answer(stop=True)], event="Stop").stop


@pytest.mark.parametrize("pattern,value,hit", [
    (None, "Bash", True), ("", "Edit", True), ("*", "anything", True),
    ("Bash", "Bash", True), ("Bash", "BashOutput", False), ("Bash|Edit", "Edit", True), ("Bash, Edit", "Edit", True),
    ("Edit|Write", "MultiEdit", False), ("mcp__memory__.*", "mcp__memory__save", True),
    ("Notebook.*", "NotebookEdit", True), ("Edit.*", "NotebookEdit", False),  # a full match, not a search
    ("Bash", None, True),  # events without a matcher field ignore matchers
])
def test_matcher(pattern, value, hit):
    assert Matcher(pattern)(value) is hit


def test_bad_regex_matcher_is_a_usage_error():
    with pytest.raises(UsageError, match="valid regular expression"):
        Matcher("Bash(")


@pytest.mark.parametrize("rule,event,command,hit", [
    ("Bash(git *)", "PreToolUse", "git status", True), ("Bash(git *)", "PreToolUse", "rm -rf /", False),
    ("Bash(git:*)", "PostToolUse", "git log", True), ("Bash", "PreToolUse", "ls", True),
    ("Edit", "PreToolUse", "ls", False), ("Bash(git *)", "Stop", "git status", False),
])
def test_if_field(rule, event, command, hit):
    assert rule_applies(rule, event, {"tool_name": "Bash", "tool_input": {"command": command}}) is hit


@pytest.mark.parametrize("text,event,decision,reason", [
    ('{"ok": true}', "Stop", None, None),
    ('{"ok": false, "reason": "run the tests"}', "Stop", "block", "run the tests"),
    ('```json\n{"ok": false, "reason": "no"}\n```', "PreToolUse", "deny", "no"),
    ('{"ok": false, "reason": "cannot be done", "impossible": true}', "Stop", None, None),
    ('Sure! {"ok": false}', "UserPromptSubmit", "block", "the hook's condition is not met"),
])
def test_prompt_hook_verdicts(text, event, decision, reason):
    a = verdict(event, text)
    assert (a.decision, a.reason, a.error) == (decision, reason, None)


def test_prompt_hook_unreadable_answer_is_an_error():
    assert verdict("Stop", "I think it is fine").error and verdict("Stop", '{"ok": "yes"}').error


def test_arguments_placeholder():
    assert render("check $ARGUMENTS now", '{"a":1}') == 'check {"a":1} now'
    assert render("check this", '{"a":1}') == 'check this\n\n{"a":1}'


def test_http_headers_fill_only_allowed_variables():
    spec = HttpSpec("http://x", (("A", "Bearer $TOKEN"), ("B", "${SECRET}-x")), ("TOKEN",))
    assert headers(spec, {"TOKEN": "t", "SECRET": "s"}) == {"Content-Type": "application/json", "A": "Bearer t",
                                                             "B": "-x"}


def test_typed_input_is_also_a_mapping():
    event = typed_input("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}, "extra": 1,
                                       "hook_event_name": "PreToolUse", "session_id": "s"})
    assert isinstance(event, PreToolUseInput) and event.tool_input == {"command": "ls"}
    assert event["extra"] == 1 and dict(event)["session_id"] == "s"


@pytest.mark.parametrize("event,returned,decision,context", [
    ("PreToolUse", HookOutput.deny("no"), "deny", ()),
    ("PreToolUse", HookOutput.block("no"), "deny", ()),
    ("Stop", HookOutput.block("again"), "block", ()),
    ("Stop", HookOutput.deny("again"), "block", ()),
    ("Stop", HookOutput.allow(), None, ()),
    ("Notification", HookOutput.block("x"), None, ()),
    ("UserPromptSubmit", "plain text", None, ("plain text",)),
    ("Stop", "plain text", None, ()),
    ("Stop", {"decision": "block", "reason": "r"}, "block", ()),
    ("PostToolUse", HookOutput.context("c"), None, ("c",)),
    ("Stop", None, None, ()),
])
def test_python_return_values(event, returned, decision, context):
    a = to_answer(event, returned)
    assert (a.decision, a.context, a.error) == (decision, context, None)


def test_python_return_of_another_type_is_an_error():
    assert to_answer("Stop", 42).error


def test_python_halt_stops():
    a = to_answer("PostToolBatch", HookOutput.halt("done for today"))
    assert a.stop and a.stop_reason == "done for today"


def test_handler_dicts_are_checked():
    with pytest.raises(UsageError, match="expected one of command"):
        parse_handler({"type": "shell"})
    with pytest.raises(UsageError, match="`command` must be a non-empty string"):
        parse_handler({"type": "command", "command": ""})
    with pytest.raises(UsageError, match="timeout"):
        parse_handler({"type": "command", "command": "x", "timeout": 0})


def test_unknown_event_for_a_python_hook_is_refused():
    with pytest.raises(ValueError, match="unknown hook event 'PreTooluse'"):
        HookRunner().on("PreTooluse", lambda e: None)


@pytest.mark.anyio
async def test_unsupported_kinds_warn_and_do_not_decide():
    events = []
    runner = HookRunner.from_settings({"hooks": {"Stop": [{"hooks": [{"type": "agent", "prompt": "x"}]}]}})
    result = await runner.bind(emit=events.append).run("Stop", {"cwd": "/"})
    assert result.decision is None
    assert any("'agent' hooks are not supported" in getattr(e, "text", "") for e in events)


@pytest.mark.anyio
async def test_prompt_and_http_hooks_without_their_io_warn():
    events = []
    runner = HookRunner(emit=events.append)
    runner.add("Stop", {"type": "prompt", "prompt": "p"}).add("Stop", {"type": "http", "url": "http://127.0.0.1:9"})
    result = await runner.run("Stop", {"cwd": "/"})
    texts = [getattr(e, "text", "") for e in events]
    assert result.decision is None
    assert any("no model client" in t for t in texts) and any("no HTTP client" in t for t in texts)


def test_long_hook_text_is_cut_to_a_preview_with_the_whole_text_in_a_file():
    from pathlib import Path

    text = "x" * 12_000 + "END"
    a = from_process("UserPromptSubmit", 0, text, "")
    [context] = a.context
    assert len(context) < 3000 and "12003 characters" in context
    path = Path(context.rsplit(" is in ", 1)[1].rstrip("]"))
    assert path.read_text() == text
    path.unlink()


def test_a_runner_wants_only_the_events_it_has_handlers_for():
    """The loop skips building a payload for an event no handler is registered for (`wants`);
    a handler added later is wanted from then on, and a disabled runner wants nothing."""
    runner = HookRunner()
    assert not runner.wants("PreToolUse")
    runner.on("PreToolUse", lambda payload: None, matcher="Bash")
    assert runner.wants("PreToolUse") and not runner.wants("PostToolUse")
    assert not HookRunner({"PreToolUse": lambda payload: None}, disabled=True).wants("PreToolUse")
