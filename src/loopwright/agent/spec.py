"""`AgentSpec`: what an agent is — its model, tools, prompts, limits, budget, permissions and
hooks — as an immutable, checked description, changed only by `replace`. The public `Agent`
(agent/agent.py) is this plus the ways to run it; a `Run` and its parts read only this."""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Self, Sequence

from ..core.fastclass import dataclass
from ..engine.loopconfig import StopHook
from ..policy.budget import Budget
from ..policy.models import DEFAULT_MODEL, resolve_model
from ..permissions.rules import PermissionRules
from ..policy.stop import Limits, limits_from
from ..core.ports import Approver, HookRunner, Model, Observer, Outfit, Tool, Workspace, default_outfit
from ..core.sandboxconfig import SandboxConfig
from . import sandboxing

if TYPE_CHECKING:
    from ..engine.capability import Capability
    from ..engine.goal import GoalSpec

DEFAULT_SYSTEM_PROMPT = """\
You are loopwright, an agent that finishes software tasks by working with tools. \
You work in {cwd}. Inspect before you change: read files and run commands to learn what is \
there, make focused edits, and check your work (run the tests or the program) before you say \
you are done. If a tool call fails, read the error and adjust instead of repeating it. \
When the task is complete, answer with a short summary of what you changed and how you checked it. \
Today's date is {today}."""


def default_system_prompt(cwd: Path) -> str:
    return DEFAULT_SYSTEM_PROMPT.format(cwd=cwd, today=time.strftime("%Y-%m-%d"))


