"""Composition for library users: `Agent` (agent/agent.py) describes a model, tools, limits and
permissions; `Session` (agent/session.py) is one conversation; `Run` (agent/run.py) works the agent on
a session with the resources it opens; `sandboxing` puts the OS sandbox around its tools and
checks; `transport` is what its hooks and crash log use of the outside world."""

from .agent import DEFAULT_SYSTEM_PROMPT, Agent, default_system_prompt
from .run import Run
from .session import Session

__all__ = ["DEFAULT_SYSTEM_PROMPT", "Agent", "Run", "Session", "default_system_prompt"]
