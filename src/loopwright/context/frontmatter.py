"""The `---` block that opens a skill, command or agent file, read as Claude Code reads it: as
YAML (PyYAML's safe loader, no aliases), and when the block is not valid YAML — Claude Code takes
`description: Use when: …` and other slips — leniently, by hand (a value that makes no sense is
kept as text, never fatal). Either way the result is the same flat view: every scalar as text
(`true`, `3`), `[a, b]` and `- item` lists as lists of text, nested keys (`hooks:`,
`metadata:`) kept out as "". The lenient reader reads `key: value` lines, quoted values, `[a, b]`
lists (over one line or several), `- item` lists, `|` and `>` text blocks, values that run on
over indented lines."""

from __future__ import annotations

import re
from typing import Any, Collection

_BLOCK_TEXT = re.compile(r"([|>])([+-]?)[0-9]?\s*(#.*)?")
_NESTED = re.compile(r"[A-Za-z0-9_-]+:(\s|$)")
TEXT_KEYS = frozenset({"argument-hint"})  # `[name]` here is a hint to the person, not a list


def frontmatter(text: str, where: str, problems: list[str],
                known: Collection[str] | None = None) -> tuple[dict[str, Any], str]:
    """The fields of the block and the body after it. `known`: the keys expected; any other is
    said once as a problem (and kept)."""
    if not text.startswith("---"):
        return {}, text
    head, sep, body = text[3:].partition("\n---")
    if not sep:
        problems.append(f"{where}: the frontmatter opened with --- is never closed; read as body text")
        return {}, text
    parsed = None if _plain(head) else _yaml_fields(head)
    if parsed is None:
        return _lenient(head, where, problems, known), body.partition("\n")[2]
    fields: dict[str, Any] = {}
    for key, (value, line) in parsed.items():
        if known is not None and key not in known:
            problems.append(f"{where}: unknown frontmatter key {key!r} (line {line}); ignored")
        fields[key] = value
    for key in TEXT_KEYS & fields.keys():  # `argument-hint: [name]` is text; YAML reads a list
        fields[key] = _lenient(head, where, [], {key}).get(key, fields[key])
    return fields, body.partition("\n")[2]  # after the closing --- line


# A block of plain `key: text` lines only, which YAML would read as the lenient reader does (every
# value as written): read without loading PyYAML, which costs ~25 ms of start-up.
_PLAIN_LINE = re.compile(r"[A-Za-z0-9_-]+:(?: +[^\s'\"#\[\]{}|>&*!%@`\\-][^#:]*)?\s*")


def _plain(head: str) -> bool:
    return all(_PLAIN_LINE.fullmatch(line) for line in head.strip("\n").splitlines() if line.strip())


def _yaml_fields(head: str) -> dict[str, tuple[Any, int]] | None:
    """Each key's value in the flat view and its line, or None when the block is not a YAML
    mapping of text keys (the lenient reader takes it then). Aliases are refused: a block of
    nested aliases (a "billion laughs") would take memory exponential in its size to flatten."""
    import yaml

    class NoAliases(yaml.SafeLoader):
        yaml_implicit_resolvers: dict[Any, Any] = {}  # every plain scalar stays text, as written (`1.10`, `no`)

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                raise yaml.YAMLError("aliases are not read in frontmatter")
            return super().compose_node(parent, index)

    loader = NoAliases(head)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else {}
    except (yaml.YAMLError, RecursionError, ValueError, TypeError):  # TypeError: an unhashable key
        return None
    finally:
        loader.dispose()
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        return None
    lines = {k.value: k.start_mark.line + 1 for k, _ in node.value if isinstance(k.value, str)} if node else {}
    return {key.strip(): (_flat(value, top=True), lines.get(key, 1)) for key, value in data.items()}


def _flat(value: Any, *, top: bool = False) -> Any:
    """A YAML value as the lenient reader gives it: text, a list of text, "" for nested keys."""
    if isinstance(value, dict):
        return "" if top else str(value)
    if isinstance(value, list):
        return [_flat(v) for v in value] if top else str(value)
    return value if value.endswith("\n") else value.strip()  # a `|` block keeps its last newline


def _lenient(head: str, where: str, problems: list[str], known: Collection[str] | None) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    lines = head.splitlines()
    at = 0
    while at < len(lines):
        line, number = lines[at], at + 1
        at += 1
        if not line.strip() or line.lstrip().startswith("#") or line[:1].isspace():
            continue
        name, colon, value = line.partition(":")
        if not colon:
            problems.append(f"{where}: line {number} of the frontmatter is not `key: value`; ignored")
            continue
        key = name.strip()
        if known is not None and key not in known:
            problems.append(f"{where}: unknown frontmatter key {key!r} (line {number}); ignored")
        more: list[str] = []  # the lines that belong to this key: indented, blank, or `- item`
        while at < len(lines) and (not lines[at].strip() or lines[at][:1].isspace() or lines[at].startswith("- ")):
            more.append(lines[at])
            at += 1
        fields[key] = _value(key, value.strip(), more)
    return fields


def _value(key: str, value: str, more: list[str]) -> Any:
    while more and not more[-1].strip():
        more.pop()
    shown = [m for m in more if m.strip() and not m.lstrip().startswith("#")]
    block = _BLOCK_TEXT.fullmatch(value)
    if block:
        return _text_block(more, folded=block.group(1) == ">", chomp=block.group(2))
    if not value and shown and all(m.lstrip().startswith("- ") or m.strip() == "-" for m in shown):
        return [_scalar(m.lstrip()[2:]) for m in shown]
    if not value and shown and _NESTED.match(shown[0].strip()):
        return ""  # nested keys: not part of the flat view
    joined = " ".join([value, *(m.strip() for m in shown)]).strip()
    if joined.startswith("[") and key not in TEXT_KEYS:
        inner = joined[1:joined.rfind("]")] if "]" in joined else joined[1:]
        return [_scalar(v) for v in split_list(inner) if v.strip()]
    return _scalar(joined)


def _text_block(lines: list[str], *, folded: bool, chomp: str) -> str:
    """A `|` block keeps its lines; a `>` block joins each paragraph's lines with spaces."""
    indent = min((len(m) - len(m.lstrip()) for m in lines if m.strip()), default=0)
    kept = [m[indent:] if m.strip() else "" for m in lines]
    if folded:
        paragraphs, current = [], []  # type: list[str], list[str]
        for line in kept:
            if line:
                current.append(line)
            else:
                paragraphs.append(" ".join(current))
                current = []
        kept = [*paragraphs, " ".join(current)]
    text = "\n".join(kept)
    return text if chomp == "-" else text + "\n"


def split_list(listed: str) -> list[str]:
    """`a, "b, c", Tool(x, y)`: split at commas outside quotes and parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for ch in listed:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    return [*parts, "".join(current)]


def _scalar(value: str) -> str:
    value = value.strip()
    return value[1:-1] if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"" else value
