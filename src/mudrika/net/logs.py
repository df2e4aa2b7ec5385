"""One way to put a request-derived value into a log line: escaped and length-capped.

Why: a request path logged as is lets ``%0A`` (decoded to a newline) forge a whole, plausible log
line ("admin granted tasks/cancel for alice"); an ANSI escape rewrites what an operator's terminal
shows; U+2028/U+2029 break lines in log viewers that follow Unicode.  :func:`log_value` turns every
character that could do any of that into a visible escape, and caps the length so a 1 MiB header
cannot become a 1 MiB log line.  Every value that comes from a request goes through it.
"""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_LOG_CHARS", "log_value"]

DEFAULT_LOG_CHARS: Final = 200

#: Code points that end, rewrite or hide parts of a line: C0 controls (CR, LF, TAB, ESC ...), DEL,
#: C1 controls (NEL U+0085 and the 8-bit CSI U+009B included), the Unicode line and paragraph
#: separators, and the bidirectional overrides/isolates that reorder what a reader sees.
_ESCAPED: Final = frozenset(
    [
        *range(0x00, 0x20),
        0x7F,
        *range(0x80, 0xA0),
        0x2028,
        0x2029,
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
    ]
)
_TABLE: Final = {code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" for code in _ESCAPED}
_TABLE[ord("\\")] = "\\\\"


def log_value(value: object, *, limit: int = DEFAULT_LOG_CHARS) -> str:
    """``value`` as text safe for one log line: controls and separators escaped, at most ``limit``
    characters of the original (a cut is marked with ``…(+N)``, N the number of characters dropped).

    Bytes are decoded as latin-1 (how HTTP header bytes arrive), so every byte stays visible.
    """
    text = value.decode("latin-1") if isinstance(value, bytes | bytearray) else str(value)
    dropped = len(text) - limit
    if dropped > 0:
        text = text[:limit]
    escaped = text.translate(_TABLE)
    return f"{escaped}…(+{dropped})" if dropped > 0 else escaped
