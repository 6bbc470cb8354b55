"""Guardrail rules: one file each, `.claude/guardrails.NAME.local.md` in the project (found from
the hook's working directory), a small frontmatter (`when`, `pattern`, `then`) and a message."""

import glob
import os
import re


class Rule:
    def __init__(self, name, when, pattern, then, message):
        self.name, self.when, self.pattern, self.then, self.message = name, when, pattern, then, message

    def hits(self, text):
        return re.search(self.pattern, text or "") is not None


def load():
    rules = []
    for path in sorted(glob.glob(os.path.join(".claude", "guardrails.*.local.md"))):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        _, head, message = text.split("---", 2)
        fields = dict(line.split(":", 1) for line in head.strip().splitlines())
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        name = os.path.basename(path)[len("guardrails."):-len(".local.md")]
        rules.append(Rule(name, fields["when"], fields["pattern"], fields.get("then", "warn"), message.strip()))
    return rules


def subject(event, data):
    """What a rule of each kind looks at, from Claude Code's hook input."""
    tool, given = data.get("tool_name", ""), data.get("tool_input") or {}
    if event == "PreToolUse" and tool == "Bash":
        return "command", given.get("command", "")
    if event == "PreToolUse" and tool in ("Write", "Edit"):
        return "edit", given.get("content") or given.get("new_string", "")
    if event == "PostToolUse" and tool == "Bash":
        return "output", data["tool_response"]["stdout"]  # the structured response, as Claude Code gives it
    if event == "PostToolUse":
        return "written", data["tool_response"]["filePath"]
    if event == "UserPromptSubmit":
        return "prompt", data.get("prompt", "")
    if event == "Stop":
        with open(data["transcript_path"], encoding="utf-8") as f:
            return "stop", f.read()
    return None, ""
