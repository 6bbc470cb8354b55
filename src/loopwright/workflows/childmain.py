"""The process a model-written workflow runs in, under the OS sandbox: the standard library only
(this text is handed to `python -I -S -c`; nothing of loopwright is importable in there). It reads
one JSON line — the script and its arguments — runs the script's `async def main(wf, args)`, and
reaches the runtime only through JSON lines on its stdin and stdout: `wf.agent(…)` is a request the
parent answers by running a subagent under the session's permissions. Whatever the script prints
goes to stderr."""

import asyncio
import json
import os
import sys
import time
import traceback


class WorkflowFailed(Exception):
    pass


class Channel:
    def __init__(self) -> None:
        self.out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)  # what the script or a program it starts prints must not break the protocol
        sys.stdout = sys.stderr
        self.waiting: dict[int, asyncio.Future] = {}
        self.next_id = 0
        self.budget = None  # what is left of the workflow's budget, as the parent last said

    def send(self, message: dict) -> None:
        self.out.write(json.dumps(message) + "\n")
        self.out.flush()

    async def ask(self, message: dict):
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        self.send({**message, "id": self.next_id})
        return await future

    async def read(self) -> None:
        loop = asyncio.get_running_loop()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            answer = json.loads(line)
            future = self.waiting.pop(answer.get("id"), None)
            if future is None or future.done():
                continue
            self.budget = answer.get("budget", self.budget)
            if "error" in answer:
                future.set_exception(WorkflowFailed(answer["error"]))
            else:
                future.set_result(answer.get("value"))


class Wf:
    """The workflow API, as the script sees it."""

    def __init__(self, channel: Channel, budget) -> None:
        self._channel = channel
        channel.budget = budget

    @property
    def budget(self) -> float:
        left = self._channel.budget
        return float("inf") if left is None else left

    async def agent(self, prompt, *, model=None, tools=None, schema=None):
        return await self._channel.ask({"op": "agent", "prompt": prompt, "model": model,
                                        "tools": list(tools) if tools is not None else None, "schema": schema})

    async def parallel(self, *work):
        return list(await asyncio.gather(*work))

    async def pipeline(self, value, *steps):
        for step in steps:
            value = step(value)
            if asyncio.iscoroutine(value):
                value = await value
        return value

    def log(self, text) -> None:
        self._channel.send({"op": "log", "text": str(text)})

    def phase(self, name) -> None:
        self._channel.send({"op": "phase", "name": str(name)})

    def now(self) -> float:
        return time.time()

    def random(self) -> float:
        import random
        return random.random()


async def run() -> None:
    start = json.loads(sys.stdin.readline())
    channel = Channel()
    reader = asyncio.ensure_future(channel.read())
    scope: dict = {"__name__": "workflow"}
    try:
        exec(compile(start["script"], "<workflow>", "exec"), scope)
        main = scope.get("main")
        if not asyncio.iscoroutinefunction(main):
            raise WorkflowFailed("the script must define `async def main(wf, args)`")
        value = await main(Wf(channel, start.get("budget")), start.get("args"))
        channel.send({"op": "done", "value": value if _jsonable(value) else str(value)})
    except BaseException as exc:  # everything the script did wrong is the tool's error
        where = traceback.format_exception(exc)[-3:]
        channel.send({"op": "failed", "error": f"{type(exc).__name__}: {exc}", "where": "".join(where)[-1500:]})
    finally:
        reader.cancel()


def _jsonable(value) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


if __name__ == "__main__":
    asyncio.run(run())
