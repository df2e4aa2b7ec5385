"""The text of a compact serialisation (an SD-JWT, a chain of them), as it arrives: ``str`` or ``bytes``.

Why one reader: these forms are ASCII by definition (base64url segments and separators) and are
capped before they are split, so every parser starts with the same four refusals, in the same
order: bytes over the cap (before any decoding work), bytes that are not ASCII, a value that is not
text at all, text over the cap.  Each parser names its input and its own ``malformed`` code.
"""

from __future__ import annotations

from mudrika.errors import InvalidInput

__all__ = ["compact_text"]


def compact_text(value: str | bytes, *, name: str, malformed_code: str, max_bytes: int) -> str:
    """``value`` as text of at most ``max_bytes`` characters (ASCII when it came as bytes).

    ``InvalidInput``: ``too_large`` ("<name> too large", with the limit), or ``malformed_code`` for
    bytes that are not ASCII ("<name> is not ASCII") and for anything that is neither ``str`` nor
    ``bytes`` ("<name> must be a string").  Text that arrives as ``str`` is not checked for ASCII
    here: the parser's own character checks refuse it with a more precise code.
    """
    if isinstance(value, bytes):
        if len(value) > max_bytes:
            raise InvalidInput(f"{name} too large", code="too_large", limit=max_bytes)
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            raise InvalidInput(f"{name} is not ASCII", code=malformed_code) from None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string", code=malformed_code)
    if len(value) > max_bytes:
        raise InvalidInput(f"{name} too large", code="too_large", limit=max_bytes)
    return value
