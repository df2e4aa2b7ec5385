"""Key generation, encodings and strict JWK import for every supported key type."""

from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.crypto.keys import ALGORITHMS_BY_KEY_TYPE, KeyPair, KeyType, PublicKey
from mudrika.errors import InvalidInput, KeyStoreError, SignatureError

ALL_TYPES = list(KeyType)


@pytest.fixture(scope="module", params=ALL_TYPES, ids=[t.value for t in ALL_TYPES])
def pair(request: pytest.FixtureRequest) -> KeyPair:
    key_type: KeyType = request.param
    return KeyPair.generate(key_type)


def test_sign_verify_round_trip_with_every_allowed_algorithm(pair: KeyPair) -> None:
    for alg in sorted(ALGORITHMS_BY_KEY_TYPE[pair.key_type]):
        signature = pair.sign(b"payload", alg)
        pair.public_key.verify(signature, b"payload", alg)
        with pytest.raises(SignatureError):
            pair.public_key.verify(signature, b"payloaD", alg)


def test_algorithm_of_another_key_type_is_refused(pair: KeyPair) -> None:
    foreign = {"ES256", "EdDSA", "ES256K", "RS256", "HS256", "none"} - ALGORITHMS_BY_KEY_TYPE[pair.key_type]
    for alg in sorted(foreign):
        with pytest.raises(InvalidInput):
            pair.sign(b"x", alg)
        with pytest.raises(SignatureError) as info:
            pair.public_key.verify(b"\0" * 64, b"x", alg)
        assert info.value.code == "alg_key_mismatch"


def test_public_jwk_round_trip_and_thumbprint_is_stable(pair: KeyPair) -> None:
    jwk = pair.public_key.to_jwk()
    again = PublicKey.from_jwk(jwk)
    assert again == pair.public_key
    assert again.thumbprint() == pair.public_key.thumbprint()
    assert not {"d", "p", "q"} & set(jwk)


def test_private_jwk_round_trip(pair: KeyPair) -> None:
    assert KeyPair.from_jwk(pair.private_jwk()) == pair


def test_private_members_refused_where_public_expected(pair: KeyPair) -> None:
    with pytest.raises(InvalidInput) as info:
        PublicKey.from_jwk(pair.private_jwk())
    assert info.value.code == "private_jwk"


def test_multikey_round_trip_and_prefixes(pair: KeyPair) -> None:
    multikey = pair.public_key.to_multikey()
    prefixes = {KeyType.ED25519: "z6Mk", KeyType.P256: "zDna", KeyType.SECP256K1: "zQ3s", KeyType.RSA: "z4MX"}
    assert multikey.startswith(prefixes[pair.key_type])
    assert PublicKey.from_multikey(multikey) == pair.public_key


def test_pem_round_trips(pair: KeyPair) -> None:
    assert PublicKey.from_pem(pair.public_key.to_pem()) == pair.public_key
    pem = pair.private_pem(b"correct horse")
    assert b"ENCRYPTED PRIVATE KEY" in pem
    assert KeyPair.from_pem(pem, b"correct horse") == pair
    with pytest.raises(KeyStoreError) as wrong:  # a well-formed key: the password is what failed
        KeyPair.from_pem(pem, b"wrong password")
    assert wrong.value.code == "wrong_password"
    with pytest.raises(InvalidInput) as info:
        KeyPair.from_pem(pem, None)
    assert info.value.code == "password_mismatch"


def test_short_password_refused(pair: KeyPair) -> None:
    with pytest.raises(InvalidInput):
        pair.private_pem(b"short")


def test_rfc7638_thumbprint_example() -> None:
    """RFC 7638 §3.1 prints this RSA key and its thumbprint."""
    jwk = {
        "kty": "RSA",
        "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRX"
        "jBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs"
        "8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G"
        "_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
        "e": "AQAB",
        "alg": "RS256",
        "kid": "2011-04-29",
    }
    assert PublicKey.from_jwk(jwk).thumbprint() == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


def _ec_jwk(key_type: KeyType) -> dict[str, str]:
    return KeyPair.generate(key_type).public_key.to_jwk()


@pytest.mark.parametrize("key_type", [KeyType.P256, KeyType.SECP256K1])
def test_point_not_on_curve_is_refused(key_type: KeyType) -> None:
    jwk = _ec_jwk(key_type)
    y = int.from_bytes(b64url_decode(jwk["y"]), "big")
    jwk["y"] = b64url_encode(((y + 1) % 2**256).to_bytes(32, "big"))
    with pytest.raises(InvalidInput) as info:
        PublicKey.from_jwk(jwk)
    assert info.value.code == "invalid_point"


@pytest.mark.parametrize("key_type", [KeyType.P256, KeyType.SECP256K1])
def test_coordinate_of_wrong_length_is_refused(key_type: KeyType) -> None:
    jwk = _ec_jwk(key_type)
    jwk["x"] = b64url_encode(b"\0" + b64url_decode(jwk["x"]))
    with pytest.raises(InvalidInput) as info:
        PublicKey.from_jwk(jwk)
    assert info.value.code == "bad_jwk"


def test_rsa_below_2048_bits_is_refused() -> None:
    small = rsa.generate_private_key(public_exponent=65537, key_size=1024).public_key().public_numbers()
    jwk = {
        "kty": "RSA",
        "n": b64url_encode(small.n.to_bytes(128, "big")),
        "e": b64url_encode(small.e.to_bytes(3, "big")),
    }
    with pytest.raises(InvalidInput) as info:
        PublicKey.from_jwk(jwk)
    assert info.value.code == "weak_key"
    with pytest.raises(InvalidInput):
        PublicKey.from_cryptography(
            rsa.generate_private_key(public_exponent=65537, key_size=1024).public_key()
        )


def test_unsupported_curves_and_types_are_refused() -> None:
    p384 = ec.generate_private_key(ec.SECP384R1()).public_key()
    with pytest.raises(InvalidInput):
        PublicKey.from_cryptography(p384)
    for jwk in (
        {"kty": "oct", "k": "AAAA"},
        {"kty": "OKP", "crv": "X25519", "x": b64url_encode(b"\1" * 32)},
        {"kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"},
        {"crv": "P-256"},
        {"kty": 1},
    ):
        with pytest.raises(InvalidInput):
            PublicKey.from_jwk(jwk)


def test_rsa_generation_sizes() -> None:
    assert KeyPair.generate(KeyType.RSA, rsa_bits=3072).public_key.size == 3072
    with pytest.raises(InvalidInput):
        KeyPair.generate(KeyType.RSA, rsa_bits=1024)


def test_private_jwk_must_match_public_members() -> None:
    one, two = KeyPair.generate(KeyType.P256), KeyPair.generate(KeyType.P256)
    mixed = dict(one.private_jwk())
    mixed["d"] = two.private_jwk()["d"]
    with pytest.raises(InvalidInput):
        KeyPair.from_jwk(mixed)


def test_ecdsa_signatures_are_raw_r_s_of_64_bytes() -> None:
    pair = KeyPair.generate(KeyType.P256)
    assert len(pair.sign(b"m")) == 64


def test_malformed_multikeys_are_refused() -> None:
    for value in ("", "m" + "A" * 10, "z0OIl", "z" + "1" * 5):
        with pytest.raises(InvalidInput):
            PublicKey.from_multikey(value)


def test_jwk_json_is_minimal_for_thumbprint() -> None:
    pair = KeyPair.generate(KeyType.ED25519)
    assert json.dumps(pair.public_key.to_jwk(), sort_keys=True).count(":") == 3
