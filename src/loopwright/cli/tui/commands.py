"""The slash commands of the interactive terminal. Each takes the room (the running session: agent,
status, output, options) and the text after the command name; front-end neutral (plain or rich)."""

from __future__ import annotations

import os

from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ...compose.render import plural, visible

if TYPE_CHECKING:
    from ...hooks.spec import Handler as HookHandler

HELP = """Commands:
  /help                 this list
  /clear                start a new conversation (a new session)
  /compact [focus]      summarise the older conversation now
  /cost                 what this session has spent
  /context              what fills the context window
  /model [NAME]         the model, or switch to another
  /permissions [allow|deny|ask RULE]   the mode and rules, or add a rule for this session
  /agents /skills /mcp  the subagents, skills and MCP servers this session has
  /resume               pick another session of this folder to continue
  /goal CONDITION       keep working until the condition holds (/goal alone: its status; /goal clear)
  /loop INTERVAL PROMPT run PROMPT now and every INTERVAL while the prompt is idle (/loop stop)
  /loop PROMPT          a self-paced loop: the model says when the next iteration comes
  /rewind [N [code|conversation|both]]  checkpoints; back to before prompt N
  /memory /hooks        the memory files loaded, the hooks that run
  /schedule --every 1h PROMPT   a persisted schedule (fired by `loopwright scheduler`)
  /NAME args            a workflow (loopwright workflow list), a skill or a custom command
  /exit, /quit          leave (Ctrl-D too)
Keys: Enter sends, Alt-Enter or Esc Enter a new line; Esc stops the running turn; Ctrl-C clears
the input or stops the turn (twice on an empty prompt leaves); Shift-Tab cycles permission modes."""

NAMES = ("/help", "/clear", "/compact", "/cost", "/context", "/model", "/permissions", "/agents", "/skills", "/mcp",
         "/resume", "/goal", "/loop", "/rewind", "/memory", "/hooks", "/schedule", "/exit", "/quit")

# What a command answers: None (nothing more to do) or a prompt to run now.
Handler = Callable[[Any, str], Awaitable[str | None]]


async def run_command(room: Any, line: str) -> str | None:
    """Runs `/name args`; returns a prompt to send now, or None."""
    name, _, args = line.strip().partition(" ")
    handler = COMMANDS.get(name)
    if handler is None:
        room.say(f"unknown command {name}: /help lists them")
        return None
    return await handler(room, args.strip())


def is_command(line: str) -> bool:
    return line.split(" ", 1)[0] in COMMANDS


async def _help(room: Any, args: str) -> None:
    room.say(HELP)


async def _cost(room: Any, args: str) -> None:
    room.say(f"${room.status.spent:.4f} this session · {plural(room.status.turn, 'turn')}")


async def _compact(room: Any, args: str) -> None:
    done = await room.live.compact(on_event=room.show, focus=args)
    room.say("compacted" if done else "nothing to compact yet")


async def _context(room: Any, args: str) -> None:
    from ...engine.compaction import estimate_tokens

    agent, window = room.agent, room.status.window()
    system = len(agent.system()) // 4
    tools = sum(len(str(t.description)) + len(str(t.input_schema)) for t in room.live.tools()) // 4
    messages = estimate_tokens(room.live.session.history)
    rows = [("system prompt", system), ("tools", tools), ("conversation", messages)]
    total = sum(n for _, n in rows)
    lines = [f"context: ~{total:,} of {window:,} tokens ({100 * total / max(1, window):.0f}%), estimated"]
    lines += [f"  {name:<14} ~{n:>8,}" for name, n in rows]
    if room.status.context_tokens:
        lines.append(f"  last request used {room.status.context_tokens:,} tokens (as the API counted them)")
    room.say("\n".join(lines))


async def _model(room: Any, args: str) -> None:
    from ...policy.models import resolve_model

    if args:
        room.live.update(model=resolve_model(args).id)  # the next prompt runs on it
        note = "" if resolve_model(args).known else " (not a model loopwright knows: no price or window)"
        room.say(f"model: {room.agent.model}{note}")
    else:
        room.say(f"model: {room.agent.model} · /model NAME switches")


