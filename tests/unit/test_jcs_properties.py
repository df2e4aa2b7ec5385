"""Property tests: our RFC 8785 bytes equal the reference Python implementation (PyPI ``rfc8785``) on
arbitrary I-JSON values, every serialisation path agrees (orjson and ``json``'s C encoder behind the
pre-pass, and the pure-Python general path), and strict parsing round-trips."""

from __future__ import annotations

import json
import math
import random
import struct
from typing import Any

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.crypto.jcs import _serialize as _jcs_serialize
from mudrika.crypto.jcs import canonicalize, loads_strict
from mudrika.crypto.jcs._number import es_number_to_string
from mudrika.crypto.jcs._serialize import ENCODERS, serialize_with

MAX_SAFE = 2**53 - 1

# Characters that stress §3.2.3 ordering (astral vs U+E000-U+FFFF) and §3.2.2.2 escaping.
_TRICKY = 'aAzé€\ufb33\ue000\uffff\U0001f600\U0001f602\U00010000\x00\x1f\x7f\n"\\/\u2028'
keys = st.text(st.sampled_from(_TRICKY) | st.characters(codec="utf-8"), max_size=6)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-MAX_SAFE, MAX_SAFE)
    | finite_floats
    | st.text(st.characters(codec="utf-8"), max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(keys, children, max_size=6),
    max_leaves=40,
)


def _general(value: Any) -> bytes:
    return _jcs_serialize._general(value)


def _reparseable(value: Any) -> bool:
    """False when the value holds an integral float 2^53 <= |x| < 1e21: its canonical text is an
    integer literal that loads_strict refuses (the asymmetry documented in mudrika.crypto.jcs)."""
    if isinstance(value, float):
        return not (value.is_integer() and MAX_SAFE < abs(value) < 1e21)
    if isinstance(value, list):
        return all(_reparseable(v) for v in value)
    if isinstance(value, dict):
        return all(_reparseable(v) for v in value.values())
    return True


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_matches_reference_implementation(value: Any) -> None:
    assert canonicalize(value) == rfc8785.dumps(value)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_fast_and_general_paths_agree(value: Any) -> None:
    assert canonicalize(value) == _general(value)


# Values the pre-pass lets through to a compiled encoder: floats in the range both encoders print like
# ECMAScript, integral floats it swaps for ints, keys that are astral-only or BMP-only per object.
_encoder_floats = (
    st.floats(min_value=1e-4, max_value=1e16, exclude_max=True)
    | st.floats(min_value=-1e16, max_value=-1e-4, exclude_min=True)
    | st.integers(-(2**53), 2**53).map(float)
    | finite_floats
)
_encoder_values = st.recursive(
    st.none() | st.booleans() | st.integers(-MAX_SAFE, MAX_SAFE) | _encoder_floats | st.text(max_size=12),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(keys, children, max_size=6),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(_encoder_values)
def test_every_encoder_matches_the_pure_python_path_and_rfc8785(value: Any) -> None:
    """The differential test behind docs/adr/0004: orjson, json's C encoder and the general path agree."""
    expected = _general(value)
    assert expected == rfc8785.dumps(value)
    for encoder in ENCODERS:
        assert serialize_with(encoder, value) == expected, encoder


@settings(max_examples=200, deadline=None)
@given(json_values.filter(_reparseable))
def test_idempotent_through_strict_parsing(value: Any) -> None:
    canonical = canonicalize(value)
    assert canonicalize(loads_strict(canonical)) == canonical


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_any_serialisation_parses_to_the_same_canonical_form(value: Any) -> None:
    # json.dumps escapes astral characters as surrogate pairs and writes 1e+20 as a float literal.
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=1)):
        assert canonicalize(loads_strict(text.encode())) == canonicalize(value)


@settings(max_examples=500, deadline=None)
@given(finite_floats)
def test_number_text_round_trips_and_matches_reference(x: float) -> None:
    text = es_number_to_string(x)
    assert float(text) == x
    assert text == rfc8785.dumps(x).decode()
    assert canonicalize(x) == text.encode()
    # Shortest (ECMA-262 step 5, k minimal): x correctly rounded to one significant digit fewer no
    # longer reads back as x.  (The closest shorter decimal failing means every shorter one fails.)
    digits = text.lstrip("-").split("e")[0].replace(".", "").strip("0")
    if len(digits) > 1:
        assert float(f"{x:.{len(digits) - 2}e}") != x


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-1074, max_value=1023), st.integers(min_value=1, max_value=2**52))
def test_numbers_across_magnitudes(exp: int, mantissa: int) -> None:
    x = math.ldexp(float(mantissa), exp - 52)
    if not math.isfinite(x):
        return
    for value in (x, -x):
        assert canonicalize(value) == rfc8785.dumps(value)
        assert float(canonicalize(value)) == value


def test_every_encoder_on_twenty_thousand_random_doubles() -> None:
    """Doubles from random bit patterns (all magnitudes, subnormals included) in arrays and objects,
    through every path, byte-equal to rfc8785: the float rule of the pre-pass, exercised in bulk."""
    rng = random.Random(8785)
    numbers: list[float] = []
    while len(numbers) < 20_000:
        x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(x):
            numbers.append(x)
    chunks = [numbers[i : i + 100] for i in range(0, len(numbers), 100)]
    documents: list[Any] = [*chunks, *({f"k{j}": x for j, x in enumerate(chunk)} for chunk in chunks)]
    for document in documents:
        expected = rfc8785.dumps(document)
        assert _general(document) == expected
        for encoder in ENCODERS:
            assert serialize_with(encoder, document) == expected, encoder


def test_every_encoder_on_keys_across_the_bmp_and_astral_planes() -> None:
    """One object per block of 256 code points (0-0x2FFF and U+E000-U+FFFF) plus astral keys beside
    BMP keys above U+E000: the key order rule of the pre-pass, exercised in bulk."""
    blocks = [*range(0, 0x3000, 256), *range(0xE000, 0x10000, 256)]
    for start in blocks:
        document = {chr(cp) + "k": cp for cp in range(start, start + 256) if not 0xD800 <= cp <= 0xDFFF}
        document["\U0001f600"] = 1  # sorts before U+E000-U+FFFF in UTF-16, after them by code point
        expected = rfc8785.dumps(document)
        assert _general(document) == expected
        for encoder in ENCODERS:
            assert serialize_with(encoder, document) == expected, encoder
