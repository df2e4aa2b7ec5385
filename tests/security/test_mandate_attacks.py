"""Named attacks on an AP2 v0.1 chain, one test each, and the check that stops it."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.crypto.jose import sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.sdjwt import KB_JWT_TYP
from mudrika.errors import BindingError, ExpiredError, SignatureError, UntrustedKeyError, VerificationError
from mudrika.payments.chain import KeyMaterial, inspect_chain, verify_chain
from mudrika.payments.models import CartMandate, PaymentMandate, Received, receive_cart, receive_payment
from mudrika.payments.report import VerificationReport
from mudrika.payments.signing import sign_cart, sign_payment
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import evidence_builder

pytestmark = pytest.mark.security


@pytest.fixture
def chain() -> Any:
    return evidence_builder().build_chain(key_type="p256", seeded=False)


def _report(
    chain: Any,
    *,
    cart: Received[CartMandate] | None = None,
    payment: Received[PaymentMandate] | None = None,
    **overrides: Any,
) -> VerificationReport:
    kwargs = {**chain.expectations(), "replay_store": MemoryReplayStore(), **overrides}
    return inspect_chain(chain.intent, cart or chain.cart, payment or chain.payment, **kwargs)


def _verify(chain: Any, *, payment: Received[PaymentMandate] | None = None, **overrides: Any) -> None:
    """verify_chain over the chain (or with ``payment`` in place of its own), with overridden
    expectations and a fresh replay store; the tests expect it to raise."""
    kwargs = {**chain.expectations(), "replay_store": MemoryReplayStore(), **overrides}
    verify_chain(chain.intent, chain.cart, payment or chain.payment, **kwargs)


def _first_failure(report: VerificationReport) -> str:
    first = report.first_failure
    assert first is not None
    return first.id


def _with_merchant_token(chain: Any, token: str) -> Received[CartMandate]:
    return receive_cart({**chain.cart.plain(), "merchant_authorization": token})


def _merchant_segments(chain: Any) -> tuple[dict[str, Any], dict[str, Any], bytes]:
    header, payload, signature = chain.cart.model.merchant_authorization.split(".")
    return json.loads(b64url_decode(header)), json.loads(b64url_decode(payload)), b64url_decode(signature)


def _encode(value: Any) -> str:
    return b64url_encode(json.dumps(value, separators=(",", ":")).encode())


def test_wrong_merchant_audience(chain: Any) -> None:
    report = _report(chain, merchant_audience="https://another-processor.example")
    assert _first_failure(report) == "merchant.jwt.aud"
    with pytest.raises(BindingError):
        _verify(chain, merchant_audience="https://x.example")


def test_wrong_kb_audience(chain: Any) -> None:
    assert _first_failure(_report(chain, kb_audience="https://another-processor.example")) == "user.kb.aud"


def test_wrong_nonce(chain: Any) -> None:
    report = _report(chain, kb_nonce="a-nonce-from-another-session")
    assert _first_failure(report) == "user.kb.nonce"
    assert "a-nonce" not in (report.by_id("user.kb.nonce").expected or "")  # nonces are fingerprinted


def test_expired_merchant_authorization(chain: Any) -> None:
    report = _report(chain, now=chain.now + 900)
    assert _first_failure(report) == "merchant.jwt.exp"
    with pytest.raises(ExpiredError):
        _verify(chain, now=chain.now + 900)


def test_replayed_key_binding_from_an_old_payment(chain: Any) -> None:
    assert _first_failure(_report(chain, now=chain.now + 400)) == "user.kb.iat"


def test_unreferenced_disclosure(chain: Any) -> None:
    """The user appends a disclosure the issuer never signed, and even signs a KB-JWT over it."""
    presentation = chain.payment.model.user_authorization
    parts = presentation.split("~")
    smuggled = _encode(["c2FsdHNhbHRzYWx0", "given_name", "Someone Else"])
    sd_part = "~".join([parts[0], *parts[1:-1], smuggled]) + "~"
    kb_claims = json.loads(b64url_decode(parts[-1].split(".")[1]))
    kb_claims["sd_hash"] = b64url_encode(hashlib.sha256(sd_part.encode()).digest())
    kb = sign_jwt(kb_claims, chain.user_key, typ=KB_JWT_TYP)
    payment = receive_payment({**chain.payment.plain(), "user_authorization": sd_part + kb})
    report = _report(chain, payment=payment)
    assert _first_failure(report) == "issuer.sdjwt.disclosures"
    assert report.by_id("issuer.sdjwt.disclosures").code == "unreferenced_disclosure"


def test_kb_signed_by_another_key(chain: Any) -> None:
    thief = KeyPair.generate("p256")
    parts = chain.payment.model.user_authorization.split("~")
    claims = json.loads(b64url_decode(parts[-1].split(".")[1]))
    forged = sign_jwt(claims, thief, typ=KB_JWT_TYP)
    payment = receive_payment(
        {**chain.payment.plain(), "user_authorization": "~".join([*parts[:-1], forged])}
    )
    report = _report(chain, payment=payment)
    assert _first_failure(report) == "user.kb.signature"
    with pytest.raises(SignatureError):
        _verify(chain, payment=payment)


def test_alg_none(chain: Any) -> None:
    header, payload, _ = _merchant_segments(chain)
    token = f"{_encode({**header, 'alg': 'none'})}.{_encode(payload)}."
    report = _report(chain, cart=_with_merchant_token(chain, token))
    assert _first_failure(report) == "merchant.jws.alg"


def test_hs256_signed_with_the_public_key(chain: Any) -> None:
    header, payload, _ = _merchant_segments(chain)
    signing_input = f"{_encode({**header, 'alg': 'HS256'})}.{_encode(payload)}"
    for secret in (
        chain.merchant_key.public_key.to_pem(),
        json.dumps(chain.merchant_key.public_key.to_jwk()).encode(),
    ):
        mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
        token = f"{signing_input}.{b64url_encode(mac)}"
        report = _report(chain, cart=_with_merchant_token(chain, token))
        assert _first_failure(report) == "merchant.jws.alg"


def test_der_encoded_ecdsa_signature(chain: Any) -> None:
    _header, _payload, raw = _merchant_segments(chain)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public = chain.merchant_key.public_key.to_cryptography()
    assert isinstance(public, ec.EllipticCurvePublicKey)
    signing_input = chain.cart.model.merchant_authorization.rsplit(".", 1)[0]
    public.verify(der, signing_input.encode(), ec.ECDSA(hashes.SHA256()))  # the same signature, DER-encoded
    report = _report(chain, cart=_with_merchant_token(chain, f"{signing_input}.{b64url_encode(der)}"))
    assert _first_failure(report) == "merchant.jws.signature"
    assert report.by_id("merchant.jws.signature").code == "bad_signature_encoding"


def test_kid_not_authorised_for_assertion(chain: Any) -> None:
    """The merchant's DID document lists the key only under authentication: it may log in, not sign carts."""
    builder = evidence_builder()
    document = builder.merchant_document(chain.merchant_key.public_key.to_jwk(), purposes=("authentication",))
    keys = KeyMaterial.offline_snapshot({builder.MERCHANT_DID: document}, jwks=chain.jwks)
    # As evidence (the merchant is not pinned) and as the analyst's own pinned snapshot alike.
    unpinned = chain.trust_root(merchants={})
    pinned = chain.trust_root(merchants={builder.MERCHANT_DID: {"did_document": document}})
    for trust_root in (unpinned, pinned):
        report = _report(chain, keys=keys, trust_root=trust_root)
        assert _first_failure(report) == "merchant.jws.key"
        assert report.by_id("merchant.jws.key").code == "not_authorised_for_purpose"
        with pytest.raises(UntrustedKeyError):
            _verify(chain, keys=keys, trust_root=trust_root)


