"""The one sanitiser for text that reaches a terminal.

Everything wardrik prints for people (pretty output through Rich, and every ``error:``,
``warning:`` and ``note:`` line) passes through ``safe``. Controls are shown, never sent:
C0 controls (but the newline), DEL, C1 controls (U+0080-U+009F: CSI, OSC ...), bidi
overrides and isolates, zero-width and other format characters (Unicode Cf), line and
paragraph separators, and lone surrogates become visible escapes (``\\x1b``, ``\\u202e``).
So no event, log id, file name or message can retitle a terminal, clear it, plant a
hyperlink or reorder what is shown. ``jsonl``/``json`` output is the stored bytes, untouched.
"""
from __future__ import annotations

import unicodedata

_ESCAPE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def safe(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every control or format character written as a visible escape."""
    if text.isprintable():
        return text  # the common case: nothing to do
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
