"""Sessions are data: append-only, versioned transcript records, the recorder that writes them from
the loop's events, `replay()` that rebuilds the conversation, and opening (new, resume, fork)."""

from __future__ import annotations

from ..core.errors import SessionError
from ..core.storeports import SessionLog, SessionStore
from .opening import OpenedSession, Source, open_session
from .recorder import Recorder, iso_timestamp
from .records import (
    NOT_RUN, SCHEMA_VERSION, UNKNOWN_OUTCOME, UPGRADES, AssistantEntry, AttachmentEntry, CompactEntry, Entry,
    OtherEntry, Record, Restored, SystemEntry, ToolFinishedEntry, ToolStartedEntry, UserEntry,
    answer_dangling, replay, restore,
)

__all__ = [
    "NOT_RUN", "SCHEMA_VERSION", "UNKNOWN_OUTCOME", "UPGRADES", "AssistantEntry", "AttachmentEntry", "CompactEntry",
    "Entry", "OpenedSession", "OtherEntry", "Record", "Recorder", "Restored", "SessionError", "SessionLog", "SessionStore",
    "Source", "SystemEntry", "ToolFinishedEntry", "ToolStartedEntry", "UserEntry", "answer_dangling",
    "iso_timestamp", "open_session", "replay", "restore",
]
