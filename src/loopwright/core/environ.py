"""The environment of every process loopwright starts for the model's tools, hooks and goal
checks: this process's own, without the credentials loopwright itself uses. One function,
`child_env`, builds it; every spawner calls it (or gets what it built through its context)."""

from __future__ import annotations

import os
from typing import Iterable, Mapping

# Every key a model provider of ours reads (providers/anthropic.py, providers/openai.py; a test
# reads their source and fails when one names a key missing here). They are the harness's, not
# the tools': a prompt-injected `env` or `curl -H "x-api-key: $ANTHROPIC_API_KEY"` must find none.
# LOOPWRIGHT_STORE too: a database URL may carry its password, and with it a tool could rewrite
# any session (the runs loopwright starts itself, schedule fires, still get it).
CREDENTIALS = frozenset({"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "LOOPWRIGHT_STORE"})
# ...and the keys of the providers registered at run time (`withhold`), as they load.
_withheld: frozenset[str] = frozenset()


def withhold(names: Iterable[str]) -> None:
    """Keep more variables (a registered model provider's keys) from every child from now on."""
    global _withheld
    _withheld = _withheld | frozenset(names)


def child_env(base: Mapping[str, str] | None = None, *, add: Mapping[str, str] | None = None,
              keep: Iterable[str] = (), hide: Iterable[str] = ()) -> dict[str, str]:
    """`base` (default: this process's environment) without `CREDENTIALS`, the variables withheld
    and `hide`, except the
    names in `keep` (`--pass-env`); then `add` (settings `env`: what it names explicitly is given,
    credentials too)."""
    base = environ_now() if base is None else base
    hidden = (CREDENTIALS | _withheld | frozenset(hide)) - frozenset(keep)
    env = {name: value for name, value in base.items() if name not in hidden}
    env.update(add or {})
    return env


_decoded: tuple[dict[bytes, bytes], dict[str, str]] | None = None  # os.environ's raw data as last seen, decoded


def environ_now() -> dict[str, str]:
    """This process's environment as a plain dict (do not change it: it is shared). Decoding
    `os.environ` item by item costs ~20 us, and every run builds its children's environment, so
    the decoded copy is kept until the environment changes (its raw data compared at C speed)."""
    global _decoded
    raw = getattr(os.environ, "_data", None)
    if not isinstance(raw, dict):  # not CPython's os.environ: decode it every time
        return dict(os.environ)
    seen = _decoded
    if seen is None or seen[0] != raw:
        # the raw copy first: a change made meanwhile makes the next call decode again
        seen = _decoded = (dict(raw), dict(os.environ))
    return seen[1]


__all__ = ["CREDENTIALS", "child_env", "environ_now", "withhold"]
