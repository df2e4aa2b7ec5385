"""Strict JSON in, RFC 8785 (JSON Canonicalization Scheme) bytes out, and the mandate hash over them.

Why this module exists: AP2 mandates are bound to each other by hashes of JSON objects.  A hash is only
a binding if every party derives the same bytes from the same object, so the object is read strictly
(:func:`loads_strict`: nothing a second parser could read differently) and written canonically
(:func:`canonicalize`: RFC 8785).  docs/payments.md, "Hashes": hash the *received raw object*, never a
re-serialised model, because model defaults and float formatting change the bytes.

Number model (RFC 8785 §3.2.2.3, I-JSON RFC 7493 §2.2): JSON has one number type, the IEEE 754 double.

* ``int`` values must lie within +-(2^53-1); beyond that an integer cannot be exchanged exactly, so
  :func:`canonicalize` raises ``integer_out_of_range`` rather than silently rounding it.
* ``float`` values are written the way ECMAScript prints a double, whatever Python's ``repr`` says:
  an integral float is an integer (``12.0`` -> ``12``, ``-0.0`` -> ``0``, ``1e20`` ->
  ``100000000000000000000``), exponent form is used only from 1e21 up and below 1e-6 (``1e+21``,
  ``1e-7``).  So ``canonicalize(12.0) == canonicalize(12)``: the hash does not depend on whether a
  producer wrote ``12`` or ``12.0``.  A float is already a double, so large integral floats are
  accepted (``2.0**60`` -> ``1152921504606847000``, the shortest digits padded with zeros); NaN and
  the infinities are refused (``non_finite_number``).
* One asymmetry follows from those two rules: an integral float with 2^53 <= |x| < 1e21 (say ``1e20``,
  which ``loads_strict`` reads from ``1.0e20``) canonicalises to an integer literal beyond 2^53-1
  (``100000000000000000000``), and ``loads_strict`` refuses such literals.  Hashing is unaffected
  (canonical bytes are hashed, never re-parsed); only re-reading that canonical text fails, loudly.
* ``bool`` is ``true``/``false`` (never 1/0); tuples are arrays; subclasses of dict, list, str, int and
  float are treated as their base type.  Anything else (set, bytes, Decimal, datetime, models) is
  ``unsupported_type``: convert it explicitly first.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.frozenjson import freeze, freeze_encoder_ready
from mudrika.crypto.jcs._parse import parse_strict, parse_strict_with_facts
from mudrika.crypto.jcs._serialize import (
    MAX_CANONICAL_DEPTH,
    MAX_SAFE_INTEGER,
    freeze_orjson_ready,
    serialize,
    serialize_sha256,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "MAX_CANONICAL_DEPTH",
    "MAX_SAFE_INTEGER",
    "ReceivedJSON",
    "canonical_sha256",
    "canonicalize",
    "loads_received",
    "loads_strict",
    "mandate_hash",
]

DEFAULT_MAX_BYTES = 1_000_000
"""Documents larger than this (in UTF-8 bytes) are refused before parsing starts."""

DEFAULT_MAX_DEPTH = 64
"""Deepest nesting of arrays/objects accepted; the top-level container is depth 1."""


def loads_strict(
    raw: bytes | bytearray | memoryview | str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Any:
    """Parse one JSON document, refusing everything two parsers could disagree about.

    Raises :class:`mudrika.errors.InvalidInput` with ``code``:

    ``too_large``            more than ``max_bytes`` UTF-8 bytes (checked before parsing)
    ``bad_encoding``         not UTF-8 (RFC 8259 §8.1), a byte order mark, or a str holding a surrogate
    ``malformed_json``       a syntax error (also trailing data and raw control characters in strings)
    ``duplicate_key``        an object names the same key twice (after unescaping)
    ``lone_surrogate``       a ``\\uD800``-``\\uDFFF`` escape without its partner, in a key or a value
    ``non_finite_number``    ``NaN``, ``Infinity``, ``-Infinity``, or a number that overflows (``1e400``)
    ``integer_out_of_range`` an integer literal beyond +-(2^53-1)
    ``too_deep``             arrays/objects nested deeper than ``max_depth``

    Where the input has a position, the error has ``offset`` (bytes from the start), ``line`` and
    ``column`` fields and says them in its message; messages never echo more than 40 characters of
    input.  Numbers with a fraction or exponent become ``float``, others ``int`` (``-0`` is ``0``).
    """
    return parse_strict(raw, max_bytes=max_bytes, max_depth=max_depth)


class ReceivedJSON(NamedTuple):
    """One received document, parsed once: ``value`` as :func:`loads_strict` returns it (plain ``dict``/
    ``list``, for validation and reading) and ``frozen``, its read-only copy (for hashing later)."""

    value: Any
    frozen: Any


def loads_received(
    raw: bytes | bytearray | memoryview | str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> ReceivedJSON:
    """:func:`loads_strict` (same limits and error codes), plus a read-only copy that hashes fast.

    Why: a received object is hashed as received, so it is frozen once (mudrika.crypto.frozenjson);
    and the strict parser, which already converts every number, also records whether the document is
    one a compiled encoder writes as RFC 8785 with no preparation (mudrika.crypto.jcs._parse,
    "Encoder-ready facts").  When it is, ``frozen`` is built from
    :class:`~mudrika.crypto.frozenjson.EncoderReadyDict`/``EncoderReadyList``, and :func:`canonicalize`
    and :func:`mandate_hash` hand it -- or any part of it -- straight to the encoder.  A document with
    floats outside the shortest-form range is ready for orjson alone: ``frozen`` is then built from
    :class:`~mudrika.crypto.frozenjson.OrjsonReadyDict`/``OrjsonReadyList``, which also name the
    few floats orjson misprints, patched before encoding.  Otherwise it is an ordinary frozen copy and
    they take their usual path.  The bytes are the same either way.
    """
    value, ready = parse_strict_with_facts(raw, max_bytes=max_bytes, max_depth=max_depth)
    if ready == "encoders":
        frozen = freeze_encoder_ready(value, max_depth=max_depth)
    elif ready == "orjson":
        frozen = freeze_orjson_ready(value, max_depth=max_depth)
    else:
        frozen = freeze(value, max_depth=max_depth)
    return ReceivedJSON(value, frozen)


def canonicalize(value: Any) -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of a JSON value (see the module docstring for types).

    Raises :class:`mudrika.errors.InvalidInput` with ``code`` ``unsupported_type``, ``non_string_key``,
    ``non_finite_number``, ``integer_out_of_range``, ``lone_surrogate`` or ``too_deep`` (deeper than
    :data:`MAX_CANONICAL_DEPTH`, which is also how a reference cycle ends); ``path`` names the place.
    """
    return serialize(value)


def canonical_sha256(value: Any) -> bytes:
    """SHA-256 digest of :func:`canonicalize` ``(value)``, for callers that need the raw 32 bytes."""
    return serialize_sha256(value)


def mandate_hash(value: Any) -> str:
    """The AP2 hash H(x) of docs/payments.md: unpadded base64url of SHA-256 over the RFC 8785 bytes."""
    return b64url_encode(serialize_sha256(value))
