"""Permission rules as data: the mode, `Tool` / `Tool(specifier)` rules for deny, ask and allow,
the writable directories; their syntax, flags and settings forms. Pure."""

from __future__ import annotations

import fnmatch
import posixpath
import re
from dataclasses import replace
from functools import lru_cache
from typing import Any, Literal, Mapping, Sequence, get_args

from ..core.fastclass import dataclass

__all__ = ["MODES", "MODE_ALIASES", "PermissionMode", "PermissionRules", "anchor_rule", "apply_updates", "bypass_refusal", "name_hits",
           "normalise_mode", "parse_rule", "parse_tool_list", "rule_error"]

PermissionMode = Literal["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "auto"]
MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)
MODE_ALIASES = {"manual": "default"}


@lru_cache(maxsize=64)  # asked every turn; a session's deny list seldom changes
def _removed(deny: Sequence[str]) -> frozenset[str]:
    return frozenset(r.strip() for r in deny if "(" not in r)


@dataclass(frozen=True, slots=True)
class PermissionRules:
    """The mode and the rules (`Tool` or `Tool(specifier)`), checked deny, then ask, then allow.
    `additional_dirs` are writable roots beside the working directory (`--add-dir`). `strict`:
    the sandbox is on but cannot start here, so the shell gate lets only a short list of readers
    run without asking (bash/nosandbox), in every mode but bypassPermissions."""

    mode: PermissionMode = "default"
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    additional_dirs: tuple[str, ...] = ()
    strict: bool = False

    def removed_tools(self) -> frozenset[str]:
        """Bare names in the deny list take the tool out of the request altogether."""
        if not self.deny:
            return frozenset()
        return _removed(self.deny) if type(self.deny) is tuple else _removed.__wrapped__(self.deny)

    @classmethod
    def from_settings(cls, section: Mapping[str, Any], *, root: str | None = None) -> PermissionRules:
        """From a settings file's `permissions` object; `/x` paths in its rules are made
        relative to `root` (the folder holding the settings folder) when it is given."""
        def rules(key: str) -> tuple[str, ...]:
            values = section.get(key) or ()
            if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
                raise ValueError(f"permissions.{key}: expected a list of rule strings")
            for v in values:
                if (why := rule_error(v)) is not None:
                    raise ValueError(f"permissions.{key}: {why}")
            return tuple(anchor_rule(v, root) for v in values) if root else tuple(values)

        mode = normalise_mode(section.get("defaultMode") or "default")
        if mode is None:
            raise ValueError(f"permissions.defaultMode: expected one of {', '.join(MODES)}, "
                             f"got {section.get('defaultMode')!r}")
        dirs = section.get("additionalDirectories") or ()
        if not isinstance(dirs, (list, tuple)) or not all(isinstance(d, str) for d in dirs):
            raise ValueError("permissions.additionalDirectories: expected a list of paths")
        return cls(mode, rules("allow"), rules("deny"), rules("ask"), tuple(dirs))

    def merged(self, higher: PermissionRules) -> PermissionRules:
        """Rules add up; the higher source's mode wins unless it is the default."""
        mode = higher.mode if higher.mode != "default" else self.mode
        return PermissionRules(mode, self.allow + higher.allow, self.deny + higher.deny, self.ask + higher.ask,
                               self.additional_dirs + higher.additional_dirs, self.strict or higher.strict)


def normalise_mode(mode: str) -> PermissionMode | None:
    """`mode` as the permission mode it names (aliases resolved), None when it names none."""
    mode = MODE_ALIASES.get(mode, mode)
    return next((known for known in MODES if known == mode), None)


def bypass_refusal(mode: str, *, is_root: bool, sandboxed: bool, override: bool) -> str | None:
    """Why bypassPermissions may not start here, or None. As root, outside a sandbox, a bypassed
    agent can change the whole machine."""
    if mode != "bypassPermissions" or not is_root or sandboxed or override:
        return None
    return ("--permission-mode bypassPermissions is refused when running as root without a sandbox; "
            "let the sandbox run (install bubblewrap; no --no-sandbox), run as another user, or set "
            "LOOPWRIGHT_ALLOW_ROOT_BYPASS=1")


def parse_rule(rule: str) -> tuple[str, str | None]:
    rule = rule.strip()
    if rule.endswith(")") and "(" in rule:
        name, _, spec = rule.partition("(")
        spec = spec[:-1].strip()
        return name.strip(), (spec or None)
    return rule, None


def name_hits(rule_name: str, tool: str) -> bool:
    """Whether a rule's tool name (`Bash`, `mcp__srv__*`) names this tool; `mcp__srv` names
    every tool of that MCP server."""
    if rule_name == tool or ("*" in rule_name and fnmatch.fnmatchcase(tool, rule_name)):
        return True
    return (rule_name.startswith("mcp__") and "__" not in rule_name[5:] and len(rule_name) > 5
            and tool.startswith(rule_name + "__"))


