"""Interop: node ``jose`` (panva, v6) verifies our merchant_authorization and intent JWS.

``jwtVerify`` is given the public JWK, the algorithm allow-list, the issuer and (for the cart JWT) the
audience, and evaluates time at the chain's own clock.  Negative cases make sure the peer really
checks what we claim it checks.  All cases go to one node process (``tests/node/verify_jwt.mjs``).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests._support.evidence import evidence_builder
from tests._support.paths import NODE_DIR, node_peer

pytestmark = pytest.mark.interop


def _node_batch(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    node_peer()
    result = subprocess.run(
        ["node", str(NODE_DIR / "verify_jwt.mjs")],
        input=json.dumps(cases).encode(),
        capture_output=True,
        cwd=NODE_DIR,
        timeout=60,
        check=True,
    )
    out: list[dict[str, Any]] = json.loads(result.stdout)
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
