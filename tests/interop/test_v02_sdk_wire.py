"""Round trips with the official AP2 v0.2 SDK's wire format, both ways.

Why the SDK itself is not the oracle: the AP2 v0.2 Python SDK (``code/sdk/python`` of
google-agentic-commerce/AP2) is not published on PyPI — PyPI's ``ap2`` is an unrelated v0.1
repackaging — and the test command can reach only PyPI, Debian and npm.  So its wire format is
reproduced here with the libraries the SDK itself is built on, PyPI ``sd-jwt`` 0.10.4
(``SDJWTIssuer``/``SDJWTHolder``/``SDJWTVerifier``) and ``jwcrypto``, exactly as the SDK drives
them (``ap2/sdk/sdjwt/common.py``, ``sd_jwt.py``, ``kb_sd_jwt.py``, ``mandate.py``,
``jwt_helper.py``): the mandate wrapped as the one selectively disclosable element of
``delegate_payload``, schema-marked lists disclosed element by element, the root's default
``typ`` (``example+sd-jwt``), hops typed ``kb+sd-jwt`` binding the previous token by ``sd_hash``
over its exact presented form, tokens joined with ``~~``, checkout JWT and receipts signed by
``jwcrypto`` ES256 with ``json.dumps`` payloads.

One deliberate difference: the SDK's ``MandateClient.create`` never writes ``iss`` on the root
(AP2 issue #259), and we require it, so the SDK-side root here carries the claim its issuer
would have to add.  A root exactly as the SDK writes it is refused (last test).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from jwcrypto.jwk import JWK  # type: ignore[import-untyped]
from jwcrypto.jws import JWS  # type: ignore[import-untyped]
from sd_jwt.common import SDObj
from sd_jwt.holder import SDJWTHolder
from sd_jwt.issuer import SDJWTIssuer
from sd_jwt.verifier import SDJWTVerifier

from mudrika.crypto.keys import KeyPair
from mudrika.payments.trustroot import TrustRoot, parse_trust_root
from mudrika.payments.v02 import V02Evidence, inspect_v02, sd_digest
from tests._support.ap2_v02 import (
    AGENT_PROVIDER,
    CP_AUDIENCE,
    MERCHANT_DID,
    MERCHANT_KID,
    build,
)

pytestmark = pytest.mark.interop

ISSUER_KID = "agent-provider-key-1"


def b64_sha256(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


def jwk_of(pair: KeyPair, kid: str | None = None) -> JWK:
    jwk = pair.private_jwk()
    if kid is not None:
        jwk = {**jwk, "kid": kid}
    return JWK(**jwk)


def sdk_jwt(payload: dict[str, Any], key: JWK, kid: str) -> str:
    """``ap2.sdk.jwt_helper.create_jwt``: jwcrypto JWS over ``json.dumps(payload)``."""
    jws = JWS(json.dumps(payload).encode("utf-8"))
    jws.add_signature(key, alg="ES256", protected=json.dumps({"alg": "ES256", "typ": "JWT", "kid": kid}))
    return str(jws.serialize(compact=True))


def wrap(content: dict[str, Any]) -> dict[str, Any]:
    """``DisclosureMetadata.apply`` for the v0.2 schema annotations."""
    wrapped = dict(content)
    constraints = []
    for constraint in content.get("constraints", []):
        item = dict(constraint)
        if item["type"] in (
            "checkout.allowed_merchants",
            "payment.allowed_payees",
            "payment.allowed_payment_instruments",
        ):
            item["allowed"] = [SDObj(entry) for entry in item["allowed"]]
        if item["type"] == "checkout.line_items":
            item["items"] = [
                {
                    **requirement,
                    "acceptable_items": [SDObj(entry) for entry in requirement["acceptable_items"]],
                }
                for requirement in item["items"]
            ]
        constraints.append(item)
    if constraints:
        wrapped["constraints"] = constraints
    if "checkout_jwt" in wrapped:
        wrapped[SDObj("checkout_jwt")] = wrapped.pop("checkout_jwt")
    return {"delegate_payload": [SDObj(wrapped)]}


def sdk_root(content: dict[str, Any], key: JWK, *, iss: str | None) -> str:
    claims = wrap(content)
    if iss is not None:
        claims["iss"] = iss
    issuer = SDJWTIssuer(
        claims, key, None, None, add_decoy_claims=True, extra_header_parameters={"kid": ISSUER_KID}
    )
    return str(issuer.sd_jwt_issuance)


def sdk_present(token: str, content: dict[str, Any]) -> str:
    """``MandateClient.present``'s holder step: SDJWTHolder revealing everything."""
    holder = SDJWTHolder(token)
    holder.create_presentation({"delegate_payload": [disclose_all(content)]})
    return str(holder.sd_jwt_presentation)


