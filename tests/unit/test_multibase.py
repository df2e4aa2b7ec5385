"""base58btc and base64url decoders: the table-driven fast paths accept and refuse exactly what the spec says.

The decoders were rewritten for speed (one C-level pass validates the whole value); these tests hold
them to independent reference implementations written from the specs, and to every refusal.
"""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.crypto.multibase import base58btc_decode, base58btc_encode
from mudrika.errors import InvalidInput

_BITCOIN_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _reference_base58_decode(text: str) -> bytes:
    """draft-multiformats-multibase / Bitcoin base58, digit by digit, as the spec describes it."""
    number = 0
    for char in text:
        number = number * 58 + _BITCOIN_ALPHABET.index(char)
    leading = len(text) - len(text.lstrip("1"))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\0" * leading + body


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_base58btc_round_trips(data: bytes) -> None:
    encoded = base58btc_encode(data)
    assert base58btc_decode(encoded) == data == _reference_base58_decode(encoded)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_BITCOIN_ALPHABET, max_size=120))
def test_base58btc_decodes_every_alphabet_string_like_the_reference(text: str) -> None:
    assert base58btc_decode(text) == _reference_base58_decode(text)


def test_base58btc_leading_ones_are_zero_bytes() -> None:
    assert base58btc_decode("") == b""
    assert base58btc_decode("1") == b"\0"
    assert base58btc_decode("111z") == b"\0\0\0" + _reference_base58_decode("z")


@pytest.mark.parametrize(
    "text",
    ["0", "O", "I", "l", "+", "/", "=", " z", "z\n", "é", "\ud800", "z\x00", "zz\xff"],
)
def test_base58btc_refuses_characters_outside_the_alphabet(text: str) -> None:
    with pytest.raises(InvalidInput) as info:
        base58btc_decode(text)
    assert info.value.code == "bad_multibase"


def test_base58btc_refuses_values_over_the_cap_before_decoding() -> None:
    with pytest.raises(InvalidInput) as info:
        base58btc_decode("z" * 4097)
    assert info.value.code == "too_large"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_b64url_round_trips_and_matches_the_standard_library(data: bytes) -> None:
    encoded = b64url_encode(data)
    assert b64url_decode(encoded) == data == base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    assert b64url_decode(encoded.encode("ascii")) == data


@pytest.mark.parametrize(
    "text",
    [
        "AAA=",  # padding is refused (RFC 7515 §2: unpadded)
        "AA==",
        "AA+A",  # the standard alphabet's '+' and '/' are not base64url
        "AA/A",
        "AA A",
        "AA\nA",
        "AAé",
        "AA\ud800",
        "A",  # a length of 1 mod 4 cannot be base64
        "AB",  # non-canonical: spare bits set in the last character
        "AAB",
    ],
)
def test_b64url_refuses_foreign_characters_padding_and_non_canonical_forms(text: str) -> None:
    with pytest.raises(InvalidInput) as info:
        b64url_decode(text)
    assert info.value.code == "bad_base64url"


def test_b64url_refuses_non_ascii_bytes_and_long_values() -> None:
    with pytest.raises(InvalidInput) as info:
        b64url_decode(b"AA\xff")
    assert info.value.code == "bad_base64url"
    with pytest.raises(InvalidInput) as info:
        b64url_decode("A" * 9, max_len=8)
    assert info.value.code == "too_large"
