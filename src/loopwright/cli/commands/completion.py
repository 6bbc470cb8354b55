"""`loopwright completion bash|zsh|fish`: a shell completion script, generated from the argument
parsers themselves (the main one and every subcommand's), so a new flag or command completes
without anyone editing a script. Flags hidden from `--help` (the Agent SDK's) are not offered.

Every script walks the words typed so far the same way: a word naming a subcommand of the
command reached so far descends into it, a flag that takes a value skips the word after it, and
the word being typed completes from that command's flags (when it starts with '-'), the choices
of the flag before it, or its subcommands and positional choices. A subcommand is only ever the
first word after its command (as argparse and `loopwright` itself read it): `loopwright -p schedule`
is a prompt."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import UsageError
from ..parsing import Parser

SHELLS = ("bash", "zsh", "fish")


def parser() -> Parser:
    p = Parser(prog="loopwright completion", description="Print a completion script for your shell. bash: "
               "eval \"$(loopwright completion bash)\" in ~/.bashrc; zsh: source <(loopwright completion zsh) "
               "in ~/.zshrc (after compinit); fish: loopwright completion fish > "
               "~/.config/fish/completions/loopwright.fish.")
    p.add_argument("shell", choices=SHELLS, help="The shell the script is for.")
    return p


def run_completion(args: list[str]) -> int:
    shell = parser().parse_args(args).shell
    print({"bash": bash, "zsh": zsh, "fish": fish}[shell](command_tree()), end="")
    return 0


@dataclass
class Node:
    """One command (`""` the main one, `"schedule add"` a nested one) as completion sees it."""

    path: str
    subcommands: dict[str, str] = field(default_factory=dict)  # name -> what it does
    words: dict[str, str] = field(default_factory=dict)  # positional choices (`goal status`) -> ""
    flags: dict[str, str] = field(default_factory=dict)  # every option string -> its help's first sentence
    valued: list[str] = field(default_factory=list)  # the flags that take a value
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)  # flag -> its choices


def command_tree() -> list[Node]:
    """Every command, the main one first, read from the parsers."""
    from ..options import parser as main_parser
    from ..parsing import COMMANDS, TWO_WORD_SUBCOMMANDS
    from . import command_parser

    main = main_parser()
    nodes = [_node("", main)]
    firsts = {first for first, _ in TWO_WORD_SUBCOMMANDS}
    for _, group in COMMANDS:
        for name, _, what in group:
            nodes[0].subcommands[name] = what
            sub = command_parser(name)
            nodes += _walk(name, sub, main)
    nodes[0].words = {}  # the main command's positional is a free prompt
    assert firsts <= set(nodes[0].subcommands)
    return nodes


def _walk(path: str, p: argparse.ArgumentParser, main: argparse.ArgumentParser) -> list[Node]:
    node = _node(path, p)
    if isinstance(p, Parser) and p.takes_run_flags:  # `workflow run NAME … --model X`: the main command's flags
        extra = _node("", main)
        node.flags.update(extra.flags)
        node.valued += extra.valued
        node.choices.update(extra.choices)
    found = [node]
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                node.subcommands[name] = helps.get(name, "")
                found += _walk(f"{path} {name}", sub, main)
    return found


def _node(path: str, p: argparse.ArgumentParser) -> Node:
    node = Node(path)
    for action in p._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        if not action.option_strings:
            node.words.update(dict.fromkeys(action.choices or getattr(action, "completes", ()) or (), ""))
            continue
        for flag in action.option_strings:
            node.flags[flag] = _first_sentence(action.help or "")
            if action.nargs != 0:
                node.valued.append(flag)
                if action.choices:
                    node.choices[flag] = tuple(str(c) for c in action.choices)
    return node


def _first_sentence(text: str) -> str:
    """A flag's help up to its first full stop or semicolon outside parentheses (a shell shows one line)."""
    text, depth = " ".join(text.split()), 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and char in ".;" and text[i + 1: i + 2] in ("", " "):
            return text[:i]
    return text


def _word(text: str) -> str:
    """A name the scripts embed unquoted: the parsers' own words, checked (no shell syntax)."""
    if not re.fullmatch(r"[A-Za-z0-9_.,:=+-]+", text):
        raise UsageError(f"completion: {text!r} cannot be completed safely; expected a plain word")
    return text


