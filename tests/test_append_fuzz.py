"""Append's input, fuzzed: whatever the data, either it is stored and reads back equal, or it is
refused with one error line (exit 2) and nothing is written. Never a traceback, never a line
that readers would call corrupt."""
from __future__ import annotations

import io
import json

import orjson
from hypothesis import HealthCheck, given, settings, strategies as st

from wardrik_cli.cli.app import run

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=25,
)


def _cli(root, *args, stdin=b""):
    out, err = io.BytesIO(), io.BytesIO()
    code = run(["--root", str(root), *args], {"NO_COLOR": "1"}, stdin=io.BytesIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue().decode()


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(extra=JSON, raw=st.one_of(st.none(), st.binary(max_size=40)))
def test_append_stores_or_refuses_cleanly(tmp_path_factory, extra, raw):
    root = tmp_path_factory.mktemp("f")
    if raw is None:
        data = json.dumps({"trigger": {"name": "x"}, "extra": extra}).encode()
    else:
        data = raw  # arbitrary bytes on stdin: mostly not JSON
    code, out, err = _cli(root, "append", "a/x", "trigger.fired", "--data", "-", stdin=data)
    log = root / "a" / "x.jsonl"
    if code == 0:
        stored = orjson.loads(out)
        code2, back, err2 = _cli(root, "page", "a/x")
        assert code2 == 0 and back == out, err2  # readers take back exactly what was printed
        assert stored["data"] == orjson.loads(data)
        assert _cli(root, "check")[0] == 0
    else:
        assert code == 2, err
        assert err.startswith("error:") and err.count("\n") == 1 and "Traceback" not in err, err
        assert out == b"" and not log.exists()
