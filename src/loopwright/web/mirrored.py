"""The session list and pages of a PostgreSQL store: its sessions mirrored as JSONL files in the
home's cache (`stores.pgmirror`), kept in step every second by a thread of the server (and fully
compared once a minute), so the list, the pages and their live tails read files as they do for
the embedded store."""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from typing import Any

from .index import SessionIndex

SYNC_EVERY_S = 1.0
RECONCILE_EVERY_S = 60.0  # the full comparison (`Mirror.reconcile`): every transcript's last id


def session_index(config: Any, stores: Any) -> SessionIndex:
    if not config.store.lower().startswith(("postgresql:", "postgres:")):
        return SessionIndex(config.root, config.cwd)
    from ..stores.pgmirror import Mirror

    digest = hashlib.sha256(config.store.encode()).hexdigest()[:12]
    mirror = Mirror(stores, config.root / "cache" / f"pg-{digest}")
    mirror.sync()
    threading.Thread(target=_keep_in_step, args=(mirror,), name="pg-mirror", daemon=True).start()
    return SessionIndex(mirror.root, config.cwd, db_path=mirror.root / "serve-index.db")


def _keep_in_step(mirror: Any) -> None:
    said, compared = "", time.monotonic()
    while True:
        time.sleep(SYNC_EVERY_S)
        try:
            mirror.sync()
            if time.monotonic() - compared >= RECONCILE_EVERY_S:
                mirror.reconcile()
                compared = time.monotonic()
            said = ""
        except Exception as exc:  # noqa: BLE001 - the server goes on with what it has; said once per cause
            line = f"loopwright serve: warning: the store could not be read ({type(exc).__name__}: {exc}); retrying"
            if line != said:
                print(line.splitlines()[0], file=sys.stderr, flush=True)
                said = line
