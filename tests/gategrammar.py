"""Shell lines from a grammar of our own, for the gate's differential fuzz: file tools with
abbreviated, glued and long options, paths inside the project, through `..`, through links out
of it, absolute, in the home, under protected names; redirections of every form; pipes, lists,
subshells, substitutions, `cd`, links made earlier in the line, `xargs` and `find -exec`."""

from __future__ import annotations

from hypothesis import strategies as st

# Places, as the world of gatefuzz.py has them (the project is the working directory).
INSIDE = ["a.txt", "sub", "sub/b.txt", "n1", "sub/n2", "./a.txt", "sub/../n3", "-rf"]
OUTSIDE = ["../outside/victim", "../outside", "../outside/new", "ln_out", "ln_out/victim", "ln_out/new",
           "ln_file", "../home/.profile", "~/x", "$HOME/y", "/tmp/../$HOME/z", "../outside/inner/deep",
           # out of a device or special prefix (@W@ is the world's folder, see gatefuzz.trial)
           "/dev/fd/../../..@W@/outside/victim", "/dev/..@W@/outside/new", "/proc/self/../..@W@/home/.profile",
           "/tmp/..@W@/outside/inner/deep"]
PROTECTED = [".git/config", ".git/hooks/pre-commit", ".claude/settings.json", ".mcp.json", ".gitattributes",
             "sub/.git/x", ".loopwright/settings.json"]
SPECIAL = ["/dev/null", "-", "/dev/stdout", "*", "s*", "{a,../outside/v2}.txt", "'../outside/q'",
           '"ln_out"/w', "$'../outside/r'", "~+/x", "ln_*/v3"]

paths = st.sampled_from(INSIDE + OUTSIDE + PROTECTED + SPECIAL)
inside = st.sampled_from(INSIDE)


def _cmd(name: str, options: list[str], nargs: tuple[int, int] = (1, 2)) -> st.SearchStrategy[str]:
    opts = st.lists(st.sampled_from(options), max_size=2) if options else st.just([])
    args = st.lists(paths, min_size=nargs[0], max_size=nargs[1])
    return st.builds(lambda o, a: " ".join([name, *o, *a]), opts, args)


READERS = st.one_of(
    _cmd("cat", ["-n", "-A", "--number"]),
    _cmd("head", ["-n1", "-c", "--lines=2", "-q"]),
    _cmd("tail", ["-n1", "-f", "--lines=1"]),
    _cmd("wc", ["-l", "--files0-from=-", "-c"]),
    _cmd("sort", ["-r", "-o", "-T", "--output", "--temporary-directory=../outside", "-u", "-ro"]),
    _cmd("uniq", ["-c", "-d"], (1, 2)),
    _cmd("grep", ["-r", "-n", "-l", "--include=*.txt", "-e a", "-f"], (1, 2)),
    _cmd("ls", ["-la", "-R", "-d"], (0, 2)),
    _cmd("stat", ["-c%s"]),
    _cmd("diff", ["-u", "--output=../outside/d"], (2, 2)),
    _cmd("xxd", ["-r", "-p", "-ps", "-c4", "-cols 4", "-co", "--"], (1, 2)),
    _cmd("od", ["-c", "-An"], (1, 2)),
    _cmd("find", [".", "-name a.txt", "-fprint ../outside/f", "-delete", "-exec cat {} +", "-newer"], (0, 1)),
    _cmd("tree", ["-o", "-a"], (0, 1)),
    _cmd("git status", ["--short", "-uno"], (0, 0)),
    _cmd("git diff", ["--stat", "--output=../outside/g", "--no-index"], (0, 2)),
    _cmd("git log", ["--oneline", "-1", "--output=n4"], (0, 0)),
    _cmd("git show", ["HEAD", "--stat"], (0, 0)),
    _cmd("cut", ["-c1", "-d,"], (1, 1)),
    _cmd("tr", ["a b"], (0, 0)),
    st.just("echo hi"), st.just("pwd"), st.just("true"),
)

WRITERS = st.one_of(
    _cmd("cp", ["-r", "-f", "-t", "--target-directory=../outside", "-s", "-l", "--parents", "--remove-destination"],
         (2, 3)),
    _cmd("mv", ["-f", "-t", "--target", "-b", "--suffix=x"], (2, 3)),
    _cmd("ln", ["-s", "-sf", "-f", "-T", "-t"], (2, 2)),
    _cmd("touch", ["-c", "-r a.txt"], (1, 2)),
    _cmd("mkdir", ["-p"], (1, 2)),
    _cmd("rm", ["-f", "-r", "-rf", "--"], (1, 2)),
    _cmd("tee", ["-a"], (1, 2)),
    _cmd("truncate", ["-s0", "--size=1"], (1, 1)),
    _cmd("install", ["-D", "-m644", "-t"], (2, 2)),
    _cmd("chmod", ["+x", "-R"], (1, 2)),
    _cmd("sed", ["-i", "-i.bak", "-n", "--in-place"], (1, 2)),
    _cmd("dd", [], (0, 0)).map(lambda s: s + " if=a.txt of=") .flatmap(lambda s: paths.map(lambda p: s + p)),
    _cmd("tar", ["-cf", "-xf", "-C ../outside"], (1, 2)),
    _cmd("git add", ["-A", "."], (0, 1)),
    _cmd("git checkout", ["--", "-f"], (0, 1)),
    _cmd("split", ["-l1"], (1, 2)),
    _cmd("patch", ["-o"], (1, 1)),
)

REDIRECTS = st.one_of(
    st.builds(lambda op, p: f" {op} {p}", st.sampled_from([">", ">>", "2>", "&>", ">&", ">|", "1>", "<", "<>"]), paths),
    st.just(" 2>&1"), st.just(" 2>/dev/null"), st.just(" >&-"),
)

# Variables given to a command: quiet ones, and ones a program may load a file or options from.
ASSIGNED = st.sampled_from(["", "", "LANG=C ", "TZ=UTC ", "MAGIC=../outside/victim ", "GREP_OPTIONS=-r ",
                            "env FOO=1 "])

simple = st.builds(lambda a, c, r: a + c + "".join(r), ASSIGNED, st.one_of(READERS, WRITERS),
                   st.lists(REDIRECTS, max_size=2))

CONNECT = st.sampled_from([" ; ", " && ", " || ", " | "])


def _compound(parts: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda a, c, b: a + c + b, parts, CONNECT, parts),
        parts.map(lambda a: f"( {a} )"),
        parts.map(lambda a: f"echo $( {a} )"),
        st.builds(lambda p, a: f"cd {p} && {a}", st.sampled_from(["sub", "..", "ln_out", "../outside", "~", "-"]),
                  parts),
        st.builds(lambda p, a: f"ln -s {p} n9 && {a.replace('a.txt', 'n9/x')}",
                  st.sampled_from(["../outside", "/", "ln_out"]), parts),
        st.builds(lambda p, a: f"echo {p} | xargs {a.split(' ', 1)[0]}", paths, parts),
        parts.map(lambda a: f"find . -name a.txt -exec {a.split(' ', 1)[0]} {{}} +"),
    )


lines = st.recursive(simple, _compound, max_leaves=3)
modes = st.sampled_from(["default", "acceptEdits"])
