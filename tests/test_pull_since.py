"""`pull --since` that leaves out every segment of a log still says where the log ends: the
evidence log is empty, but its record (as a compaction that dropped everything would write)
gives its readers an events.dropped, takes a cursor from the source, and makes an append go
on from the source's sequence, never use one again. Before, the log read as never written."""
from __future__ import annotations

import base64
import shutil
from pathlib import Path

import orjson

from conftest import jsonl, run_cli

SAMPLES = Path(__file__).resolve().parent.parent / "sample_ledgers"


def test_a_log_wholly_before_since_is_an_empty_log_with_its_record(tmp_path):
    root = tmp_path / "r"
    shutil.copytree(SAMPLES, root)
    (tmp_path / "store").mkdir()
    url = f"file://{tmp_path / 'store'}"
    assert run_cli("ship", url, "-q", root=root).returncode == 0
    events = jsonl((root / "acme" / "billing.jsonl").read_bytes())
    last = events[-1]
    since = last["time"][:-2] + "1Z"  # a microsecond after its last event
    ev = tmp_path / "ev"
    p = run_cli("pull", url, "acme/billing", "--since", since, "--into", ev, "-o", "json")
    assert p.returncode == 0, p.stderr
    [row] = orjson.loads(p.stdout)["logs"]
    n = int(last["sequence"])
    assert (row["events"], row["dropped"]) == (0, n)
    assert (ev / "acme" / "billing.jsonl").read_bytes() == b""
    head = run_cli("head", root=ev).stdout.strip()
    assert orjson.loads(base64.urlsafe_b64decode(head + b"=" * (-len(head) % 4))) == {"acme/billing": n}
    [notice] = jsonl(run_cli("page", "--all", root=ev).stdout)
    assert notice["type"] == "wardrik.events.dropped" and notice["data"] == {"log": "acme/billing", "count": n}
    cur = base64.urlsafe_b64encode(orjson.dumps({"acme/billing": n})).decode().rstrip("=")
    q = run_cli("page", "acme/billing", "--after", cur, root=ev)
    assert (q.returncode, q.stdout) == (0, b""), q.stderr
    assert run_cli("check", root=ev).returncode == 0
    a = run_cli("append", "acme/billing", "trigger.fired", "--data", '{"trigger":{"name":"x"}}', root=ev)
    assert a.returncode == 0 and jsonl(a.stdout)[0]["sequence"] == f"{n + 1:012d}"
