"""The shell reader and what it says about commands, table-first and with Hypothesis: every
command a line runs is found (substitutions, subshells, here-documents, `bash -c`, `eval`),
wrappers are stripped, read-only commands and written files are recognised, unclear input fails."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from loopwright.permissions.bash.parts import analyse
from loopwright.permissions.bash.write_targets import write_targets
from loopwright.permissions.bash.readonly import is_read_only, is_safe_edit
from loopwright.permissions.bash.syntax import ShellSyntaxError, parse
from loopwright.permissions.bash.line import read_line


def parts(command: str) -> list[str]:
    a = analyse(command)
    assert a.error is None, a.error
    return [p.text for p in a.parts]


@pytest.mark.parametrize("command,expected", [
    ("ls -la", ["ls -la"]),
    ("echo a; echo b", ["echo a", "echo b"]),
    ("a && b || c | d |& e & f", ["a", "b", "c", "d", "e", "f"]),
    ("echo a\necho b", ["echo a", "echo b"]),
    ("echo $(rm x)", ["rm x", "echo $(rm x)"]),
    ("echo `rm x`", ["rm x", "echo `rm x`"]),
    ("echo \"in $(rm x) quotes\"", ["rm x", 'echo "in $(rm x) quotes"']),
    ("echo $(echo $(rm deep))", ["rm deep", "echo $(rm deep)", "echo $(echo $(rm deep))"]),
    ("diff <(ls a) >(wc)", ["ls a", "wc", "diff <(ls a) >(wc)"]),
    ("(cd sub; make)", ["cd sub", "make"]),
    ("{ a; b; }", ["a", "b"]),
    ("if test -f x; then rm x; else touch x; fi", ["test -f x", "rm x", "touch x"]),
    ("for f in $(ls); do cat $f; done", ["ls", "cat $f"]),
    ("while read l; do echo $l; done < in.txt", ["read l", "echo $l", ""]),
    ("cat <<EOF\n$(rm x)\nEOF", ["cat", "rm x"]),
    ("cat <<'EOF'\n$(rm x)\nEOF", ["cat"]),
    ("cat <<-EOF\n\t`rm y`\n\tEOF\necho after", ["cat", "rm y", "echo after"]),
    ("echo 'a;b' \"c&&d\" e\\;f", ["echo a;b c&&d e;f"]),
    ("ls # ; rm x", ["ls"]),
    ("x=1", [""]),
    ("A=1 B=$(id) make", ["id", "make"]),
    ("'rm' -rf \"x\"", ["rm -rf x"]),
    ("r\\m x", ["rm x"]),
    ("ec\\\nho hi", ["echo hi"]),
    ("cat <<EOF; touch m\nbody $(rm b)\nEOF", ["cat", "touch m", "rm b"]),
    ("echo hi > >(touch m)", ["touch m", "echo hi"]),
    ("cat <<< $(rm x)", ["rm x", "cat"]),
    ("echo $(# ) ; rm x\n)", ["echo $(# ) ; rm x\n)"]),
    ("echo a#$(rm x)", ["rm x", "echo a#$(rm x)"]),
])
def test_every_command_is_found(command, expected):
    assert parts(command) == expected


@pytest.mark.parametrize("command,expected", [
    ("timeout 10 npm test", "npm test"),
    ("timeout -s KILL -k 5 10s npm test", "npm test"),
    ("time -p make", "make"),
    ("nice -n 10 make", "make"),
    ("nice -5 make", "make"),
    ("nohup ./serve", "./serve"),
    ("stdbuf -oL -e0 grep x", "grep x"),
    ("command make", "make"),
    ("builtin echo x", "echo x"),
    ("env A=1 B=2 make", "make"),
    ("env -i -u HOME make", "make"),
    ("FOO=bar make all", "make all"),
    ("xargs rm", "rm"),
    ("xargs -0 -n 1 -I {} rm", "rm"),
    ("exec make", "make"),
    ("timeout 5 env A=1 nice nohup make", "make"),
])
def test_wrappers_are_stripped(command, expected):
    assert parts(command) == [expected]


@pytest.mark.parametrize("command,inner", [
    ("bash -c 'rm x; echo y'", ["rm x", "echo y"]),
    ("sh -c \"rm x\"", ["rm x"]),
    ("bash -lc 'rm x'", ["rm x"]),
    ("bash -e -c 'rm x' name arg", ["rm x"]),
    ("eval 'rm x'", ["rm x"]),
    ("eval rm x", ["rm x"]),
    ("bash -c \"bash -c 'rm deep'\"", ["rm deep"]),
    ("find . -name '*.o' -exec rm {} \\;", ["find . -name *.o -exec rm {} ;", "rm {}"]),
])
def test_nested_shells_are_read(command, inner):
    assert parts(command) == inner


@pytest.mark.parametrize("command", [
    "eval $CMD", "$CMD x", "bash script.sh", "bash", "source env.sh", ". env.sh", "bash -c \"$S\"",
    "env -S 'rm x'", "xargs --weird rm", "${X} y",
])
def test_hidden_commands_are_marked(command):
    a = analyse(command)
    assert a.error is None and any(p.hidden for p in a.parts)


@pytest.mark.parametrize("command", [
    "echo 'open", 'echo "open', "echo `open", "echo $(open", "(open", "echo hi |", "&& x", "echo ;;",
    "f() { rm x; }", "function f { rm x; }", "case $x in a) rm;; esac", "echo $((x + 1))",
    "echo ${x:-$(rm y)}", "echo $[1+1]", "((x++))", "[[ -f x ]]", "a[1]=x", "cat <<EOF\nno end",
    "select x in a; do rm; done", "coproc rm x", ") x", "bash -c 'echo \"'", "echo $'open",
])
def test_unclear_input_fails_closed(command):
    assert analyse(command).error is not None


def test_syntax_errors_say_where():
    with pytest.raises(ShellSyntaxError, match="unterminated single quote"):
        parse("echo 'open")


@pytest.mark.parametrize("command,read_only", [
    ("ls -la src", True), ("cat a b", True), ("grep -rn x .", True), ("rg -i foo", True), ("find . -name x", True),
    ("git status", True), ("git diff HEAD~1", True), ("git log -p", True), ("git show abc", True),
    ("git branch", True), ("git branch -a", True), ("pwd", True), ("echo hi", True), ("wc -l x", True),
    ("head -n 3 x 2>/dev/null", True), ("ls 2>&1", True), ("command -v git", True), ("env", True),
    ("ls > out", False), ("ls >> out", False), ("echo hi &> out", False), ("find . -delete", False),
    ("find . -exec rm {} +", False), ("find . -fprint out", False), ("sort -o out in", False),
    ("sort -uo out in", False), ("git branch -D x", False), ("git branch new", False), ("git commit -m x", False),
    ("git -c core.pager=x log", False), ("git diff --output=x", False), ("rg --pre ./x y", False),
    ("printf -v PATH x", False), ("date -s now", False), ("PATH=/tmp ls", False), ("LD_PRELOAD=x.so ls", False),
    ("env PATH=/tmp ls", False), ("./ls", False), ("/bin/ls", True), ("sed -n 1p x", False),
    ("awk '{print}' x", False), ("uniq a b", False), ("xxd -r x", False), ("hostname evil", False), ("rm x", False),
])
def test_read_only_commands(command, read_only):
    a = analyse(command)
    assert a.error is None
    assert all(is_read_only(p) for p in a.parts) is read_only


@pytest.mark.parametrize("command,targets", [
    ("echo x > a", [("a", False)]),
    ("echo x >> a 2>/dev/null", [("a", False), ("/dev/null", False)]),
    ("echo x 2>&1 >&2", []),
    ("cmd &> log", [("log", False)]),
    ("rm -rf a b", [("a", True), ("b", True)]),
    ("mv a b", [("b", False), ("a", True)]),
    ("cp a b c/", [("c/", False)]),
    ("cp -t dest a b", [("dest", False)]),
    ("ln -s /etc/passwd link", [("link", False)]),
    ("touch -- -weird", [("-weird", False)]),
    ("mkdir -p x/y", [("x/y", False)]),
    ("tee -a ~/.bashrc", [("~/.bashrc", False)]),
    ("sed -i 's/a/b/' f1 f2", [("f1", False), ("f2", False)]),
    ("sed -n p f1", []),
    ("chmod +x run.sh", [("run.sh", False)]),
    ("dd if=/dev/zero of=disk.img", [("disk.img", False)]),
    ("curl -o page.html http://x", [("page.html", False)]),
    ("echo > \"$F\"", [(None, False)]),
    ("xargs touch", [(None, False)]),
    ("find . -exec touch {} \\;", [(None, False)]),
])
def test_write_targets(command, targets):
    a = analyse(command)
    found = [(t.path, t.removes) for p in a.parts for t in write_targets(p)]
    assert found == targets


@pytest.mark.parametrize("command,safe", [
    ("mkdir -p build", True), ("touch a b", True), ("mv a b", True), ("cp -r a b", True),
    ("cp -l a b", False), ("cp -s a b", False), ("cp --link a b", False), ("rm a", False), ("ln -s a b", False),
])
def test_safe_edits_for_accept_edits(command, safe):
    (part,) = analyse(command).parts
    assert is_safe_edit(part) is safe


@pytest.mark.parametrize("command,places", [
    ("touch x", ["x"]),
    ("cd .. && touch x", ["x", "../x"]),  # cd may fail: both folders stay possible
    ("bash -c 'pushd /; touch x'", ["x", "/x"]),
    ("cd a; cd b; touch x", ["x", "a/x", "b/x", "a/b/x"]),
    ("cd $D && touch x", [None]),
    ("cd - && touch x", [None]),
    ("popd; touch x", [None]),
    ("cd && touch x", ["x", "~/x"]),
    ("cd /tmp && touch /abs", ["/abs"]),
])
def test_cd_is_followed_to_named_folders(command, places):
    line = read_line(analyse(command))
    assert [t.path for t in line.touches if t.kind == "write"] == places


# ------------------------------------------------------------ properties

WORDS = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1,
                max_size=20)


KEYWORDS = {"if", "then", "elif", "else", "fi", "do", "done", "while", "until", "for", "in", "case", "esac",
            "select", "coproc", "function", "[[", "]]", "{", "}", "!"}


def single_quoted(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


@given(st.lists(WORDS, min_size=1, max_size=6), st.sampled_from([shlex.quote, single_quoted]))
def test_quoted_words_read_back_exactly(words, quote):
    """What a quoting function writes, the reader takes back word for word as one literal
    command (`then` or `x=1` left bare by shlex.quote are syntax, not words: skipped)."""
    first = words[0]
    assume(quote is single_quoted or first not in KEYWORDS and "=" not in first and not first.startswith("#"))
    line = " ".join(quote(w) for w in words)
    assert [w.value for s in parse(line) for w in s.assignments + s.words] == words, line


SEPARATORS = st.sampled_from([";", "&&", "||", "|", "|&", "&", "\n", " ; ", "\n\n"])
WRAPS = st.sampled_from(["{}", "$({})", "`{}`", "\"$({})\"", "<({})", "({})", "{{ {}; }}", "bash -c '{}'",
                         "sh -c \"{}\"", "eval '{}'", "env A=1 {}", "timeout 3 {}", "nohup {}", "X=$({}) true",
                         "cat <<EOF\n$({})\nEOF\n"])


@settings(max_examples=300)
@given(st.lists(st.sampled_from(["echo hi", "ls", "git status", "true"]), max_size=3), SEPARATORS, WRAPS)
def test_a_hidden_command_is_always_found(prefix, sep, wrap):
    """However `rm -rf victim` is tucked into a line, it shows up as a part of its own."""
    command = sep.join([*prefix, wrap.format("rm -rf victim")])
    a = analyse(command)
    assert a.error is None, (command, a.error)
    assert any(p.text == "rm -rf victim" for p in a.parts), command


@settings(max_examples=500)
@given(st.text(alphabet=" \t\n;&|()<>'\"`$\\{}[]*?#=~!abc-012", max_size=40))
def test_any_text_is_analysed_or_refused(text):
    """The reader never crashes: it returns parts or a reason to ask."""
    a = analyse(text)
    assert (a.error is None) or isinstance(a.error, str)
