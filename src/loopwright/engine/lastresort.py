"""How a run ends when something cuts it short: the results given to tool calls that a limit, an
interrupt or an internal error left unfinished (so the transcript is a conversation a resume can
continue, and nothing is run twice), and the one line an internal error is reported with."""

from __future__ import annotations

from typing import Callable, Collection, Mapping

from ..core.events import Event
from ..core.types import Message, ToolResultBlock

INTERRUPTED = "Interrupted: the run was stopped before this tool call finished."
# What Claude Code writes into the conversation when the user interrupts (and says in the result)
USER_INTERRUPTED = "[Request interrupted by user]"
USER_INTERRUPTED_TOOLS = "[Request interrupted by user for tool use]"
DEADLINE_RUNNING = ("Interrupted: the run reached its time limit (--max-duration) while this call was running, "
                    "so it was stopped; it may have had part of its effect.")
DEADLINE_WAITING = "Not run: the run reached its time limit (--max-duration) before this call started."
SPENT_WAITING = "Not run: the response that asked for this call used up the run's budget ({what}), so nothing more runs."
CRASH_RUNNING = ("Outcome unknown: loopwright stopped on an internal error while this call was running; it may "
                 "have finished, partly run or not run at all. Check its effects before running it again.")
CRASH_WAITING = "Not run: loopwright stopped on an internal error before this call started."
CrashLog = Callable[[BaseException], "str | None"]  # writes the traceback somewhere; says where


def answer_unfinished(last: Message, done: Mapping[str, ToolResultBlock], started: Collection[str],
                      running: str, waiting: str) -> Message | None:
    """The user message that answers every tool call of `last` (the assistant's latest message):
    the result of each call that finished, `running` for one that started, `waiting` for one that
    never did. None when `last` asks for no tool."""
    if last.role != "assistant" or not last.tool_uses:
        return None
    return Message("user", tuple(
        done.get(call.id) or ToolResultBlock(call.id, running if call.id in started else waiting, True)
        for call in last.tool_uses))


def crash_report(exc: BaseException, crash_log: CrashLog | None) -> str:
    """The error line of an internal error: what it was and where its traceback went."""
    where = None
    if crash_log is not None:
        try:
            where = crash_log(exc)
        except Exception:  # noqa: BLE001 - the log is a courtesy; the run still ends with its result
            where = None
    said = str(exc)
    said = said if len(said) <= 300 else said[:297] + "..."
    line = f"Internal error: {type(exc).__name__}{': ' + said if said else ''} (a bug in loopwright"
    return f"{line}; the traceback is in {where})" if where else f"{line})"


def guarded(emit: Callable[[Event], None]) -> Callable[[Event], None]:
    """`emit` for a run that is ending on an internal error: a second failure while recording or
    showing its last events is dropped, so the result still comes back (the first is reported)."""
    def emit_guarded(event: Event) -> None:
        try:
            emit(event)
        except Exception:  # noqa: BLE001, S110 - the run is already failing; its result must still return
            pass

    return emit_guarded
