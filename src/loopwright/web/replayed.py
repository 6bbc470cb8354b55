"""A session's replay on its page: where the last replay of it left the record (the first
divergence, its kind and diff), kept by `loopwright replay` (`replay.kept`), and the button that
replays it again, offline — the model answered from the record, the tools run in a scratch copy
of its project — through the real command line, which keeps the new report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..replay.compare import KINDS
from .html import badge, esc, hidden

TIMEOUT_S = 900.0
_SHOWN = 4000  # characters of a recorded or replayed value shown (the report file has them whole)


def section(kept: dict[str, Any] | None, problem: str, session_id: str, token: str | None) -> str:
    """The page's "Replay" section. `problem`: why the last report cannot be shown ("" if none);
    `token`: the launch token when the viewer has it (the button needs it)."""
    parts = ['<section class="replay" id="replay"><h2>Replay</h2>']
    if problem:
        parts.append(f'<p class="warn">{esc(problem)}</p>')
    elif kept is None:
        parts.append('<p class="empty">Not replayed yet.</p>')
    else:
        parts.append(_report(kept))
    if token:
        parts.append(f'<form method="post" action="/s/{esc(session_id)}/replay">{hidden("token", token)}'
                     f'<button class="replay">{"Replay again" if kept else "Replay"}</button></form>'
                     '<p class="note">Runs the session again offline with today\'s settings, hooks, rules and tools: '
                     "the model answers as recorded; tools run in a scratch copy of the project.</p>")
    else:
        parts.append('<p class="note">To replay from here, open the address with <code>?token=…</code> that '
                     "<code>loopwright serve</code> printed; or run <code>loopwright replay "
                     f"{esc(session_id)}</code>.</p>")
    return "".join(parts) + "</section>"


def _report(kept: dict[str, Any]) -> str:
    flags = " ".join(str(f) for f in kept.get("flags") or [])
    when = (f'<p class="note">last replay {esc(kept.get("replayedAt", "?"))}'
            + (f" with <code>{esc(flags)}</code>" if flags else "")
            + f' · project copy from {esc(kept.get("projectFrom", "?"))} · wire {esc(kept.get("wire", "?"))}</p>')
    first = kept.get("divergence")
    if not kept.get("diverged") or not isinstance(first, dict):
        return when + f'<p>{badge("no divergence", "ok")} the replay followed the record to its end.</p>'
    kind = str(first.get("kind", "?"))
    place = esc(first.get("chain", "?")) + (f", at {esc(first['where'])}" if first.get("where") else "")
    out = [when, f'<p class="divergence">{badge("diverged", "error")} <b>{esc(kind)}</b>: '
                 f'{esc(KINDS.get(kind, first.get("meaning", "")))} — in {place}</p>',
           f'<p class="why">{esc(first.get("why", ""))}</p>']
    if first.get("diff"):
        out.append(_diff(str(first["diff"])))
    else:
        for label in ("recorded", "replayed"):
            if label in first:
                out.append(f'<p class="note">{label}</p><pre>{esc(_text(first[label]))}</pre>')
    others = [d for d in kept.get("divergences") or [] if isinstance(d, dict)][1:]
    if others:
        out.append("<p>then:</p><ul>" + "".join(f"<li>{esc(d.get('kind', '?'))} in {esc(d.get('chain', '?'))}: "
                                                 f"{esc(d.get('why', ''))}</li>" for d in others) + "</ul>")
    return "".join(out)


def _diff(diff: str) -> str:
    rows = []
    for line in diff[:_SHOWN * 4].splitlines():
        cls = "add" if line.startswith("+") and not line.startswith("+++") else \
            "del" if line.startswith("-") and not line.startswith("---") else ""
        rows.append(f'<span class="{cls}">{esc(line)}</span>' if cls else esc(line))
    return '<pre class="diff">' + "\n".join(rows) + "</pre>"


def _text(value: Any) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "\n…"


async def replay(root: Path, session_id: str, transcript: Path, store: str, cwd: str) -> str:
    """Replay the session through `loopwright replay` (which keeps its report); "" when it ran
    (diverged or not), else what went wrong. `store`: the sessions' store URL (a PostgreSQL one:
    the session is read from the database; else the transcript is replayed from its file)."""
    import anyio

    # the store's URL goes by the environment, not the command line (other users can read that)
    database = store.lower().startswith(("postgresql:", "postgres:"))  # else the page's file is the transcript
    target = [session_id] if database else [str(transcript)]
    env = {**os.environ, "LOOPWRIGHT_HOME": str(root), **({"LOOPWRIGHT_STORE": store} if database else {})}
    with anyio.move_on_after(TIMEOUT_S):
        done = await anyio.run_process([sys.executable, "-m", "loopwright", "replay", *target], cwd=cwd, env=env,
                                       check=False, stdin=subprocess.DEVNULL)
        if done.returncode in (0, 1):
            return ""
        said = done.stderr.decode("utf-8", "replace").strip()
        return f"the replay could not run (exit {done.returncode}): {said[-600:] or 'no output'}"
    return f"the replay did not finish within {TIMEOUT_S:g} s"
