"""Key import at its edges: the tests the mutation check of ``mudrika.crypto.keys`` showed missing.

Every public key a signature is verified with passes through this module, so each refusal is pinned
here by what it says (code, fields, the reason in its message) and each limit on both sides of its
edge.  The cases are built from the specifications, not from the code: the field primes of P-256
(FIPS 186-5 / SEC 2) and secp256k1 (SEC 2), RFC 7518 §6 for JWK members, RFC 8017 for RSA public
keys, SEC 1 §2.3.3 for compressed points.

Why the field-element cases matter: OpenSSL reduces an affine coordinate modulo the field prime, so
without mudrika's own check ``x + p`` would import as the same key as ``x`` — two JWKs, two RFC 7638
thumbprints, one key.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, rsa, x25519

from mudrika.crypto._pkcs8 import PBES2_OID
from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.keys import KeyPair, KeyType, PublicKey, _der_length
from mudrika.crypto.multibase import multikey_encode
from mudrika.errors import InvalidInput, KeyStoreError, SignatureError

#: The field primes, written as the standards print them (not imported from the module under test).
P256_PRIME = 2**256 - 2**224 + 2**192 + 2**96 - 1
SECP256K1_PRIME = 2**256 - 2**32 - 977
_P256_B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B


def _p256_rhs(x: int) -> int:
    return (x**3 - 3 * x + _P256_B) % P256_PRIME


def _secp256k1_rhs(x: int) -> int:
    return (x**3 + 7) % SECP256K1_PRIME


_CURVE_CASES: dict[KeyType, tuple[str, int, Callable[[int], int]]] = {
    # key type: (JWK crv, prime, y² as a function of x)
    KeyType.P256: ("P-256", P256_PRIME, _p256_rhs),
    KeyType.SECP256K1: ("secp256k1", SECP256K1_PRIME, _secp256k1_rhs),
}


def _y_for(key_type: KeyType, x: int) -> int | None:
    """A y with (x, y) on the curve, or None (both primes are 3 mod 4: one exponentiation)."""
    _, prime, rhs = _CURVE_CASES[key_type]
    y = pow(rhs(x), (prime + 1) // 4, prime)
    return y if y * y % prime == rhs(x) else None


def _first_x(key_type: KeyType, candidates: range) -> tuple[int, int]:
    for x in candidates:
        y = _y_for(key_type, x)
        if y is not None:
            return x, y
    raise AssertionError("no point among the candidates")


def _ec_jwk(key_type: KeyType, x: int, y: int) -> dict[str, str]:
    crv = _CURVE_CASES[key_type][0]
    return {
        "kty": "EC",
        "crv": crv,
        "x": b64url_encode(x.to_bytes(32, "big")),
        "y": b64url_encode(y.to_bytes(32, "big")),
    }


def _refusal(jwk: Any) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        PublicKey.from_jwk(jwk)
    return caught.value


CURVES = [KeyType.P256, KeyType.SECP256K1]


# -- elliptic-curve JWKs: coordinates are field elements -------------------------------------------


@pytest.mark.parametrize("key_type", CURVES, ids=[k.value for k in CURVES])
def test_a_point_with_a_small_x_imports_and_exports_32_byte_coordinates(key_type: KeyType) -> None:
    x, y = _first_x(key_type, range(1, 64))
    key = PublicKey.from_jwk(_ec_jwk(key_type, x, y))
    assert key.key_type is key_type
    # RFC 7518 §6.2.1.2: a coordinate is the full field size, leading zero octets kept.
    assert key.to_jwk() == _ec_jwk(key_type, x, y)


@pytest.mark.parametrize("key_type", CURVES, ids=[k.value for k in CURVES])
def test_the_largest_coordinates_below_the_prime_import(key_type: KeyType) -> None:
    prime = _CURVE_CASES[key_type][1]
    x, y = _first_x(key_type, range(prime - 1, prime - 64, -1))
    assert x >= prime - 3
    assert PublicKey.from_jwk(_ec_jwk(key_type, x, y)).to_jwk()["x"] == _ec_jwk(key_type, x, y)["x"]


@pytest.mark.parametrize("key_type", CURVES, ids=[k.value for k in CURVES])
def test_p_minus_one_is_a_field_element_that_is_not_on_the_curve(key_type: KeyType) -> None:
    prime = _CURVE_CASES[key_type][1]
    assert _y_for(key_type, prime - 1) is None
    _, y = _first_x(key_type, range(1, 64))
    refused = _refusal(_ec_jwk(key_type, prime - 1, y))
    assert refused.code == "invalid_point"
    assert "not on the curve" in str(refused)


def _non_canonical(key_type: KeyType) -> list[tuple[str, int, int]]:
    prime = _CURVE_CASES[key_type][1]
    x, y = _first_x(key_type, range(1, 64))
    cases = [("x + p", x + prime, y), ("x = p", prime, y), ("y = p", x, prime)]
    cases.append(("y + p", x, y + prime) if y + prime < 2**256 else ("both", x + prime, prime))
    return cases


@pytest.mark.parametrize("key_type", CURVES, ids=[k.value for k in CURVES])
def test_a_coordinate_not_below_the_prime_is_refused_as_not_a_field_element(key_type: KeyType) -> None:
    for label, x, y in _non_canonical(key_type):
        refused = _refusal(_ec_jwk(key_type, x, y))
        assert refused.code == "invalid_point", label
        assert "not a field element" in str(refused), label


def test_openssl_alone_would_accept_x_plus_p_as_the_same_key() -> None:
    """Why the check is ours: the library reduces the coordinate and imports the key."""
    x, y = _first_x(KeyType.P256, range(1, 64))
    reduced = ec.EllipticCurvePublicNumbers(x + P256_PRIME, y, ec.SECP256R1()).public_key()
    assert reduced.public_numbers().x == x


# -- which curve, which members --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("jwk", "crv"),
    [
        ({"kty": "EC", "crv": "Ed25519", "x": "AA", "y": "AA"}, "Ed25519"),
        ({"kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"}, "P-384"),
        ({"kty": "EC", "x": "AA", "y": "AA"}, "None"),
        ({"kty": "EC", "crv": "brainpoolP256r1-and-more", "x": "AA", "y": "AA"}, "brainpoolP256r1-"),
        ({"kty": "OKP", "crv": "X25519", "x": b64url_encode(bytes(32))}, "X25519"),
        ({"kty": "OKP", "crv": "Ed448-with-a-long-name", "x": "AA"}, "Ed448-with-a-lon"),
        ({"kty": "OKP", "crv": 12345678901234567890, "x": "AA"}, "1234567890123456"),
    ],
    ids=["ec-ed25519", "p384", "ec-no-crv", "ec-long-crv", "x25519", "okp-long-crv", "okp-number-crv"],
)
def test_an_unsupported_curve_is_named_in_at_most_16_characters(jwk: dict[str, Any], crv: str) -> None:
    refused = _refusal(jwk)
    assert (refused.code, refused.fields) == ("unsupported_key", {"crv": crv})


@pytest.mark.parametrize("kty", ["oct", "EC2", "RSA-with-a-long-suffix"])
def test_an_unsupported_kty_is_named_in_at_most_16_characters(kty: str) -> None:
    refused = _refusal({"kty": kty, "n": "AQAB", "e": "AQAB"})
    assert (refused.code, refused.fields) == ("unsupported_key", {"kty": kty[:16]})


@pytest.mark.parametrize("member", ["d", "p", "q", "dp", "dq", "qi", "oth", "k"])
def test_each_private_member_is_refused_where_a_public_key_is_expected(member: str) -> None:
    jwk: dict[str, Any] = {**KeyPair.generate(KeyType.P256).public_key.to_jwk(), member: "AQAB"}
    refused = _refusal(jwk)
    assert (refused.code, refused.fields) == ("private_jwk", {"members": [member]})


@pytest.mark.parametrize("value", [["kty", "EC"], "EC", None, 7])
def test_a_jwk_that_is_not_an_object_is_refused(value: Any) -> None:
    refused = _refusal(value)
    assert refused.code == "bad_jwk"
    assert "JSON object" in str(refused)


def test_at_most_32_members() -> None:
    public = KeyPair.generate(KeyType.P256).public_key
    jwk: dict[str, Any] = dict(public.to_jwk())
    jwk.update({f"x-extra-{index}": "v" for index in range(32 - len(jwk))})
    assert len(jwk) == 32
    assert PublicKey.from_jwk(jwk) == public
    refused = _refusal({**jwk, "one-more": "v"})
    assert refused.code == "bad_jwk"
    assert "too many members" in str(refused)


@pytest.mark.parametrize("kty", [None, 1, ["EC"]], ids=["missing", "number", "list"])
def test_kty_must_be_a_string(kty: Any) -> None:
    jwk = {"crv": "P-256"} if kty is None else {"kty": kty}
    refused = _refusal(jwk)
    assert (refused.code, refused.fields) == ("bad_jwk", {"member": "kty"})


@pytest.mark.parametrize("value", [None, 12, ["AA"]], ids=["missing", "number", "list"])
def test_a_coordinate_must_be_a_string(value: Any) -> None:
    jwk: dict[str, Any] = dict(KeyPair.generate(KeyType.P256).public_key.to_jwk())
    if value is None:
        del jwk["y"]
    else:
        jwk["y"] = value
    refused = _refusal(jwk)
    assert (refused.code, refused.fields) == ("bad_jwk", {"member": "y"})
    assert "missing or not a string" in str(refused)


# -- RSA JWKs --------------------------------------------------------------------------------------


def _odd_modulus(bits: int, *, factor: int = 1) -> int:
    """An odd number of exactly ``bits`` bits (a public key need not be checked for primality)."""
    n = (1 << (bits - 1)) | 1
    while n % factor or not n % 2:
        n += 2 if n % 2 else 1
    assert n.bit_length() == bits
    return n


def _rsa_jwk(n: int | bytes, e: int | bytes) -> dict[str, str]:
    def encode(value: int | bytes) -> str:
        raw = value if isinstance(value, bytes) else value.to_bytes((value.bit_length() + 7) // 8, "big")
        return b64url_encode(raw)

    return {"kty": "RSA", "n": encode(n), "e": encode(e)}


@pytest.mark.parametrize(("bits", "accepted"), [(2047, False), (2048, True), (16384, True), (16385, False)])
def test_rsa_modulus_sizes_from_2048_to_16384_bits(bits: int, accepted: bool) -> None:
    jwk = _rsa_jwk(_odd_modulus(bits), 65537)
    numbers = rsa.RSAPublicNumbers(65537, _odd_modulus(bits)).public_key()
    if accepted:
        assert PublicKey.from_jwk(jwk).size == bits
        assert PublicKey.from_cryptography(numbers).size == bits
        return
    refused = _refusal(jwk)
    assert (refused.code, refused.fields) == ("weak_key", {"bits": bits, "minimum": 2048})
    with pytest.raises(InvalidInput) as caught:
        PublicKey.from_cryptography(numbers)
    assert (caught.value.code, caught.value.fields) == ("weak_key", {"bits": bits, "minimum": 2048})


@pytest.mark.parametrize(
    ("e", "accepted"),
    [
        (1, False),
        (2, False),
        (3, True),
        (4, False),
        (65537, True),
        (2**31 + 1, True),  # 32 bits
        (2**32 + 1, False),  # 33 bits
    ],
)
def test_rsa_public_exponent_is_odd_at_least_3_and_at_most_32_bits(e: int, accepted: bool) -> None:
    jwk = _rsa_jwk(_odd_modulus(2048), e)
    if accepted:
        assert PublicKey.from_jwk(jwk).to_jwk()["e"] == jwk["e"]
        return
    refused = _refusal(jwk)
    assert refused.code == "bad_jwk"
    assert "exponent or modulus" in str(refused)


def test_an_even_modulus_is_refused_and_an_odd_multiple_of_three_is_not() -> None:
    refused = _refusal(_rsa_jwk(_odd_modulus(2048) + 1, 65537))
    assert (refused.code, "exponent or modulus" in str(refused)) == ("bad_jwk", True)
    assert PublicKey.from_jwk(_rsa_jwk(_odd_modulus(2048, factor=3), 65537)).size == 2048


@pytest.mark.parametrize(
    ("member", "padded"),
    [
        ("n", b"\x00" + _odd_modulus(2048).to_bytes(256, "big")),
        ("e", b"\x00\x01\x00\x01"),
        ("e", b"\x00\x03"),  # two octets, the shortest integer that can carry a leading zero
    ],
    ids=["n", "e-65537", "e-3"],
)
def test_an_rsa_integer_with_a_leading_zero_octet_is_refused(member: str, padded: bytes) -> None:
    jwk = _rsa_jwk(_odd_modulus(2048), 65537)
    jwk[member] = b64url_encode(padded)
    refused = _refusal(jwk)
    assert (refused.code, refused.fields) == ("bad_jwk", {"member": member})
    assert "leading zero octet" in str(refused)


def test_a_single_zero_octet_is_the_number_zero_not_a_leading_zero() -> None:
    refused = _refusal(_rsa_jwk(_odd_modulus(2048), b"\x00"))
    assert refused.code == "bad_jwk"
    assert "exponent or modulus" in str(refused)


def test_a_short_exponent_is_written_in_its_fewest_octets() -> None:
    """RFC 7518 §6.3.1.2: ``e`` 3 is the one octet ``Aw``; RFC 7638 thumbprints depend on it."""
    key = PublicKey.from_cryptography(rsa.generate_private_key(public_exponent=3, key_size=2048).public_key())
    assert key.to_jwk()["e"] == "Aw"


def test_a_jwk_member_of_4096_characters_is_decoded_and_4097_is_not() -> None:
    longest = _rsa_jwk(b"\x01" * 3072, 65537)  # 4,096 base64url characters: decoded, then too big a key
    assert len(longest["n"]) == 4096
    assert _refusal(longest).code == "weak_key"
    refused = _refusal({**longest, "n": longest["n"] + "A"})
    assert (refused.code, refused.fields) == ("too_large", {"limit": 4096})


# -- other encodings -------------------------------------------------------------------------------


def test_from_cryptography_takes_only_the_three_key_families() -> None:
    for foreign in (
        x25519.X25519PrivateKey.generate().public_key(),
        dsa.generate_private_key(key_size=2048).public_key(),
        "not a key",
    ):
        with pytest.raises(InvalidInput) as caught:
            PublicKey.from_cryptography(foreign)
        assert (caught.value.code, caught.value.fields) == ("unsupported_key", {})


def test_another_curve_is_named() -> None:
    with pytest.raises(InvalidInput) as caught:
        PublicKey.from_cryptography(ec.generate_private_key(ec.SECP384R1()).public_key())
    assert (caught.value.code, caught.value.fields) == ("unsupported_key", {"curve": "secp384r1"})


_PEM_LIMIT = 64 * 1024


def test_pem_text_and_bytes_alike_and_the_64_kib_limit() -> None:
    key = KeyPair.generate(KeyType.P256).public_key
    assert PublicKey.from_pem(key.to_pem().decode("ascii")) == key
    for size, code in ((_PEM_LIMIT, "bad_pem"), (_PEM_LIMIT + 1, "too_large")):
        with pytest.raises(InvalidInput) as caught:
            PublicKey.from_pem(b"-" * size)
        assert caught.value.code == code
        assert "PEM" in str(caught.value)
    with pytest.raises(InvalidInput) as private:
        KeyPair.from_pem(b"-" * (_PEM_LIMIT + 1), None)
    assert (private.value.code, private.value.fields) == ("too_large", {"limit": _PEM_LIMIT})


def test_der_round_trip_fingerprint_and_refusal() -> None:
    key = KeyPair.generate(KeyType.ED25519).public_key
    der = key.to_der()
    assert PublicKey.from_der(der) == key
    assert key.fingerprint_sha256() == hashlib.sha256(der).hexdigest()
    with pytest.raises(InvalidInput) as caught:
        PublicKey.from_der(b"\x30\x03\x02\x01\x00")
    assert (caught.value.code, str(caught.value)) == (
        "bad_der",
        "not a DER SubjectPublicKeyInfo of a supported type",
    )


def test_a_multikey_of_a_codec_we_do_not_verify_with_is_named() -> None:
    x25519_pub = 0xEC  # the multicodec of an X25519 key: an encryption key, never a signing key
    with pytest.raises(InvalidInput) as caught:
        PublicKey.from_multikey(multikey_encode(x25519_pub, bytes(32)))
    assert (caught.value.code, caught.value.fields) == ("unsupported_key", {"codec": "0xec"})


@pytest.mark.parametrize("size", [31, 33])
def test_raw_ed25519_is_32_bytes(size: int) -> None:
    with pytest.raises(InvalidInput) as caught:
        PublicKey.from_raw(KeyType.ED25519, bytes(size))
    assert (caught.value.code, caught.value.fields) == ("bad_key", {"got": size})


@pytest.mark.parametrize("key_type", CURVES, ids=[k.value for k in CURVES])
def test_raw_curve_keys_are_compressed_points_only(key_type: KeyType) -> None:
    crypto = KeyPair.generate(key_type).public_key.to_cryptography()
    assert isinstance(crypto, ec.EllipticCurvePublicKey)
    uncompressed = crypto.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    compressed = crypto.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)
    assert PublicKey.from_raw(key_type, compressed).raw == compressed
    for data in (uncompressed, b"\x04" + compressed[1:], compressed + b"\x00"):
        with pytest.raises(InvalidInput) as caught:
            PublicKey.from_raw(key_type, data)
        assert caught.value.code == "bad_key"
        assert "compressed SEC1 point" in str(caught.value)


def test_size_is_the_modulus_for_rsa_and_256_for_the_curves() -> None:
    assert KeyPair.generate(KeyType.P256).public_key.size == 256
    assert KeyPair.generate(KeyType.ED25519).public_key.size == 256
    assert KeyPair.generate(KeyType.RSA).public_key.size == 2048


def test_rsa_generation_offers_4096_bits() -> None:
    assert KeyPair.generate(KeyType.RSA, rsa_bits=4096).public_key.size == 4096


# -- verification and identity ---------------------------------------------------------------------


@pytest.mark.parametrize("key_type", list(KeyType), ids=[k.value for k in KeyType])
def test_a_wrong_signature_is_bad_signature(key_type: KeyType) -> None:
    pair = KeyPair.generate(key_type)
    signature = bytearray(pair.sign(b"message"))
    signature[-1] ^= 1
    with pytest.raises(SignatureError) as caught:
        pair.public_key.verify(bytes(signature), b"message", pair.public_key.default_algorithm)
    assert (caught.value.code, str(caught.value)) == ("bad_signature", "signature verification failed")


@pytest.mark.parametrize("change", [-1, 1])
def test_an_rsa_signature_of_the_wrong_length_is_refused_before_openssl(change: int) -> None:
    pair = KeyPair.generate(KeyType.RSA)
    signature = pair.sign(b"message")
    wrong = signature[:-1] if change < 0 else signature + b"\x00"
    with pytest.raises(SignatureError) as caught:
        pair.public_key.verify(wrong, b"message", "RS256")
    assert (caught.value.code, str(caught.value)) == ("bad_signature", "RSA signature has the wrong length")


def test_a_public_key_is_not_equal_to_another_kind_of_object() -> None:
    key = KeyPair.generate(KeyType.P256).public_key
    assert key.__eq__(key.to_jwk()) is NotImplemented
    assert key != key.to_jwk()
    assert key != key.raw


@pytest.mark.parametrize(
    ("length", "encoded"),
    [(0, b"\x00"), (127, b"\x7f"), (128, b"\x81\x80"), (255, b"\x81\xff"), (256, b"\x82\x01\x00")],
)
def test_der_lengths_short_and_long_form(length: int, encoded: bytes) -> None:
    """X.690 §8.1.3: below 128 one octet; otherwise 0x80 | count, then the length's fewest octets."""
    assert _der_length(length) == encoded


