"""Permission asks at the terminal: the exact command, path or URL is shown, and the answer is one
of yes, no, always (for a rule made from this very call, kept for the session) or a message the
model gets instead of the call. How the choice is read is the front end's (`choose`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable
from urllib.parse import urlsplit

from ...core.ports import Approval
from ...compose.render import _short

if TYPE_CHECKING:
    from ...agent.run import Run

# choose(lines shown, rule "always" would add) -> ("y" | "n" | "a" | "t", text told to the model)
Choose = Callable[[list[str], str], Awaitable[tuple[str, str]]]


def always_rule(tool: str, tool_input: dict[str, Any]) -> str:
    """The rule "always" adds: the exact command for Bash, the domain for WebFetch, else the tool."""
    if tool == "Bash" and isinstance(tool_input.get("command"), str) and "\n" not in tool_input["command"]:
        return f"Bash({tool_input['command'].strip()})"
    if tool == "WebFetch" and isinstance(tool_input.get("url"), str) and urlsplit(tool_input["url"]).hostname:
        return f"WebFetch(domain:{urlsplit(tool_input['url']).hostname})"
    return tool


def shown(tool: str, tool_input: dict[str, Any], reason: str) -> list[str]:
    """What the ask shows: the tool and exactly what it would touch or run, then why it asks."""
    lines = [f"{tool} wants to run:" if tool == "Bash" else f"{tool} wants:"]
    for key in ("command", "file_path", "notebook_path", "path", "url", "pattern"):
        value = tool_input.get(key)
        if isinstance(value, str):
            lines += ["  " + line for line in value.splitlines()[:12]] or ["  (empty)"]
            break
    else:
        lines.append("  " + _short(tool_input, 200))
    if tool == "Write" and isinstance(tool_input.get("content"), str):
        content = tool_input["content"].splitlines()
        lines += [f"  + {x}" for x in content[:8]] + ([f"  (… {len(content) - 8} more lines)"] if len(content) > 8 else [])
    if tool in ("Edit", "MultiEdit") and isinstance(tool_input.get("old_string"), str):
        lines += [f"  - {x}" for x in tool_input["old_string"].splitlines()[:6]]
        lines += [f"  + {x}" for x in str(tool_input.get("new_string", "")).splitlines()[:6]]
    lines.append(f"  ({reason})")
    return lines


class Asker:
    """The session's approver. "Always" adds an allow rule to the session's rules, for the rest of
    this turn (the gate's) and the next ones (the agent's): a later call the rule covers is not
    asked about, while one the gate asks about whatever the rules say (a protected path, a write
    outside the project) still is."""

    def __init__(self, live: Run, choose: Choose) -> None:
        """`live`: the session's run, whose agent an "always" replaces."""
        self.live, self.choose = live, choose

    async def approve(self, tool_name: str, tool_input: dict[str, Any], reason: str) -> bool | Approval:
        rule = always_rule(tool_name, tool_input)
        try:
            key, text = await self.choose(shown(tool_name, tool_input, reason), rule)
        except EOFError:
            return False
        if key == "a":
            name, _, content = rule.partition("(")
            entry = {"toolName": name, **({"ruleContent": content[:-1]} if content else {})}
            update = {"type": "addRules", "behavior": "allow", "rules": [entry], "destination": "session"}
            from ...permissions.rules import apply_updates

            self.live.update(permissions=apply_updates(self.live.agent.permissions, [update]))  # later prompts too
            return Approval(True, updates=(update,))
        if key == "t" and text.strip():
            return Approval(False, message=f"The user declined this {tool_name} call and says what to do "
                                           f"instead: {text.strip()}")
        return key == "y"
