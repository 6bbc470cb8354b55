"""The documentation in docs/ stays true: the statements other tests rely on are on the pages
they moved to from the README."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_every_terminal_reason_is_listed():
    import typing

    from loopwright.core.events import TerminalReason

    text = page("result.md")
    listed = text[text.index("`terminal_reason` is one of"):]
    listed = listed.split("\n\n")[0]
    missing = [r for r in typing.get_args(TerminalReason) if f"`{r}`" not in listed]
    assert not missing, f"docs/result.md: terminal reasons not in the list: {missing}"


def test_the_contract_tables_have_the_never_silent_rows():
    contract = page("loop-contract.md")
    rows = [line for line in contract.splitlines() if line.startswith("| ")]
    for needle, bound in [("input is not a JSON object", "`malformed_tool_input`"),
                          ("a stop or finish reason loopwright does not know", "`warnings`"),
                          ("connection refused or no such host", "`api_unreachable`")]:
        [row] = [r for r in rows if needle in r]
        assert bound in row, row


def test_the_security_page_covers_workspace_trust():
    security = page("security.md")
    for needle in ["asks once whether you trust it, before any project hook runs", "`loopwright trust [PATH]`",
                   "**`-p` does not ask and trusts the folder", '`"disableAllHooks": true`', "`--bare`"]:
        assert needle in security, needle
