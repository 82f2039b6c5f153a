"""A read over more logs than it may hold open closes each between its spans; a log compacted
meanwhile is a new file when the read comes back to it. The read goes on after the sequence
it reached, and the events dropped before it read them are told by an events.dropped, never
skipped unseen nor read at an offset of the old file (found by a crash-safety review: 2,000
kept events skipped, their cursor moved past them, with a "sequences missing" warning)."""
from __future__ import annotations

import os
import resource
import subprocess
from datetime import UTC, datetime, timedelta

import orjson
import pytest

from conftest import WARDRIK
from ledgergen import write_log

pytestmark = pytest.mark.subprocess
SMALL = 70  # more logs than the reader may keep open under LIMIT
LIMIT = 100
BIG = 20000
DROP = 15000


def _limited():
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def test_a_log_compacted_between_spans_is_read_on_in_its_new_file(tmp_path):
    root = tmp_path / "root"
    (root / ".wardrik").mkdir(parents=True)
    start = datetime.now(UTC) - timedelta(days=2)  # inside any retention: only --max-bytes drops
    for i in range(SMALL):
        write_log(root / "m" / f"t{i:02d}.jsonl", 1, start=start, log_id=f"m/t{i:02d}", pad=10)
    big = root / "m" / "big.jsonl"
    write_log(big, BIG, start=start, step=timedelta(seconds=10), log_id="m/big", pad=300)
    keep = sum(len(line) + 1 for line in big.read_bytes().splitlines()[DROP:])

    page = subprocess.Popen([WARDRIK, "--root", str(root), "page", "m", "--limit", "100000", "-o", "jsonl"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_limited,
                            env=dict(os.environ, NO_COLOR="1"))
    try:
        got = [page.stdout.readline() for _ in range(SMALL + 20)]  # it blocks on the pipe soon after
        before = [orjson.loads(x) for x in got]
        read_big = [int(e["sequence"]) for e in before if e["source"].endswith("/m/big")]
        assert read_big and read_big[-1] < DROP // 2, "the read must still be behind the cut"
        assert page.poll() is None, "the page must still be reading"
        sweep = subprocess.run([WARDRIK, "--root", str(root), "compact", "-q", "--max-bytes", str(keep)],
                               capture_output=True, timeout=120)
        assert sweep.returncode == 0, sweep.stderr
        assert big.stat().st_size == keep  # the sweep landed while the page was reading
        rest = page.stdout.read()  # through the buffer readline filled (communicate would skip it)
        err = page.stderr.read()
        page.wait(timeout=120)
    finally:
        if page.poll() is None:
            page.kill()
            page.wait()
    assert page.returncode == 0, err
    assert b"missing" not in err and b"corrupt" not in err, err
    events = before + [orjson.loads(x) for x in rest.splitlines()]
    covered: list[int] = []
    notices = []
    for e in events:
        if e["type"] == "wardrik.events.dropped" and e["data"]["log"] == "m/big":
            n = e["data"]["count"]
            notices.append(n)
            covered += range(covered[-1] + 1 if covered else 1, (covered[-1] if covered else 0) + n + 1)
        elif e["source"].endswith("/m/big"):
            covered.append(int(e["sequence"]))
    assert covered == list(range(1, BIG + 1))  # each event read or told of, once, in order
    assert len(notices) == 1 and 0 < notices[0] <= DROP - read_big[-1]  # told once, of those not read