@dataclass(frozen=True)
class AgentSpec:
    """An agent: its model, tools and limits. Immutable: `agent.replace(model=…)` gives another.
    `model_client` defaults to a client the run makes from the environment (`ANTHROPIC_API_KEY`,
    `ANTHROPIC_BASE_URL`, or the provider the model names) and closes; one given here is the
    caller's, maybe shared by many agents, and never closed by a run. `tools=None`: the built-in
    tools, made by each `Run` (their background shells are the run's)."""

    model: str = DEFAULT_MODEL
    model_client: Model | None = None
    tools: Sequence[Tool] | None = None
    system_prompt: str | None = None
    append_system_prompt: str = ""
    cwd: Path = field(default_factory=Path.cwd)
    limits: Limits = field(default_factory=lambda: limits_from(os.environ))  # honours LOOPWRIGHT_STOP_HOOK_BLOCK_CAP
    budget: Budget = field(default_factory=Budget)
    permissions: PermissionRules = field(default_factory=PermissionRules)
    stop_hooks: Sequence[StopHook] = ()
    # features of the caller's around the loop (engine.capability.Capability), after the built-in
    # ones; each is started afresh by every run (`start`): docs/capabilities.md
    capabilities: Sequence[Capability] = ()
    hooks: HookRunner | None = None  # e.g. loopwright.hooks.HookRunner.from_settings(load_settings())
    goal: GoalSpec | None = None  # a session's goal unless it set its own (`Session.set_goal`)
    workspace: Workspace | None = None
    evaluator_client: Model | None = None
    approver: Approver | None = None
    include_partial: bool = False
    final_turn: bool = False
    clock: Any = None
    observer: Observer | None = None  # sees every event after the session's recorder (loopwright.telemetry)
    # every command the model starts runs under bwrap unless this says enabled=False (None: the
    # default SandboxConfig, on): loopwright.sandbox, docs/permissions.md
    sandbox: SandboxConfig | None = None
    output_schema: Any = None  # a JSON Schema: the run ends with a fitting `result.structured_output`
    # what processes started for tools, hooks and goal checks get; None: core.environ.child_env(),
    # this process's environment without the credentials loopwright itself uses
    child_env: Mapping[str, str] | None = None
    env_origins: Mapping[str, str] = field(default_factory=dict)  # variable -> the settings file that set it
    crash_log: Callable[[BaseException], str | None] | None = None  # default: a file in loopwright's home
    mcp_servers: Sequence[Any] = ()  # loopwright.mcp.config.ServerSpec: started when a run opens
    memory: Any = None  # loopwright.context.memory.Memory: the project's instructions, given at the start
    skills: Any = None  # loopwright.context.skills.Skills: listed at the start, loaded by the Skill tool
    agents: Any = None  # loopwright.subagents.definitions: name -> AgentDef; offers the Agent tool
    plugins: Sequence[Any] = ()  # loopwright.context.plugins.Plugin: their parts are in the fields above
    depth: int = 0  # subagent level: 0 for the main agent
    classifier_model: str | None = None  # auto mode's classifier (default: haiku on Anthropic, else the main model)
    subagent: Any = None  # loopwright.subagents.runner.Sidechain: who this subagent is (its hooks, transcript)
    # each run's whole tool list (built-in, MCP, Skill, Agent, Workflow, ...) passes through this;
    # a durable run (loopwright.distributed) makes every call a recorded step with it
    tool_steps: Callable[[list[Tool]], Sequence[Tool]] | None = None
    # `--tools`: the only tools of loopwright's own offered (Agent, Workflow and Skill too, when named);
    # None: all of them. MCP servers' tools and --json-schema's StructuredOutput are not among these
    only_tools: frozenset[str] | None = None
    # what runs take from the outside world (model clients, built-in tools, MCP servers, the sandbox,
    # ...): core.ports.Outfit; None: the standard one (compose.outfit), as the package root names it
    outfit: Outfit | None = None

    def __post_init__(self) -> None:
        # normalised once here; `replace` runs this again, so every Agent is a checked one
        put = object.__setattr__
        put(self, "model", resolve_model(self.model).id)
        put(self, "cwd", Path(self.cwd).resolve())
        if self.tools is not None:
            put(self, "tools", tuple(self.tools))  # a caller's list changed later does not change the agent
        if self.output_schema is not None:
            from ..capabilities.structured import StructuredAnswer

            StructuredAnswer(self.output_schema)  # a schema that cannot be enforced fails here, before any call
        if self.sandbox is None:
            put(self, "sandbox", SandboxConfig())
        put(self, "permissions", sandboxing.with_strictness(self.permissions, self.sandbox, self.outfitted()))
        sandboxing.refuse_root_bypass(self.permissions.mode, self.sandbox, self.outfitted())
        if self.skills is not None or self.plugins:
            from ..context import reading_grants

            grants = tuple(g for g in reading_grants(self.skills, self.plugins) if g not in self.permissions.allow)
            put(self, "permissions", replace(self.permissions, allow=self.permissions.allow + grants))

    def replace(self, **changes: Any) -> Self:
        """This agent with `changes` (field names), checked as a new one is."""
        return dataclasses.replace(self, **changes)

    def environment(self, added: Mapping[str, str] = {}) -> dict[str, str]:
        """What processes started for tools, hooks and checks get, with `added` (a session's
        SessionStart env) on top."""
        from ..core.environ import child_env

        return (dict(self.child_env) if self.child_env is not None else child_env()) | dict(added)

    def writable_roots(self) -> tuple[str, ...]:
        return sandboxing.writable_roots(self.cwd, self.permissions)

    def check_wrapper(self) -> Callable[[str], list[str]] | None:
        """Goal checks run in the Bash sandbox when it is on and works here."""
        return self.outfitted().check_wrapper(self.sandbox_config(), self.cwd, self.writable_roots())

    def outfitted(self) -> Outfit:
        """The outfit this agent's runs use: its own, or the standard one."""
        return self.outfit if self.outfit is not None else default_outfit()

    def sandbox_config(self) -> SandboxConfig | None:
        """The sandbox, with the permission rules' added directories writable inside it too."""
        return sandboxing.configured(self.sandbox, self.permissions, self.cwd, self.plugins)

    def system(self) -> str:
        base = self.system_prompt if self.system_prompt is not None else default_system_prompt(self.cwd)
        if self.output_schema is not None:
            base += "\n\nThis task ends when you call StructuredOutput with the final answer, matching its schema."
        return f"{base}\n\n{self.append_system_prompt}".strip() if self.append_system_prompt else base
