"""A one-line summary looks at a bounded prefix of a value: an event holding megabytes of text
is summarised from its first LONGEST characters, and says it was cut."""
from __future__ import annotations

from conftest import run_cli
from wardrik_cli.cli.render.summary import LONGEST, one_line, words


def test_one_line_reads_a_bounded_prefix_and_says_it_was_cut():
    text = "word\n" * (LONGEST * 4)
    got = one_line(text)
    assert got.endswith(" …") and len(got) <= LONGEST + 2
    assert one_line("a\tb\nc") == "a b c"  # short values unchanged
    assert words(text, 3) == "word word word …"
    assert one_line({"k": "v" * (LONGEST * 2)}).endswith(" …")


def test_pretty_page_of_a_huge_event_prints_one_short_row(root):
    big = "y" * (4 << 20)
    run_cli("append", "acme/a", "message.completed", "--data", '{"message": {"id": "m1"}, "text": "' + big + '"}',
            root=root, check=True)
    p = run_cli("page", "acme/a", "-o", "pretty", root=root, env={"COLUMNS": "100"})
    assert p.returncode == 0, p.stderr
    rows = [line for line in p.stdout.decode().splitlines() if "message.completed" in line]
    assert len(rows) == 1 and len(rows[0]) <= 100


def test_a_value_nested_too_deep_for_json_dumps_is_shown_as_such(root):
    """orjson reads 1,023 levels of nesting; Python's json.dumps (the summaries' readable
    form) stops near 1,000: the row says so instead of failing the page."""
    import orjson

    run_cli("append", "acme/d", "run.started", "--data", '{"task": "t"}', root=root, check=True)
    path = root / "acme" / "d.jsonl"
    ev = orjson.loads(path.read_bytes())
    ev["type"], ev["sequence"] = "wardrik.zzz.unknown", "000000000002"
    line = orjson.dumps(ev).replace(b'"data":{', b'"data":{"x":' + b"[" * 990 + b"]" * 990 + b",", 1)
    path.write_bytes(path.read_bytes() + line + b"\n")
    p = run_cli("page", "acme/d", "-o", "pretty", root=root)
    assert p.returncode == 0, p.stderr
    assert b"nested too deep" in p.stdout and b"internal error" not in p.stderr
