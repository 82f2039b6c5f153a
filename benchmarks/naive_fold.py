"""Baseline for `wardrik fold`: seed 000's fold, reading the whole file every time.

Seed 000 (``/work/shared/seeds/000_959cb7cc4e6bba3f.txt``) reads the ledger with
``path.read_text().splitlines()``, ``json.loads`` on every line, and folds the list into
status, task, turns, tool_calls, answer and applied_through. This does the same, over both that
seed's ``{"seq", "type", "data"}`` lines and wardrik's CloudEvents (``run.started`` opens a run
and resets the counts, so the values describe the latest run, as CONTRACT.md's state view):

    python benchmarks/naive_fold.py ROOT/acme/big.jsonl

prints the state as JSON. No checkpoint: every fold reads the whole file.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

RUN_OPEN = {"run.created", "wardrik.run.started"}
TURN = {"model.responded", "wardrik.message.completed"}
TOOL_RESULT = {"tool.returned", "wardrik.tool_call.completed", "wardrik.tool_call.failed"}


def events(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        out.append(json.loads(line))  # a torn last line would fail here, as in the seed
    return out


def fold(events: list[dict], state: dict | None = None) -> dict:
    s = state or {"status": "empty", "task": None, "turns": 0,
                  "tool_calls": 0, "answer": None, "applied_through": 0}
    s = dict(s)
    for e in events:
        data, t = e["data"], e["type"]
        if t in RUN_OPEN:
            s.update(status="running", task=data.get("task"), turns=0, tool_calls=0, answer=None)
        elif t in TURN:
            s["turns"] += 1
        elif t in TOOL_RESULT:
            s["tool_calls"] += 1
        elif t in ("run.completed", "wardrik.run.completed"):
            s["status"], s["answer"] = "completed", data.get("answer")
        elif t == "wardrik.run.failed":
            s["status"] = "failed"
        s["applied_through"] = int(e["sequence"]) if "sequence" in e else e["seq"]
    return s


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: naive_fold.py FILE.jsonl", file=sys.stderr)
        return 2
    print(json.dumps(fold(events(Path(args[0]))), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