# -- key pairs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("bits", [1024, 2047, 2049])
def test_rsa_generation_refuses_other_sizes_by_name(bits: int) -> None:
    with pytest.raises(InvalidInput) as caught:
        KeyPair.generate(KeyType.RSA, rsa_bits=bits)
    assert (caught.value.code, caught.value.fields) == ("bad_key_size", {"bits": bits})


def test_signing_with_an_algorithm_of_another_key_type_names_both() -> None:
    pair = KeyPair.generate(KeyType.P256)
    with pytest.raises(InvalidInput) as caught:
        pair.sign(b"message", "RS256")
    assert (caught.value.code, caught.value.fields) == (
        "alg_key_mismatch",
        {"alg": "RS256", "key_type": "p256"},
    )


@pytest.mark.parametrize(
    ("password", "accepted"), [(b"8 bytes!", True), (b"7 bytes", False), ("a str password", False)]
)
def test_a_key_file_password_is_at_least_8_bytes(password: Any, accepted: bool) -> None:
    pair = KeyPair.generate(KeyType.ED25519)
    if accepted:
        assert KeyPair.from_pem(pair.private_pem(password), password) == pair
        return
    with pytest.raises(InvalidInput) as caught:
        pair.private_pem(password)
    assert caught.value.code == "weak_password"


