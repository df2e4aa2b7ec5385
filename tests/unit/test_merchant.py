"""merchant_authorization: signing (AP2 v0.1 profile claims) and the standalone cart verifier."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mudrika.crypto.b64url import b64url_decode
from mudrika.crypto.jose import sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.errors import (
    BindingError,
    ExpiredError,
    InvalidInput,
    PolicyDenied,
    ReplayError,
    UntrustedKeyError,
    VerificationError,
)
from mudrika.payments.chain import KeyMaterial, VerifiedCart, verify_cart
from mudrika.payments.models import CartContents, CartMandate, Received, cart_contents_hash, receive_cart
from mudrika.payments.signing import sign_cart
from mudrika.payments.trustroot import TrustRoot
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import evidence_builder, trust_root_for
from tests._support.paths import FIXTURES

CONTENTS = json.loads((FIXTURES / "ap2" / "cart_contents.json").read_text(encoding="utf-8"))
MERCHANT = "did:web:stride-athletics.example"
KID = MERCHANT + "#cart-signing-1"
AUD = "https://payments.processor.example"
NOW = 1_759_321_270


def _keys(key: KeyPair) -> KeyMaterial:
    document = evidence_builder().merchant_document(key.public_key.to_jwk())
    return KeyMaterial.offline_snapshot({MERCHANT: document})


def _root(key: KeyPair, **policy: Any) -> TrustRoot:
    """A trust root that pins ``key`` as the merchant's cart-signing key."""
    document = evidence_builder().merchant_document(key.public_key.to_jwk())
    return trust_root_for(merchants={MERCHANT: {"did_document": document}}, **policy)


def _claims(cart: Received[CartMandate]) -> tuple[dict[str, Any], dict[str, Any]]:
    token = cart.model.merchant_authorization or ""
    header, payload, _ = token.split(".")
    return json.loads(b64url_decode(header)), json.loads(b64url_decode(payload))


def _verify(cart: Received[CartMandate], key: KeyPair, **overrides: Any) -> VerifiedCart:
    kwargs: dict[str, Any] = {
        "trust_root": _root(key),
        "keys": _keys(key),
        "audience": AUD,
        "now": NOW,
        "replay_store": MemoryReplayStore(),
        **overrides,
    }
    return verify_cart(cart, **kwargs)


def test_sign_cart_claims() -> None:
    key = KeyPair.generate("p256")
    cart = sign_cart(CONTENTS, key, merchant_did=MERCHANT, kid=KID, aud=AUD, now=NOW, ttl=600)
    header, claims = _claims(cart)
    assert header == {"alg": "ES256", "kid": KID, "typ": "JWT"}
    assert set(claims) == {"iss", "sub", "aud", "iat", "exp", "jti", "cart_hash"}
    assert claims["iss"] == MERCHANT
    assert claims["sub"] == CONTENTS["id"]
    assert claims["aud"] == AUD
    assert claims["exp"] - claims["iat"] == 600
    assert claims["iat"] == NOW
    assert len(claims["jti"]) >= 22
    assert claims["cart_hash"] == cart_contents_hash(cart)
    assert cart.raw["contents"] == CONTENTS
    other = sign_cart(CONTENTS, key, merchant_did=MERCHANT, kid=KID, aud=AUD, now=NOW)
    assert _claims(other)[1]["jti"] != claims["jti"]


@pytest.mark.parametrize(
    ("key_type", "alg"), [("ed25519", "EdDSA"), ("secp256k1", "ES256K"), ("p256", "ES256")]
)
def test_profile_algorithms(key_type: str, alg: str) -> None:
    key = KeyPair.generate(key_type)
    model = CartContents.model_validate(CONTENTS)
    cart = sign_cart(model, key, merchant_did=MERCHANT, kid=KID, aud=AUD, now=NOW, alg=alg)
    assert _claims(cart)[0]["alg"] == alg
    verified = _verify(cart, key)
    assert verified.merchant_did == MERCHANT
    assert verified.kid == KID


@pytest.mark.parametrize(
    "bad",
    [
        {"ttl": 901},
        {"ttl": 0},
        {"kid": "did:web:other.example#k"},
        {"kid": MERCHANT},
        {"alg": "RS256"},
        {"alg": "EdDSA"},
        {"aud": ""},
        {"jti": ""},
        {"jti": "x" * 257},
    ],
)
def test_sign_cart_refuses_bad_parameters(bad: dict[str, Any]) -> None:
    kwargs: dict[str, Any] = {"merchant_did": MERCHANT, "kid": KID, "aud": AUD, "now": NOW, **bad}
    with pytest.raises(InvalidInput):
        sign_cart(CONTENTS, KeyPair.generate("p256"), **kwargs)


