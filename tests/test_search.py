"""store/search.py gives exactly what bytes.count/find/rfind give (it stands in for them)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from wardrik_cli.store.search import count, find, rfind

small = st.binary(max_size=40).map(lambda b: bytes(x % 3 + 10 for x in b))  # few distinct bytes: many hits
needles = st.binary(min_size=1, max_size=4).map(lambda b: bytes(x % 3 + 10 for x in b))
bounds = st.one_of(st.none(), st.integers(-5, 50))


@settings(max_examples=2000)
@given(small, needles, st.integers(0, 50), bounds)
def test_same_as_bytes(hay, needle, start, end):
    args = (start,) if end is None else (start, end)
    assert count(hay, needle, *args) == hay.count(needle, *args)
    assert find(hay, needle, *args) == hay.find(needle, *args)
    assert rfind(hay, needle, *args) == hay.rfind(needle, *args)
