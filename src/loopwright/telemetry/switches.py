"""Whether telemetry is on and what it sends, read from the environment the conventional way:
Claude Code's `CLAUDE_CODE_ENABLE_TELEMETRY` (or `LOOPWRIGHT_ENABLE_TELEMETRY`), the standard
`OTEL_*` exporter variables, and the content opt-ins. Standard library only: deciding that
telemetry is off must not import OpenTelemetry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..core.errors import UsageError

SWITCHES = ("LOOPWRIGHT_ENABLE_TELEMETRY", "CLAUDE_CODE_ENABLE_TELEMETRY")
YES, NO = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
EXPORTERS = ("otlp", "console", "none")
PROTOCOLS = ("http/protobuf", "grpc")
SIGNALS = {"traces": "OTEL_TRACES_EXPORTER", "metrics": "OTEL_METRICS_EXPORTER", "logs": "OTEL_LOGS_EXPORTER"}
DEFAULT_TIMEOUT_S = 10.0  # OpenTelemetry's default export timeout


@dataclass(frozen=True)
class Switches:
    """What to export: per signal (`traces`, `metrics`, `logs`) the exporters (`otlp`,
    `console`) and the OTLP protocol; whether prompts and tool content may leave the machine;
    how long an export may take (the bound on what telemetry adds at the end of a run)."""

    exporters: Mapping[str, tuple[str, ...]]
    protocols: Mapping[str, str]
    log_prompts: bool = False
    log_tool_details: bool = False  # tool inputs (OTEL_LOG_TOOL_DETAILS, as Claude Code)
    log_tool_content: bool = False  # tool inputs and outputs (LOOPWRIGHT_OTEL_LOG_TOOL_CONTENT)
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def any(self) -> bool:
        return any(self.exporters.values())


def flag(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name, "").strip().lower()
    if value in YES:
        return True
    if value in NO:
        return False
    raise UsageError(f"{name}={env[name]!r}: expected 1 or 0 (also true/false, yes/no, on/off)")


def enabled(env: Mapping[str, str]) -> bool:
    return any([flag(env, name) for name in SWITCHES])  # each one read: a typo in either is said


def switches(env: Mapping[str, str]) -> Switches | None:
    """None when telemetry is off (neither switch set); otherwise what it sends. A value no
    exporter understands is a `UsageError` naming the variable, before the run starts."""
    if not enabled(env):
        return None
    exporters, protocols = {}, {}
    for signal, name in SIGNALS.items():
        given = [p.strip().lower() for p in env.get(name, "otlp").split(",") if p.strip()] or ["otlp"]
        unknown = [p for p in given if p not in EXPORTERS]
        if unknown:
            raise UsageError(f"{name}={env[name]!r}: expected one of {', '.join(EXPORTERS)} (or a comma-separated list)")
        exporters[signal] = tuple(dict.fromkeys(p for p in given if p != "none"))
        key = f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL"
        protocol = (env.get(key) or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip().lower()
        if protocol not in PROTOCOLS:
            which = key if env.get(key) else "OTEL_EXPORTER_OTLP_PROTOCOL"
            raise UsageError(f"{which}={protocol!r}: expected {' or '.join(PROTOCOLS)}")
        protocols[signal] = protocol
    raw = env.get("OTEL_EXPORTER_OTLP_TIMEOUT", "").strip()
    try:  # seconds, as the Python exporters read it (the specification says milliseconds)
        timeout = float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        raise UsageError(f"OTEL_EXPORTER_OTLP_TIMEOUT={raw!r}: expected a number of seconds") from None
    if not timeout > 0:
        raise UsageError(f"OTEL_EXPORTER_OTLP_TIMEOUT={raw!r}: expected a number of seconds above 0")
    content = flag(env, "LOOPWRIGHT_OTEL_LOG_TOOL_CONTENT")
    return Switches(exporters, protocols, log_prompts=flag(env, "OTEL_LOG_USER_PROMPTS"),
                    log_tool_details=content or flag(env, "OTEL_LOG_TOOL_DETAILS"), log_tool_content=content,
                    timeout_s=timeout)
