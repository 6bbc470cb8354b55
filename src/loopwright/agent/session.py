"""`Session`: one conversation and what it keeps between prompts: its history and id, where it is
recorded, its file checkpoints, whether SessionStart/SessionEnd fired (and the environment
SessionStart's hooks set), and its goal. An `Agent` describes how to work; a `Session` is what
was said; a `Run` (agent/run.py) joins the two with live resources."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any, Callable, Literal

from ..core.events import Event
from ..core.hookevents import HookEvent
from ..core.fastclass import dataclass
from ..core.ids import uuid4
from ..core.types import Message

if TYPE_CHECKING:
    from ..engine.goal import GoalJudge, GoalSpec
    from ..session.opening import OpenedSession
    from .spec import AgentSpec

SOURCES = ("startup", "resume", "fork", "clear", "compact")


@dataclass(eq=False)
class Session:
    """A conversation that carries across prompts: pass the same `Session` to `Agent.run(…,
    session=s)` or `agent.open(s)` and the next prompt continues it. `source` is what SessionStart
    hooks see (startup, resume, fork); `recorder` (a session store's) sees every event first."""

    history: list[Message] = field(default_factory=list)
    session_id: str = field(default_factory=uuid4)
    recorder: Callable[[Event], None] | None = None
    transcript_path: str = ""
    source: str = "startup"
    stores: Any = None  # core.storeports.Stores the session lives in: its transcript, workflow journal
    checkpoints: Any = None  # loopwright.session.checkpoints.Checkpoints: files kept before Write/Edit
    goal: GoalSpec | None = None  # set with `set_goal`; a `Run` takes its agent's when none was set

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"Session source: expected one of {', '.join(SOURCES)}, got {self.source!r}")
        self.history = list(self.history)
        self.state: Literal["new", "started", "ended"] = "new"  # SessionStart fired -> SessionEnd fired
        self.env: dict[str, str] = {}  # what SessionStart hooks put in CLAUDE_ENV_FILE (agent.envfile)
        self.goal_set = self.goal is not None  # an explicit goal (even None, cleared) beats the agent's
        self.judge: GoalJudge | None = None  # the goal's judge, made by the first run that needs it
        self.goal_armed = False
        self.goal_baseline: dict[str, str] | None = None

    @classmethod
    def opened(cls, opened: OpenedSession, *, stores: Any = None, checkpoints: Any = None) -> "Session":
        """A session from a store (`loopwright.session.open_session`'s answer): its id, history,
        transcript, recorder and source."""
        return cls(history=opened.history, session_id=opened.session_id, recorder=opened.recorder,
                   transcript_path=opened.transcript_path, source=opened.source, stores=stores,
                   checkpoints=checkpoints)

    def set_goal(self, spec: GoalSpec | None, baseline: dict[str, str] | None = None) -> None:
        """Set (or with None clear) the session's goal; a new goal replaces the old one.
        `baseline`: protected-file fingerprints recorded earlier (a resumed goal)."""
        self.goal, self.goal_set, self.judge, self.goal_armed, self.goal_baseline = spec, True, None, False, baseline

    def restart(self) -> None:
        """SessionStart fires again with the next prompt, as for a new start (the CLI moved this
        session's place to another conversation: `/clear`, `/resume`)."""
        self.state = "new"

    def hook_payload(self, agent: AgentSpec, event: HookEvent) -> dict[str, Any]:
        """The fields every hook of this session hears, when `agent` runs it."""
        return {"session_id": self.session_id, "transcript_path": self.transcript_path, "cwd": str(agent.cwd),
                "permission_mode": agent.permissions.mode, "hook_event_name": event}