@pytest.mark.parametrize("name", ["jku", "x5u", "jwk", "x5c"])
def test_key_selecting_headers_are_refused(chain: Any, name: str) -> None:
    header, payload, _ = _merchant_segments(chain)
    value: Any = chain.merchant_key.public_key.to_jwk() if name == "jwk" else "https://evil.example/keys"
    if name == "x5c":
        value = ["MIIB"]
    signing_input = f"{_encode({**header, name: value})}.{_encode(payload)}"
    signature = chain.merchant_key.sign(signing_input.encode())
    token = f"{signing_input}.{b64url_encode(signature)}"
    report = _report(chain, cart=_with_merchant_token(chain, token))
    assert _first_failure(report) == "merchant.jws.header"


def test_another_merchant_signs_in_our_merchants_name(chain: Any) -> None:
    """Merchant B (a valid did:key) signs a cart claiming to be merchant A (iss = A)."""
    from mudrika.identity.methods import key as did_key

    impostor = KeyPair.generate("p256")
    impostor_did = did_key.create(impostor.public_key)
    _, payload, _ = _merchant_segments(chain)
    token = sign_jwt(payload, impostor, kid=f"{impostor_did}#{impostor_did.removeprefix('did:key:')}")
    report = _report(chain, cart=_with_merchant_token(chain, token))
    assert _first_failure(report) == "merchant.jwt.iss"


def test_intent_jws_presented_as_merchant_authorization(chain: Any) -> None:
    """Token confusion: the user's intent JWS is a valid JWS by a known key, but not a cart JWT."""
    report = _report(chain, cart=_with_merchant_token(chain, chain.intent.model.user_authorization))
    assert not report.ok
    assert report.first_failure is not None
    assert report.first_failure.id.startswith("merchant.")


def test_cart_swapped_after_the_user_signed(chain: Any) -> None:
    """The merchant re-signs a different (more expensive) cart after the user authorised the first."""
    builder = evidence_builder()
    contents = chain.cart.plain()["contents"]
    contents["payment_request"]["details"]["display_items"][0]["amount"]["value"] = 1200
    contents["payment_request"]["details"]["total"]["amount"]["value"] = 1218.49
    swapped = sign_cart(
        contents,
        chain.merchant_key,
        merchant_did=builder.MERCHANT_DID,
        kid=builder.MERCHANT_KID,
        aud=chain.merchant_audience,
        now=chain.now - 60,
    )
    report = _report(chain, cart=swapped)
    assert "user.kb.transaction_data" in [check.id for check in report.failures]


def test_payment_reused_with_another_cart(chain: Any) -> None:
    other = evidence_builder().build_chain(key_type="p256", seeded=False)
    payment = sign_payment(
        chain.payment.plain()["payment_mandate_contents"],
        credential=chain.credential,
        user_key=chain.user_key,
        cart=other.cart,
        intent=chain.intent,
        aud=chain.kb_audience,
        nonce=chain.nonce,
        now=chain.now - 1,
    )
    report = _report(chain, payment=payment)
    assert _first_failure(report) == "user.kb.transaction_data"


def test_failures_raise_verification_errors(chain: Any) -> None:
    with pytest.raises(VerificationError):
        _verify(chain, trust_root=chain.trust_root(issuers={}))
