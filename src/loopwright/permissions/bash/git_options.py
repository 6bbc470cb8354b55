"""git calls that only read: the subcommands and, for each, the options that keep it read-only
(exact names only: git accepts abbreviations, so an abbreviation is not read-only here). Left
out: options that write (`--output`), run programs (`--ext-diff`, `--textconv`,
`--show-signature`, `--remerge-diff`), read files named on the line (`--no-index`, `-O`,
`--contents`, `--ignore-revs-file`), touch submodules or the network. Pure tables."""

from __future__ import annotations

from .getopt import Parsed, Spec, parse
from .syntax import Word

__all__ = ["CONTENT", "GLOBAL", "SUBCOMMANDS", "judge_git"]

GLOBAL = frozenset({"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs"})
CONTENT = frozenset({"diff", "show", "log", "blame"})  # these print what files hold

_DIFF = (
    "patch no-patch raw stat=? compact-summary numstat shortstat dirstat=? cumulative summary patch-with-stat "
    "patch-with-raw name-only name-status color=? no-color color-moved=? no-color-moved color-moved-ws= "
    "color-words=? word-diff=? word-diff-regex= no-renames find-renames=? find-copies=? find-copies-harder "
    "irreversible-delete diff-filter= pickaxe-all pickaxe-regex find-object= relative=? no-relative text "
    "ignore-cr-at-eol ignore-space-at-eol ignore-space-change ignore-all-space ignore-blank-lines "
    "ignore-matching-lines= inter-hunk-context= function-context exit-code quiet no-ext-diff no-textconv "
    "ignore-submodules=? src-prefix= dst-prefix= no-prefix default-prefix line-prefix= abbrev=? no-abbrev "
    "full-index binary minimal patience histogram anchored= diff-algorithm= unified=? indent-heuristic "
    "no-indent-heuristic check ws-error-highlight= stat-width= stat-name-width= stat-count= stat-graph-width= "
    "break-rewrites=? rename-empty no-rename-empty output-indicator-new= output-indicator-old= "
    "output-indicator-context= ")
_DIFF_SHORT = "pusz0RabwWDM::C::B::l::S:G:I:U::"
_REVS = (
    "max-count= skip= since= after= until= before= author= committer= grep= all-match invert-grep "
    "regexp-ignore-case basic-regexp extended-regexp fixed-strings perl-regexp merges no-merges min-parents= "
    "max-parents= no-min-parents no-max-parents first-parent exclude-first-parent-only not all branches=? "
    "tags=? remotes=? glob= exclude= reflog single-worktree ignore-missing cherry-mark cherry-pick left-only "
    "right-only cherry walk-reflogs merge boundary simplify-by-decoration full-history dense sparse "
    "simplify-merges ancestry-path=? topo-order date-order author-date-order reverse no-walk=? do-walk "
    "format= pretty=? oneline abbrev-commit no-abbrev-commit encoding= expand-tabs=? no-expand-tabs notes=? "
    "no-notes show-notes=? standard-notes no-standard-notes relative-date date= parents children left-right "
    "graph show-linear-break=? decorate=? no-decorate decorate-refs= decorate-refs-exclude= clear-decorations "
    "source use-mailmap mailmap no-use-mailmap no-mailmap full-diff log-size follow diff-merges= "
    "no-diff-merges combined-all-paths root ")


def _git(short: str, long: str, number: bool = False) -> Spec:
    return Spec(short, tuple(long.split()), prefixes=False, number=number)


