"""The cold did:key resolution fast paths agree with the slow paths they stand in for.

* DID parsing tries a plain-DID pattern (and builds the dataclasses through their slots) before the
  full DID URL grammar: the same ``DIDURL`` for everything it matches, and the full grammar's answer,
  refusals included, for everything else.
* base58btc decoding takes four digits a step: the same number as one digit a step, for every length.
* did:key decoding reads the two-byte multicodec prefix of the supported codecs from a table and
  falls back to the varint decoder for anything else: the same codec, key and refusal codes.
* documents are assembled by field name and their pydantic slots set through descriptors: the same
  document a full validation of its JSON builds.
* resolution results are filled in through their slots: equal to the dataclass built normally.
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.crypto.keys import KeyPair
from mudrika.crypto.multibase import (
    _DIGITS,
    _digits_value_slow,
    base58btc_decode,
    base58btc_encode,
    varint_encode,
)
from mudrika.errors import InvalidInput
from mudrika.identity import did as did_module
from mudrika.identity.did import DID, DIDURL, parse_cache_clear, parse_did, parse_did_url
from mudrika.identity.document import DIDDocument
from mudrika.identity.methods import key
from mudrika.identity.resolution import ResolutionResult, result
from mudrika.identity.resolver import DIDResolver

_P256_P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
_P256_B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B


def _x_off_p256() -> int:
    """The smallest x for which no point of P-256 exists: x^3 - 3x + b is not a square mod p."""
    x = 0
    while pow((x**3 - 3 * x + _P256_B) % _P256_P, (_P256_P - 1) // 2, _P256_P) != _P256_P - 1:
        x += 1
    return x


_OFF_CURVE_X = _x_off_p256().to_bytes(32, "big")
_FULL = did_module._DID_URL_RE


def _full_grammar(text: str) -> DIDURL:
    """The parser without the plain-DID shortcut or the cache."""
    match = _FULL.fullmatch(text)
    if match is None:
        raise did_module._explain(text)
    method, msid, path, query, fragment = match.groups()
    return DIDURL(DID(method, msid), path, query, fragment)


def _outcome(parse: object, text: str) -> tuple[str, object]:
    try:
        return "ok", parse(text)  # type: ignore[operator]
    except InvalidInput as exc:
        return "error", exc.code


_DID_CHARS = "abcz09AZ._-%:/?#@!~ 2F"


@settings(max_examples=400, deadline=None)
@given(
    method=st.text(alphabet="abcxyz019A:-", min_size=0, max_size=6),
    rest=st.text(alphabet=_DID_CHARS, min_size=0, max_size=30),
)
def test_parsing_with_the_shortcut_equals_the_full_grammar(method: str, rest: str) -> None:
    text = f"did:{method}:{rest}"
    parse_cache_clear()
    assert _outcome(parse_did_url, text) == _outcome(_full_grammar, text)


@pytest.mark.parametrize(
    "text",
    [
        "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
        "did:web:example.com",
        "did:web:example.com:user:alice",
        "did:web:example.com%3A8443",
        "did:key:z6Mk#key-1",
        "did:key:z6Mk?service=x",
        "did:key:z6Mk/path",
        "did:KEY:z6Mk",
        "did:key:",
        "did:key:z6Mk:",
        "did:" + "m" * 65 + ":x",
        "did:" + "m" * 64 + ":x",
    ],
)
def test_shapes_on_both_sides_of_the_shortcut(text: str) -> None:
    parse_cache_clear()
    got, want = _outcome(parse_did_url, text), _outcome(_full_grammar, text)
    assert got == want
    if got[0] == "ok":
        assert str(got[1]) == text
        assert hash(got[1]) == hash(want[1])
        assert repr(got[1]) == repr(want[1])


def test_shortcut_objects_are_frozen_like_the_dataclasses() -> None:
    parse_cache_clear()
    url = parse_did_url("did:key:z6Mkabc")
    with pytest.raises(AttributeError):
        url.path = "/x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        url.did.method = "web"  # type: ignore[misc]
    assert parse_did("did:key:z6Mkabc") == DID("key", "z6Mkabc")


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=80), leading=st.integers(min_value=0, max_value=4))
def test_base58_four_digits_a_step_equals_one_digit_a_step(data: bytes, leading: int) -> None:
    value = b"\0" * leading + data
    text = base58btc_encode(value)
    assert base58btc_decode(text) == _decode_one_digit_a_step(text) == value


def test_base58_every_length_up_to_a_large_rsa_key() -> None:
    for size in range(0, 600, 7):
        value = os.urandom(size)
        text = base58btc_encode(value)
        assert base58btc_decode(text) == _decode_one_digit_a_step(text) == value
        assert base58btc_decode("1" + text) == b"\0" + value


def _decode_one_digit_a_step(text: str) -> bytes:
    digits = text.encode("ascii").translate(_DIGITS)
    number = _digits_value_slow(digits)
    zeros = len(digits) - len(digits.lstrip(b"\0"))
    return b"\0" * zeros + (number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b"")


def _did_key(codec_prefix: bytes, raw: bytes) -> str:
    return "did:key:z" + base58btc_encode(codec_prefix + raw)


@pytest.mark.parametrize("kind", ["ed25519", "p256", "secp256k1", "rsa"])
def test_prefix_table_gives_the_key_the_varint_decoder_gives(kind: str) -> None:
    public = KeyPair.generate(kind).public_key
    did = key.create(public)
    assert key.decode(did) == public
    assert key.document(did) == DIDDocument.from_json(key.document(did).to_json())


@pytest.mark.parametrize(
    ("did", "code"),
    [
        # An x with no point on P-256 (either parity), and x = p (out of the field).
        (_did_key(varint_encode(0x1200), b"\x02" + _OFF_CURVE_X), "invalidPublicKey"),
        (_did_key(varint_encode(0x1200), b"\x03" + _OFF_CURVE_X), "invalidPublicKey"),
        (_did_key(varint_encode(0x1200), b"\x02" + _P256_P.to_bytes(32, "big")), "invalidPublicKey"),
        (_did_key(varint_encode(0x1200), b"\x04" + bytes(32)), "invalidPublicKey"),
        (_did_key(varint_encode(0x1200), b"\x02" + bytes(31)), "invalidPublicKeyLength"),
        (_did_key(varint_encode(0xED), bytes(31)), "invalidPublicKeyLength"),
        (_did_key(varint_encode(0xED), bytes(33)), "invalidPublicKeyLength"),
        (_did_key(varint_encode(0xE7), b"\x02" + bytes(32)), "invalidPublicKey"),
        (_did_key(varint_encode(0x1201), bytes(49)), "unsupportedPublicKeyType"),  # P-384
        (_did_key(varint_encode(0xEB), bytes(48)), "unsupportedPublicKeyType"),  # BLS12-381 G1
        (_did_key(varint_encode(0x12), bytes(32)), "unsupportedPublicKeyType"),  # one-byte codec
        (_did_key(b"\xed\x81\x00", bytes(32)), "invalidDid"),  # non-minimal varint
        (_did_key(b"\xff" * 10, bytes(32)), "invalidDid"),  # over-long varint
        ("did:key:z0OIl", "invalidDid"),  # not base58btc
        ("did:key:" + base58btc_encode(varint_encode(0xED) + bytes(32)), "invalidDid"),  # no 'z'
    ],
)
def test_invalid_did_keys_are_refused_with_the_spec_codes(did: str, code: str) -> None:
    with pytest.raises(InvalidInput) as info:
        key.decode(did)
    assert info.value.code == code
    with pytest.raises(InvalidInput) as resolved:
        DIDResolver(cache_size=0).resolve(did)
    assert resolved.value.code == "invalidDid"
    assert resolved.value.fields.get("reason", code) == code


def test_an_off_curve_p256_point_fails_at_resolution_not_later() -> None:
    # The on-curve check is the decompression itself, done while the DID is resolved: no document of
    # an invalid key is ever returned (or cached) for a verifier to read later.
    resolver = DIDResolver()
    bogus = _did_key(varint_encode(0x1200), b"\x03" + _OFF_CURVE_X)
    for _ in range(2):
        with pytest.raises(InvalidInput):
            resolver.resolve(bogus)


@pytest.mark.parametrize("kind", ["ed25519", "p256", "secp256k1"])
@pytest.mark.parametrize("representation", ["multikey", "jwk"])
def test_assembled_documents_equal_fully_validated_ones(kind: str, representation: str) -> None:
    for _ in range(5):
        did = key.create(KeyPair.generate(kind).public_key)
        fast = key.document(did, representation=representation)  # type: ignore[arg-type]
        slow = DIDDocument.from_json(fast.to_json())
        assert fast == slow
        assert fast.model_fields_set == slow.model_fields_set
        assert fast.to_json() == slow.to_json()
        assert fast.authorised("authentication") == slow.authorised("authentication")
        assert fast.key_for(did + "#" + did.removeprefix("did:key:"), "assertionMethod") == slow.key_for(
            did + "#" + did.removeprefix("did:key:"), "assertionMethod"
        )


def test_results_built_through_slots_equal_the_dataclass() -> None:
    document = key.document(key.create(KeyPair.generate("ed25519").public_key))
    built = result(document, driver="key", document_metadata={"created": "2025-01-01T00:00:00Z"})
    plain = ResolutionResult(document, built.document_metadata, built.resolution_metadata)
    assert built == plain
    assert repr(built) == repr(plain)
    with pytest.raises(AttributeError):
        built.document = document  # type: ignore[misc]


def test_cold_resolution_of_distinct_dids_matches_a_validated_document() -> None:
    resolver = DIDResolver(cache_size=0)
    parse_cache_clear()
    for kind in ("ed25519", "p256"):
        for _ in range(25):
            did = key.create(KeyPair.generate(kind).public_key)
            resolved = resolver.resolve(did)
            assert resolved.document == DIDDocument.from_json(resolved.document.to_json())
            assert re.fullmatch(r"did:key:z[1-9A-HJ-NP-Za-km-z]+", resolved.document.id)
