"""Record once, replay forever, offline: a scripted session is recorded through the real
`loopwright` command (the simulator plays the model; the tools and git are real), replayed with
the settings unchanged (no divergence), then replayed again after a PreToolUse hook is added that
blocks `rm` — and the replay names the call the hook now blocks.

    python examples/replay/demo.py [--dir DIR]     # DIR: keep the sample project and home there
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from loopwright.testing import Simulator


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="Where to make the sample project (kept).")
    args = parser.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="loopwright-replay-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    project, home = base / "project", base / "home"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOPWRIGHT_STORE"))}
    env.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".loopwright"))

    def run(*argv: str, sim: Simulator | None = None) -> subprocess.CompletedProcess[str]:
        extra = {"ANTHROPIC_BASE_URL": sim.base_url} if sim else {}
        return subprocess.run([sys.executable, "-m", "loopwright", *argv], cwd=project, env=env | extra,
                              capture_output=True, text=True, timeout=300)

    (project / "build.log").write_text("old build output\n")
    for step in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run(["git", "-c", "user.name=demo", "-c", "user.email=demo@example.com", *step], cwd=project,
                       check=True, capture_output=True)
    print(f"1. recording a session in {project} (the simulator plays the model)")
    script = [{"tool_use": {"name": "Bash", "input": {"command": "rm build.log && echo cleaned"}}},
              {"tool_use": {"name": "Bash", "input": {"command": "ls"}}},
              {"text": "Cleaned up: build.log is gone."}]
    with Simulator(script) as sim:
        out = run("-p", "clean up the build output", "--allowedTools", "Bash", "--output-format", "json", sim=sim)
    session = json.loads(out.stdout)["session_id"]
    print(f"   session {session}: {json.loads(out.stdout)['result']}")

    print("2. replaying it with today's settings, unchanged")
    out = run("replay", session)
    print("   " + out.stdout.strip().replace("\n", "\n   "))

    print("3. adding a PreToolUse hook that blocks rm, then replaying again")
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{
        "type": "command",
        "command": "grep -q '\"rm ' && { echo 'rm is not allowed here' >&2; exit 2; } || exit 0"}]}]}}))
    out = run("replay", session)
    print("   " + out.stdout.strip().replace("\n", "\n   "))
    print(f"   exit status {out.returncode}: the replay caught the change")
    if args.dir is None:
        import shutil

        shutil.rmtree(base, ignore_errors=True)
    return 0 if out.returncode == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
