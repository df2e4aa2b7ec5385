"""Interop: node ``jose`` (panva, v6) verifies our merchant_authorization and intent JWS, and a
chain signed entirely by node (``jose`` + ``@sd-jwt/core``) verifies with ours under a trust root.

``jwtVerify`` is given the public JWK, the algorithm allow-list, the issuer and (for the cart JWT) the
audience, and evaluates time at the chain's own clock.  Negative cases make sure the peer really
checks what we claim it checks.  All cases go to one node process (``tests/node/verify_jwt.mjs``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mudrika.crypto.jcs import mandate_hash
from mudrika.crypto.keys import KeyPair
from mudrika.identity.methods import key as did_key
from mudrika.payments.chain import KeyMaterial, inspect_chain
from mudrika.payments.profile import PAYMENT_CREDENTIAL_VCT
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import evidence_builder, trust_root_for
from tests._support.node import run_node_peer
from tests._support.paths import FIXTURES

pytestmark = pytest.mark.interop


def _node_batch(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = run_node_peer("verify_jwt.mjs", cases)
    assert len(out) == len(cases)
    return out


def test_node_jose_verifies_merchant_and_intent_jws() -> None:
    cases: list[dict[str, Any]] = []
    expected: list[bool] = []
    for key_type, alg in (("p256", "ES256"), ("ed25519", "EdDSA")):
        chain = evidence_builder().build_chain(key_type=key_type, seeded=False)
        builder = evidence_builder()
        merchant_jwk = chain.merchant_key.public_key.to_jwk()
        user_jwk = chain.user_key.public_key.to_jwk()
        cart_token = chain.cart.model.merchant_authorization
        intent_token = chain.intent.model.user_authorization
        base_cart = {
            "token": cart_token,
            "jwk": merchant_jwk,
            "algorithms": [alg],
            "issuer": builder.MERCHANT_DID,
            "audience": chain.merchant_audience,
            "currentDate": chain.now,
            "typ": "JWT",
        }
        base_intent = {
            "token": intent_token,
            "jwk": user_jwk,
            "algorithms": [alg],
            "issuer": chain.user_did,
            "audience": None,
            "currentDate": chain.now,
            "typ": "ap2-intent+jwt",
        }
        cases += [base_cart, base_intent]
        expected += [True, True]
        # The peer really checks: wrong audience, wrong issuer, expired, another key, wrong alg list.
        other_jwk = type(chain.user_key).generate(key_type).public_key.to_jwk()
        cases += [
            {**base_cart, "audience": "https://someone-else.example"},
            {**base_cart, "issuer": "did:web:other.example"},
            {**base_cart, "currentDate": chain.now + 3600},
            {**base_cart, "jwk": other_jwk},
            {**base_intent, "issuer": "did:key:z6Mkother"},
            {**base_intent, "jwk": other_jwk},
        ]
        expected += [False] * 6
    results = _node_batch(cases)
    assert [r["ok"] for r in results] == expected, [r.get("error") for r in results]
    for case, result in zip(cases, results, strict=True):
        if result["ok"]:
            assert result["header"]["kid"]
            assert result["payload"]["iss"] == case["issuer"]
    cart_claims = results[0]["payload"]
    assert set(cart_claims) == {"iss", "sub", "aud", "iat", "exp", "jti", "cart_hash"}
    assert set(results[1]["payload"]) == {"iss", "iat", "intent_hash"}


def _node_sign(cases: list[dict[str, Any]]) -> list[str]:
    tokens: list[str] = run_node_peer("sign_jws.mjs", cases)
    assert len(tokens) == len(cases)
    return tokens


def _node_sd_jwt(payload: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = run_node_peer("sdjwt_issue.mjs", payload)
    return out


def test_a_chain_signed_by_node_verifies_under_a_trust_root_pinning_its_keys() -> None:
    """Every signature of the chain made by node: the intent JWS and the cart JWT by ``jose``, the
    credential and the key-binding JWT (transaction_data covering cart, payment and intent) by
    ``@sd-jwt/core``.  Our verifier, given a trust root pinning the node-made keys, says OK."""
    builder = evidence_builder()
    user, merchant, issuer = (KeyPair.generate("p256") for _ in range(3))
    user_did = did_key.create(user.public_key)
    user_kid = f"{user_did}#{user_did.removeprefix('did:key:')}"
    now = builder.EVIDENCE_TIME
    intent_raw = json.loads((FIXTURES / "ap2" / "intent_mandate.json").read_text(encoding="utf-8"))
    contents = json.loads((FIXTURES / "ap2" / "cart_contents.json").read_text(encoding="utf-8"))
    paid = json.loads((FIXTURES / "ap2" / "payment_mandate_contents.json").read_text(encoding="utf-8"))
    intent_token, cart_token = _node_sign(
        [
            {
                "private_jwk": user.private_jwk(),
                "header": {"alg": "ES256", "kid": user_kid, "typ": "ap2-intent+jwt"},
                "payload": {"iss": user_did, "iat": now - 3600, "intent_hash": mandate_hash(intent_raw)},
            },
            {
                "private_jwk": merchant.private_jwk(),
                "header": {"alg": "ES256", "kid": builder.MERCHANT_KID, "typ": "JWT"},
                "payload": {
                    "iss": builder.MERCHANT_DID,
                    "sub": contents["id"],
                    "aud": builder.MERCHANT_AUDIENCE,
                    "iat": now - 120,
                    "exp": now + 600,
                    "jti": "node-jti-1",
                    "cart_hash": mandate_hash(contents),
                },
            },
        ]
    )
    intent = {**intent_raw, "user_authorization": intent_token}
    cart = {"contents": contents, "merchant_authorization": cart_token}
    issued = _node_sd_jwt(
        {
            "issuer_private_jwk": issuer.private_jwk(),
            "holder_private_jwk": user.private_jwk(),
            "claims": {
                "iss": builder.ISSUER,
                "iat": now - 86400,
                "exp": now + 86400,
                "vct": PAYMENT_CREDENTIAL_VCT,
                "sub": user_did,
                "email": "a@example.com",
                "cnf": {"jwk": user.public_key.to_jwk()},
            },
            "disclosure_frame": {"_sd": ["email"]},
            "presentation_frame": {"email": True},
            "typ": "dc+sd-jwt",
            "kid": builder.ISSUER_KID,
            "kb": {
                "aud": builder.KB_AUDIENCE,
                "nonce": builder.NONCE,
                "iat": now - 2,
                "transaction_data": [mandate_hash(cart), mandate_hash(paid), mandate_hash(intent)],
            },
        }
    )
    payment = {"payment_mandate_contents": paid, "user_authorization": issued["presentation"]}
    document = builder.merchant_document(merchant.public_key.to_jwk())
    jwks = {"keys": [{**issuer.public_key.to_jwk(), "kid": builder.ISSUER_KID}]}
    pinning = trust_root_for(
        issuers={builder.ISSUER: {"jwks": jwks}}, merchants={builder.MERCHANT_DID: {"did_document": document}}
    )
    expectations: dict[str, Any] = {
        "keys": KeyMaterial.offline_snapshot({}),
        "merchant_audience": builder.MERCHANT_AUDIENCE,
        "kb_audience": builder.KB_AUDIENCE,
        "kb_nonce": builder.NONCE,
        "now": now,
    }
    report = inspect_chain(
        intent, cart, payment, trust_root=pinning, replay_store=MemoryReplayStore(), **expectations
    )
    assert report.verdict == "OK", [(c.id, c.code, c.detail) for c in report.failures]
    assert report.by_id("user.kb.intent_binding").passed
    assert [key.thumbprint for key in report.keys[1:3]] == [
        merchant.public_key.thumbprint(),
        issuer.public_key.thumbprint(),
    ]
    # The same node-signed chain under a trust root that pins other keys for those names: refused.
    stranger = KeyPair.generate("p256")
    other = trust_root_for(
        issuers={
            builder.ISSUER: {"jwks": {"keys": [{**stranger.public_key.to_jwk(), "kid": builder.ISSUER_KID}]}}
        },
        merchants={
            builder.MERCHANT_DID: {"did_document": builder.merchant_document(stranger.public_key.to_jwk())}
        },
    )
    refused = inspect_chain(
        intent, cart, payment, trust_root=other, replay_store=MemoryReplayStore(), **expectations
    )
    assert refused.verdict == "FAILED"
    assert refused.first_failure is not None
    assert refused.first_failure.id == "merchant.jws.signature"
