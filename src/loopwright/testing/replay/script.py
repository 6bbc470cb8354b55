"""A recorded session as a simulator script whose answers follow the record: each request is
answered by what the model answered to the same conversation so far (`conversation.key`), not by
its place in the call order, so a subagent's calls and the main loop's interleave as they may,
and a request the record never saw goes unanswered (HTTP 400) and is noted as a divergence.

What answers what: an assistant record answers the conversation before it (main transcript and
each sidechain); a compaction's summary answers the summary request made from the conversation
before it, and that conversation itself, when the record holds no answer to it, gets "prompt is
too long" so the replay compacts there too; a goal's evaluator call answers the same evidence
(`evaluatorCalls` on goal_status records; a session older than those gets the recorded verdicts
in order)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from ...engine.compaction import SUMMARY_INSTRUCTIONS
from ...engine.goal import EVALUATOR_SYSTEM
from ...hooks.prompt import PROMPT_HOOK_SYSTEM
from ...permissions.automode import SYSTEM as CLASSIFIER_SYSTEM
from ...replay.conversation import evidence_key, key, side_key, text_of
from ...session.records import AssistantEntry, AttachmentEntry, CompactEntry, Record, SystemEntry, restore
from ..simulator.script import Reply, Script, parse_reply

_EVALUATOR_MARK = EVALUATOR_SYSTEM[:60]
_SUMMARY_MARK = SUMMARY_INSTRUCTIONS[:60]
_SIDE_MARKS = {"prompt_hook": PROMPT_HOOK_SYSTEM[:60], "classifier": CLASSIFIER_SYSTEM[:60]}


@dataclass
class Turn:
    kind: str  # "main", "agent", "evaluator", "summary", "compaction", "prompt_hook", "classifier"
    where: str  # the record it came from, for reports
    replies: list[Reply]
    conversation: list[dict[str, Any]] = field(default_factory=list)  # what it answers (for reports)
    served: int = 0


@dataclass
class Asked:
    """One request the replay made: its kind, its conversation, and whether the record answered it."""

    kind: str
    messages: list[dict[str, Any]]
    answered: bool
    where: str = ""


class ReplayScript(Script):
    """`Simulator(ReplayScript(chains))`. `chains`: (name, parsed records) of the session and its
    sidechains, already moved to the scratch copy's paths."""

    def __init__(self, chains: list[tuple[str, list[Record]]]) -> None:
        super().__init__([])
        self.turns: dict[str, Turn] = {}
        self.compactions: list[tuple[list[dict[str, Any]], Turn]] = []  # (conversation before it, summary)
        self.verdicts: list[Turn] = []  # an older session's evaluator answers, in order
        for name, records in chains:
            self._read(name, records)

    def cursor(self) -> "ReplayCursor":  # type: ignore[override]
        return ReplayCursor(self)

    def _read(self, name: str, records: list[Record]) -> None:
        kind = "main" if name == "main" else "agent"
        for i, record in enumerate(records):
            where = f"{name} record {i + 1}"
            match record.entry:
                case AssistantEntry(message=message, model=model, id=mid, stop_reason=stop, usage=usage):
                    before = _api(restore(records[:i]).messages)
                    spec = {"content": _content(message.to_api()["content"]), "stop_reason": stop or "end_turn",
                            "usage": usage.to_api(), **({"model": model} if model else {}),
                            **({"id": mid} if mid else {})}
                    self._add(key(before), Turn(kind, where, [parse_reply(spec, where)], before))
                case CompactEntry(summary=summary, pre_tokens=pre):
                    before = _api(restore(records[:i]).messages)
                    if key(before) not in self.turns:  # the record compacted before answering it
                        fault = {"fault": {"status": 400, "error_type": "invalid_request_error",
                                           "message": f"prompt is too long: {pre + 1} tokens > {max(pre, 1)} maximum",
                                           "error_code": "context_length_exceeded"}}  # as Chat Completions says it
                        self._add(key(before), Turn("compaction", where, [parse_reply(fault, where)], before))
                    answer = parse_reply({"text": f"<summary>\n{summary}\n</summary>"}, where)
                    self.compactions.append((before, Turn("summary", where, [answer], before)))
                case AttachmentEntry(attachment=attachment) if attachment.get("type") == "goal_status":
                    self._verdicts(attachment, where)
                case SystemEntry(subtype="model_call", data=data):
                    self._side(data, where)
                case _:
                    pass

    def _verdicts(self, status: Any, where: str) -> None:
        calls = status.get("evaluatorCalls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, dict) and isinstance(call.get("answer"), dict):
                    answer = call["answer"]
                    spec = {"content": _content(answer.get("content") or []),
                            "stop_reason": answer.get("stop_reason") or "end_turn", "usage": answer.get("usage") or {}}
                    evidence = [{"role": "user", "content": str(call.get("evidence", ""))}]
                    self._add(evidence_key(str(call.get("evidence", ""))),
                              Turn("evaluator", where, [parse_reply(spec, where)], evidence))
            return
        # a session recorded before evaluator calls were kept: its verdicts, in order
        reason = str(status.get("reason", ""))
        if status.get("sentinel") or reason.startswith(("a check failed", "protected files changed")) \
                or not status.get("iterations"):
            return
        verdict = {"ok": bool(status.get("met")), "reason": reason}
        if status.get("failed"):
            verdict["impossible"] = True
        self.verdicts.append(Turn("evaluator", where, [parse_reply({"text": json.dumps(verdict)}, where)]))

    def _side(self, call: Any, where: str) -> None:
        """A prompt hook's or the classifier's recorded call (`system/model_call`)."""
        purpose, answer = call.get("purpose"), call.get("answer")
        if purpose not in _SIDE_MARKS or not isinstance(answer, dict):
            return
        spec = {"content": _content(answer.get("content") or []), "stop_reason": answer.get("stop_reason") or "end_turn",
                "usage": answer.get("usage") or {}}
        request = str(call.get("request", ""))
        self._add(side_key(purpose, request),
                  Turn(purpose, where, [parse_reply(spec, where)], [{"role": "user", "content": request}]))

    def _add(self, k: str, turn: Turn) -> None:
        known = self.turns.get(k)
        if known is None:
            self.turns[k] = turn
        else:  # the same conversation answered again later (a retry the record kept): in order
            known.replies += turn.replies


class ReplayCursor:
    """Answers requests from the replay script; thread-safe, as the simulator's cursors are."""

    def __init__(self, script: ReplayScript) -> None:
        self.script = script
        self.asked: list[Asked] = []
        self._compactions_used: set[int] = set()
        self._verdicts_used = 0
        self._lock = threading.Lock()

    def take(self, body: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        with self._lock:
            kind, turn = self._find(body, messages)
            reply = None
            if turn is not None:
                # the same conversation asked again (a retry after a transport error) gets the
                # same answer; a record that answered it twice answers in that order
                reply = turn.replies[min(turn.served, len(turn.replies) - 1)]
                turn.served += 1
            self.asked.append(Asked(kind, messages, turn is not None, turn.where if turn else ""))
            return reply

    def _find(self, body: dict[str, Any], messages: list[dict[str, Any]]) -> tuple[str, Turn | None]:
        system = text_of(body.get("system") or "")
        if _EVALUATOR_MARK in system:
            evidence = text_of(messages[0].get("content")) if messages else ""
            turn = self.script.turns.get(evidence_key(evidence))
            if turn is None and self._verdicts_used < len(self.script.verdicts):
                turn = self.script.verdicts[self._verdicts_used]
                self._verdicts_used += 1
            return "evaluator", turn
        for purpose, mark in _SIDE_MARKS.items():
            if mark in system:
                request = text_of(messages[0].get("content")) if messages else ""
                return purpose, self.script.turns.get(side_key(purpose, request))
        last = messages[-1] if messages else {}
        if last.get("role") == "user" and _SUMMARY_MARK in text_of(last.get("content")):
            asked = key(_without_summary_ask(messages))
            for n, (before, turn) in enumerate(self.script.compactions):
                if n not in self._compactions_used and any(key(before[:k]) == asked for k in range(1, len(before) + 1)):
                    self._compactions_used.add(n)
                    return "summary", turn
            return "summary", None
        return "conversation", self.script.turns.get(key(messages))

    def remaining(self) -> list[dict[str, Any]]:
        with self._lock:
            return [{"where": t.where, "kind": t.kind} for t in self.script.turns.values()
                    if t.served == 0 and t.kind in ("main", "agent", "evaluator", "prompt_hook", "classifier")]


def _without_summary_ask(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation a summary request summarises: its instructions taken off the last turn."""
    last = dict(messages[-1])
    content = last.get("content")
    if isinstance(content, list):
        last["content"] = [b for b in content if not (isinstance(b, dict) and b.get("type") == "text"
                                                      and _SUMMARY_MARK in str(b.get("text", "")))]
    else:
        last["content"] = ""
    return [*messages[:-1], last] if last["content"] else messages[:-1]


def _api(messages: Any) -> list[dict[str, Any]]:
    return [m.to_api() for m in messages]


def _content(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recorded blocks as a script sends them (each tool call keeps its recorded id)."""
    return [dict(b) for b in blocks if isinstance(b, dict)]

