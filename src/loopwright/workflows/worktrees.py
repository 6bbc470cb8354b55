"""git worktrees for parallel attempts and isolated subagents: the user's state (uncommitted and untracked changes
included) as a commit, one worktree and branch per attempt, an attempt's work committed, its
diff, and the winner's changes applied to the user's working tree.

Every git call runs with the repository's own programs turned off (no hooks, no fsmonitor, no
pager, no external diff or text conversion), a fixed identity, and the user's index untouched."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from ..core.errors import UsageError

SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "diff.external=",
        "-c", "core.pager=cat", "-c", "user.name=loopwright", "-c", "user.email=loopwright@localhost",
        "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false")
MAX_DIFF_CHARS = 40_000


class GitError(Exception):
    pass


def git(cwd: str | Path, *args: str, env: dict[str, str] | None = None, check: bool = True,
        stdin: str | None = None) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {"GIT_TERMINAL_PROMPT": "0"}
    out = subprocess.run(["git", *SAFE, *args], cwd=cwd, env=full | (env or {}), capture_output=True, text=True,
                         input=stdin, timeout=300)
    if check and out.returncode != 0:
        raise GitError(f"git {' '.join(args[:3])}: {(out.stderr or out.stdout).strip()[:500]}")
    return out.stdout


def repo_root(cwd: str | Path, what: str = "--attempts") -> Path:
    """The top of the repository `cwd` is in; a UsageError outside one, naming `what` needs it."""
    try:
        top = git(cwd, "rev-parse", "--show-toplevel").strip()
    except (GitError, OSError) as exc:
        raise UsageError(f"{what} needs a git repository: {cwd} is not inside one ({exc})") from None
    return Path(top)


def snapshot(repo: Path) -> str:
    """A commit holding the working tree as it is now (tracked changes and untracked files,
    .gitignore respected), made with a private index: the user's index and HEAD stay as they are."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        head = git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False).strip()
        if head:
            git(repo, "read-tree", head, env=env)
        git(repo, "add", "-A", ".", env=env)
        tree = git(repo, "write-tree", env=env).strip()
        parents = ("-p", head) if head else ()
        return git(repo, "commit-tree", tree, *parents, "-m", "loopwright: the working tree attempts start from").strip()


def add(repo: Path, path: Path, branch: str, commit: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    git(repo, "worktree", "add", "-q", "-b", branch, str(path), commit)


def commit_all(worktree: Path, message: str) -> str:
    """Everything the attempt changed, committed on its branch; the commit (HEAD if nothing changed)."""
    git(worktree, "add", "-A", ".")
    if git(worktree, "status", "--porcelain").strip():
        git(worktree, "commit", "-q", "--no-verify", "-m", message)
    return git(worktree, "rev-parse", "HEAD").strip()


def diff(repo: Path, base: str, head: str, limit: int = MAX_DIFF_CHARS) -> str:
    text = git(repo, "diff", "--no-ext-diff", "--no-textconv", "--stat", "--patch", base, head)
    return text if len(text) <= limit else text[:limit] + f"\n… (diff cut at {limit:,} characters)"


def changed(repo: Path, base: str, head: str) -> list[str]:
    return [line for line in git(repo, "diff", "--name-only", base, head).splitlines() if line]


def apply(repo: Path, base: str, head: str) -> str | None:
    """The changes from `base` to `head` applied to the user's working tree; None, or why not
    (then nothing was changed)."""
    patch = git(repo, "diff", "--no-ext-diff", "--no-textconv", "--binary", base, head)
    if not patch.strip():
        return None
    trial = subprocess.run(["git", *SAFE, "apply", "--check", "-"], cwd=repo, input=patch, capture_output=True,
                           text=True)
    if trial.returncode != 0:
        return trial.stderr.strip()[:500] or "git apply --check failed"
    git(repo, "apply", "-", stdin=patch)
    return None


def remove(repo: Path, path: Path) -> None:
    git(repo, "worktree", "remove", "--force", str(path), check=False)


def prune(repo: Path) -> None:
    git(repo, "worktree", "prune", check=False)


def private_root() -> Path:
    """Where worktrees go: a private folder in the system's temporary directory (not
    loopwright's home, where tools may not write, nor inside the repository)."""
    root = Path(tempfile.gettempdir()) / f"loopwright-attempts-{os.getuid()}"
    root.mkdir(mode=0o700, exist_ok=True)
    if root.is_symlink() or root.stat().st_uid != os.getuid():
        raise UsageError(f"{root} is not a folder of yours: remove it, or set TMPDIR to another place")
    return root


def delete_branch(repo: Path, branch: str) -> None:
    git(repo, "branch", "-D", branch, check=False)