def test_a_private_pem_of_exactly_64_kib_is_read() -> None:
    with pytest.raises(InvalidInput) as caught:
        KeyPair.from_pem(b"-" * _PEM_LIMIT, None)
    assert (caught.value.code, str(caught.value)) == ("bad_private_key", "not a supported PEM private key")


def test_a_password_given_or_missing_is_named() -> None:
    pair = KeyPair.generate(KeyType.P256)
    with pytest.raises(InvalidInput) as missing:
        KeyPair.from_pem(pair.private_pem(b"password1"), None)
    assert (missing.value.code, str(missing.value)) == ("password_mismatch", "key password required")
    with pytest.raises(InvalidInput) as extra:
        KeyPair.from_pem(pair.private_pem_unencrypted(), b"password1")
    assert (extra.value.code, str(extra.value)) == (
        "password_mismatch",
        "key is not encrypted but a password was given",
    )


def test_a_damaged_encrypted_key_without_a_password_is_not_called_a_wrong_password() -> None:
    """Only a password that was tried can be wrong; without one, a damaged file is just unreadable."""
    lines = KeyPair.generate(KeyType.P256).private_pem(b"password1").splitlines()
    damaged = b"\n".join(lines[:3] + lines[-1:]) + b"\n"
    with pytest.raises(InvalidInput) as caught:
        KeyPair.from_pem(damaged, None)
    assert caught.value.code == "bad_private_key"
    for garbage, password in ((b"garbage", None), (b"garbage", b"password1")):
        with pytest.raises(InvalidInput) as unreadable:
            KeyPair.from_pem(garbage, password)
        assert unreadable.value.code == "bad_private_key"


