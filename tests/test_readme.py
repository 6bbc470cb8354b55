"""The README's offline example runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_simulator_example_in_the_readme_runs():
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    [example] = [b for b in blocks if "Simulator(" in b]
    exec(compile(example, "README.md", "exec"), {})  # its own asserts check the outcome