def disclose_all(content: dict[str, Any]) -> dict[str, Any]:
    disclosed: dict[str, Any] = {}
    if "checkout_jwt" in content:
        disclosed["checkout_jwt"] = True
    constraints: list[Any] = []
    for constraint in content.get("constraints", []):
        if "allowed" in constraint and constraint["type"] != "payment.allowed_pisps":
            constraints.append({"allowed": [True] * len(constraint["allowed"])})
        elif constraint["type"] == "checkout.line_items":
            constraints.append(
                {
                    "items": [
                        {"acceptable_items": [True] * len(r["acceptable_items"])} for r in constraint["items"]
                    ]
                }
            )
        else:
            constraints.append(True)
    if constraints:
        disclosed["constraints"] = constraints
    return disclosed


def sdk_hop(previous: str, content: dict[str, Any], key: JWK, *, aud: str, nonce: str, iat: int) -> str:
    """``kb_sd_jwt.create`` (sd_hash mode) then the holder presentation, joined with ``~~``."""
    claims = wrap(content)
    claims.update({"iat": iat, "aud": aud, "nonce": nonce, "sd_hash": b64_sha256(previous)})
    typ = "kb+sd-jwt+kb" if "cnf" in content else "kb+sd-jwt"
    issuer = SDJWTIssuer(claims, key, None, None, add_decoy_claims=True, extra_header_parameters={"typ": typ})
    hop = sdk_present(str(issuer.sd_jwt_issuance), content)
    return previous[:-1] + "~~" + hop


def trust_root(issuer: KeyPair, merchant: KeyPair) -> TrustRoot:
    return parse_trust_root(
        {
            "format": "mudrika.trust-root/v1",
            "issuers": {
                AGENT_PROVIDER: {
                    "jwks": {"keys": [{**issuer.public_key.to_jwk(), "kid": ISSUER_KID}]},
                    "vct": ["mandate.checkout.open.1", "mandate.payment.open.1"],
                }
            },
            "merchants": {
                MERCHANT_DID: {"jwks": {"keys": [{**merchant.public_key.to_jwk(), "kid": MERCHANT_KID}]}}
            },
            "algorithms": ["ES256"],
        }
    )


def test_sdk_wire_format_verifies_with_ours() -> None:
    ours = build()  # the mandate contents and keys; every token below is made the SDK's way
    keys = ours.keys
    issuer_jwk, agent_jwk, merchant_jwk = (
        jwk_of(keys.issuer, ISSUER_KID),
        jwk_of(keys.agent),
        jwk_of(keys.merchant),
    )
    checkout_jwt = sdk_jwt(ours.checkout, merchant_jwk, MERCHANT_KID)
    closed_checkout = {
        **ours.closed_checkout,
        "checkout_jwt": checkout_jwt,
        "checkout_hash": b64_sha256(checkout_jwt),
    }
    open_checkout = sdk_present(
        sdk_root(ours.open_checkout, issuer_jwk, iss=AGENT_PROVIDER), ours.open_checkout
    )
    checkout_chain = sdk_hop(
        open_checkout, closed_checkout, agent_jwk, aud=MERCHANT_DID, nonce="checkout-nonce-7f3a", iat=ours.now
    )
    open_payment_content = {
        **ours.open_payment,
        "constraints": [
            *ours.open_payment["constraints"][:3],
            {"type": "payment.reference", "conditional_transaction_id": b64_sha256(open_checkout)},
        ],
    }
    open_payment = sdk_present(
        sdk_root(open_payment_content, issuer_jwk, iss=AGENT_PROVIDER), open_payment_content
    )
    closed_payment = {**ours.closed_payment, "transaction_id": b64_sha256(checkout_jwt)}
    payment_chain = sdk_hop(
        open_payment, closed_payment, agent_jwk, aud=CP_AUDIENCE, nonce="payment-nonce-91c2", iat=ours.now
    )
    receipt = sdk_jwt(
        {
            "status": "Success",
            "iss": MERCHANT_DID,
            "iat": ours.now,
            "reference": b64_sha256(checkout_chain.rsplit("~~", 1)[1]),
            "order_id": "order-1",
        },
        merchant_jwk,
        MERCHANT_KID,
    )
    report = inspect_v02(
        V02Evidence(checkout_chain=checkout_chain, payment_chain=payment_chain, checkout_receipt=receipt),
        trust_root=trust_root(keys.issuer, keys.merchant),
        checkout_hops=ours.checkout_hops,
        payment_hops=ours.payment_hops,
        now=ours.now,
        usage=None,
        replay_store=None,
    )
    assert report.verdict == "OK", report.first_failure
    assert report.by_id("v02.checkout.hop0.typ").passed  # example+sd-jwt, the SDK's root typ


