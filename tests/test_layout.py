"""Log ids, patterns and the root's layout."""
import pytest

from wardrik_cli.errors import BadLogId, BadPattern
from wardrik_cli.store.layout import Root
from wardrik_cli.protocol.names import validate_log_id, validate_pattern


@pytest.mark.parametrize("good", ["a", "acme/triage", "A9/b.c_d-e/f", "x" * 200, "a.jsonl/b"])
def test_good_ids(good):
    assert validate_log_id(good) == good


@pytest.mark.parametrize("bad", ["", "../x", "/abs", "a//b", ".hidden", "-x", "x" * 201, "x.jsonl", "a/.b",
                                 "a\\b", "a\x00b", "a\nb", "a/", "a b", "a/..", "é"])
def test_bad_ids(bad):
    with pytest.raises(BadLogId):
        validate_log_id(bad)


@pytest.mark.parametrize("bad", ["../*", "*/../x", "a[b]*", "/x*", ".*", "a//*"])
def test_bad_patterns(bad):
    with pytest.raises((BadPattern, BadLogId)):
        validate_pattern(bad)


def test_match_walks_and_skips_tool_dir(tmp_path):
    for rel in ["acme/triage.jsonl", "acme/digest.jsonl", "acme/deep/x.jsonl", "other.jsonl",
                ".wardrik/audit.jsonl", ".wardrik/x/y.jsonl", "acme/notes.txt", "acme/triage.jsonl.torn-5-1"]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("")
    root = Root(tmp_path)
    assert root.match(["acme/*"]) == ["acme/deep/x", "acme/digest", "acme/triage"]
    assert root.match(["acme/d?????"]) == ["acme/deep/x", "acme/digest"]
    assert root.match(["*"]) == ["acme/deep/x", "acme/digest", "acme/triage", "other"]
    assert root.match(["other", "acme/tri*"]) == ["acme/triage", "other"]
    assert root.match(["nothing*"]) == []
