"""MCP servers that misbehave, for the tests: raw JSON-RPC lines on stdio (no SDK), so each can
break the protocol on purpose. `python hostile.py MODE`; the process writes its pid, and the pid
of a child it keeps in its process group, to $HOSTILE_PIDS (one per line) before anything else.

Modes:
  hang-init   reads the handshake, never answers it; ignores SIGTERM and its stdin's end
  hang-call   answers the handshake; `wait` never answers (and ignores SIGTERM)
  flood       `flood` answers with 3 MB of text in one block, then 3 MB beside an image
  collide     `rm/rf` deletes (logs "DESTRUCTIVE"), `rm.rf` only lists (logs "harmless"): both
              clean up to `rm_rf`; also a tool whose name is 90 characters long
  bad-images  `pics` answers with an html "image", a 6 MB png, a png whose bytes are a gif,
              an invalid base64 png and one small real png
  lies        offers a tool whose input schema is 300 kB long (sent with every request: it may
              not reach the model as given; the SDK's own checks refuse a structurally bad one)
$HOSTILE_LOG gets one line per tool call: the name called."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys

MODE = sys.argv[1]
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 64).decode()
GIF = base64.b64encode(b"GIF89a" + b"\0" * 64).decode()
LONG = "very_" * 17 + "long_name"  # 94 characters


def tools() -> list[dict]:
    obj = {"type": "object", "properties": {}}
    if MODE == "hang-call":
        return [{"name": "wait", "inputSchema": obj}]
    if MODE == "flood":
        return [{"name": "flood", "inputSchema": obj}]
    if MODE == "collide":
        return [{"name": "rm/rf", "description": "Deletes everything.", "inputSchema": obj},
                {"name": "rm.rf", "description": "Lists what would be deleted.", "inputSchema": obj},
                {"name": LONG, "description": "A tool with a long name.", "inputSchema": obj}]
    if MODE == "bad-images":
        return [{"name": "pics", "inputSchema": obj}]
    if MODE == "lies":
        bloated = {"type": "object", "properties": {"x": {"enum": [f"choice {i}" for i in range(20_000)]}}}
        return [{"name": "bloated", "inputSchema": bloated}, {"name": "fine", "inputSchema": obj}]
    return []


def call(name: str) -> dict:
    log = os.environ.get("HOSTILE_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(name + "\n")
    if name == "wait":
        signal.pause()
    if name == "flood":
        return {"content": [{"type": "text", "text": "y" * 3_000_000},
                            {"type": "image", "mimeType": "image/png", "data": PNG},
                            {"type": "text", "text": "z" * 3_000_000}]}
    if name == "rm/rf":
        return {"content": [{"type": "text", "text": "DESTRUCTIVE: deleted everything"}]}
    if name == "rm.rf":
        return {"content": [{"type": "text", "text": "harmless: would delete 3 files"}]}
    if name == "pics":
        return {"content": [
            {"type": "image", "mimeType": "text/html", "data": base64.b64encode(b"<script>x</script>" * 200_000).decode()},
            {"type": "image", "mimeType": "image/png",
             "data": base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 6_000_000).decode()},
            {"type": "image", "mimeType": "image/png", "data": GIF},
            {"type": "image", "mimeType": "image/png", "data": "not base64 at all!!"},
            {"type": "image", "mimeType": "image/png", "data": PNG}]}
    return {"content": [{"type": "text", "text": f"{name} ran"}]}


def answer(rid, result) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                              "signal.pause()"])  # stays in this process group
    pids = os.environ.get("HOSTILE_PIDS")
    if pids:
        with open(pids, "w", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n{child.pid}\n")
    if MODE in ("hang-init", "hang-call"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue  # a notification
        if MODE == "hang-init":
            continue
        if method == "initialize":
            answer(rid, {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                         "serverInfo": {"name": "hostile", "version": "1"}})
        elif method == "tools/list":
            answer(rid, {"tools": tools()})
        elif method == "tools/call":
            answer(rid, call(message["params"]["name"]))
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid,
                                         "error": {"code": -32601, "message": "method not found"}}) + "\n")
            sys.stdout.flush()
    if MODE == "hang-init":
        signal.pause()  # its stdin's end does not stop it


if __name__ == "__main__":
    main()
