"""Which settings files a run reads: `--bare` reads none, and `--setting-sources` (the Agent SDK's)
names the sources."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import UsageError

if TYPE_CHECKING:
    from .runspec import RunSpec

SETTING_SOURCES = ("user", "project", "local")


def setting_sources(opts: RunSpec) -> tuple[str, ...] | None:
    if opts.setting_sources is None:
        return None
    given = tuple(s.strip() for s in opts.setting_sources.split(",") if s.strip())
    unknown = [s for s in given if s not in SETTING_SOURCES]
    if unknown:
        raise UsageError(f"--setting-sources: unknown source(s) {', '.join(unknown)}; expected some of "
                         f"{', '.join(SETTING_SOURCES)}")
    return given


def reads_setting_files(opts: RunSpec) -> bool:
    """Whether settings files are discovered at all (never with --bare; with --setting-sources only
    when both user and project are named: reading fewer than asked is the safe side)."""
    sources = setting_sources(opts)
    return not opts.bare and (sources is None or {"user", "project"} <= set(sources))
