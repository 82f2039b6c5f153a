"""Start-up baseline for `wardrik append`: the smallest Typer app that does the same kind of work.

One command: import Typer and orjson, parse the same shape of arguments as
``wardrik append LOG TYPE --data JSON --no-sync``, append one compact JSON line to a file and
print it. Whatever wardrik spends beyond this is its own start-up cost.

    python benchmarks/typer_baseline.py /tmp/x.jsonl trigger.fired --data '{"trigger":{"name":"x"}}' --no-sync
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson
import typer

app = typer.Typer(add_completion=False)


@app.command()
def append(
    file: Path,
    type: str,
    data: str = typer.Option("{}", "--data", help="event data as JSON"),
    no_sync: bool = typer.Option(False, "--no-sync", help="skip fsync"),
) -> None:
    """Append one event line to FILE."""
    line = orjson.dumps({"type": type, "data": orjson.loads(data)}) + b"\n"
    with open(file, "ab") as f:
        f.write(line)
        if not no_sync:
            f.flush()
            os.fsync(f.fileno())
    sys.stdout.buffer.write(line)


if __name__ == "__main__":
    app()
