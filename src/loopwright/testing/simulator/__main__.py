"""`python -m loopwright.testing.simulator --script FILE`: serve a script until SIGINT/SIGTERM.
Prints one `listening on URL` line so a parent process knows where to connect.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from .script import Script, ScriptError
from .server import Simulator


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m loopwright.testing.simulator",
        description="Serve a loopback Anthropic Messages API from a JSON script.",
        allow_abbrev=False,  # flags in full, as every loopwright command
    )
    parser.add_argument(
        "--script", required=True, help="JSON script file (format: see loopwright.testing.simulator.script)"
    )
    parser.add_argument("--port", type=int, default=0, help="port to bind (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--no-validate", action="store_true", help="skip the API's request validation")
    parser.add_argument(
        "--delay", type=_seconds, default=0.0, metavar="SECONDS",
        help="model delay before every scripted reply, added to its own delay (default: 0; for load tests)",
    )
    parser.add_argument("--prompt-cache", action="store_true",
                        help="count Messages requests against a simulated prompt cache (usage reports reads and writes)")
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        script = Script.from_file(args.script)
    except ScriptError as exc:
        print(f"simulator: bad script: {exc}", file=sys.stderr, flush=True)
        return 2
    done = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    try:
        sim = Simulator(script, port=args.port, host=args.host, validate=not args.no_validate, delay=args.delay,
                        prompt_cache=args.prompt_cache).start()
    except OSError as exc:
        reason = exc.strerror or exc
        print(f"simulator: cannot listen on {args.host}:{args.port}: {reason}", file=sys.stderr, flush=True)
        return 2
    print(f"listening on {sim.base_url}", flush=True)
    try:
        # A timed wait lets the main thread run the signal handler promptly on every platform.
        while not done.wait(0.2):
            pass
    finally:
        sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
