"""The public API: what `loopwright` and `loopwright.testing` export, pinned, so a name is added
or removed on purpose. Exports are imported on first use: `import loopwright` loads none of them."""

import subprocess
import sys

import pytest

import loopwright
import loopwright.testing

PUBLIC = [
    "Agent", "AnthropicModel", "ApiRetry", "Approval", "Approver", "AssistantMessage", "Budget", "Built", "Capability",
    "CompactBoundary", "ErrorKind",
    "Event", "GoalStatus", "HookEvent", "HookInput", "HookOutput", "HookResponse", "HookResult", "HookRunner",
    "HookStarted", "Limits", "LiveTools", "LoopStatus", "LoopwrightError", "Model", "ModelError", "ModelUsage",
    "Notice",
    "OpenAIChatModel", "PartialEvent", "PermissionDenial", "PermissionMode", "PermissionRules", "RequireTests", "ResultEvent", "Run",
    "RunResult", "RunSpec", "Session", "SessionError", "SessionLog", "SessionStore", "Subtype", "SystemInit", "TerminalReason",
    "Tool", "ToolContext",
    "ToolFinished", "ToolInputError", "ToolOutput", "ToolProgress", "ToolStarted", "UsageError", "UserMessage",
    "__version__", "build", "run_spec", "tool",
]
TESTING = [
    "FakeClock", "Fault", "RecordedRequest", "ReplayDiverged", "Reply", "Rule", "Script", "ScriptError", "ScriptLike",
    "ScriptedModel", "Simulator", "Step", "assert_replays",
]


def test_the_exported_names_are_pinned():
    assert sorted(loopwright.__all__) == PUBLIC
    assert sorted(loopwright.testing.__all__) == TESTING


@pytest.mark.parametrize("module", [loopwright, loopwright.testing], ids=lambda m: m.__name__)
def test_every_export_resolves_and_nothing_else_does(module):
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'Agnet'"):
        getattr(module, "Agnet")


def test_exports_are_the_objects_the_library_uses():
    from loopwright.agent.agent import Agent
    from loopwright.agent.run import Run
    from loopwright.agent.session import Session
    from loopwright.core.errors import LoopwrightError, ModelError
    from loopwright.hooks import HookRunner

    assert loopwright.Agent is Agent and loopwright.HookRunner is HookRunner
    assert loopwright.Session is Session and loopwright.Run is Run
    from loopwright.compose.build import build
    from loopwright.compose.runspec import RunSpec

    assert loopwright.RunSpec is RunSpec and loopwright.build is build
    assert issubclass(loopwright.ModelError, LoopwrightError) and loopwright.ModelError is ModelError
    assert set(loopwright.PermissionMode.__args__) == {"default", "acceptEdits", "plan", "dontAsk",
                                                      "bypassPermissions", "auto"}


def test_importing_the_package_loads_none_of_its_exports():
    code = ("import sys, loopwright, loopwright.testing; "
            "print(sorted(m for m in sys.modules if m.startswith('loopwright.') and m != 'loopwright.testing'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
