"""JSON Pointer (RFC 6901) paths naming the selectively disclosable parts of an SD-JWT.

Why JSON Pointer rather than a home-made dotted syntax: claim names may contain dots, brackets and
slashes, and RFC 6901 already has an unambiguous escape for every character (``~0`` is ``~``, ``~1``
is ``/``).  A path names a place in the *claims as issued* (``/address/street_address``,
``/nationalities/1``); after verification the same paths name the same places in the processed
payload, except that array indices count only the elements that were disclosed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from mudrika.errors import InvalidInput

__all__ = ["MAX_POINTER_CHARS", "format_pointer", "parse_pointer"]

MAX_POINTER_CHARS: Final = 1024


def parse_pointer(pointer: str) -> tuple[str, ...]:
    """Split an RFC 6901 pointer into unescaped reference tokens (§3, §4); ``""`` is refused.

    The whole document cannot be selectively disclosable, so the empty pointer is a usage error.
    """
    if not isinstance(pointer, str):
        raise InvalidInput("path must be a JSON Pointer string", code="bad_path")
    if len(pointer) > MAX_POINTER_CHARS:
        raise InvalidInput("path too long", code="bad_path", limit=MAX_POINTER_CHARS)
    if not pointer.startswith("/"):
        raise InvalidInput(
            "path must be a JSON Pointer starting with '/'", code="bad_path", path=pointer[:64]
        )
    tokens: list[str] = []
    for raw in pointer[1:].split("/"):
        # RFC 6901 §4: '~' must be followed by '0' or '1'; '~1' is decoded before '~0'.
        rest = raw.replace("~0", "").replace("~1", "")
        if "~" in rest:
            raise InvalidInput("invalid '~' escape in path", code="bad_path", path=pointer[:64])
        tokens.append(raw.replace("~1", "/").replace("~0", "~"))
    return tuple(tokens)


def format_pointer(tokens: Sequence[str | int]) -> str:
    """Join reference tokens into a pointer, escaping ``~`` and ``/`` (RFC 6901 §3)."""
    return "".join("/" + str(token).replace("~", "~0").replace("/", "~1") for token in tokens)
