"""Hypothesis: JWK import accepts only points on the curve and only the right sizes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.keys import PublicKey
from mudrika.errors import InvalidInput

# Curve equations y^2 = x^3 + a x + b over F_p (SEC 2 §2.4.1 secp256k1, §2.4.2 secp256r1).
CURVES = {
    "P-256": (
        2**256 - 2**224 + 2**192 + 2**96 - 1,
        -3,
        0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B,
    ),
    "secp256k1": (2**256 - 2**32 - 977, 0, 7),
}


def _on_curve(crv: str, x: int, y: int) -> bool:
    p, a, b = CURVES[crv]
    return x < p and y < p and (y * y - (x**3 + a * x + b)) % p == 0


@settings(max_examples=200, deadline=None)
@given(
    crv=st.sampled_from(sorted(CURVES)),
    x=st.integers(min_value=0, max_value=2**256 - 1),
    y=st.integers(min_value=0, max_value=2**256 - 1),
)
def test_ec_jwk_accepted_only_on_curve(crv: str, x: int, y: int) -> None:
    jwk = {
        "kty": "EC",
        "crv": crv,
        "x": b64url_encode(x.to_bytes(32, "big")),
        "y": b64url_encode(y.to_bytes(32, "big")),
    }
    if _on_curve(crv, x, y):
        assert PublicKey.from_jwk(jwk).to_jwk()["x"] == jwk["x"]
    else:
        with pytest.raises(InvalidInput):
            PublicKey.from_jwk(jwk)


@settings(max_examples=150, deadline=None)
@given(
    crv=st.sampled_from(sorted(CURVES)),
    x=st.binary(min_size=0, max_size=70),
    y=st.binary(min_size=0, max_size=70),
)
def test_ec_jwk_coordinates_of_wrong_size_rejected(crv: str, x: bytes, y: bytes) -> None:
    if len(x) == 32 and len(y) == 32:
        return
    jwk = {"kty": "EC", "crv": crv, "x": b64url_encode(x), "y": b64url_encode(y)}
    with pytest.raises(InvalidInput):
        PublicKey.from_jwk(jwk)


@settings(max_examples=100, deadline=None)
@given(x=st.binary(min_size=0, max_size=64).filter(lambda b: len(b) != 32))
def test_ed25519_jwk_of_wrong_size_rejected(x: bytes) -> None:
    with pytest.raises(InvalidInput):
        PublicKey.from_jwk({"kty": "OKP", "crv": "Ed25519", "x": b64url_encode(x)})


@settings(max_examples=100, deadline=None)
@given(bits=st.integers(min_value=8, max_value=2047), exponent=st.sampled_from([3, 65537]))
def test_rsa_jwk_below_2048_bits_rejected(bits: int, exponent: int) -> None:
    n = (1 << (bits - 1)) | 1
    jwk = {
        "kty": "RSA",
        "n": b64url_encode(n.to_bytes((bits + 7) // 8, "big")),
        "e": b64url_encode(exponent.to_bytes(3, "big")),
    }
    with pytest.raises(InvalidInput):
        PublicKey.from_jwk(jwk)


@settings(max_examples=200, deadline=None)
@given(jwk=st.dictionaries(st.sampled_from(["kty", "crv", "x", "y", "n", "e", "d"]), st.text(max_size=60)))
def test_arbitrary_jwk_objects_never_crash(jwk: dict[str, str]) -> None:
    """Only InvalidInput may escape; anything accepted must be a real key that round-trips."""
    try:
        key = PublicKey.from_jwk(jwk)
    except InvalidInput:
        return
    assert PublicKey.from_jwk(key.to_jwk()) == key
