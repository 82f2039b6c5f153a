"""The one sanitiser for text that reaches a terminal.

Everything wardrik prints for people (pretty output through Rich, and every ``error:``,
``warning:`` and ``note:`` line) passes through ``safe``. Controls are shown, never sent:
C0 controls (but the newline), DEL, C1 controls (U+0080-U+009F: CSI, OSC ...), bidi
overrides and isolates, zero-width and other format characters (Unicode Cf), line and
paragraph separators, and lone surrogates become visible escapes (``\\x1b``, ``\\u202e``).
Where text is shown as one line (``flat``: summaries, streamed deltas), runs of spaces, tabs
and line breaks are one space first; nothing else is ever dropped. Rich, which would drop
BEL, BS, CR, VT and FF from its texts, escapes them instead (``render.console``).
So no event, log id, file name or message can retitle a terminal, clear it, plant a
hyperlink or reorder what is shown. ``jsonl``/``json`` output is the stored bytes, untouched.
"""
from __future__ import annotations

import re
import unicodedata

_ESCAPE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# What breaks or spaces a line: in one line of text (``flat``) a run of it is one space.
_LAYOUT = re.compile(r"[ \t\n\r\v\f\x85\u2028\u2029]+")


def safe(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every control or format character written as a visible escape."""
    if text.isprintable():
        return text  # the common case: nothing to do
    if keep_newlines and all(part.isprintable() for part in text.split("\n")):
        return text  # lines of printable text (indented JSON): still nothing to do
    out = []
    for ch in text:
        if ch == "\n" and keep_newlines:
            out.append(ch)
        elif ch == " " or ch.isprintable() or unicodedata.category(ch) not in _ESCAPE_CATEGORIES:
            out.append(ch)
        else:
            n = ord(ch)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")
    return "".join(out)


def flat(text: str) -> str:
    """``text`` as one line: each run of spaces, tabs and line breaks is one space, and every
    other control or format character is a visible escape (``safe``): the one rule for a
    summary, a table cell or a streamed line. Nothing is dropped."""
    return safe(_LAYOUT.sub(" ", text), keep_newlines=False)
