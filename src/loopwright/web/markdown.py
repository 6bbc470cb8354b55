"""The model's Markdown as HTML for the web view (markdown-it-py, CommonMark with tables and
strikethrough). The text is the model's, so it is treated as hostile: raw HTML in it stays text
(escaped), images are not fetched (shown as links), and only http(s) and mailto links become
anchors — `javascript:`, `data:`, relative links to this server's own pages and every other
scheme stay text. Anchors open with no referrer and no opener."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

SAFE_SCHEMES = ("http://", "https://", "mailto:")


def markdown_html(text: str) -> str:
    return _parser().render(text)


def safe_link(url: str) -> bool:
    """Whether a (normalized) link may be an anchor: an absolute http(s) or mailto address."""
    return url.strip().lower().startswith(SAFE_SCHEMES)


@lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"]).disable("image")
    md.validateLink = safe_link  # type: ignore[method-assign]

    def link_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        return renderer.renderToken(tokens, idx, options, env)

    md.add_render_rule("link_open", link_open)
    return md
