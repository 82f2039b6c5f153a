"""Cursor encoding: the contract's example, strict decoding, and round-trips (hypothesis)."""
import base64

import orjson
import pytest
from hypothesis import given, strategies as st

from wardrik_cli.protocol.cursor import MAX_SEQUENCE, decode_cursor, encode_cursor
from wardrik_cli.errors import BadCursor

segment = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,12}", fullmatch=True).filter(lambda s: not s.endswith(".jsonl"))
log_ids = st.lists(segment, min_size=1, max_size=3).map("/".join).filter(lambda s: len(s) <= 200 and not s.endswith(".jsonl"))


def test_contract_example():
    assert encode_cursor({"acme/triage": 43}) == "eyJhY21lL3RyaWFnZSI6NDN9"
    assert decode_cursor("eyJhY21lL3RyaWFnZSI6NDN9") == {"acme/triage": 43}


@given(st.dictionaries(log_ids, st.integers(min_value=0, max_value=MAX_SEQUENCE), max_size=6))
def test_round_trip(cur):
    text = encode_cursor(cur)
    assert "=" not in text and "+" not in text and "/" not in text
    assert decode_cursor(text) == cur
    # Keys are sorted inside, so equal cursors encode equally.
    assert orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))) == dict(sorted(cur.items()))


@given(st.dictionaries(log_ids, st.integers(min_value=0, max_value=MAX_SEQUENCE), max_size=6))
def test_either_alphabet_padded_or_not(cur):
    raw = orjson.dumps(cur, option=orjson.OPT_SORT_KEYS)
    for text in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode(),
                 base64.b64encode(raw).decode().rstrip("=")):
        assert decode_cursor(text) == cur


@pytest.mark.parametrize("bad", [
    "", "!!!!", "eyJhY21lL3RyaWFnZSI6NDN9xx", "eyJhY21lL3RyaWFnZSI6NDN9=", "e",
    base64.b64encode(b"[1]").decode(), base64.b64encode(b'{"a":-1}').decode(),
    base64.b64encode(b'{"a":true}').decode(), base64.b64encode(b'{"a":1.0}').decode(),
    base64.b64encode(b'{"a":"1"}').decode(), base64.b64encode(b'{"../x":1}').decode(),
    base64.b64encode(b'{"a":1} junk').decode(), base64.b64encode(b"\xff\xfe").decode(),
    base64.b64encode(b'{"x.jsonl":1}').decode(),
])
def test_strict_refusals(bad):
    with pytest.raises(BadCursor):
        decode_cursor(bad)


def test_a_sequence_past_64_bits_is_named_as_too_big_not_printed_as_a_float():
    text = base64.b64encode(b'{"zzz":99999999999999999999999}').decode()
    with pytest.raises(BadCursor) as e:
        decode_cursor(text)
    assert "past the largest" in str(e.value) and "e+" not in str(e.value)


def test_a_sequence_past_12_digits_is_carried_for_a_log_not_matched_and_refused_for_one_matched(tmp_path):
    """The contract carries keys of logs the patterns do not match unchanged (only a sequence
    that is not a non-negative integer is refused); a matched log refuses a position past its end."""
    from conftest import run_cli
    from ledgergen import write_log

    root = tmp_path / "root"
    write_log(root / "a" / "b.jsonl", 3, log_id="a/b")
    cur = encode_cursor({"a/b": 1, "zz/q": 1_000_000_000_000})
    p = run_cli("page", "a/b", "--after", cur, "-F", "json", root=root)
    assert p.returncode == 0, p.stderr
    assert decode_cursor(orjson.loads(p.stdout)["next"]) == {"a/b": 3, "zz/q": 1_000_000_000_000}
    p = run_cli("page", "a/b", "--after", encode_cursor({"a/b": 1_000_000_000_000}), root=root)
    assert p.returncode == 2 and p.stderr.startswith(b"error: bad cursor: a/b is at 1000000000000 but the log ends at 3")
