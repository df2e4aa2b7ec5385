"""The user's intent signature (mudrika extension to AP2 v0.1): signing and its named checks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mudrika.crypto.b64url import b64url_decode
from mudrika.crypto.jose import sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput
from mudrika.identity.methods import key as did_key
from mudrika.payments.chain import inspect_chain
from mudrika.payments.models import IntentMandate, Received, intent_hash, receive_intent
from mudrika.payments.profile import INTENT_JWS_TYP
from mudrika.payments.report import VerificationReport
from mudrika.payments.signing import sign_intent
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import evidence_builder
from tests._support.paths import FIXTURES

INTENT = json.loads((FIXTURES / "ap2" / "intent_mandate.json").read_text(encoding="utf-8"))


def _parts(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    header, payload, _ = token.split(".")
    return json.loads(b64url_decode(header)), json.loads(b64url_decode(payload))


def _user() -> tuple[KeyPair, str, str]:
    key = KeyPair.generate("p256")
    did = did_key.create(key.public_key)
    return key, did, f"{did}#{did.removeprefix('did:key:')}"


def test_sign_intent_claims_and_header() -> None:
    key, did, kid = _user()
    intent = receive_intent(INTENT)
    signed = sign_intent(intent, key, kid=kid, now=1_759_300_000)
    token = signed.model.user_authorization
    assert token is not None
    header, claims = _parts(token)
    assert header == {"alg": "ES256", "kid": kid, "typ": INTENT_JWS_TYP}
    assert claims == {"iss": did, "iat": 1_759_300_000, "intent_hash": intent_hash(intent)}
    # The hash excludes the signature, so signing does not change it.
    assert intent_hash(signed) == intent_hash(intent)
    assert signed.raw["natural_language_description"] == INTENT["natural_language_description"]


def test_resigning_replaces_the_signature_and_models_are_accepted() -> None:
    key, _, kid = _user()
    model = IntentMandate.model_validate(INTENT)
    first = sign_intent(model, key, kid=kid, now=1)
    second = sign_intent(first, key, kid=kid, now=2)
    assert isinstance(second, Received)
    assert list(second.raw).count("user_authorization") == 1
    assert _parts(second.model.user_authorization or "")[1]["iat"] == 2


@pytest.mark.parametrize("kid", ["did:key:z6Mk", "not-a-did#key", "did:key:zabc#"])
def test_kid_must_be_a_did_url_with_a_fragment(kid: str) -> None:
    key, _, _ = _user()
    with pytest.raises(InvalidInput):
        sign_intent(receive_intent(INTENT), key, kid=kid, now=1)


def _report_with_intent(intent: Received[IntentMandate]) -> VerificationReport:
    chain = evidence_builder().build_chain()
    return inspect_chain(
        intent, chain.cart, chain.payment, replay_store=MemoryReplayStore(), **chain.expectations()
    )


def _signed_by_chain_user(
    claims_override: dict[str, Any], typ: str = INTENT_JWS_TYP
) -> Received[IntentMandate]:
    chain = evidence_builder().build_chain()
    intent = receive_intent(INTENT)
    claims = {
        "iss": chain.user_did,
        "iat": chain.now - 60,
        "intent_hash": intent_hash(intent),
        **claims_override,
    }
    token = sign_jwt(claims, chain.user_key, kid=chain.user_kid, typ=typ)
    return intent.with_member("user_authorization", token)


def test_changed_intent_fails_the_intent_hash() -> None:
    chain = evidence_builder().build_chain()
    edited = chain.intent.with_member("natural_language_description", "Anything at all, any price")
    report = _report_with_intent(edited)
    assert [check.id for check in report.failures] == ["intent.jws.intent_hash"]


@pytest.mark.parametrize(
    ("override", "check_id"),
    [
        ({"iss": "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"}, "intent.jws.iss"),
        ({"iat": 4_000_000_000}, "intent.jws.iat"),
        ({"iat": "yesterday"}, "intent.jws.iat"),
        ({"intent_hash": "AAAA"}, "intent.jws.intent_hash"),
    ],
)
def test_intent_claims(override: dict[str, Any], check_id: str) -> None:
    report = _report_with_intent(_signed_by_chain_user(override))
    assert [check.id for check in report.failures] == [check_id]


def test_intent_jws_with_another_typ_is_refused() -> None:
    report = _report_with_intent(_signed_by_chain_user({}, typ="JWT"))
    assert [check.id for check in report.failures] == ["intent.jws.header"]
    assert report.by_id("intent.jws.header").code == "wrong_typ"
    assert report.by_id("intent.jws.signature").skipped


def test_intent_signed_with_an_unknown_key_is_refused() -> None:
    chain = evidence_builder().build_chain()
    stranger = KeyPair.generate("ed25519")
    forged = sign_intent(receive_intent(INTENT), stranger, kid=chain.user_kid, now=chain.now - 10)
    report = _report_with_intent(forged)
    assert [check.id for check in report.failures] == ["intent.jws.signature"]
