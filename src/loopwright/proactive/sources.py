"""Where a routine's items come from: a `command` that prints one JSON object a line (`id`
required, any other fields), a `folder` whose files are the items (the id is the path and a
hash of the content, so a changed file is a new item), or the ledger itself (`http`: items
POSTed to `loopwright serve`, waiting as pending with their fields). Lines that are not items are kept with
the reason, to be recorded as skipped; the rest run. And the `report` command, fed an outcome.
Both commands run in the project's folder without loopwright's own keys (as tools do)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

import anyio

from ..core.environ import child_env
from ..core.fastclass import dataclass
from ..core.storeports import Ledger

SOURCE_TIMEOUT_S = 300.0
REPORT_TIMEOUT_S = 60.0
MAX_CONTENT = 200_000  # a folder item's `content` field, in characters


@dataclass(frozen=True, slots=True)
class Item:
    id: str
    fields: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Found:
    """What a source gave: the items, and the lines that were not items as (ledger id, reason)."""

    items: tuple[Item, ...] = ()
    malformed: tuple[tuple[str, str], ...] = ()


class SourceError(RuntimeError):
    """The source could not be read (its command failed, its folder is missing)."""


def _digest(data: bytes, n: int = 16) -> str:
    return hashlib.sha256(data).hexdigest()[:n]


def parse_lines(text: str) -> Found:
    items: list[Item] = []
    malformed: list[tuple[str, str]] = []
    seen: set[str] = set()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        why = None
        try:
            value = json.loads(line)
        except ValueError as exc:
            value, why = None, f"not JSON ({exc})"
        if why is None and not isinstance(value, dict):
            why = f"expected a JSON object with an `id`, got {type(value).__name__}"
        elif why is None and (isinstance(value["id"], bool) if "id" in value else True):
            why = "no `id` field (each item needs one: a string or a number)"
        elif why is None and not (isinstance(value["id"], (str, int)) and str(value["id"]).strip()):
            why = f"`id` must be a non-empty string or a number, got {value['id']!r}"
        if why is not None:
            shown = line.strip() if len(line.strip()) <= 80 else line.strip()[:79] + "…"
            malformed.append((f"malformed:{_digest(line.strip().encode())}", f"line {n}: {why}: {shown}"))
            continue
        assert isinstance(value, dict)
        item_id = str(value["id"])
        if item_id not in seen:
            seen.add(item_id)
            items.append(Item(item_id, {**value, "id": item_id}))
    return Found(tuple(items), tuple(malformed))


async def command_items(command: str, cwd: str) -> Found:
    try:
        with anyio.fail_after(SOURCE_TIMEOUT_S):
            done = await anyio.run_process(["/bin/sh", "-c", command], cwd=cwd, check=False, env=child_env())
    except TimeoutError:
        raise SourceError(f"the source command did not finish in {SOURCE_TIMEOUT_S:.0f}s: {command}") from None
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip()[-500:] or "(no output on stderr)"
        raise SourceError(f"the source command exited {done.returncode}: {err}")
    return parse_lines(done.stdout.decode(errors="replace"))


def folder_items(folder: str, cwd: str) -> Found:
    """Each regular file under the folder (hidden ones left out), in path order."""
    root = Path(cwd, os.path.expanduser(folder))
    if not root.is_dir():
        raise SourceError(f"the source folder {root} is not a folder")
    items = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        data = path.read_bytes()
        shown = os.path.relpath(path, cwd)
        try:
            content = data.decode("utf-8")[:MAX_CONTENT]
        except UnicodeDecodeError:
            content = ""
        digest = _digest(data)
        items.append(Item(f"{shown}#{digest}", {"id": f"{shown}#{digest}", "path": shown, "name": path.name,
                                                  "content": content, "hash": digest}))
    return Found(tuple(items))


def queued_items(ledger: Ledger, key: str, retry_failed: int) -> Found:
    """The items POSTed for the routine that are still to run: pending, interrupted, or failed
    with retries left, each with the fields it was POSTed with."""
    items = []
    for row in ledger.items(key):
        if row.status in ("pending", "interrupted") or (row.status == "failed" and row.tries <= retry_failed):
            try:
                fields = json.loads(row.fields) if row.fields else {}
            except ValueError:
                fields = {}
            items.append(Item(row.item_id, {**(fields if isinstance(fields, dict) else {}), "id": row.item_id}))
    return Found(tuple(items))


async def run_report(command: str, outcome: Mapping[str, Any], cwd: str) -> str | None:
    """Feed one outcome to the report command as a JSON line on stdin; why it failed, or None."""
    data = (json.dumps(outcome, ensure_ascii=False) + "\n").encode()
    try:
        with anyio.fail_after(REPORT_TIMEOUT_S):
            done = await anyio.run_process(["/bin/sh", "-c", command], input=data, cwd=cwd, check=False,
                                          env=child_env())
    except TimeoutError:
        return f"the report command did not finish in {REPORT_TIMEOUT_S:.0f}s"
    except OSError as exc:
        return f"the report command could not start: {exc}"
    if done.returncode != 0:
        return f"the report command exited {done.returncode}: {done.stderr.decode(errors='replace').strip()[-300:]}"
    return None
