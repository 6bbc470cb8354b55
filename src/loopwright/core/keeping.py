"""The ports of what a session keeps besides its transcript: its file checkpoints (files as they
were before a prompt first changed them) and its workflow journal (the finished steps of a
workflow run), each in the store that holds the session's transcript (`SessionKeeping`)."""

from __future__ import annotations

from typing import IO, Any, ContextManager, Protocol, Union

from .fastclass import dataclass


@dataclass(frozen=True, slots=True)
class Opened:
    """Checkpoint `number` began with the prompt whose transcript record is `prompt_id`."""

    number: int
    prompt_id: str
    time: float


@dataclass(frozen=True, slots=True)
class KeptFile:
    """A file as checkpoint `number` found it before its prompt first changed it: `blob` names the
    kept bytes (their mode `mode`); without one, the file did not exist then, or `skipped` says
    why its bytes were not kept."""

    number: int
    path: str
    blob: str | None = None
    mode: int = 0o644
    skipped: str = ""


Entry = Union[Opened, KeptFile]


class CheckpointStore(Protocol):
    """One session's checkpoints, written as the session runs and read back in the order
    written. A write that fails raises OSError."""

    def opened(self, entry: Opened) -> None: ...

    def keep(self, entry: KeptFile, content: IO[bytes] | None) -> KeptFile:
        """Record `entry`, with `content`'s bytes when given; the entry as recorded (its `blob`)."""
        ...

    def entries(self) -> list[Entry]: ...

    def read(self, entry: KeptFile) -> ContextManager[IO[bytes]]:
        """The bytes `entry` kept, to be read in chunks."""
        ...


class JournalStore(Protocol):
    """One session's workflow journal: the records of its current run, in the order appended
    (an append survives the process being killed right after it), and the runs set aside.
    `location` names it for people."""

    @property
    def location(self) -> str: ...

    def read(self) -> tuple[list[dict[str, Any]], int]:
        """The current run's records, and how many were cut off by a crash (skipped)."""
        ...

    def append(self, record: dict[str, Any]) -> None: ...

    def set_aside(self) -> None:
        """Keep the current run's records as a finished run's; the current run starts empty."""
        ...


class SessionKeeping(Protocol):
    """A `core.storeports.Stores` that also keeps what a session keeps besides its transcript."""

    def checkpoints(self, session_id: str) -> CheckpointStore: ...

    def journal(self, session_id: str) -> JournalStore: ...
