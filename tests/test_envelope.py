"""store.log.envelope: a line's id, type, source, time and sequence read from its bytes agree
with the decoded event for every line this tool writes, and anything else falls back (None)."""
from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from wardrik_cli.protocol.catalogue import catalogue
from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id, new_trace_id
from wardrik_cli.store.log import decode_event, envelope

KEPT = [t for t in catalogue() if t.kind == "kept"]
json_values = st.recursive(st.one_of(st.text(), st.integers(-10**6, 10**6), st.booleans(), st.none()),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                           max_leaves=10)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(KEPT), st.dictionaries(st.text(max_size=10), json_values, max_size=4),
       st.from_regex(r"[a-z][a-z0-9_-]{0,10}(/[a-z0-9_-]{1,8}){0,2}", fullmatch=True), st.integers(1, 10**12 - 1))
def test_envelope_agrees_with_the_decoded_event(etype, data, log_id, seq):
    ev = build_event(etype=etype, data=data, source=f"wardrik://local/agents/{log_id}", subject=f"agents/{log_id}",
                     seq=seq, time_str="2026-10-22T09:00:00.000000Z", trace=new_trace_id(), span=new_span_id())
    raw = dumps_line(ev)[:-1]
    got = envelope(raw)
    full = decode_event(raw)
    # a line whose data holds a "time" or "sequence" key, or a \u00 escape (a control
    # character), may not be read from bytes (a repeated key's last value is the event's):
    # its envelope is none, and readers decode it
    odd = b"\\u00" in raw or raw.count(b'"time"') > 1 or raw.count(b'"sequence"') > 1
    assert got == (None if odd else {k: full[k] for k in ("id", "type", "source", "time", "sequence")})


def test_other_shapes_fall_back():
    ev = orjson.loads(dumps_line(build_event(
        etype=KEPT[0], data={}, source="wardrik://local/agents/a", subject="agents/a", seq=1,
        time_str="2026-10-22T09:00:00.000000Z", trace=new_trace_id(), span=new_span_id())))
    assert envelope(orjson.dumps(dict(reversed(list(ev.items()))))) is None  # keys in another order
    assert envelope(orjson.dumps(ev, option=orjson.OPT_INDENT_2).replace(b"\n", b"")) is None  # spaced
    assert envelope(b"not json") is None
