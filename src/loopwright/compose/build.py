"""A run composed from its `RunSpec` (`build`): the settings files it reads, the `Agent` it
describes (settings, limits, tools, permissions, sandbox), the session it opens, its goal and the
emitter that prints its events. Every front end composes its run here — `loopwright -p`, the
interactive terminal, `/loop`, the Agent SDK's channel, workflows, parallel attempts, routine items and the
durable jobs' workers — and adds only what is its own (a prompt's approver, a loop's bounds)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal

from .. import __version__
from ..config import parse_duration, parse_fallbacks, positive, read_text_file
from ..core.errors import UsageError
from ..core.events import Event, HookResponse, HookStarted, Notice, SystemInit
from ..core.fastclass import dataclass
from ..core.ids import uuid4
from .goals import arm_goal, goal_from_options
from .extensions import hook_runner, plugin_mcp_servers, plugin_path, project_plugins
from .modelcheck import check_models
from .project import mcp_servers, project_agents, project_memory, project_skills
from .render import Progress, dumps, printable, stream_json, visible
from .runspec import limit

if TYPE_CHECKING:
    from ..agent import Agent, Run, Session
    from ..core.ports import Approver
    from ..engine.goal import GoalSpec, SavedGoal
    from ..session.opening import OpenedSession
    from ..settings import Settings
    from .runspec import RunSpec


@dataclass
class Built:
    """A run composed from its spec and not started yet: `start()` sets its goal and opens the
    `Run`; `close()` closes the session (after the run's `aclose`). A front end may narrow
    `agent` before `start()` (`/loop`'s bounds and tools); its folder and session stay the built ones."""

    spec: RunSpec
    settings: Any
    agent: Agent
    opened: OpenedSession  # the store's session: replayed records, recorder, warnings, close
    session: Session
    goal: GoalSpec | None
    prompt: str  # what the run starts with (a goal's directive first)
    saved: SavedGoal | None  # a resumed session's goal
    goal_command: Literal["status", "clear"] | None  # `/goal` alone, `/goal clear`: nothing to run
    sets_goal: bool = True  # False: the front end sets the session's goals itself (`build(goal=False)`)

    def start(self, *, approver: Callable[[Run], Approver] | None = None) -> Run:
        """The `Run` of the agent on the session, its goal set. `approver`: makes, from the run,
        what is asked about a call the rules leave open (the terminal's prompt)."""
        if self.sets_goal:
            arm_goal(self.session, self.agent.model, self.goal, self.saved, self.spec)
        run = self.agent.open(self.session)
        if approver is not None:
            run.update(approver=approver(run))
        return run

    def init(self) -> dict[str, Any]:
        """What system/init says beyond the engine's fields (`init_fields`)."""
        return init_fields(self.settings, self.agent)

    def emitter(self, fmt: str | None = None, verbose: bool = False) -> Callable[[Event], None]:
        """What prints the run's events: `fmt` (default: the spec's output format) on stdout,
        progress on stderr with `verbose`."""
        return make_emitter(fmt or self.spec.output_format, verbose, self.session.session_id,
                            self.spec.include_hook_events, self.init())

    def close(self) -> None:
        self.opened.close()


def build(spec: RunSpec, prompt: str | None = None, *, announce: bool = True, observer: Any = None,
          trust: Callable[[Settings], Settings] | None = None, goal: bool = True, checkpoints: bool = False,
          settings: Settings | None = None, project: Path | None = None) -> Built:
    """The run `spec` describes, composed in the current folder: its goal (from `prompt` or the
    spec's goal flags), settings, agent and session, the session's id in the skills'
    `${CLAUDE_SESSION_ID}`. `prompt`: the text to run (default: the spec's); `announce`: say in
    one line what the project's settings widen; `observer`: telemetry's, instead of the one the
    environment switches on; `trust`: the settings to use given those loaded (the terminal asks
    whether the folder is trusted); `goal`: False when the front end sets the session's goals
    itself (the terminal's `/goal`, each `/loop` iteration's), the spec's goal flags not read
    here; `checkpoints`: keep file checkpoints (interactive sessions); `settings`: loaded already
    (runs that share them: parallel attempts); `project`: the folder whose sessions the session
    joins, when not the current one (an attempt's worktree)."""
    text = spec.prompt if prompt is None else prompt
    command: Literal["status", "clear"] | None = None
    goal_spec: GoalSpec | None = None
    start: str | None = text or ""
    if goal and (text or "").strip() == "/goal":
        command, start = "status", ""
    elif goal:
        goal_spec, start = goal_from_options(spec, text, resuming=spec.resuming)
        command = "clear" if start is None else None
    if settings is None:
        settings = load_run_settings(spec, announce=announce)
    if trust is not None:
        settings = trust(settings)
    agent = build_agent(spec, settings)
    if observer is not None:
        agent = agent.replace(observer=observer)
    opened, session = open_run_session(spec, agent, checkpoints=checkpoints, project=project)
    try:
        if agent.skills is not None:  # built before the session had its id (a new one, or the resumed one's)
            agent = agent.replace(skills=agent.skills.for_session(session.session_id))
        saved = None
        if goal and opened.records:  # a resumed session may hold a goal (goals load only when needed)
            from ..engine.goal import saved_goal

            saved = saved_goal(attachments(opened.records))
    except BaseException:
        opened.close()
        raise
    return Built(spec, settings, agent, opened, session, goal_spec, start or "", saved, command, goal)


def load_run_settings(opts: RunSpec, *, announce: bool = True) -> Any:
    """The settings files for this run: each warning and refusal said once on stderr, and with
    `announce` (every run but the interactive one, which asks instead) what the project's files
    widen, in one line."""
    from ..settings import load_settings
    from .settingfiles import reads_setting_files

    settings = load_settings(Path.cwd(), settings=opts.settings, bare=not reads_setting_files(opts))
    # your own settings' `env` (build_agent applies it too), now: telemetry's spans around runs (a
    # run of attempts, a routine's fire) are made before any agent is built, and switch on with it
    os.environ.update(settings.trusted_env)
    for finding in settings.findings:
        print(f"loopwright: warning: {printable(_shown(str(finding)))}", file=sys.stderr, flush=True)
    if announce and (line := widened_line(settings)):
        print(f"loopwright: {printable(line)}", file=sys.stderr, flush=True)
    return settings


def widened(settings: Any) -> str:
    """What the project's files widen, file by file, in one line ("" when nothing): settings, and
    the MCP servers of `.mcp.json` (each one a program that will run)."""
    parts = [f"{_shown(source)}: {'; '.join(found)}" for source, found in settings.widened()]
    return " | ".join(parts + project_mcp_servers())


def project_mcp_servers() -> list[str]:
    from ..settings.mcpfiles import project_mcp_files

    out = []
    for path in project_mcp_files(Path.cwd()):
        try:
            servers = json.loads(path.read_text(encoding="utf-8")).get("mcpServers") or {}
        except (OSError, ValueError, AttributeError):
            servers = {}
        if isinstance(servers, dict) and servers:
            out.append(f"{_shown(str(path))}: MCP servers {', '.join(servers)}")
    return out


def widened_line(settings: Any) -> str:
    found = widened(settings)
    return found and ("project settings in effect (-p trusts the folder, as Claude Code does; --bare reads no "
                      f"settings files): {found}")


def init_fields(settings: Any, agent: Agent | None = None) -> dict[str, Any]:
    """What system/init says beyond the engine's fields: what the project's settings widen and
    what was refused, and the skills and commands the person may start (as Claude Code lists them)."""
    widened = [{"file": _shown(source), "widens": parts} for source, parts in settings.widened()]
    refused = [_shown(str(f)) for f in settings.findings if f.level == "refused"]
    out: dict[str, Any] = {"project_settings": {"widened": widened, "refused": refused}} if widened or refused else {}
    if agent is None:
        return out
    if agent.skills is not None and agent.skills.found:
        names = [s.name for s in agent.skills.found.values() if s.user_invocable]
        out |= {"skills": names, "slash_commands": names}
    if agent.agents:
        out["agents"] = list(agent.agents)
    if agent.plugins:
        out["plugins"] = [p.init() for p in agent.plugins]
    return out


def _shown(source: str) -> str:
    here = os.getcwd().rstrip("/") + "/"
    return source[len(here):] if source.startswith(here) else source


def build_agent(opts: RunSpec, settings: Any = None) -> Agent:
    """The `Agent` the flags describe. `settings`: loaded already (`load_run_settings`), else loaded here."""
    from ..agent import Agent
    from ..agent.sandboxing import with_plugins
    from ..core.environ import child_env
    from ..policy.budget import Budget
    from ..policy.models import DEFAULT_MODEL
    from ..permissions.rules import parse_tool_list
    from ..settings import PROJECT, default_limits, permission_rules
    from ..tools import builtin_tools

    if settings is None:
        settings = load_run_settings(opts)
    # Your own settings' `env` configures loopwright itself too (API client, proxies); a project's
    # reaches only the processes started for tools, hooks and checks, after `settings.scope`.
    os.environ.update(settings.trusted_env)
    model = opts.model or os.environ.get("ANTHROPIC_MODEL") or settings.model or DEFAULT_MODEL
    fallbacks = parse_fallbacks(opts.fallback_model or settings.fallback_model)
    check_models(opts, settings, model, fallbacks)  # before child_env: it loads the providers, whose keys it hides
    children = child_env(add=settings.env, keep=pass_env_names(opts.pass_env))

    positive(opts.max_turns, "--max-turns")
    positive(opts.max_budget_usd, "--max-budget-usd")
    positive(opts.max_tokens_total, "--max-tokens-total")
    duration = parse_duration(opts.max_duration, "--max-duration") if opts.max_duration else None
    rules = permission_rules(settings, mode=opts.permission_mode, allow=parse_tool_list(opts.allowed),
                             deny=parse_tool_list(opts.disallowed))
    rules, sandbox = writable_dirs_and_sandbox(opts, settings, rules)
    system = opts.system_prompt
    if opts.system_prompt_file:
        system = read_text_file(opts.system_prompt_file, "--system-prompt-file")
    append = opts.append_system_prompt or ""
    if opts.append_system_prompt_file:
        append = "\n\n".join(x for x in (append, read_text_file(opts.append_system_prompt_file,
                                                                 "--append-system-prompt-file")) if x)
    session_id = opts.session_id or uuid4()
    if opts.session_id:
        import uuid

        try:
            uuid.UUID(session_id)
        except ValueError:
            raise UsageError(f"--session-id: expected a UUID, got {session_id!r}") from None
    plugins, _ = project_plugins(opts, settings)
    sandbox = with_plugins(sandbox, plugins)
    tools, only = builtin_tools(sandbox=sandbox), tools_named(opts.tools_flag)
    if only is not None:
        tools = [t for t in tools if t.name in only]
    children = plugin_path(children, plugins)
    hooks = hook_runner(settings, plugins)
    return Agent(
        output_schema=output_schema(opts.json_schema),
        model=model,
        tools=tools, system_prompt=system, append_system_prompt=append, hooks=hooks,
        limits=default_limits(max_turns=limit(opts.max_turns),
                              fallback_models=fallbacks),
        budget=Budget(limit(opts.max_budget_usd), opts.max_tokens_total, duration),
        permissions=rules, sandbox=sandbox, classifier_model=opts.classifier_model,
        include_partial=opts.include_partial_messages, final_turn=opts.final_turn,
        child_env=children, only_tools=only,
        mcp_servers=mcp_servers(opts, settings) + plugin_mcp_servers(plugins, os.environ),
        memory=project_memory(opts, settings), plugins=plugins,
        skills=project_skills(opts, session_id, plugins), agents=project_agents(opts, plugins),
        env_origins={k: source for i, (source, data) in enumerate(settings.layers) if settings.scope(i) != PROJECT
                     for k in data.get("env") or {}},  # where a variable that steers loopwright was set
        observer=telemetry_watcher(opts),
    )


def telemetry_watcher(opts: RunSpec) -> Any:
    """Telemetry's observer when the environment (your own settings' `env` included) switches it
    on; None, and nothing of OpenTelemetry imported, when it does not."""
    from ..telemetry import links_of, observe

    return observe(os.environ, opts.telemetry_source(), carried={"links": links_of(os.environ)})  # a schedule fire's, say


HARNESS_TOOLS = ("Agent", "Workflow", "Skill")  # offered beside the built-in tools when there is something to offer


def tools_named(flag: str | None) -> frozenset[str] | None:
    """`--tools`: exactly the tools named (`""` none, `default` or no flag: all, None here), as
    Claude Code's flag; Agent, Workflow and Skill are offered only when named too."""
    from ..permissions.rules import parse_tool_list
    from ..tools import BUILTIN_TOOL_NAMES

    if flag is None or flag.strip() == "default":
        return None
    wanted = ["Agent" if name == "Task" else name for name in parse_tool_list([flag])]  # Task: the old name
    known = (*BUILTIN_TOOL_NAMES, *HARNESS_TOOLS)
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise UsageError(f"--tools: unknown tool(s) {', '.join(unknown)}; expected \"\" (none), \"default\" (all) or "
                         f"names from {', '.join(known)}")
    return frozenset(wanted)


def pass_env_names(names: tuple[str, ...]) -> tuple[str, ...]:
    import re

    for name in names:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise UsageError(f"--pass-env: expected a variable name such as ANTHROPIC_API_KEY, got {name!r}")
    return names


def output_schema(value: str | None) -> Any:
    """`--json-schema`: the schema as JSON text, or the path of a file holding it."""
    if value is None:
        return None
    from ..core import jsonsafe

    text = value if value.lstrip()[:1] in ("{", "[") or value.strip() in ("true", "false") \
        else read_text_file(value, "--json-schema")
    try:
        schema = jsonsafe.loads(text)
    except ValueError as exc:
        raise UsageError(f"--json-schema: not JSON ({exc}); give a JSON Schema or the path of a file with one") from None
    from ..capabilities.structured import StructuredAnswer

    try:
        StructuredAnswer(schema)
    except ValueError as exc:
        raise UsageError(f"--json-schema: {exc}") from None
    return schema


def writable_dirs_and_sandbox(opts: RunSpec, settings: Any, rules: Any) -> tuple[Any, Any]:
    """`--add-dir` and `additionalDirectories` become writable roots (for the rules and inside
    the sandbox, with `sandbox.filesystem.allowWrite`); the sandbox is on unless `--no-sandbox`
    or trusted settings turn it off. Warns in one line when it cannot run (the Agent then makes
    the rules strict: agent/sandboxing.with_strictness), and finishes the checks of sandboxed
    commands whose watcher was killed (a project file that tried to open the sandbox was named
    with the settings)."""
    import dataclasses

    from ..sandbox import unavailable_warning
    from ..settings import sandbox_config

    added = tuple(opts.add_dir or ())
    dirs = tuple(dict.fromkeys(rules.additional_dirs + settings.additional_directories + added))
    rules = dataclasses.replace(rules, additional_dirs=dirs)
    sandbox, warnings = sandbox_config(settings, opts.sandbox), []
    writable = tuple(os.path.join(os.getcwd(), os.path.expanduser(d)) for d in dirs + sandbox.writable)
    sandbox = dataclasses.replace(sandbox, writable=writable)
    if (warning := unavailable_warning(sandbox)) is not None:
        warnings.append(warning)
    if sandbox.enabled:
        warnings += set_aside_before()
    if (warning := home_warning((os.getcwd(), *writable))) is not None:
        warnings.append(warning)
    for line in warnings:
        print(f"loopwright: warning: {visible(line)}", file=sys.stderr, flush=True)
    return rules, sandbox


def set_aside_before() -> list[str]:
    """What the checks left by sandboxed commands whose watcher was killed set aside now."""
    from ..sandbox.bwrap import shared_lock_folder
    from ..sandbox.launch import finish_pending
    from ..stores.jsonl import home

    try:
        locks = os.path.join(home(), "sandbox")
        return [line.removeprefix("loopwright: ") for line in finish_pending(locks, shared_lock_folder(locks))]
    except OSError as exc:
        return [f"the sandbox could not finish the checks of earlier commands in {home()}/sandbox: {exc}"]


def home_warning(roots: tuple[str, ...]) -> str | None:
    """loopwright's home (transcripts, schedules) inside a writable root where no protected
    folder covers it: the agent could rewrite what later runs read back."""
    from ..stores.jsonl import home

    place = os.path.realpath(home())
    for root in roots:
        real = os.path.realpath(root).rstrip("/")
        if place != real and not place.startswith(real + "/"):
            continue
        from ..permissions.paths import (
            protected,  # only then: not on every run's start-up path
        )

        if not protected(place):
            return (f"loopwright's home {home()} is inside a writable root ({root}): the agent may rewrite "
                    "its own transcripts and schedules. Set LOOPWRIGHT_HOME outside the project (a "
                    "`.loopwright` folder in it is protected)")
    return None


def make_emitter(fmt: str, verbose: bool, session_id: str, hook_events: bool = False,
                 init: dict[str, Any] | None = None) -> Callable[[Event], None]:
    """`hook_events` (`--include-hook-events`): hook_started/hook_response lines for every hook;
    without it only SessionStart's, as Claude Code does. `init`: more fields for system/init."""
    progress = Progress(sys.stderr) if verbose or (fmt == "text" and sys.stderr.isatty()) else None

    def emit(event: Event) -> None:
        if progress is not None:
            progress(event)
        elif isinstance(event, SystemInit):  # a server that failed is said even without --verbose
            for server in event.mcp_servers:
                if server.get("status") == "failed":
                    print(f"loopwright: warning: MCP server {server['name']!r} failed: "
                          f"{visible(server.get('error', ''))}; the run goes on without its tools",
                          file=sys.stderr, flush=True)
        elif isinstance(event, Notice) and event.subtype in ("memory_warning", "skill_warning",
                                                                   "auto_mode_rules_set_aside"):  # always said
            print(f"loopwright: warning: {visible(event.text)}", file=sys.stderr, flush=True)
        elif isinstance(event, Notice) and event.subtype == "context_loaded" and fmt == "text":
            print(f"loopwright: {event.text}", file=sys.stderr, flush=True)
        if isinstance(event, (HookStarted, HookResponse)) and not (hook_events or event.hook_event == "SessionStart"):
            return
        if fmt == "stream-json":
            line = stream_json(event, session_id, __version__)
            if init and isinstance(event, SystemInit) and line is not None:
                line = {**line, **init}
            if line is not None:
                sys.stdout.write(dumps(line) + "\n")
                sys.stdout.flush()

    return emit


def run_stores(flag: str | None, cwd: Any, *, pass_on: bool = False) -> Any:
    """The stores `--store` names, else `LOOPWRIGHT_STORE`, else the embedded default, for the
    project in `cwd`. `pass_on`: a flag given is also set in LOOPWRIGHT_STORE, so the runs this
    process starts (schedule fires, routine items) use the same store."""
    from ..stores import ENV, open_store, store_url

    url = store_url(flag)
    stores = open_store(url, cwd)
    if pass_on and flag is not None:
        os.environ[ENV] = url
    return stores


def open_run_session(opts: RunSpec, agent: Agent, *, checkpoints: bool = False,
                     project: Any = None) -> tuple[OpenedSession, Session]:
    """The session flags, composed: the store (`--store`) -> the opened store session (replayed
    history and recorder; its `close`, `warnings`, `records`) and the library `Session` over it (the
    recorder sees each event before the renderer) with SessionStart's `source` (startup, resume,
    fork), as a pair. File checkpoints when `checkpoints` (interactive sessions) or
    `CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING` is true, for a recorded session. `project`: the
    folder whose sessions it joins, when not the agent's own (an attempt's worktree)."""
    from ..agent import Session
    from ..session import open_session

    resuming = opts.resume is not None or opts.continue_session
    if opts.resume is not None and opts.continue_session:
        raise UsageError("use either --continue or --resume, not both")
    if opts.fork_session and not resuming:
        raise UsageError("--fork-session needs --continue or --resume")
    if opts.session_id and resuming and not opts.fork_session:
        raise UsageError("--session-id can be used with --continue or --resume only with --fork-session")
    stores = run_stores(opts.store, project or agent.cwd)
    session = open_session(stores.sessions, str(agent.cwd), resume=opts.resume,
                           continue_last=opts.continue_session, fork=opts.fork_session,
                           session_id=opts.session_id, persist=not opts.no_session_persistence,
                           opening=_opening(opts, str(agent.cwd), resuming))
    for warning in session.warnings:
        print(f"loopwright: warning: {visible(warning)}", file=sys.stderr, flush=True)
    wanted = checkpoints or os.environ.get("CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING", "").lower() in ("1", "true")
    kept = None  # a session switched to (/clear, /resume) never writes into the last one's
    if wanted and session.transcript_path:  # a recorded session: its store keeps the checkpoints
        from ..session.checkpoints import Checkpoints

        kept = Checkpoints(stores.checkpoints(session.session_id))
    return session, Session.opened(session, stores=stores, checkpoints=kept)


def _opening(opts: RunSpec, cwd: str, resuming: bool) -> dict[str, Any]:
    """What a new session's first record keeps for `loopwright replay`: the project's git commit,
    the run's spec (its settings as much as the files are) and the command line that started it,
    if any; a resume's first record keeps its own spec and command line (its prompt's)."""
    from ..session.gitstate import git_start

    ran = {"spec": opts.recorded()} | ({"argv": opts.recorded_argv()} if opts.argv else {})
    return ran if resuming else git_start(cwd) | ran


def attachments(records: Iterable[Any]) -> list[dict[str, Any]]:
    """Attachment bodies from parsed records (`session.Record`) or raw record dicts."""
    from ..session.records import AttachmentEntry

    out = []
    for r in records:
        if isinstance(r, dict):
            if r.get("type") == "attachment" and isinstance(r.get("attachment"), dict):
                out.append(r["attachment"])
        elif isinstance(r.entry, AttachmentEntry):
            out.append(dict(r.entry.attachment))
    return out