def test_verify_cart_and_its_replay() -> None:
    key = KeyPair.generate("p256")
    cart = sign_cart(CONTENTS, key, merchant_did=MERCHANT, kid=KID, aud=AUD, now=NOW)
    store = MemoryReplayStore()
    verified = _verify(cart, key, replay_store=store)
    assert verified.claims["sub"] == CONTENTS["id"]
    with pytest.raises(ReplayError):
        _verify(cart, key, replay_store=store)
    # Raw bytes are received strictly first.
    assert _verify(cart.wire_bytes(), key).merchant_did == MERCHANT  # type: ignore[arg-type]


def _hand_signed(key: KeyPair, **claims: Any) -> Received[CartMandate]:
    base = {
        "iss": MERCHANT,
        "sub": CONTENTS["id"],
        "aud": AUD,
        "iat": NOW - 10,
        "exp": NOW + 600,
        "jti": "j-1",
        "cart_hash": cart_contents_hash(receive_cart({"contents": CONTENTS})),
    }
    base.update(claims)
    payload = {name: value for name, value in base.items() if value is not None}
    token = sign_jwt(payload, key, kid=KID)
    return receive_cart({"contents": CONTENTS, "merchant_authorization": token})


@pytest.mark.parametrize(
    ("claims", "error", "code"),
    [
        ({"aud": "https://other.example"}, BindingError, "wrong_aud"),
        ({"iss": "did:web:other.example"}, BindingError, "merchant_iss_mismatch"),
        ({"sub": "cart_other"}, BindingError, "cart_id_mismatch"),
        ({"exp": NOW - 1, "iat": NOW - 100}, ExpiredError, "expired"),
        ({"iat": NOW + 60}, VerificationError, "iat_invalid"),
        ({"iat": NOW - 10, "exp": NOW + 1000}, PolicyDenied, "lifetime_too_long"),
        ({"exp": None}, ExpiredError, "exp_missing"),
        ({"nbf": NOW + 1}, ExpiredError, "not_yet_valid"),
        ({"jti": None}, VerificationError, "jti_missing"),
        ({"jti": 7}, VerificationError, "jti_missing"),
        ({"cart_hash": "not-the-hash"}, BindingError, "cart_hash_mismatch"),
    ],
)
def test_each_claim_is_checked(claims: dict[str, Any], error: type[VerificationError], code: str) -> None:
    key = KeyPair.generate("p256")
    with pytest.raises(error) as info:
        _verify(_hand_signed(key, **claims), key)
    assert info.value.code == code


def test_unsigned_cart_is_refused() -> None:
    key = KeyPair.generate("p256")
    with pytest.raises(VerificationError) as info:
        _verify(receive_cart({"contents": CONTENTS}), key)
    assert info.value.code == "unsigned_cart"


def test_leeway_is_bounded() -> None:
    key = KeyPair.generate("p256")
    with pytest.raises(InvalidInput) as info:
        _root(key, leeway_seconds=60)
    assert info.value.code == "bad_trust_root"


def test_the_merchant_jwt_typ_is_enforced() -> None:
    key = KeyPair.generate("p256")
    base = _hand_signed(key)
    token = base.model.merchant_authorization or ""
    _, payload, _ = token.split(".")
    retyped = sign_jwt(json.loads(b64url_decode(payload)), key, kid=KID, typ="ap2-intent+jwt")
    with pytest.raises(VerificationError) as info:
        _verify(receive_cart({"contents": CONTENTS, "merchant_authorization": retyped}), key)
    assert info.value.fields["check"] == "merchant.jwt.typ"


def test_an_unpinned_merchant_is_unanchored() -> None:
    key = KeyPair.generate("p256")
    cart = sign_cart(CONTENTS, key, merchant_did=MERCHANT, kid=KID, aud=AUD, now=NOW)
    with pytest.raises(UntrustedKeyError) as info:
        _verify(cart, key, trust_root=trust_root_for())
    assert info.value.code == "unanchored"


def test_evidence_with_another_key_under_the_pinned_kid_is_refused() -> None:
    genuine, forger = KeyPair.generate("p256"), KeyPair.generate("p256")
    cart = sign_cart(CONTENTS, forger, merchant_did=MERCHANT, kid=KID, aud=AUD, now=NOW)
    with pytest.raises(UntrustedKeyError) as info:
        _verify(cart, forger, trust_root=_root(genuine))
    assert info.value.code == "evidence_key_mismatch"


def test_an_unsigned_top_level_cart_member_is_refused() -> None:
    key = KeyPair.generate("p256")
    cart = sign_cart(CONTENTS, key, merchant_did=MERCHANT, kid=KID, aud=AUD, now=NOW)
    extended = receive_cart({**cart.plain(), "refund_to": "acct-of-attacker"})
    with pytest.raises(BindingError) as info:
        _verify(extended, key)
    assert info.value.fields["check"] == "cart.unsigned_members"
