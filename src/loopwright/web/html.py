"""HTML building blocks of the web view. Everything that came from a model, a tool, a file or a
store goes through `esc` (or `attr`): text, never markup. Pages are plain HTML with one
stylesheet and one script served from the package; no inline script or style anywhere."""

from __future__ import annotations

import html
import json
import time
from typing import Any, Iterable
from urllib.parse import urlencode

NAV = (("/", "Sessions"), ("/schedules", "Schedules"), ("/cost", "Cost"))


def esc(value: Any) -> str:
    """Text as HTML text or attribute value: `& < > " '` escaped, and characters HTML cannot
    carry (NUL, lone surrogates) replaced."""
    text = value if isinstance(value, str) else str(value)
    text = text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")
    return html.escape(text, quote=True)


def link(href: str, text: Any, cls: str = "") -> str:
    klass = f' class="{esc(cls)}"' if cls else ""
    return f'<a href="{esc(href)}"{klass}>{esc(text)}</a>'


def query(base: str, **params: Any) -> str:
    kept = {k: v for k, v in params.items() if v not in (None, "", 0)}
    return base + ("?" + urlencode(kept) if kept else "")


def head(title: str, active: str = "", live: dict[str, str] | None = None) -> str:
    nav = " ".join(link(href, name, "on" if href == active else "") for href, name in NAV)
    data = "".join(f' data-{esc(k)}="{esc(v)}"' for k, v in (live or {}).items())
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>{esc(title)} · loopwright</title>"
            "<link rel=\"stylesheet\" href=\"/static/style.css\">"
            "<script src=\"/static/live.js\" defer></script></head>"
            f"<body{data}><header><b>loopwright</b> <nav>{nav}</nav></header><main><h1>{esc(title)}</h1>")


def foot() -> str:
    return "</main></body></html>"


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], cls: str = "") -> str:
    """`rows` hold cells already made HTML (escape them with `esc` first)."""
    klass = f' class="{esc(cls)}"' if cls else ""
    top = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table{klass}><thead><tr>{top}</tr></thead><tbody>{body}</tbody></table>"


def money(value: Any) -> str:
    return f"${value:.4f}" if isinstance(value, (int, float)) else "-"


def duration(ms: Any) -> str:
    if not isinstance(ms, (int, float)) or ms <= 0:
        return "-"
    s = ms / 1000
    return f"{s:.1f}s" if s < 60 else f"{int(s // 60)}m{int(s % 60):02d}s" if s < 3600 else f"{s / 3600:.1f}h"


def when(at: float | None) -> str:
    return "-" if at is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def started(iso: str) -> str:
    return iso[:19].replace("T", " ") if iso else "-"


def pre(value: Any, cls: str = "") -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
    klass = f' class="{esc(cls)}"' if cls else ""
    return f"<pre{klass}>{esc(text)}</pre>"


def badge(text: str, kind: str = "") -> str:
    return f'<span class="badge {esc(kind or text)}">{esc(text or "-")}</span>'


def hidden(name: str, value: str) -> str:
    return f'<input type="hidden" name="{esc(name)}" value="{esc(value)}">'