def test_a_private_key_of_another_family_is_refused() -> None:
    for private in (dsa.generate_private_key(key_size=2048), x25519.X25519PrivateKey.generate()):
        pem = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        with pytest.raises(InvalidInput) as caught:
            KeyPair.from_pem(pem, None)
        assert (caught.value.code, str(caught.value)) == ("unsupported_key", "unsupported private key type")


def test_private_jwks_that_are_no_key_another_key_or_multi_prime_are_refused() -> None:
    pair, rsa_pair = KeyPair.generate(KeyType.P256), KeyPair.generate(KeyType.RSA)
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({**pair.private_jwk(), "d": b64url_encode(bytes(32))}, "bad_jwk", "invalid private JWK"),
        (
            {**pair.private_jwk(), "d": KeyPair.generate(KeyType.P256).private_jwk()["d"]},
            "bad_jwk",
            "private JWK does not match its public members",
        ),
        (
            {**rsa_pair.private_jwk(), "oth": [{"r": "Aw", "d": "Aw", "t": "Aw"}]},
            "unsupported_key",
            "multi-prime RSA keys are not supported",
        ),
    ]
    for jwk, code, message in cases:
        with pytest.raises(InvalidInput) as caught:
            KeyPair.from_jwk(jwk)
        assert (caught.value.code, str(caught.value)) == (code, message)


