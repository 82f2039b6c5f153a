"""Cursors: exact encoding, both alphabets and padding accepted, strict refusals, carried keys."""
from __future__ import annotations

import base64

import pytest

from contract_util import (assert_refused, b64, decode_cursor, encode_cursor, fill, ok,
                           page_json, run, seqs, snapshot)

EXAMPLE = "eyJhY21lL3RyaWFnZSI6NDN9"


def test_helper_matches_contract_example():
    assert encode_cursor({"acme/triage": 43}) == EXAMPLE
    assert base64.urlsafe_b64decode(EXAMPLE + "=" * (-len(EXAMPLE) % 4)) == b'{"acme/triage":43}'


@pytest.fixture
def triage(root):
    return fill(root, "acme/triage", 45)


def test_contract_example_reads_on_from_44(root, triage):
    doc = page_json(root, "acme/triage", "--after", EXAMPLE)
    assert seqs(doc["events"]) == [44, 45]
    assert doc["next"] == encode_cursor({"acme/triage": 45})


def test_next_cursor_is_exact_encoding(root, triage):
    doc = page_json(root, "acme/*", "--limit", "43")
    assert doc["next"] == EXAMPLE
    p = ok(run("head", "acme/triage", root=root))
    assert p.stdout.strip() == encode_cursor({"acme/triage": 45}).encode()


def test_keys_sorted(root, triage):
    fill(root, "aaa", 1)
    fill(root, "zzz", 2)
    doc = page_json(root, "*")
    raw = base64.urlsafe_b64decode(doc["next"] + "=" * (-len(doc["next"]) % 4))
    assert raw == b'{"aaa":1,"acme/triage":45,"zzz":2}'


RAW4 = b'{"acme/triage":4}'  # 17 bytes: needs one "=" of padding


@pytest.mark.parametrize("cursor", [
    b64(RAW4, urlsafe=True, pad=False),
    b64(RAW4, urlsafe=True, pad=True),
    b64(RAW4, urlsafe=False, pad=False),
    b64(RAW4, urlsafe=False, pad=True),
])
def test_alphabets_and_padding_accepted(root, triage, cursor):
    doc = page_json(root, "acme/triage", "--after", cursor, "--limit", "2")
    assert seqs(doc["events"]) == [5, 6]
    assert doc["next"] == encode_cursor({"acme/triage": 6})


def test_zero_reads_from_start(root, triage):
    doc = page_json(root, "acme/triage", "--after", encode_cursor({"acme/triage": 0}), "--limit", "1")
    assert seqs(doc["events"]) == [1]


def test_sequence_at_end_is_fine(root, triage):
    doc = page_json(root, "acme/triage", "--after", encode_cursor({"acme/triage": 45}))
    assert doc == {"events": [], "next": encode_cursor({"acme/triage": 45})}


def test_matched_log_absent_from_cursor_read_from_start(root, triage):
    fill(root, "acme/other", 2)
    doc = page_json(root, "acme/*", "--after", EXAMPLE)
    got = sorted((e["source"].rsplit("/", 1)[1], int(e["sequence"])) for e in doc["events"])
    assert got == [("other", 1), ("other", 2), ("triage", 44), ("triage", 45)]


def test_unmatched_keys_carried_unchanged(root, triage):
    fill(root, "b/z", 3)
    given = encode_cursor({"acme/triage": 40, "b/z": 1, "gone/log": 7})
    doc = page_json(root, "acme/triage", "--after", given)
    assert seqs(doc["events"]) == [41, 42, 43, 44, 45]
    assert decode_cursor(doc["next"]) == {"acme/triage": 45, "b/z": 1, "gone/log": 7}


def test_unmatched_key_past_end_is_not_checked(root, triage):
    fill(root, "b/z", 3)
    given = encode_cursor({"acme/triage": 44, "b/z": 99})
    doc = page_json(root, "acme/triage", "--after", given)
    assert decode_cursor(doc["next"]) == {"acme/triage": 45, "b/z": 99}


GOOD = b'{"acme/triage":1}'
BAD = {
    "bad-base64-chars": "!!!!",
    "bad-base64-dot": b64(GOOD) + ".",
    "base64-after-padding": b64(b'{"acme/triage":4}', pad=True) + "AAAA",
    "bad-base64-length": b64(GOOD) + "A",
    "empty": "",
    "not-json": b64(b"not json"),
    "trailing-json": b64(GOOD + b" x"),
    "two-objects": b64(GOOD + GOOD),
    "array": b64(b'[["acme/triage",1]]'),
    "number": b64(b"1"),
    "string": b64(b'"acme/triage"'),
    "null": b64(b"null"),
    "negative": b64(b'{"acme/triage":-1}'),
    "true": b64(b'{"acme/triage":true}'),
    "false": b64(b'{"acme/triage":false}'),
    "float": b64(b'{"acme/triage":1.0}'),
    "exponent": b64(b'{"acme/triage":1e1}'),
    "string-seq": b64(b'{"acme/triage":"1"}'),
    "null-seq": b64(b'{"acme/triage":null}'),
    "object-seq": b64(b'{"acme/triage":{}}'),
    "key-dotdot": b64(b'{"../x":1}'),
    "key-empty": b64(b'{"":1}'),
    "key-hidden": b64(b'{".wardrik/audit":1}'),
    "key-jsonl": b64(b'{"x.jsonl":1}'),
    "key-absolute": b64(b'{"/etc/passwd":1}'),
    "key-double-slash": b64(b'{"acme//triage":1}'),
    "past-end": b64(b'{"acme/triage":46}'),
    "not-utf8": b64(b'{"acme/triage":1,"\xff":1}'),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_strict_refusal_page(root, triage, name):
    before = snapshot(root)
    p = run("page", "acme/triage", "--after", BAD[name], root=root)
    assert_refused(p, 2)
    assert p.stdout == b""
    assert snapshot(root) == before


@pytest.mark.parametrize("name", ["past-end", "float", "key-dotdot", "trailing-json", "bad-base64-chars"])
def test_strict_refusal_page_json(root, triage, name):
    p = run("page", "acme/*", "--after", BAD[name], "--format", "json", root=root)
    assert_refused(p, 2)
    assert p.stdout == b""


def test_past_end_of_matched_log_via_wildcard(root, triage):
    fill(root, "acme/other", 1)
    p = run("page", "acme/*", "--after", encode_cursor({"acme/other": 2}), root=root)
    assert_refused(p, 2)


def test_bad_cursor_in_cursor_file(root, triage, tmp_path):
    cf = tmp_path / "c"
    cf.write_text(BAD["float"])
    p = run("page", "acme/triage", "--cursor-file", cf, root=root)
    assert_refused(p, 2)
    assert cf.read_text() == BAD["float"]
