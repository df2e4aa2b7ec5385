"""``mudrika.payments.claims``: a damaged value inside a well-formed bundle is a listed problem, never a
crash and never a hidden claim (the rest of the bundle is still listed)."""

from __future__ import annotations

import json
from typing import Any

from mudrika.crypto.keys import PublicKey
from mudrika.payments.claims import bundle_claims
from tests._support.evidence import BUNDLE


def _claims_of(change: dict[tuple[str, ...], Any]) -> dict[str, Any]:
    document = json.loads(BUNDLE.read_text())
    for path, value in change.items():
        *parents, last = path
        node = document
        for name in parents:
            node = node[name]
        node[last] = value
    return bundle_claims(json.dumps(document).encode()).to_dict()


def test_damaged_tokens_and_keys_are_listed_as_problems() -> None:
    claims = _claims_of(
        {
            ("mandates", "cart", "merchant_authorization"): 5,
            ("mandates", "intent", "user_authorization"): "eyJhbGciOiJFZERTQSJ9.bm90IGpzb24.c2ln",
            ("mandates", "payment", "user_authorization"): "no tilde here",
            ("keys", "jwks", "https://wallet-issuer.example"): {"keys": [1, {"kty": "EC", "kid": "k"}]},
            ("keys", "pinned"): {"k2": {"owner": 3}},
        }
    )
    assert [(problem["where"], problem["role"]) for problem in claims["problems"]][:3] == [
        ("mandates.cart.merchant_authorization", "not_a_token"),
        ("mandates.intent.user_authorization", "malformed_json"),
        ("mandates.payment.user_authorization", "malformed_sd_jwt"),
    ]
    unreadable = [key for key in claims["keys"] if key["thumbprint"] is None and "header" not in key["where"]]
    assert [key["where"] for key in unreadable] == [
        "keys.jwks[https://wallet-issuer.example]",
        "keys.jwks[https://wallet-issuer.example]",
        "keys.pinned[k2]",
    ]
    # The merchant's DID document is still read: one damaged token hides nothing else.
    assert any(key["thumbprint"] == "W1COp5sh4XJjdJJhehqepuwWoGMjOeyWIwof0QHuZV4" for key in claims["keys"])
    assert claims["nonces"] == [
        {
            "role": "user key-binding JWT nonce (recorded)",
            "value": "kb-nonce-7d1e5b0c9a3f",
            "where": "expectations.kb_nonce",
        }
    ]


def test_a_multikey_did_document_key_is_listed_with_its_thumbprint() -> None:
    """mudrika's own DID documents (the demo's, ``provision``'s) carry ``publicKeyMultibase``, not a
    JWK; the analyst still needs the thumbprint to compare out of band before pinning the key."""
    document = json.loads(BUNDLE.read_text())["keys"]["did_documents"]["did:web:stride-athletics.example"]
    (method,) = document["verificationMethod"]
    jwk = method.pop("publicKeyJwk")
    method.update(type="Multikey", publicKeyMultibase=PublicKey.from_jwk(jwk).to_multikey())
    claims = _claims_of({("keys", "did_documents", "did:web:stride-athletics.example"): document})
    carried = [
        key
        for key in claims["keys"]
        if key["where"] == "keys.did_documents[did:web:stride-athletics.example]"
    ]
    assert [(key["kid"], key["thumbprint"]) for key in carried] == [
        ("did:web:stride-athletics.example#cart-signing-1", "W1COp5sh4XJjdJJhehqepuwWoGMjOeyWIwof0QHuZV4")
    ]
    assert claims["problems"] == []

    method["publicKeyMultibase"] = "zNotAKey"
    damaged = _claims_of({("keys", "did_documents", "did:web:stride-athletics.example"): document})
    assert [problem["where"] for problem in damaged["problems"]] == [
        "keys.did_documents[did:web:stride-athletics.example]"
    ]
