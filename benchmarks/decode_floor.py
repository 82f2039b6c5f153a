"""The floor under ``page --all`` of many small logs: what any Python reader that checks each
line pays, with no merge, no cursor and no filter.

    python benchmarks/decode_floor.py FILE...

Reads each file whole, decodes every line with orjson (as wardrik must: a line that is not an
event is refused, never printed) and writes the files' bytes to stdout. The review benchmark
(``bench_review.py``, set C) runs it beside ``page --all`` and ``cat``: it says how much of
``page``'s time over ``cat``'s is the interpreter's start and the decoding of every line, which
no ordering across logs can save.
"""
from __future__ import annotations

import sys

import orjson


def main(paths: list[str]) -> int:
    loads = orjson.loads
    out = sys.stdout.buffer
    n = 0
    for p in paths:
        with open(p, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        for obj in map(loads, lines[:-1]):
            n += isinstance(obj, dict)
        out.write(data)
    out.flush()
    print(f"{n} events", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
