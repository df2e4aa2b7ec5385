"""One-change-at-a-time tampering of JSON values, shared by the tamper matrices.

A matrix walks every leaf of a decoded header, payload, disclosure or mandate, changes that one leaf
and re-encodes the document, so each mutation differs from the signed original in exactly one place.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

from mudrika.crypto._b64 import b64url_decode, b64url_encode

__all__ = ["JsonPath", "changed", "decode_json", "encode_json", "leaves", "replaced"]

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
    """A different value of the same JSON type (booleans flipped, numbers +1, strings lengthened)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    return value + "x"


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
