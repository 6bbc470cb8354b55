"""A `--attempts N` run side by side, from the `attempts` attachment every attempt's transcript
holds (cli/attempts.py): each attempt's status, turns, cost, checks, protected files changed,
the judge's verdict and defects, its diff, and the winner; each attempt links to its session."""

from __future__ import annotations

from typing import Any

from .html import badge, esc, link, money, pre


def attempts_html(a: dict[str, Any]) -> str:
    rows = [r for r in a.get("attempts") or [] if isinstance(r, dict)]
    judge = a.get("judge") if isinstance(a.get("judge"), dict) else None
    winner = a.get("winner")
    head = (f"<p>{len(rows)} attempts · winner: {badge(f'attempt {winner}', 'good') if winner is not None else badge('none', 'bad')}"
            f"{' (applied)' if a.get('applied') else ''}</p>")
    if judge is not None:
        head += (f"<p class=\"judge\">judge {esc(judge.get('model', ''))}: {esc(judge.get('reasons', ''))}</p>")
    else:
        head += "<p class=\"judge\">no judge: no attempt was eligible</p>"
    columns = "".join(_column(r, a, judge) for r in rows)
    return f'{head}<div class="attempt-grid">{columns}</div>'


def _column(r: dict[str, Any], a: dict[str, Any], judge: dict[str, Any] | None) -> str:
    number = r.get("attempt")
    mark = "winner" if number == a.get("winner") else "eligible" if r.get("eligible") else "out"
    here = " (this session)" if number == a.get("this_attempt") else ""
    sid = r.get("session_id")
    session = link(f"/s/{sid}", f"session {str(sid)[:8]}…") if sid else "no session"
    parts = [f"<h3>attempt {esc(number)}{esc(here)} {badge(mark, {'winner': 'good', 'out': 'bad'}.get(mark, ''))}</h3>",
             f"<p>{badge(str(r.get('outcome', '')), 'success' if r.get('outcome') == 'success' else 'error')} "
             f"{esc(r.get('turns'))} turns · {money(r.get('cost_usd'))} · {session}</p>"]
    if r.get("instruction"):
        parts.append(f"<p class=\"cond\">approach: {esc(r['instruction'])}</p>")
    checks = [c for c in r.get("checks") or [] if isinstance(c, dict)]
    if checks:
        parts.append("<ul class=\"checks\">" + "".join(
            f"<li>{badge('pass' if c.get('passed') else 'FAIL', 'good' if c.get('passed') else 'bad')} "
            f"<code>{esc(c.get('command', ''))}</code> exit {esc(c.get('exit_code'))}</li>" for c in checks) + "</ul>")
    if r.get("protected_changed"):
        parts.append(f"<p class=\"reason\">protected files changed: {esc(', '.join(map(str, r['protected_changed'])))}</p>")
    if r.get("why_not"):
        parts.append(f"<p class=\"reason\">cannot win: {esc(r['why_not'])}</p>")
    if judge is not None:
        verdict = (judge.get("verdicts") or {}).get(str(number))
        defects = (judge.get("defects") or {}).get(str(number)) or []
        if verdict is not None:
            parts.append(f"<p>judge: {badge(str(verdict), 'bad' if verdict == 'reject' else 'good')}</p>")
        if defects:
            parts.append("<ul class=\"defects\">" + "".join(f"<li>{esc(d)}</li>" for d in defects) + "</ul>")
    diff = (a.get("diffs") or {}).get(str(number)) or ""
    parts.append(f"<details><summary>diff</summary>{pre(diff or '(no changes)', 'diff')}</details>")
    return f'<div class="attempt {esc(mark)}" data-attempt="{esc(number)}">{"".join(parts)}</div>'