async def _permissions(room: Any, args: str) -> None:
    from ...permissions.rules import apply_updates, rule_error

    rules = room.agent.permissions
    if args:
        behavior, _, rule = args.partition(" ")
        problem = rule_error(rule.strip()) if rule.strip() else "a rule such as Bash(npm test) or Read"
        if behavior not in ("allow", "deny", "ask") or problem:
            room.say(f"/permissions {args}: expected allow, deny or ask and a rule; {problem or 'got ' + behavior}")
            return
        name, _, content = rule.strip().partition("(")
        entry = {"toolName": name, **({"ruleContent": content[:-1]} if content else {})}
        room.live.update(permissions=apply_updates(rules, [{"type": "addRules", "behavior": behavior,
                                                             "rules": [entry]}]))
        room.say(f"added {behavior} rule {rule.strip()} for this session")
        return
    lines = [f"mode: {rules.mode} (Shift-Tab cycles)"]
    for kind in ("allow", "ask", "deny"):
        lines.append(f"{kind}: " + (", ".join(getattr(rules, kind)) or "none"))
    room.say(visible("\n".join(lines)))


async def _agents(room: Any, args: str) -> None:
    found = room.agent.agents or {}
    room.say("\n".join(f"  {a.name}: {a.description}" for a in found.values()) or "no subagents")


async def _skills(room: Any, args: str) -> None:
    found = room.agent.skills.found if room.agent.skills is not None else {}
    room.say(visible("\n".join(f"  /{s.name}: {s.description}" for s in found.values())) or "no skills")


async def _mcp(room: Any, args: str) -> None:
    servers = room.agent.mcp_servers or ()
    room.say(visible("\n".join(f"  {s.name} ({s.transport}, {s.scope})" for s in servers)) or "no MCP servers")


async def _resume(room: Any, args: str) -> None:
    from ...core.home import home
    from ...stores.sessionlist import attempt_label, session_files, summarize

    files = [p for p in session_files(home(), str(room.agent.cwd)) if p.stem != room.live.session.session_id][:20]
    if not files:
        room.say("no other session in this folder")
        return
    rows = [summarize(p) for p in files]
    choices = [f"{r['started'][:16]} · {plural(int(r['turns']), 'turn')} · "
               + (f"{attempt_label(r['attempt'])} · " if r.get("attempt") else "")
               + (r["first_prompt"] or "(no prompt)") for r in rows]
    picked = await room.pick("Resume which session?", choices)
    if picked is not None:
        await room.switch(resume=rows[picked]["id"])


async def _clear(room: Any, args: str) -> None:
    await room.switch(resume=None)


async def _goal(room: Any, args: str) -> str | None:
    from ...config import GOAL_CLEAR_WORDS
    from ...core.errors import UsageError
    from ...engine.goal import GoalSpec, validate_condition
    from ...compose.goals import bounds_line

    session = room.live.session
    if not args:
        room.say(visible(f"goal: {session.goal.condition}") if session.goal is not None else "No goal set")
        return None
    if args in GOAL_CLEAR_WORDS:
        session.set_goal(None)
        room.status.verdict = ""
        room.say("Goal cleared")
        return None
    try:
        goal = GoalSpec(validate_condition(args))
    except UsageError as exc:
        room.say(f"error: {exc}")
        return None
    session.set_goal(goal)
    room.status.verdict = ""
    room.say(bounds_line(goal, room.agent.model).removeprefix("loopwright: "))
    return goal.directive()


async def _loop(room: Any, args: str) -> str | None:
    return room.loop.command(args)


