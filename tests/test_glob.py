"""Globs match log ids the way the contract says, in time linear in the id, never backtracking."""
from __future__ import annotations

import fnmatch
import re
import time

from hypothesis import given, settings, strategies as st

from wardrik_cli.protocol.names import pattern_regex


def _reference(pattern: str, text: str) -> bool:
    # fnmatch is the reference: '*' any run, '?' one character, the rest literal ('[' escaped).
    return fnmatch.fnmatchcase(text, pattern.replace("[", "[[]"))


@settings(max_examples=400, deadline=None)
@given(pattern=st.text(alphabet="ab/*?.", max_size=12), text=st.text(alphabet="ab/.", max_size=14))
def test_glob_agrees_with_fnmatch(pattern, text):
    assert (pattern_regex(pattern).fullmatch(text) is not None) == _reference(pattern, text)


def test_many_stars_against_a_long_id_is_instant():
    # Each of these took exponential time with a regex of one '.*' per star.
    rx = pattern_regex("*" * 100 + "x")
    worst = 0.0
    for text in ("a" * 200, "a" * 199 + "b", "ab" * 100):
        t0 = time.process_time()
        assert rx.fullmatch(text) is None
        worst = max(worst, time.process_time() - t0)
    rx2 = pattern_regex("*a" * 40 + "*x")
    t0 = time.process_time()
    assert rx2.fullmatch("a" * 200) is None
    # A generous ceiling: the backtracking version does not finish in hours; this is microseconds.
    assert max(worst, time.process_time() - t0) < 1.0


def test_the_regex_has_no_nested_unbounded_repetition():
    # Structural check, not a timing: every star but the last sits in an atomic group.
    rx = pattern_regex("acme/*/x*y*z").pattern
    assert rx.count("(?>") == 2 and re.fullmatch(r"acme/\(\?>\.\*\?/x\)\(\?>\.\*\?y\)\.\*z", rx)
