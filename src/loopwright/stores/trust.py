"""Which folders you trusted (or declined) at the terminal, remembered in
`<LOOPWRIGHT_HOME>/trust.json`: a private file (0600 in a 0700 folder), rewritten whole through a
new file and a rename, under a lock, so two terminals answering at once lose nothing."""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

try:
    import fcntl
except ImportError:  # not POSIX: no advisory lock, the rest works
    fcntl = None  # type: ignore[assignment]

VERSION = 1


def folder_key(folder: str | Path) -> str:
    """The folder as the kernel resolves it: a link to a trusted folder is that folder."""
    return os.path.realpath(os.path.expanduser(str(folder)))


class TrustStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def default(cls, env: Mapping[str, str] | None = None) -> "TrustStore":
        from .jsonl import home

        return cls(home(env) / "trust.json")

    def answer(self, folder: str | Path) -> bool | None:
        """True: trusted; False: declined; None: never asked about this folder."""
        entry = self._read().get(folder_key(folder))
        return entry.get("trusted") if isinstance(entry, dict) and isinstance(entry.get("trusted"), bool) else None

    def folders(self) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self._read().items() if isinstance(v, dict)}

    def remember(self, folder: str | Path, trusted: bool, how: str = "asked") -> None:
        with self._locked() as folders:
            folders[folder_key(folder)] = {"trusted": trusted, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                           "how": how}

    def forget(self, folder: str | Path) -> bool:
        """Drop what was remembered about the folder; False when there was nothing."""
        with self._locked() as folders:
            return folders.pop(folder_key(folder), None) is not None

    # ------------------------------------------------------------ the file

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            from ..core.errors import UsageError

            raise UsageError(f"{self.path}: cannot read the trusted folders ({exc}); fix or remove the file") from None
        folders = data.get("folders") if isinstance(data, dict) else None
        return dict(folders) if isinstance(folders, dict) else {}

    @contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.path.parent, 0o700)
        lock = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_EX)
            folders = self._read()
            yield folders
            self._write(folders)
        finally:
            os.close(lock)  # closing releases the lock

    def _write(self, folders: dict[str, Any]) -> None:
        text = json.dumps({"version": VERSION, "folders": folders}, indent=1, sort_keys=True) + "\n"
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(fd, 0o600)  # an old temp file keeps its mode through O_CREAT
            f.write(text)
            f.flush()
            os.fsync(fd)
        os.replace(tmp, self.path)
