"""The README's offline example runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_simulator_example_in_the_readme_runs():
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    [example] = [b for b in blocks if "Simulator(" in b]
    exec(compile(example, "README.md", "exec"), {})  # its own asserts check the outcome


def section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def test_every_terminal_reason_is_listed():
    import typing

    from loopwright.core.events import TerminalReason

    text = README.read_text(encoding="utf-8")
    listed = text[text.index("`terminal_reason` is one of"):]
    listed = listed[:listed.index("\n\n")]
    missing = [r for r in typing.get_args(TerminalReason) if f"`{r}`" not in listed]
    assert not missing, f"README: terminal reasons not in the list: {missing}"


def test_the_contract_tables_have_the_never_silent_rows():
    contract = section("The loop contract")
    rows = [line for line in contract.splitlines() if line.startswith("| ")]
    for needle, bound in [("input is not a JSON object", "`malformed_tool_input`"),
                          ("a stop or finish reason loopwright does not know", "`warnings`"),
                          ("connection refused or no such host", "`api_unreachable`")]:
        [row] = [r for r in rows if needle in r]
        assert bound in row, row


def test_the_security_section_covers_workspace_trust():
    security = section("Security")
    for needle in ["asks once whether you trust it, before any project hook runs", "`loopwright trust [PATH]`",
                   "**`-p` does not ask and trusts the folder", '`"disableAllHooks": true`', "`--bare`"]:
        assert needle in security, needle