def _quoted(text: str) -> str:
    """`text` in single quotes for bash and zsh (a quote inside: close, escape it, reopen)."""
    return "'" + text.replace("'", "'\\''") + "'"


def _fish_quoted(text: str) -> str:
    """`text` in single quotes for fish, which reads \\\\ and \\' inside them."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _data(nodes: list[Node]) -> dict[str, dict[str, str]]:
    """Per path: its subcommands, its words (subcommands and positional choices), flags and valued flags,
    each a space-separated list; and per "path|flag" its choices."""
    table: dict[str, dict[str, str]] = {}
    for n in nodes:
        table[n.path] = {
            "subs": " ".join(_word(w) for w in n.subcommands),
            "words": " ".join(_word(w) for w in [*n.subcommands, *n.words]),
            "flags": " ".join(_word(f) for f in n.flags),
            "valued": " ".join(_word(f) for f in n.valued),
        }
    return table


def _choices(nodes: list[Node]) -> list[tuple[str, str]]:
    return [(f"{n.path}|{flag}", " ".join(_word(c) for c in values)) for n in nodes for flag, values in n.choices.items()]


def bash(nodes: list[Node]) -> str:
    table = _data(nodes)
    cases = "".join(f"    {_quoted(path)}) lw_subs={_quoted(d['subs'])}; lw_words={_quoted(d['words'])}; "
                    f"lw_flags={_quoted(d['flags'])}; lw_valued={_quoted(d['valued'])};;\n"
                    for path, d in table.items())
    choices = "".join(f"    {_quoted(key)}) echo {_quoted(values)};;\n" for key, values in _choices(nodes))
    return f"""# loopwright completion for bash: eval "$(loopwright completion bash)" in ~/.bashrc
