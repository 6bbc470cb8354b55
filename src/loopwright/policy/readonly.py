"""Which parts of a shell command only read (run in every mode without asking), and which are
the plain edits acceptEdits runs inside the writable directories. Pure."""

from __future__ import annotations

from .commands import Part, is_device, redirect_targets

__all__ = ["SAFE_EDITS", "is_read_only", "is_safe_edit"]

SAFE_EDITS = frozenset({"mkdir", "touch", "mv", "cp"})  # acceptEdits runs these inside the roots
_READ_ONLY = frozenset({
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "find", "echo", "printf", "pwd", "cd",
    "true", "false", "which", "type", "whoami", "id", "date", "uname", "file", "stat", "du", "df", "tree",
    "basename", "dirname", "realpath", "readlink", "sort", "uniq", "cut", "tr", "diff", "cmp", "comm", "nl",
    "od", "hexdump", "xxd", "column", "jq", "test", "[", "env", "printenv", "sleep", "md5sum", "sha1sum",
    "sha256sum", "sha512sum", "base64", "tac", "rev", "strings", "paste", "fold", "expand", "seq", "hostname",
    "git", "command", "pushd", "popd", "dirs", "ps", "nproc", "free", "uptime", "arch", "tty", "locale",
})
_GIT_READS = frozenset({"status", "diff", "log", "show", "branch", "rev-parse", "ls-files", "blame",
                        "describe", "shortlog", "remote", "tag"})
# Options that make a listed command write files or run programs.
_VETO = {
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
    "rg": ("--pre", "--search-zip", "-z"),
    "sort": ("-o", "--output", "--compress-program"),
    "tree": ("-o",),
    "date": ("-s", "--set"),
    "file": ("-C", "--compile"),
    "printf": ("-v",),
    "git": ("--output", "--ext-diff", "--textconv"),
    "xxd": ("-r", "--revert"),
}
_MAX_FILES = {"uniq": 1, "xxd": 1, "hostname": 0}  # more operands name an output file


def is_read_only(part: Part, redirects: bool = False) -> bool:
    """A part that only reads: a listed command without writing options, and without
    redirections to files unless `redirects` (acceptEdits then checks where they go)."""
    writes = [t for t in redirect_targets(part) if t.path is None or not is_device(t.path)]
    if part.opaque or (writes and not redirects):
        return False
    name = part.name
    if not part.words:
        return True
    if name not in _READ_ONLY:
        return False
    args = part.args()
    if any(a is None and name in ("git", "find", "sort", "date", "printf", "env") for a in args):
        return False  # an expansion could turn into a writing option
    values = [a for a in args if a is not None]
    if _vetoed(name, values):
        return False
    if name in _MAX_FILES and len([v for v in values if not v.startswith("-")]) > _MAX_FILES[name]:
        return False
    if name == "git":
        return _git_read(values)
    if name == "env":
        return not values  # with a command it is a wrapper; alone it prints
    if name == "command":
        return bool(values) and values[0] in ("-v", "-V")
    return True


def _vetoed(name: str, values: list[str]) -> bool:
    for v in values:
        for veto in _VETO.get(name, ()):
            if v == veto or v.startswith(veto + "="):
                return True
            # a short option may be grouped with others or glued to its value: -uo out, -ofile
            if len(veto) == 2 and v.startswith("-") and not v.startswith("--") and veto[1] in v[1:]:
                return True
    return False


def _git_read(args: list[str]) -> bool:
    if not args or args[0].startswith("-"):
        return False  # global options (-c, -C, --git-dir …) can run configured programs
    sub, rest = args[0], args[1:]
    if sub not in _GIT_READS:
        return False
    if sub in ("branch", "tag", "remote"):
        listing = {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--list", "-l", "--show-current",
                   "--contains", "--merged", "--no-merged", "-n"}
        return all(a in listing or (sub == "remote" and a == "show") for a in rest) or not rest
    return True


def is_safe_edit(part: Part) -> bool:
    """mkdir, touch, mv, cp: what acceptEdits runs without asking when every target is inside.
    `cp -l`/`-s` make links, through which a later write could reach outside."""
    if part.opaque or part.name not in SAFE_EDITS:
        return False
    for a in part.args():
        a = a or ""
        if part.name == "cp" and (a in ("--link", "--symbolic-link")
                                  or a.startswith("-") and not a.startswith("--") and ("l" in a or "s" in a)):
            return False
    return True
