"""crypto/jose.py: JWS/JWT signing and the strict verification path, including the classic attacks."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from joserfc import jws as joserfc_jws
from joserfc.jwk import ECKey, OKPKey, RSAKey

from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.crypto.jose import (
    TrustedKey,
    check_jwt_claims,
    header_kid,
    parse_unverified_header,
    sign_compact,
    sign_jwt,
    verify_compact,
    verify_jwt,
)
from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import ExpiredError, InvalidInput, SignatureError, UntrustedKeyError, VerificationError
from tests._support.paths import vectors

NOW = 1_800_000_000.0


@pytest.fixture(scope="module")
def p256() -> KeyPair:
    return KeyPair.generate(KeyType.P256)


@pytest.fixture(scope="module")
def rsa_pair() -> KeyPair:
    return KeyPair.generate(KeyType.RSA)


def _forge(header: Mapping[str, Any], payload: bytes, signature: bytes) -> str:
    encoded = b64url_encode(json.dumps(header).encode())
    return f"{encoded}.{b64url_encode(payload)}.{b64url_encode(signature)}"


def _resign(pair: KeyPair, header: Mapping[str, Any], payload: bytes, alg: str | None = None) -> str:
    encoded = f"{b64url_encode(json.dumps(header).encode())}.{b64url_encode(payload)}"
    return f"{encoded}.{b64url_encode(pair.sign(encoded.encode(), alg))}"


@pytest.mark.parametrize("key_type", list(KeyType), ids=[t.value for t in KeyType])
def test_round_trip_every_key_type(key_type: KeyType) -> None:
    pair = KeyPair.generate(key_type)
    token = sign_compact(b"hello", pair, kid="did:example:1#k")
    verified = verify_compact(token, key=TrustedKey.for_key(pair.public_key, kid="did:example:1#k"))
    assert verified.payload == b"hello"
    assert verified.header["alg"] == pair.public_key.default_algorithm


def test_joserfc_verifies_ours_and_we_verify_joserfc(p256: KeyPair) -> None:
    token = sign_compact(b"x", p256)
    public = ECKey.import_key(p256.public_key.to_pem())
    assert joserfc_jws.deserialize_compact(token, public, algorithms=["ES256"]).payload == b"x"
    theirs = joserfc_jws.serialize_compact(
        {"alg": "ES256"}, b"y", ECKey.import_key(p256.private_pem_unencrypted()), algorithms=["ES256"]
    )
    assert verify_compact(theirs, key=TrustedKey.for_key(p256.public_key)).payload == b"y"
    ed = KeyPair.generate(KeyType.ED25519)
    okp = OKPKey.import_key(ed.public_key.to_pem())
    assert (
        joserfc_jws.deserialize_compact(
            sign_compact(b"z", ed, alg="Ed25519"), okp, algorithms=["Ed25519"]
        ).payload
        == b"z"
    )
    rsa_key = KeyPair.generate(KeyType.RSA)
    pub = RSAKey.import_key(rsa_key.public_key.to_pem())
    token = sign_compact(b"r", rsa_key, alg="PS256")
    assert joserfc_jws.deserialize_compact(token, pub, algorithms=["PS256"]).payload == b"r"


# -- the attack catalogue ------------------------------------------------------------------------------


def test_alg_none_is_refused(p256: KeyPair) -> None:
    token = _forge({"alg": "none"}, b"{}", b"")
    with pytest.raises(VerificationError) as info:
        verify_compact(token, key=TrustedKey.for_key(p256.public_key))
    assert info.value.code == "alg_not_allowed"


def test_hs256_signed_with_the_public_key_is_refused(rsa_pair: KeyPair) -> None:
    header = b64url_encode(b'{"alg":"HS256"}')
    payload = b64url_encode(b'{"sub":"attacker"}')
    mac = hmac.HMAC(rsa_pair.public_key.to_pem(), hashes.SHA256())
    mac.update(f"{header}.{payload}".encode())
    token = f"{header}.{payload}.{b64url_encode(mac.finalize())}"
    trusted = TrustedKey(key=rsa_pair.public_key, algorithms=frozenset({"RS256", "HS256"}))
    assert trusted.algorithms == frozenset({"RS256"}), "HS256 can never be bound to an RSA key"
    with pytest.raises(VerificationError) as info:
        verify_compact(token, key=trusted)
    assert info.value.code == "alg_not_allowed"


def test_der_encoded_ecdsa_signature_is_refused(p256: KeyPair) -> None:
    header = b64url_encode(b'{"alg":"ES256"}')
    signing_input = f"{header}.{b64url_encode(b'{}')}"
    raw = p256.sign(signing_input.encode())
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    with pytest.raises(SignatureError) as info:
        verify_compact(f"{signing_input}.{b64url_encode(der)}", key=TrustedKey.for_key(p256.public_key))
    assert info.value.code == "bad_signature_encoding"


def test_ps256_on_rs256_only_key_is_refused(rsa_pair: KeyPair) -> None:
    token = sign_compact(b"{}", rsa_pair, alg="PS256")
    with pytest.raises(VerificationError) as info:
        verify_compact(token, key=TrustedKey(key=rsa_pair.public_key, algorithms=frozenset({"RS256"})))
    assert info.value.code == "alg_not_allowed"


@pytest.mark.parametrize("name", ["jku", "x5u", "jwk", "x5c"])
def test_key_selection_headers_are_never_trusted(p256: KeyPair, name: str) -> None:
    value: Any = p256.public_key.to_jwk() if name == "jwk" else "https://attacker.example/keys"
    token = _resign(p256, {"alg": "ES256", name: value}, b"{}")
    with pytest.raises(VerificationError) as info:
        verify_compact(token, key=TrustedKey.for_key(p256.public_key))
    assert info.value.code == "forbidden_header"


def test_embedded_attacker_jwk_cannot_choose_the_key(p256: KeyPair) -> None:
    attacker = KeyPair.generate(KeyType.P256)
    token = _resign(attacker, {"alg": "ES256", "jwk": attacker.public_key.to_jwk()}, b"{}")
    with pytest.raises(VerificationError):
        verify_compact(token, key=TrustedKey.for_key(p256.public_key))


def test_unknown_crit_is_refused(p256: KeyPair) -> None:
    token = _resign(p256, {"alg": "ES256", "crit": ["exp-ext"], "exp-ext": 1}, b"{}")
    with pytest.raises(VerificationError) as info:
        verify_compact(token, key=TrustedKey.for_key(p256.public_key))
    assert info.value.code == "unknown_crit"
    verified = verify_compact(token, key=TrustedKey.for_key(p256.public_key), understood_crit={"exp-ext"})
    assert verified.header["exp-ext"] == 1


@pytest.mark.parametrize("crit", [[], "b64", ["alg"], ["missing"], [1]])
def test_malformed_crit_is_refused(p256: KeyPair, crit: Any) -> None:
    token = _resign(p256, {"alg": "ES256", "crit": crit}, b"{}")
    with pytest.raises((InvalidInput, VerificationError)):
        verify_compact(token, key=TrustedKey.for_key(p256.public_key), understood_crit={"missing"})


def test_attacker_key_with_same_kid_fails_signature(p256: KeyPair) -> None:
    attacker = KeyPair.generate(KeyType.P256)
    token = sign_compact(b"{}", attacker, kid="k1")
    with pytest.raises(SignatureError):
        verify_compact(token, key=TrustedKey.for_key(p256.public_key, kid="k1"))


def test_kid_must_name_the_trusted_key(p256: KeyPair) -> None:
    token = sign_compact(b"{}", p256, kid="other")
    with pytest.raises(VerificationError) as info:
        verify_compact(token, key=TrustedKey.for_key(p256.public_key, kid="k1"))
    assert info.value.code == "kid_mismatch"


def test_resolver_picks_key_from_header(p256: KeyPair) -> None:
    keys = {"k1": TrustedKey.for_key(p256.public_key, kid="k1")}

    def resolve(header: Mapping[str, Any]) -> TrustedKey:
        trusted = keys.get(str(header.get("kid")))
        if trusted is None:
            raise UntrustedKeyError("unknown kid", code="unknown_kid")
        return trusted

    assert verify_compact(sign_compact(b"1", p256, kid="k1"), key=resolve).payload == b"1"
    with pytest.raises(UntrustedKeyError):
        verify_compact(sign_compact(b"1", p256, kid="k2"), key=resolve)


@pytest.mark.parametrize(
    "token",
    [
        "",
        "a.b",
        "a.b.c.d.e",
        "@@@.e30.AAAA",
        "eyJhbGciOiJFUzI1NiJ9=.e30.AAAA",
        b64url_encode(b"[1]") + ".e30.AAAA",
        b64url_encode(b'{"alg":"ES256","alg":"none"}') + ".e30.AAAA",
        b64url_encode(b'{"alg":1}') + ".e30.AAAA",
    ],
)
def test_malformed_tokens_are_invalid_input(p256: KeyPair, token: str) -> None:
    with pytest.raises(InvalidInput):
        verify_compact(token, key=TrustedKey.for_key(p256.public_key))


def test_oversized_token_is_refused_before_parsing(p256: KeyPair) -> None:
    token = sign_compact(b"x" * 5000, p256)
    with pytest.raises(InvalidInput) as info:
        verify_compact(token, key=TrustedKey.for_key(p256.public_key), max_bytes=4096)
    assert info.value.code == "too_large"


def test_non_canonical_signature_encoding_is_refused(p256: KeyPair) -> None:
    token = sign_compact(b"{}", p256)
    head, body, sig = token.split(".")
    raw = b64url_decode(sig)
    tweaked = b64url_encode(raw)[:-1] + chr(ord(b64url_encode(raw)[-1]) ^ 1)
    with pytest.raises((InvalidInput, SignatureError)):
        verify_compact(f"{head}.{body}.{tweaked}", key=TrustedKey.for_key(p256.public_key))


def test_typ_is_checked_when_expected(p256: KeyPair) -> None:
    token = sign_compact(b"{}", p256, typ="kb+jwt")
    verify_compact(token, key=TrustedKey.for_key(p256.public_key), expected_typ="application/kb+jwt")
    with pytest.raises(VerificationError) as info:
        verify_compact(token, key=TrustedKey.for_key(p256.public_key), expected_typ="JWT")
    assert info.value.code == "wrong_typ"


def test_signing_refuses_forbidden_headers(p256: KeyPair) -> None:
    with pytest.raises(InvalidInput):
        sign_compact(b"{}", p256, extra_header={"jku": "https://x"})
    with pytest.raises(InvalidInput):
        sign_compact(b"{}", p256, alg="RS256")


def test_trusted_key_needs_a_fitting_algorithm(p256: KeyPair) -> None:
    with pytest.raises(InvalidInput):
        TrustedKey(key=p256.public_key, algorithms=frozenset({"RS256"}))


def test_trusted_key_from_jwk_honours_use_and_key_ops(p256: KeyPair) -> None:
    jwk = p256.public_key.to_jwk()
    assert TrustedKey.from_jwk({**jwk, "use": "sig", "kid": "a"}, algorithms={"ES256"}).kid == "a"
    with pytest.raises(UntrustedKeyError):
        TrustedKey.from_jwk({**jwk, "use": "enc"}, algorithms={"ES256"})
    with pytest.raises(UntrustedKeyError):
        TrustedKey.from_jwk({**jwk, "key_ops": ["encrypt"]}, algorithms={"ES256"})
    with pytest.raises(InvalidInput):
        TrustedKey.from_jwk({**jwk, "alg": "ES384"}, algorithms={"ES256"})


def test_parse_unverified_header(p256: KeyPair) -> None:
    assert parse_unverified_header(sign_compact(b"{}", p256, kid="k"))["kid"] == "k"


# -- JWT claims ------------------------------------------------------------------------------------------


def _claims(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"iss": "https://idp", "aud": "api", "iat": NOW - 10, "exp": NOW + 300, "sub": "u"}
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def _verify(pair: KeyPair, claims: Mapping[str, Any], **kwargs: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"issuer": "https://idp", "audience": "api", "now": NOW}
    options.update(kwargs)
    return verify_jwt(sign_jwt(claims, pair), key=TrustedKey.for_key(pair.public_key), **options)


def test_jwt_valid(p256: KeyPair) -> None:
    assert _verify(p256, _claims())["sub"] == "u"
    assert _verify(p256, _claims(aud=["x", "api"]))["sub"] == "u"


@pytest.mark.parametrize(
    ("claims", "kwargs", "error", "code"),
    [
        (_claims(exp=NOW - 30), {}, ExpiredError, "expired"),
        (_claims(exp=NOW - 120), {"leeway": 30}, ExpiredError, "expired"),
        (_claims(exp=None), {}, VerificationError, "missing_claim"),
        (_claims(nbf=NOW + 60), {}, VerificationError, "not_yet_valid"),
        (_claims(iat=NOW + 60), {}, VerificationError, "iat_in_future"),
        (_claims(aud="other"), {}, VerificationError, "wrong_aud"),
        (_claims(aud=None), {}, VerificationError, "wrong_aud"),
        (_claims(iss="https://evil"), {}, VerificationError, "wrong_iss"),
        (_claims(exp=NOW + 3600), {"max_lifetime": 900}, VerificationError, "lifetime_too_long"),
        (_claims(exp="soon"), {}, InvalidInput, "malformed_claim"),
        (_claims(exp=True), {}, InvalidInput, "malformed_claim"),
    ],
)
def test_jwt_claim_failures(
    p256: KeyPair, claims: dict[str, Any], kwargs: dict[str, Any], error: type[Exception], code: str
) -> None:
    with pytest.raises(error) as info:
        _verify(p256, claims, **kwargs)
    assert getattr(info.value, "code", None) == code


def test_leeway_is_bounded_and_applied(p256: KeyPair) -> None:
    assert _verify(p256, _claims(exp=NOW - 10), leeway=30)["sub"] == "u"
    with pytest.raises(InvalidInput):
        check_jwt_claims(_claims(), issuer=None, audience=None, now=NOW, leeway=3600)


def test_jwt_payload_must_be_object(p256: KeyPair) -> None:
    token = sign_compact(b"[1,2]", p256)
    with pytest.raises(InvalidInput):
        verify_jwt(token, key=TrustedKey.for_key(p256.public_key), issuer=None, audience=None, now=NOW)


def test_jwt_claims_with_duplicate_members_are_refused(p256: KeyPair) -> None:
    token = sign_compact(b'{"sub":"a","sub":"b","exp":1900000000,"iat":1}', p256)
    with pytest.raises(InvalidInput):
        verify_jwt(token, key=TrustedKey.for_key(p256.public_key), issuer=None, audience=None, now=NOW)


def test_real_clock_is_never_read_implicitly(p256: KeyPair) -> None:
    """Expired against the injected time even though it is valid against the wall clock."""
    wall = time.time()
    token = sign_jwt({"iat": wall, "exp": wall + 60}, p256)
    with pytest.raises(ExpiredError):
        verify_jwt(token, key=TrustedKey.for_key(p256.public_key), issuer=None, audience=None, now=wall + 61)


# -- RFC 7520 (JOSE cookbook) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "alg"), [("4_1.rsa_v15_signature.json", "RS256"), ("4_2.rsa-pss_signature.json", "PS384")]
)
def test_rfc7520_examples_verify(name: str, alg: str) -> None:
    case = json.loads(vectors("jose-cookbook", name).read_text())
    trusted = TrustedKey.from_jwk(
        {k: v for k, v in case["input"]["key"].items() if k in {"kty", "n", "e", "kid", "use"}},
        algorithms={alg},
    )
    verified = verify_compact(case["output"]["compact"], key=trusted)
    assert verified.payload.decode() == case["input"]["payload"]


def test_rfc7520_es512_is_refused_by_key_policy() -> None:
    """P-521 is outside mudrika's key types: the cookbook's ES512 example is refused, not mis-verified."""
    case = json.loads(vectors("jose-cookbook", "4_3.ecdsa_signature.json").read_text())
    public = {k: v for k, v in case["input"]["key"].items() if k != "d"}
    with pytest.raises(InvalidInput):
        TrustedKey.from_jwk(public, algorithms={"ES512"})


@pytest.mark.parametrize(
    "issuer", ["https://idp", ("https://other", "https://idp"), frozenset({"https://idp"})]
)
def test_issuer_may_be_one_string_or_a_collection(p256: KeyPair, issuer: Any) -> None:
    assert _verify(p256, _claims(), issuer=issuer)["sub"] == "u"
    with pytest.raises(VerificationError) as info:
        _verify(p256, _claims(iss="https://idp/"), issuer=issuer)
    assert info.value.code == "wrong_iss"


@pytest.mark.parametrize("issuer", ["https://idp", ("https://idp",)])
def test_issuer_claim_of_the_wrong_type_is_wrong_iss(p256: KeyPair, issuer: Any) -> None:
    for iss in (["https://idp"], {"u": 1}, 1):
        with pytest.raises(VerificationError) as info:
            _verify(p256, _claims(iss=iss), issuer=issuer)
        assert info.value.code == "wrong_iss"


@pytest.mark.parametrize("header", [{}, {"kid": ""}, {"kid": 7}, {"kid": None}, {"jwk": {"kty": "OKP"}}])
def test_a_header_without_a_kid_names_nothing_the_verifier_could_anchor(header: dict[str, Any]) -> None:
    with pytest.raises(UntrustedKeyError) as info:
        header_kid(header, what="the receipt")
    assert info.value.code == "no_kid"
    assert info.value.message == "the receipt names no key (kid)"


def test_a_did_url_kid_is_required_only_when_asked_for() -> None:
    assert header_kid({"kid": "key-1"}, what="the root token") == "key-1"
    assert header_kid({"kid": "did:web:m.example#k"}, what="x", did_url=True) == "did:web:m.example#k"
    with pytest.raises(UntrustedKeyError) as info:
        header_kid({"kid": "key-1"}, what="merchant_authorization", did_url=True)
    assert (info.value.code, info.value.message) == (
        "no_kid",
        "merchant_authorization must name its key by DID URL",
    )