async def _rewind(room: Any, args: str) -> None:
    """`/rewind` lists the checkpoints; `/rewind N [code|conversation|both]` goes back to before prompt N."""
    session = room.live.session
    store = session.checkpoints
    if store is None:
        room.say("/rewind: this session keeps no checkpoints (it is not recorded)")
        return
    words = args.split()
    if not words:
        listed = store.list()
        for c in listed:
            room.say(visible(f"{c.number:>3}  {len(c.files)} file(s) {', '.join(os.path.basename(f) for f in c.files[:4])}"))
        room.say("no checkpoints yet" if not listed else "/rewind N [code|conversation|both]: back to before prompt N")
        return
    target, what = store.find(words[0]), (words[1] if len(words) > 1 else "code")
    if target is None or what not in ("code", "conversation", "both"):
        room.say("/rewind N [code|conversation|both]: N is a checkpoint's number (see /rewind)")
        return
    if what in ("code", "both"):
        for line in store.rewind(target) or ["no file to change"]:
            room.say(visible(line))
        room.say("changes made by shell commands are not tracked")
    if what in ("conversation", "both") and session.recorder is not None and session.stores is not None:
        from ...session.records import REWOUND, Record, SystemEntry, replay

        session.recorder.append(SystemEntry(REWOUND, f"conversation rewound to before {target.prompt_id}",
                                            data={"before": target.prompt_id}), sync=True)
        raw, _ = session.stores.sessions.load(session.session_id)
        session.history = replay(Record.from_json(r) for r in raw)
        room.say(f"conversation rewound to before prompt {target.number}")


async def _memory(room: Any, args: str) -> None:
    """The memory files this session loaded (CLAUDE.md and the rest), in the order they came."""
    memory = room.agent.memory
    if memory is None:
        room.say("memory files are off (--bare, or the setting)")
        return
    loaded = sorted(memory.loaded)
    if not loaded:  # nothing said yet: what the first prompt will bring
        loaded = [f"{f.path} (comes with the first prompt)" for f in memory.fork().at_start()]
    room.say("\n".join(visible(p) for p in loaded) if loaded else "no memory files here")


async def _hooks(room: Any, args: str) -> None:
    """The hooks this session runs: event, matcher, what runs."""
    from ...hooks.runner import HookRunner

    runner = room.agent.hooks
    regs = runner.registrations if isinstance(runner, HookRunner) else []  # a caller's own runner lists none
    lines = [visible(f"{r.event} [{r.matcher.pattern or '*'}] {_handler(r.handler)}") for r in regs]
    room.say("\n".join(lines) if lines else "no hooks")


def _handler(handler: HookHandler) -> str:
    from ...hooks.spec import CommandSpec, HttpSpec, PromptSpec

    if isinstance(handler, CommandSpec) and handler.command:
        return f"command: {handler.command[:100]}"
    if isinstance(handler, HttpSpec) and handler.url:
        return f"url: {handler.url[:100]}"
    if isinstance(handler, PromptSpec) and handler.prompt:
        return f"prompt: {handler.prompt[:100]}"
    return type(handler).__name__


async def _schedule(room: Any, args: str) -> None:
    """`/schedule --every 1h PROMPT` (or --cron): a persisted schedule, fired by `loopwright scheduler`."""
    import shlex

    try:
        words = shlex.split(args)
    except ValueError as exc:
        room.say(f"/schedule: {exc}")
        return
    if not words:
        room.say("/schedule --every 1h PROMPT, or --cron \"0 9 * * 1-5\" PROMPT: runs while `loopwright scheduler` "
                 "runs")
        return
    import contextlib
    import io

    from ...core.errors import LoopwrightError
    from ..commands.schedule import run_schedule

    said = io.StringIO()
    here = os.getcwd()
    try:
        os.chdir(room.agent.cwd)  # a schedule belongs to the folder it is added in
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            run_schedule(["add", *words])
    except LoopwrightError as exc:
        said.write(f"error: {exc}")
    except SystemExit:  # --help, or argparse's own refusal (already written to `said`)
        pass
    finally:
        os.chdir(here)
    room.say(visible(said.getvalue().strip() or "schedule added"))


async def _exit(room: Any, args: str) -> None:
    room.leaving = True


COMMANDS: dict[str, Handler] = {
    "/help": _help, "/cost": _cost, "/compact": _compact, "/context": _context, "/model": _model,
    "/permissions": _permissions, "/agents": _agents, "/skills": _skills, "/mcp": _mcp, "/resume": _resume,
    "/clear": _clear, "/goal": _goal, "/loop": _loop, "/rewind": _rewind, "/exit": _exit, "/quit": _exit,
    "/memory": _memory, "/hooks": _hooks, "/schedule": _schedule,
}
