"""One-change-at-a-time tampering of JSON values, shared by the tamper matrices.

A matrix walks every leaf of a decoded header, payload, disclosure or mandate, changes that one leaf
and re-encodes the document, so each mutation differs from the signed original in exactly one place.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

from mudrika.crypto.b64url import b64url_decode, b64url_encode

__all__ = ["JsonPath", "changed", "decode_json", "encode_json", "flip_char", "leaves", "replaced"]

JsonPath = tuple[str | int, ...]


def leaves(value: Any, path: JsonPath = ()) -> Iterator[tuple[JsonPath, Any]]:
    """Every string, number and boolean in a JSON value, with its path."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    elif isinstance(value, bool | int | float | str):
        yield path, value


def changed(value: bool | float | str) -> bool | float | str:
    """A different value of the same JSON type (booleans flipped, numbers +1, strings lengthened).

    Always different, or a matrix would count an unchanged document as a caught mutation: a float
    too large for ``+ 1`` to register (2**53 and up) is halved instead, and the result is checked.
    """
    result: bool | float | str
    if isinstance(value, bool):
        result = not value
    elif isinstance(value, int | float):
        result = value + 1 if value + 1 != value else value / 2
    else:
        result = value + "x"
    assert result != value, f"tamper produced the original value {value!r}"
    return result


def flip_char(text: str, index: int | None = None) -> str:
    """``text`` with the character at ``index`` (default: the middle one) replaced by another.

    Why this and not "replace the tail with a constant": a constant is a no-op whenever the text
    already ends in it (a key's ``d`` ends in ``AA`` once in 1024 keys), and the test then fails for
    no reason.  ``A`` becomes ``B`` and anything else ``A``, so the result always differs; in the
    middle of a base64url value the character is a whole 6-bit group, so the bytes differ too (at the
    end it may hold only padding bits).
    """
    position = len(text) // 2 if index is None else index
    result = text[:position] + ("B" if text[position] == "A" else "A") + text[position + 1 :]
    assert result != text
    return result


def replaced(document: Any, path: JsonPath, value: Any) -> Any:
    """A deep copy of ``document`` with the leaf at ``path`` set to ``value`` (the original untouched)."""
    result = copy.deepcopy(document)
    target = result
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return result


def encode_json(value: Any) -> str:
    """Compact JSON as an unpadded base64url segment, the way JOSE tokens and disclosures carry it."""
    return b64url_encode(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def decode_json(segment: str) -> Any:
    """The JSON value an unpadded base64url segment carries (the inverse of :func:`encode_json`)."""
    return json.loads(b64url_decode(segment))