_loopwright_node() {{
  case "$1" in
{cases}    *) lw_subs=''; lw_words=''; lw_flags=''; lw_valued='';;
  esac
}}
_loopwright_choices() {{
  case "$1|$2" in
{choices}  esac
}}
_loopwright() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" cmdpath='' skip=0 seen=0 i w lw_subs lw_words lw_flags lw_valued
  _loopwright_node ''
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${{COMP_WORDS[i]}}"
    if ((skip)); then skip=0; continue; fi
    if [[ $w == -* ]]; then
      [[ $w != *=* && " $lw_valued " == *" $w "* ]] && skip=1
      continue
    fi
    if ((!seen)) && [[ ( -n $cmdpath || $i == 1 ) && " $lw_subs " == *" $w "* ]]; then
      cmdpath="${{cmdpath:+$cmdpath }}$w"
      _loopwright_node "$cmdpath"
    else
      seen=1
    fi
  done
  ((seen)) || [[ -z $cmdpath && $COMP_CWORD -gt 1 ]] && lw_words=''  # past the first word: no subcommand
  if ((skip)); then
    local choices
    choices="$(_loopwright_choices "$cmdpath" "${{COMP_WORDS[COMP_CWORD-1]}}")"
    if [[ -n $choices ]]; then COMPREPLY=($(compgen -W "$choices" -- "$cur")); else COMPREPLY=($(compgen -f -- "$cur")); fi
    return 0
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$lw_flags" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$lw_words" -- "$cur"))
    ((${{#COMPREPLY[@]}})) || COMPREPLY=($(compgen -f -- "$cur"))
  fi
  return 0
}}
complete -F _loopwright loopwright
"""


def zsh(nodes: list[Node]) -> str:
    table = _data(nodes)
    described = []
    for n in nodes:  # "name:what" pairs for _describe (a colon in a name is escaped)
        words = [f"{_word(w)}:{what}" for w, what in [*n.subcommands.items(), *n.words.items()]]
        flags = [f"{_word(f).replace(':', chr(92) + ':')}:{what}" for f, what in n.flags.items()]
        described.append(f"    {_quoted(n.path)}) lw_words=({' '.join(_quoted(w) for w in words)}); "
                         f"lw_flags=({' '.join(_quoted(f) for f in flags)});;\n")
    cases = "".join(f"    {_quoted(path)}) lw_subs=({d['subs']}); lw_valued=({d['valued']});;\n"
                    for path, d in table.items())
    choices = "".join(f"    {_quoted(key)}) lw_choices=({values});;\n" for key, values in _choices(nodes))
    return f"""# loopwright completion for zsh: source <(loopwright completion zsh) in ~/.zshrc, after compinit
_loopwright() {{
  local cmdpath='' skip=0 seen=0 i w
  local -a lw_subs lw_valued lw_words lw_flags lw_choices
  for ((i = 2; i < CURRENT; i++)); do
    w=${{words[i]}}
    if ((skip)); then skip=0; continue; fi
    case $cmdpath in
{cases}      *) lw_subs=(); lw_valued=();;
    esac
    if [[ $w == -* ]]; then
      [[ $w != *=* && ${{lw_valued[(Ie)$w]}} -gt 0 ]] && skip=1
      continue
    fi
    if (( !seen && (${{#cmdpath}} || i == 2) && ${{lw_subs[(Ie)$w]}} )); then
      cmdpath=${{cmdpath:+$cmdpath }}$w
    else
      seen=1
    fi
  done
  if ((skip)); then
    case "$cmdpath|${{words[CURRENT-1]}}" in
{choices}    esac
    if (( $#lw_choices )); then compadd -a lw_choices; else _files; fi
    return
  fi
  case $cmdpath in
{''.join(described)}  esac
  (( seen || (!${{#cmdpath}} && CURRENT > 2) )) && lw_words=()  # past the first word: no subcommand
  if [[ $PREFIX == -* ]]; then
    _describe -t flags 'flag' lw_flags
  elif (( $#lw_words )); then
    _describe -t commands 'command' lw_words || _files
  else
    _files
  fi
}}
compdef _loopwright loopwright
"""


def fish(nodes: list[Node]) -> str:
    table = _data(nodes)
    subs = "".join(f"        case {_fish_quoted(path)}\n            echo {d['subs']}\n" for path, d in table.items() if d["subs"])
    valued = "".join(f"        case {_fish_quoted(path)}\n            echo {d['valued']}\n"
                     for path, d in table.items() if d["valued"])
    lines = []
    for n in nodes:
        at = f"-n {_fish_quoted(f'__loopwright_at {_fish_quoted(n.path)}')}"
        word_at = f"-n {_fish_quoted(f'__loopwright_word_at {_fish_quoted(n.path)}')}"
        for w, what in [*n.subcommands.items(), *n.words.items()]:
            lines.append(f"complete -c loopwright -f {word_at} -a {_fish_quoted(_word(w))} -d {_fish_quoted(what)}")
        for flag, what in n.flags.items():
            spelled = f"-l {_fish_quoted(_word(flag[2:]))}" if flag.startswith("--") else f"-s {_fish_quoted(_word(flag[1:]))}"
            value = ""
            if flag in n.valued:
                value = f" -x -a {_fish_quoted(' '.join(n.choices[flag]))}" if flag in n.choices else " -r"
            lines.append(f"complete -c loopwright {at} {spelled}{value} -d {_fish_quoted(what)}")
    body = "\n".join(lines)
    return f"""# loopwright completion for fish: loopwright completion fish > ~/.config/fish/completions/loopwright.fish
function __loopwright_subs
    switch $argv[1]
{subs}    end
end
function __loopwright_valued
    switch $argv[1]
{valued}    end
end
function __loopwright_path
    # the command reached by the words typed so far; $__loopwright_seen: 1 once a positional was given
    set -l cmdpath ''
    set -l skip 0
    set -g __loopwright_seen 0
    set -l typed (commandline -opc)
    set -e typed[1]
    for i in (seq (count $typed))
        set -l w $typed[$i]
        if test $skip = 1
            set skip 0
            continue
        end
        if string match -q -- '-*' $w
            if not string match -q -- '*=*' $w; and contains -- $w (string split ' ' -- (__loopwright_valued $cmdpath))
                set skip 1
            end
            continue
        end
        if test $__loopwright_seen = 0; and test -n "$cmdpath" -o $i = 1; and contains -- $w (string split ' ' -- (__loopwright_subs $cmdpath))
            set cmdpath (string trim -- "$cmdpath $w")
        else
            set -g __loopwright_seen 1
        end
    end
    if test -z "$cmdpath" -a (count $typed) -gt 0
        set -g __loopwright_seen 1
    end
    echo $cmdpath
end
function __loopwright_at
    set -l here (__loopwright_path)
    test "$here" = "$argv[1]"
end
function __loopwright_word_at
    __loopwright_at $argv[1]; and test $__loopwright_seen = 0
end
complete -c loopwright -e
{body}
"""