SUBCOMMANDS: dict[str, Spec] = {
    "status": _git("sbu::vz", "short branch show-stash porcelain=? long verbose untracked-files=? "
                   "ignore-submodules=? ignored=? column=? no-column ahead-behind no-ahead-behind renames "
                   "no-renames find-renames=? null"),
    "diff": _git(_DIFF_SHORT + "123", _DIFF + "cached staged merge-base base ours theirs"),
    "log": _git(_DIFF_SHORT + "n:iEFPgL:mct", _DIFF + _REVS + "cc dd", number=True),
    "show": _git(_DIFF_SHORT + "n:iEFPgmct", _DIFF + _REVS + "cc dd", number=True),
    "blame": _git("bL:ltpcfnsewhM::C::", "root show-stats reverse first-parent porcelain line-porcelain "
                  "incremental encoding= date= progress no-progress ignore-rev= color-lines color-by-age "
                  "score-debug show-name show-number show-email abbrev=? minimal"),
    "rev-parse": _git("q", "show-toplevel git-dir git-common-dir absolute-git-dir is-inside-work-tree "
                      "is-inside-git-dir is-bare-repository is-shallow-repository abbrev-ref=? short=? verify "
                      "quiet symbolic symbolic-full-name all branches=? tags=? remotes=? glob= exclude= "
                      "show-prefix show-cdup show-superproject-working-tree show-object-format=? "
                      "local-env-vars since= after= until= before= sq sq-quote revs-only no-revs flags "
                      "no-flags not path-format= shared-index-path disambiguate= git-path= default= "
                      "keep-dashdash stop-at-non-option"),
    "ls-files": _git("cdmoiskuztvfx:", "cached deleted modified others ignored stage killed unmerged directory "
                     "no-empty-directory eol deduplicate exclude= exclude-standard error-unmatch with-tree= "
                     "full-name abbrev=? debug sparse format= resolve-undo"),
    "describe": _git("", "all tags contains abbrev=? candidates= exact-match debug long match= exclude= always "
                     "first-parent dirty=? broken=?"),
    "shortlog": _git("nsecw::", "numbered summary email format= group= committer " + _REVS, number=True),
    "branch": _git("arvli", "all remotes verbose list show-current contains= no-contains= merged= no-merged= "
                   "points-at= sort= format= color=? no-color column=? no-column abbrev=? no-abbrev "
                   "ignore-case omit-empty"),
    "tag": _git("ln::i", "list sort= format= contains= no-contains= merged= no-merged= points-at= column=? "
                "no-column ignore-case color=? omit-empty"),
    "remote": _git("vn", "verbose push all"),
}


def judge_git(args: list[Word]) -> tuple[str | None, str | None, tuple[Word, ...]]:
    """(subcommand, why not read-only, the files it may read itself) for the words after `git`.
    `git diff` with two operands one of which lies outside the worktree (or anywhere outside a
    repository) compares the two files as `diff` would (an implicit `--no-index`): its operands
    are files it reads, whatever else they may be."""
    k = 0
    while k < len(args) and args[k].value in GLOBAL:
        k += 1
    if k >= len(args) or args[k].value is None or args[k].value.startswith("-"):  # type: ignore[union-attr]
        return None, "git with global options (-c, -C, --git-dir …) can run configured programs", ()
    sub = args[k].value
    spec = SUBCOMMANDS.get(sub or "")
    if spec is None:
        return sub, f"`git {sub}` changes things or is not known to only read", ()
    # A glob that starts with a pattern character may expand to an option. Judged by the text
    # alone, so the Bash tool's overrides and the gate always agree on which calls only read.
    rest = [Word(w.text, None) if w.glob and (w.value or "")[:1] in ("*", "?", "[") else w for w in args[k + 1:]]
    parsed = parse(spec, rest)
    if parsed.problem:
        return sub, parsed.problem, ()
    return sub, _listing(sub or "", parsed), parsed.operands if sub == "diff" else ()


def _listing(sub: str, parsed: Parsed) -> str | None:
    """branch, tag and remote only read when they list: names create or delete."""
    names = [w.value for w in parsed.operands]
    if sub in ("branch", "tag") and names and not parsed.has("l", "list"):
        return f"`git {sub} NAME` creates a {sub}"
    if sub == "remote" and names:
        if names[0] == "get-url" or (names[0] == "show" and parsed.has("n")):
            return None
        return "`git remote` with a command changes remotes or reaches the network"
    return None