def verify_like_the_sdk(token: str, key: JWK) -> dict[str, Any]:
    """``ap2.sdk.sdjwt.sd_jwt.verify``: SDJWTVerifier with a fixed key, delegate_payload[0] out."""
    payload = SDJWTVerifier(token, lambda _iss, _header: key).get_verified_payload()
    assert isinstance(payload, dict)
    return payload


def test_our_wire_format_verifies_with_the_sdk_libraries() -> None:
    ours = build()
    for chain, open_content, closed_content, audience in (
        (ours.checkout_chain, ours.open_checkout, ours.closed_checkout, MERCHANT_DID),
        (ours.payment_chain, ours.open_payment, ours.closed_payment, CP_AUDIENCE),
    ):
        root, hop = chain.split("~~")
        root += "~"
        root_payload = verify_like_the_sdk(root, JWK(**ours.keys.issuer.public_key.to_jwk()))
        assert root_payload["delegate_payload"] == [open_content]
        assert root_payload["iss"] == AGENT_PROVIDER
        cnf = JWK(**root_payload["delegate_payload"][0]["cnf"]["jwk"])  # the next key, as the SDK walks it
        hop_payload = verify_like_the_sdk(hop, cnf)
        assert hop_payload["delegate_payload"] == [closed_content]
        assert hop_payload["sd_hash"] == b64_sha256(root)  # common.compute_sd_hash
        assert hop_payload["aud"] == audience
        assert hop_payload["iat"] == ours.now
    # checkout_mandate.md: checkout_hash is the hash of checkout_jwt; the JWT verifies with jwcrypto.
    assert ours.closed_checkout["checkout_hash"] == b64_sha256(ours.checkout_jwt)
    jws = JWS()
    jws.deserialize(ours.checkout_jwt)
    jws.verify(JWK(**ours.keys.merchant.public_key.to_jwk()))
    assert json.loads(jws.payload) == ours.checkout
    assert sd_digest(ours.checkout_jwt) == b64_sha256(ours.checkout_jwt)


def test_a_root_exactly_as_the_sdk_writes_it_is_refused_for_want_of_iss() -> None:
    ours = build()
    issuer_jwk, agent_jwk = jwk_of(ours.keys.issuer, ISSUER_KID), jwk_of(ours.keys.agent)
    root = sdk_present(sdk_root(ours.open_checkout, issuer_jwk, iss=None), ours.open_checkout)
    chain = sdk_hop(
        root, ours.closed_checkout, agent_jwk, aud=MERCHANT_DID, nonce="checkout-nonce-7f3a", iat=ours.now
    )
    report = inspect_v02(
        V02Evidence(checkout_chain=chain),
        trust_root=trust_root(ours.keys.issuer, ours.keys.merchant),
        checkout_hops=ours.checkout_hops,
        payment_hops=(),
        now=ours.now,
        usage=None,
        replay_store=None,
    )
    assert report.by_id("v02.checkout.hop0.iss").code == "root_iss_missing"
