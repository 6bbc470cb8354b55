"""JSON helpers for stop.sh (POSIX sh has no JSON):
`field NAME`   prints a top-level string field of the JSON object on stdin;
`last-text`    reads transcript lines (JSONL) on stdin and prints the last assistant text block;
`block N`      reads the prompt on stdin and prints the Stop hook's answer that re-sends it."""

import json
import sys


def main(argv):
    if argv[0] == "field":
        print(json.load(sys.stdin).get(argv[1]) or "")
    elif argv[0] == "last-text":
        texts = []
        for line in sys.stdin:
            message = json.loads(line).get("message") or {}
            content = message.get("content")
            if isinstance(content, list):
                texts += [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        print(texts[-1] if texts else "")
    elif argv[0] == "block":
        prompt = sys.stdin.read().strip()
        print(json.dumps({"decision": "block", "reason": prompt, "systemMessage": f"ralph: iteration {argv[1]}"}))


main(sys.argv[1:])
