"""The cost chart: spend per day, stacked by model, as an SVG drawn here (no library, no script).
Colours come from presentation attributes, which a strict Content-Security-Policy allows."""

from __future__ import annotations

from .html import esc, money

PALETTE = ("#3b6fb6", "#d9822b", "#3a9d5d", "#b8475a", "#7c5cbf", "#8a6d3b", "#2f9c9c", "#777777")
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 760, 260, 64, 40, 12


def cost_chart(points: list[tuple[str, str, float]], days: int = 30) -> str:
    """`points`: (day, model, cost). The last `days` days that have any spend, one bar each."""
    by_day: dict[str, dict[str, float]] = {}
    for day, model, cost in points:
        by_day.setdefault(day, {})[model] = by_day.get(day, {}).get(model, 0.0) + cost
    shown = sorted(by_day)[-days:]
    if not shown:
        return '<p class="empty">No spend recorded yet.</p>'
    models = sorted({m for d in shown for m in by_day[d]})
    colour = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(models)}
    top = max(sum(by_day[d].values()) for d in shown) or 1.0
    plot_h, plot_w = HEIGHT - BOTTOM - TOP, WIDTH - LEFT - 8
    step = min(plot_w / len(shown), 48.0)  # one day alone is a bar, not a wall
    parts = [_axis(top, plot_h)]
    for i, day in enumerate(shown):
        x, y = LEFT + i * step + step * 0.15, float(TOP + plot_h)
        for model in models:
            cost = by_day[day].get(model, 0.0)
            h = cost / top * plot_h
            if h <= 0:
                continue
            y -= h
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{step * 0.7:.1f}" height="{h:.1f}" '
                         f'fill="{colour[model]}"><title>{esc(day)} · {esc(model)} · {money(cost)}</title></rect>')
        if len(shown) <= 12 or i % max(1, len(shown) // 10) == 0:
            parts.append(f'<text x="{x + step * 0.35:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" '
                         f'font-size="11">{esc(day[5:])}</text>')
    legend = "".join(f'<li><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" '
                     f'fill="{colour[m]}"/></svg> {esc(m)}</li>' for m in models)
    return (f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
            f'aria-label="spend per day by model">{"".join(parts)}</svg><ul class="legend">{legend}</ul>')


def _axis(top: float, plot_h: float) -> str:
    out = [f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#999"/>',
           f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - 8}" y2="{TOP + plot_h}" stroke="#999"/>']
    for k in range(5):
        value = top * k / 4
        y = TOP + plot_h - plot_h * k / 4
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{money(value)}</text>')
        if k:
            out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - 8}" y2="{y:.1f}" stroke="#e4e4e4"/>')
    return "".join(out)
