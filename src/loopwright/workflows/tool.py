"""`Workflow`: the model writes a workflow script and runs it. Python has no safe in-process
sandbox, so the script runs in a process of its own under the OS sandbox — nothing writable, no
network, no files but Python's own, a time limit — and reaches the runtime only through JSON lines
on a pipe (`childmain`); each `wf.agent(…)` it asks for is an ordinary subagent under the
session's permissions, counted and bounded as a workflow's agents are. Without the sandbox, the
tool refuses and says why (workflows you write yourself run with `loopwright workflow run`)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import lifeline
from ..core.errors import ToolInputError
from ..core.ports import Access, ToolContext, ToolOutput

if TYPE_CHECKING:  # the runtime loads when a workflow runs, not when the tool is offered
    from .runtime import AgentRunner, Workflow

TIME_LIMIT_S = 600.0
MAX_LINE = 10 * 1024 * 1024

Jail = Callable[[], "list[str] | str"]  # the sandbox's argv prefix for a Python process, or why there is none


class WorkflowTool:
    name = "Workflow"
    read_only = True  # for scheduling: what its agents do goes through their own gate
    description = (
        "Run a workflow you write: a Python script defining `async def main(wf, args)` that orchestrates "
        "subagents. `await wf.agent(prompt, model=None, tools=None, schema=None)` runs one subagent and returns "
        "its final text (or, with a JSON schema, its structured answer); `await wf.parallel(*coroutines)` runs "
        "them at once; `await wf.pipeline(value, *steps)` passes a value through steps; `wf.log(text)`, "
        "`wf.phase(name)`, `wf.budget` (spend left). The return value of main is this tool's result; only it "
        "enters the conversation. The script runs sandboxed: it cannot read or write files or use the network "
        "itself — its agents do the work.")

    def __init__(self, runner: AgentRunner, jail: Jail, budget_usd: Callable[[], float | None] = lambda: None) -> None:
        self.runner, self.jail, self.budget_usd = runner, jail, budget_usd

    @property
    def input_schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": ["script"], "properties": {
            "script": {"type": "string", "description": "The Python source, defining `async def main(wf, args)`."},
            "args": {"description": "Passed to main as `args` (any JSON value)."},
            "description": {"type": "string", "description": "What the workflow does, in a few words."}}}

    def validate(self, raw: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(raw) - set(self.input_schema["properties"]))
        if unknown:
            raise ToolInputError(f"Workflow: unknown field(s) {', '.join(unknown)}")
        if not isinstance(raw.get("script"), str) or "async def main" not in raw["script"]:
            raise ToolInputError("Workflow: `script` must be Python source defining `async def main(wf, args)`")
        return raw

    def access(self, tool_input: dict[str, Any]) -> Access:
        return Access("session")

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        jail = self.jail()
        if isinstance(jail, str):
            return ToolOutput(f"Workflow refused: a workflow you write runs only under the OS sandbox, and {jail}. "
                              "Do the steps yourself (the Agent tool runs a subagent).", is_error=True)
        from .journal import Journal
        from .runtime import Run, run_workflow

        run = Run(Journal(None), self.runner, budget_usd=self.budget_usd())
        task = asyncio.ensure_future(run_workflow(run, "model-written", lambda wf, _: _drive(jail, args, wf), None))
        try:
            done, _ = await asyncio.wait({task}, timeout=_limit())
        finally:
            if not task.done():  # past the time limit, or the turn was interrupted
                run.abort()
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if not done:
            return ToolOutput(f"The workflow ran longer than {_limit():g} s and was stopped "
                              f"(workflow: {run.done} agent(s), ${run.cost_usd:.4f}).", is_error=True)
        outcome = task.result()
        summary = f"(workflow: {run.done} agent(s), ${run.cost_usd:.4f})"
        if outcome.status != "success":
            return ToolOutput(f"The workflow failed: {outcome.error} {summary}", is_error=True)
        value = outcome.value
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return ToolOutput(f"{text}\n\n{summary}")


async def _drive(jail: list[str], args: dict[str, Any], wf: Workflow) -> Any:
    """Start the sandboxed process, answer its requests until it says it is done."""
    from .runtime import WorkflowError

    tether = lifeline.tether(jail)
    proc = await asyncio.create_subprocess_exec(
        *tether.argv, "-c", Path(__file__).with_name("childmain.py").read_text(), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, limit=MAX_LINE, start_new_session=True)
    tether.hold(proc.pid)
    assert proc.stdin is not None and proc.stdout is not None
    pending: set[asyncio.Task[Any]] = set()

    def answer(reply: dict[str, Any]) -> None:
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.write((json.dumps(reply) + "\n").encode())

    async def agent(request: dict[str, Any]) -> None:
        try:
            value = await wf.agent(request.get("prompt", ""), model=request.get("model"), tools=request.get("tools"),
                                   schema=request.get("schema"))
            answer({"id": request.get("id"), "value": value, "budget": _left(wf)})
        except WorkflowError as exc:
            answer({"id": request.get("id"), "error": str(exc), "budget": _left(wf)})

    try:
        proc.stdin.write((json.dumps({"script": args["script"], "args": args.get("args"), "budget": _left(wf)})
                          + "\n").encode())
        while line := await proc.stdout.readline():
            request = json.loads(line)
            op = request.get("op")
            if op == "agent":
                task = asyncio.ensure_future(agent(request))
                pending.add(task)
                task.add_done_callback(pending.discard)
            elif op == "log":
                wf.log(request.get("text", ""))
            elif op == "phase":
                wf.phase(request.get("name", ""))
            elif op == "done":
                return request.get("value")
            elif op == "failed":
                raise WorkflowError(f"{request.get('error')}\n{request.get('where', '')}".strip())
        err = (await proc.stderr.read()).decode(errors="replace")[-1500:] if proc.stderr else ""
        raise WorkflowError(f"the workflow's process ended without an answer (exit {await proc.wait()}): {err}")
    except (ValueError, KeyError) as exc:
        raise WorkflowError(f"the workflow's process sent something unreadable ({exc})") from None
    finally:
        for task in pending:
            task.cancel()
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            await proc.wait()


def _left(wf: Workflow) -> float | None:
    left = wf.budget
    return None if left == float("inf") else left


def _limit() -> float:
    try:
        return float(os.environ.get("LOOPWRIGHT_WORKFLOW_TIME_LIMIT", TIME_LIMIT_S))
    except ValueError:
        return TIME_LIMIT_S
