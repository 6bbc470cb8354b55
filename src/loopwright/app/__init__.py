"""Composition for library users: `Agent` (app/agent.py) wires a model, tools, limits and
permissions into the loop; `sandboxing` puts the OS sandbox around its tools and checks;
`transport` is what its hooks and crash log use of the outside world."""

from .agent import DEFAULT_SYSTEM_PROMPT, Agent, default_system_prompt

__all__ = ["DEFAULT_SYSTEM_PROMPT", "Agent", "default_system_prompt"]
