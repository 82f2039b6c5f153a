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