def rule_error(rule: str) -> str | None:
    name, spec = parse_rule(rule)
    if not name or not re.fullmatch(r"[A-Za-z0-9_*.:-]+", name):
        return f"{rule!r} is not a rule: expected Tool or Tool(specifier)"
    if spec is None and "(" in rule:
        return None if rule.strip().endswith("()") else f"{rule!r}: unbalanced parentheses"
    return None


def anchor_rule(rule: str, root: str) -> str:
    """Write `Edit(/x)` from a settings file as `Edit(//root/x)`, so merged rules keep their
    file's root."""
    name, spec = parse_rule(rule)
    if spec and name != "Bash" and spec.startswith("/") and not spec.startswith("//"):
        return f"{name}(/{posixpath.normpath(root + spec)})"
    return rule


def parse_tool_list(values: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """`--allowedTools "Bash,Read" "Edit"`: commas and spaces separate rules, except inside
    parentheses (`Bash(git diff *)` stays one rule)."""
    rules: list[str] = []
    for value in values:
        current, depth = "", 0
        for ch in value:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            if ch in ", " and depth == 0:
                if current.strip():
                    rules.append(current.strip())
                current = ""
                continue
            current += ch
        if current.strip():
            rules.append(current.strip())
    return tuple(rules)


def apply_updates(rules: PermissionRules, updates: Sequence[Mapping[str, Any]]) -> PermissionRules:
    """The rules after permission updates an approver sent with an allow (the Agent SDK's
    `updatedPermissions`: `addRules`, `replaceRules`, `removeRules`, `setMode`,
    `addDirectories`, `removeDirectories`). They last for the session, whatever destination
    they name: loopwright writes no settings file for them. A malformed update is a ValueError
    naming it; nothing is applied then."""
    out = rules
    for number, update in enumerate(updates, 1):
        kind = update.get("type") if isinstance(update, Mapping) else None
        where = f"updatedPermissions[{number - 1}]"
        if kind in ("addRules", "replaceRules", "removeRules"):
            behavior = update.get("behavior")
            if behavior not in ("allow", "deny", "ask"):
                raise ValueError(f"{where}: behavior must be allow, deny or ask, got {behavior!r}")
            given = _rule_texts(update.get("rules"), where)
            now = () if kind == "replaceRules" else {"allow": out.allow, "deny": out.deny, "ask": out.ask}[behavior]
            changed = tuple(r for r in now if r not in given) if kind == "removeRules" else (*now, *given)
            kept_rules = tuple(dict.fromkeys(changed))
            out = (replace(out, allow=kept_rules) if behavior == "allow" else replace(out, deny=kept_rules)
                   if behavior == "deny" else replace(out, ask=kept_rules))
        elif kind == "setMode":
            mode = normalise_mode(str(update.get("mode")))
            if mode is None:
                raise ValueError(f"{where}: mode must be one of {', '.join(MODES)}, got {update.get('mode')!r}")
            out = replace(out, mode=mode)
        elif kind in ("addDirectories", "removeDirectories"):
            dirs = update.get("directories")
            if not isinstance(dirs, list) or not all(isinstance(d, str) and d for d in dirs):
                raise ValueError(f"{where}: directories must be a list of paths")
            kept = tuple(d for d in out.additional_dirs if d not in dirs)
            out = replace(out, additional_dirs=(*kept, *dirs) if kind == "addDirectories" else kept)
        else:
            raise ValueError(f"{where}: unknown type {kind!r} (expected addRules, replaceRules, removeRules, "
                             "setMode, addDirectories or removeDirectories)")
    return out


def _rule_texts(rules: Any, where: str) -> tuple[str, ...]:
    """`[{"toolName": "Bash", "ruleContent": "npm test"}]` as `("Bash(npm test)",)`."""
    if not isinstance(rules, list):
        raise ValueError(f"{where}: rules must be a list of {{toolName, ruleContent?}}")
    out = []
    for rule in rules:
        name = rule.get("toolName") if isinstance(rule, Mapping) else None
        content = rule.get("ruleContent") if isinstance(rule, Mapping) else None
        if not isinstance(name, str) or not name or (content is not None and not isinstance(content, str)):
            raise ValueError(f"{where}: each rule needs a toolName (and a text ruleContent if any), got {rule!r}")
        text = f"{name}({content})" if content else name
        if (problem := rule_error(text)) is not None:
            raise ValueError(f"{where}: {problem}")
        out.append(text)
    return tuple(out)