def test_key_pairs_are_equal_by_their_public_key_only() -> None:
    pair = KeyPair.generate(KeyType.ED25519)
    assert pair == KeyPair.from_jwk(pair.private_jwk())
    assert pair != KeyPair.generate(KeyType.ED25519)
    assert pair.__eq__(pair.public_key) is NotImplemented
    assert pair != pair.public_key
    assert hash(pair) == hash(pair.public_key)
    assert len({pair, KeyPair.from_jwk(pair.private_jwk())}) == 1


def _encrypted_block(der: bytes) -> bytes:
    body = base64.encodebytes(der)
    return b"-----BEGIN ENCRYPTED PRIVATE KEY-----\n" + body + b"-----END ENCRYPTED PRIVATE KEY-----\n"


@pytest.mark.parametrize(
    ("der", "wrong_password"),
    [
        (b"\x30\x10" + PBES2_OID + bytes(16), True),  # a SEQUENCE naming PBES2 early: the password failed
        (b"\x30" + bytes(65 - 1 - len(PBES2_OID)) + PBES2_OID, False),  # its last byte is the 65th
        (b"\x31\x10" + PBES2_OID + bytes(16), False),  # not a SEQUENCE
        (b"\x30\x82\x01\x00" + bytes(80), False),  # a SEQUENCE that names no PBES2
    ],
    ids=["pbes2", "oid-past-64", "not-sequence", "no-oid"],
)
def test_only_a_pbes2_key_that_fails_blames_the_password(der: bytes, wrong_password: bool) -> None:
    """A failed load is called a wrong password only for what can be one: an encrypted PKCS#8 key
    (its DER a SEQUENCE naming PBES2 within its first 64 bytes); anything else is unreadable."""
    with pytest.raises((InvalidInput, KeyStoreError)) as caught:
        KeyPair.from_pem(_encrypted_block(der), b"password1")
    expected = "wrong_password" if wrong_password else "bad_private_key"
    assert caught.value.code == expected


def test_an_encrypted_block_whose_base64_is_not_strict_is_unreadable() -> None:
    """Padding in the middle of the base64 would decode leniently to a PBES2 prefix: it is refused
    as unreadable instead of blaming the password."""
    block = _encrypted_block(b"\x30\x10" + PBES2_OID + bytes(16))
    lines = block.splitlines()
    broken = b"\n".join([lines[0], lines[1] + b"=AAAA", *lines[2:]]) + b"\n"
    with pytest.raises(InvalidInput) as caught:
        KeyPair.from_pem(broken, b"password1")
    assert caught.value.code == "bad_private_key"
