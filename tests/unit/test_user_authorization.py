"""PaymentMandate.user_authorization: the SD-JWT VC, the key-binding JWT, and their named checks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mudrika.crypto import sdjwt
from mudrika.crypto.b64url import b64url_decode
from mudrika.crypto.jcs import mandate_hash
from mudrika.crypto.jose import TrustedKey, sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput
from mudrika.payments.chain import inspect_chain
from mudrika.payments.models import (
    PaymentMandate,
    Received,
    cart_mandate_hash,
    payment_contents_hash,
    receive_payment,
)
from mudrika.payments.profile import PAYMENT_CREDENTIAL_VCT
from mudrika.payments.report import VerificationReport
from mudrika.payments.signing import issue_user_credential, sign_payment
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import evidence_builder
from tests._support.paths import FIXTURES

CONTENTS = json.loads((FIXTURES / "ap2" / "payment_mandate_contents.json").read_text(encoding="utf-8"))


def _kb_claims(payment: Received[PaymentMandate]) -> tuple[dict[str, Any], dict[str, Any]]:
    kb = (payment.model.user_authorization or "").split("~")[-1]
    header, claims, _ = kb.split(".")
    return json.loads(b64url_decode(header)), json.loads(b64url_decode(claims))


def _report(
    chain: Any, payment: Received[PaymentMandate] | None = None, **overrides: Any
) -> VerificationReport:
    kwargs = {**chain.expectations(), "replay_store": MemoryReplayStore(), **overrides}
    return inspect_chain(chain.intent, chain.cart, payment or chain.payment, **kwargs)


def chain_issuer() -> str:
    issuer: str = evidence_builder().ISSUER
    return issuer


def _failed(report: VerificationReport) -> list[str]:
    return [check.id for check in report.failures]


def _resign(chain: Any, **overrides: Any) -> Received[PaymentMandate]:
    kwargs: dict[str, Any] = {
        "credential": chain.credential,
        "user_key": chain.user_key,
        "cart": chain.cart,
        "intent": chain.intent,
        "aud": chain.kb_audience,
        "nonce": chain.nonce,
        "now": chain.now - 2,
        "disclose": ["/email"],
        **overrides,
    }
    return sign_payment(CONTENTS, **kwargs)


def test_issue_user_credential() -> None:
    issuer = KeyPair.generate("p256")
    user = KeyPair.generate("ed25519")
    credential = issue_user_credential(
        issuer_key=issuer,
        issuer="https://issuer.example",
        kid="k1",
        user_key=user.public_key,
        now=1000,
        ttl=3600,
        subject="did:example:user",
        claims={"email": "u@example.com"},
        disclosable=["/email"],
    )
    verified = sdjwt.verify(
        credential.compact(),
        issuer_key=TrustedKey.for_key(issuer.public_key),
        issuer="https://issuer.example",
        now=2000,
        require_key_binding=False,
        expected_aud=None,
        expected_nonce=None,
        kb_max_age=300,
    )
    assert verified.issuer_payload["vct"] == PAYMENT_CREDENTIAL_VCT
    assert verified.issuer_payload["sub"] == "did:example:user"
    assert verified.issuer_payload["exp"] == 4600
    assert sdjwt.holder_key_from_cnf(verified.payload).key == user.public_key
    assert credential.disclosable_paths == ("/email",)
    with pytest.raises(InvalidInput):
        issue_user_credential(
            issuer_key=issuer, issuer="i", kid="k", user_key=user.public_key, now=1, claims={"cnf": {}}
        )


def test_sign_payment_key_binding_claims() -> None:
    chain = evidence_builder().build_chain(key_type="p256", seeded=False)
    header, claims = _kb_claims(chain.payment)
    assert header["typ"] == "kb+jwt"
    assert header["alg"] == "ES256"
    assert claims["aud"] == chain.kb_audience
    assert claims["nonce"] == chain.nonce
    assert claims["iat"] == chain.now - 2
    assert claims["transaction_data"] == [
        cart_mandate_hash(chain.cart),
        payment_contents_hash(chain.payment),
        mandate_hash(chain.intent.plain()),
    ]
    presentation = chain.payment.model.user_authorization or ""
    assert presentation.count("~") == 2  # one disclosure (/email) of two, then the KB-JWT


def test_sign_payment_refuses_bad_input() -> None:
    chain = evidence_builder().build_chain()
    with pytest.raises(InvalidInput):
        _resign(chain, user_key=KeyPair.generate("ed25519"))  # not the cnf key
    unsigned = chain.cart.with_member("merchant_authorization", None)
    with pytest.raises(InvalidInput):
        _resign(chain, cart=unsigned)
    with pytest.raises(InvalidInput):
        _resign(chain, intent=chain.cart)
    text = _resign(chain, credential=chain.credential.compact())
    assert _report(chain, text).ok


def test_wrong_aud_and_wrong_nonce_are_both_reported() -> None:
    chain = evidence_builder().build_chain()
    payment = _resign(chain, aud="https://evil.example", nonce="guessed")
    assert _failed(_report(chain, payment)) == ["user.kb.aud", "user.kb.nonce"]


def test_key_binding_too_old_or_in_the_future() -> None:
    chain = evidence_builder().build_chain()
    assert _failed(_report(chain, now=chain.now + 301)) == ["user.kb.iat"]
    future = _resign(chain, now=chain.now + 60)
    assert _failed(_report(chain, future)) == ["user.kb.iat"]
    assert _report(chain, future, trust_root=chain.trust_root(leeway_seconds=30)).by_id("user.kb.iat").failed


def test_transaction_data_binds_this_cart() -> None:
    chain = evidence_builder().build_chain()
    other = evidence_builder().build_chain(edit_cart=lambda c: c.update(id="cart_other"))
    payment = _resign(chain, cart=other.cart)
    assert _failed(_report(chain, payment)) == ["user.kb.transaction_data"]


def test_missing_key_binding() -> None:
    chain = evidence_builder().build_chain()
    bare = (chain.payment.model.user_authorization or "").rsplit("~", 1)[0] + "~"
    payment = receive_payment({**chain.payment.plain(), "user_authorization": bare})
    report = _report(chain, payment)
    assert _failed(report) == ["user.kb.header"]
    assert report.by_id("user.kb.header").code == "kb_missing"
    assert report.by_id("user.kb.signature").skipped


def test_sd_hash_covers_the_presented_disclosures() -> None:
    chain = evidence_builder().build_chain()
    presentation = chain.payment.model.user_authorization or ""
    parts = presentation.split("~")
    # Drop the disclosure but keep the KB-JWT that was signed over it.
    dropped = "~".join([parts[0], parts[-1]])
    report = _report(chain, receive_payment({**chain.payment.plain(), "user_authorization": dropped}))
    assert _failed(report) == ["user.kb.sd_hash"]


def test_credential_checks() -> None:
    chain = evidence_builder().build_chain()
    stranger = chain.trust_root(
        issuers={"https://other-issuer.example": {"jwks": chain.jwks[chain_issuer()]}}
    )
    assert _failed(_report(chain, trust_root=stranger)) == ["issuer.trusted"]
    expired = issue_user_credential(
        issuer_key=chain.issuer_key,
        issuer="https://wallet-issuer.example",
        kid="wallet-issuer-2025-1",
        user_key=chain.user_key.public_key,
        now=chain.now - 7200,
        ttl=3600,
    )
    assert _failed(_report(chain, _resign(chain, credential=expired, disclose=[]))) == ["issuer.jwt.exp"]
    unknown_kid = issue_user_credential(
        issuer_key=chain.issuer_key,
        issuer="https://wallet-issuer.example",
        kid="rotated-away",
        user_key=chain.user_key.public_key,
        now=chain.now - 10,
    )
    report = _report(chain, _resign(chain, credential=unknown_kid, disclose=[]))
    assert _failed(report) == ["issuer.jwt.key"]
    assert report.by_id("issuer.jwt.key").error == "untrusted_key"


def test_kb_with_wrong_typ() -> None:
    chain = evidence_builder().build_chain()
    sd_part = (chain.payment.model.user_authorization or "").rsplit("~", 1)[0] + "~"
    _, claims = _kb_claims(chain.payment)
    forged = sign_jwt(claims, chain.user_key, typ="JWT")
    payment = receive_payment({**chain.payment.plain(), "user_authorization": sd_part + forged})
    assert _failed(_report(chain, payment)) == ["user.kb.typ"]


def test_credential_issued_by_a_stranger_key() -> None:
    chain = evidence_builder().build_chain()
    forged = issue_user_credential(
        issuer_key=KeyPair.generate("ed25519"),
        issuer="https://wallet-issuer.example",
        kid="wallet-issuer-2025-1",
        user_key=chain.user_key.public_key,
        now=chain.now - 10,
    )
    assert _failed(_report(chain, _resign(chain, credential=forged, disclose=[]))) == ["issuer.jwt.signature"]
