"""SD-JWT interop: npm @sd-jwt/core 0.19.0, PyPI sd-jwt 0.10.4, and the RFC 9901 draft's own examples.

Both directions for each library: their SD-JWT+KB verifies with ours, ours verifies with theirs.  The
``*_gap`` tests pin down, concretely, where the reference libraries accept what RFC 9901 §7 (or our
stricter profile) rejects, so the difference is a documented fact rather than a surprise.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from jwcrypto.jwk import JWK  # type: ignore[import-untyped]
from sd_jwt.common import SDObj
from sd_jwt.holder import SDJWTHolder
from sd_jwt.issuer import SDJWTIssuer
from sd_jwt.verifier import SDJWTVerifier

from mudrika.crypto import sdjwt
from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.crypto.jose import TrustedKey, sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.errors import MudrikaError, VerificationError
from mudrika.payments.chain import inspect_chain
from mudrika.payments.profile import PAYMENT_CREDENTIAL_VCT
from mudrika.payments.signing import sign_payment
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import evidence_builder
from tests._support.node import run_node_peer
from tests._support.paths import vectors

pytestmark = pytest.mark.interop

ISSUER = "https://issuer.example"
AUD = "https://merchant.example"
NONCE = "n-0f3a9c"
TRANSACTION_DATA = ["cart-hash-b64url", "payment-hash-b64url"]


@pytest.fixture(scope="module")
def issuer_key() -> KeyPair:
    return KeyPair.generate("p256")


@pytest.fixture(scope="module")
def holder_key() -> KeyPair:
    return KeyPair.generate("p256")


def _claims(now: int) -> dict[str, Any]:
    return {
        "iss": ISSUER,
        "iat": now - 10,
        "exp": now + 3600,
        "vct": "https://credentials.example/payment-user",
        "given_name": "Ada",
        "email": "ada@example.com",
        "address": {"locality": "London", "country": "GB"},
        "nationalities": ["GB", "FR"],
    }


def _our_presentation(issuer_key: KeyPair, holder_key: KeyPair, now: int) -> str:
    issued = sdjwt.issue(
        _claims(now),
        issuer_key=issuer_key,
        kid="issuer-1",
        disclosable=["/given_name", "/email", "/address", "/address/locality", "/nationalities/1"],
        holder_key=holder_key.public_key,
        decoys=2,
    )
    return sdjwt.present(
        issued,
        disclose=["/given_name", "/address/locality", "/nationalities/1"],
        holder_key=holder_key,
        aud=AUD,
        nonce=NONCE,
        iat=now,
        extra_kb_claims={"transaction_data": TRANSACTION_DATA},
    )


EXPECTED_DISCLOSED = {
    "given_name": "Ada",
    "address": {"locality": "London", "country": "GB"},
    "nationalities": ["GB", "FR"],
}


def _forge_kb(issuer_jwt: str, key: KeyPair, now: int) -> str:
    """An SD-JWT+KB whose KB-JWT is well formed but signed by ``key``, not the cnf key."""
    sd_part = issuer_jwt + "~"
    sd_hash = b64url_encode(hashlib.sha256(sd_part.encode("ascii")).digest())
    return sd_part + sign_jwt({"iat": now, "aud": AUD, "nonce": NONCE, "sd_hash": sd_hash}, key, typ="kb+jwt")


def _our_verify(presentation: str, issuer_key: KeyPair, now: float, **overrides: Any) -> sdjwt.VerifiedSdJwt:
    kwargs: dict[str, Any] = {
        "issuer_key": TrustedKey.for_key(issuer_key.public_key),
        "issuer": ISSUER,
        "now": now,
        "require_key_binding": True,
        "expected_aud": AUD,
        "expected_nonce": NONCE,
        "kb_max_age": 300,
    }
    kwargs.update(overrides)
    return sdjwt.verify(presentation, **kwargs)


def _our_verify_unbound(presentation: str, issuer_key: KeyPair, now: float) -> sdjwt.VerifiedSdJwt:
    """Our verifier with no key binding required (the mode the gap tests compare against)."""
    return _our_verify(
        presentation, issuer_key, now, require_key_binding=False, expected_aud=None, expected_nonce=None
    )


def _issue_email(issuer_key: KeyPair, holder_key: KeyPair, now: int) -> sdjwt.SdJwt:
    """An SD-JWT of :func:`_claims` with only ``email`` selectively disclosable, bound to the holder."""
    return sdjwt.issue(
        _claims(now),
        issuer_key=issuer_key,
        kid=None,
        disclosable=["/email"],
        holder_key=holder_key.public_key,
    )


# -- node @sd-jwt/core ----------------------------------------------------------------------------


def _node(script: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    decoded = run_node_peer(script, payload)
    assert isinstance(decoded, dict)
    return decoded


def _node_verify(presentation: str, issuer_key: KeyPair, now: int, nonce: str | None) -> dict[str, Any]:
    return _node(
        "sdjwt_verify.mjs",
        {
            "presentation": presentation,
            "issuer_public_jwk": issuer_key.public_key.to_jwk(),
            "nonce": nonce,
            "now": now,
        },
    )


def test_node_verifies_our_sd_jwt_kb(issuer_key: KeyPair, holder_key: KeyPair) -> None:
    now = 1_760_000_000
    presentation = _our_presentation(issuer_key, holder_key, now)
    result = _node_verify(presentation, issuer_key, now, NONCE)
    assert result["ok"], result.get("error")
    assert result["header"]["typ"] == "dc+sd-jwt"
    payload = result["payload"]
    for name, value in EXPECTED_DISCLOSED.items():
        assert payload[name] == value
    assert "email" not in payload
    assert payload["cnf"] == {"jwk": holder_key.public_key.to_jwk()}
    kb = result["kb"]
    assert kb["header"] == {"alg": "ES256", "typ": "kb+jwt"}
    assert kb["payload"]["aud"] == AUD  # @sd-jwt/core does not compare aud itself
    assert kb["payload"]["transaction_data"] == TRANSACTION_DATA
    # And both sides agree on the processed payload.
    assert payload == dict(_our_verify(presentation, issuer_key, now).payload)


def test_we_verify_node_sd_jwt_kb(issuer_key: KeyPair, holder_key: KeyPair) -> None:
    now = 1_760_000_000
    claims = {**_claims(now), "cnf": {"jwk": holder_key.public_key.to_jwk()}}
    out = _node(
        "sdjwt_issue.mjs",
        {
            "issuer_private_jwk": issuer_key.private_jwk(),
            "holder_private_jwk": holder_key.private_jwk(),
            "claims": claims,
            "disclosure_frame": {
                "_sd": ["given_name", "email", "address"],
                "address": {"_sd": ["locality"]},
                "nationalities": {"_sd": [1]},
            },
            "presentation_frame": {
                "given_name": True,
                "address": {"locality": True},
                "nationalities": {"1": True},
            },
            "typ": "dc+sd-jwt",
            "kb": {"aud": AUD, "nonce": NONCE, "iat": now, "transaction_data": TRANSACTION_DATA},
        },
    )
    verified = _our_verify(out["presentation"], issuer_key, now)
    for name, value in EXPECTED_DISCLOSED.items():
        assert verified.payload[name] == value
    assert "email" not in verified.payload
    assert verified.kb_claims is not None
    assert verified.kb_claims["transaction_data"] == TRANSACTION_DATA
    assert verified.holder_key == holder_key.public_key
    # The issued (holder-side) form is readable too, with every claim path recovered.
    held = sdjwt.SdJwt.from_compact(out["issued"])
    assert set(held.disclosable_paths) == {
        "/given_name",
        "/email",
        "/address",
        "/address/locality",
        "/nationalities/1",
    }


def test_node_accepts_unreferenced_disclosure_gap(issuer_key: KeyPair, holder_key: KeyPair) -> None:
    # §7.1 step 5: a Disclosure no digest references MUST be rejected.  @sd-jwt/core ignores it.
    now = 1_760_000_000
    issued = _issue_email(issuer_key, holder_key, now)
    stray = "WyJzdHJheS1zYWx0LXN0cmF5LXNhbHQiLCJpc19hZG1pbiIsdHJ1ZV0"
    tampered = issued.issuer_jwt + "~" + stray + "~"
    assert _node_verify(tampered, issuer_key, now, None)["ok"]
    with pytest.raises(VerificationError) as info:
        _our_verify_unbound(tampered, issuer_key, now)
    assert info.value.code == "unreferenced_disclosure"


def test_node_lets_a_disclosure_overwrite_a_plain_claim_gap(issuer_key: KeyPair) -> None:
    # §7.1 step 3.3.2.3: a disclosed claim name that already exists MUST reject the SD-JWT.
    now = 1_760_000_000
    disclosure = b64url_encode(json.dumps(["c2FsdHNhbHRzYWx0c2FsdA", "role", "admin"]).encode())
    digest = b64url_encode(hashlib.sha256(disclosure.encode("ascii")).digest())
    token = sign_jwt(
        {"iss": ISSUER, "iat": now, "exp": now + 60, "role": "viewer", "_sd": [digest], "_sd_alg": "sha-256"},
        issuer_key,
        typ="dc+sd-jwt",
    )
    presentation = f"{token}~{disclosure}~"
    result = _node_verify(presentation, issuer_key, now, None)
    assert result["ok"]
    assert result["payload"]["role"] == "admin"
    with pytest.raises(VerificationError) as info:
        _our_verify_unbound(presentation, issuer_key, now)
    assert info.value.code == "claim_name_clash"


def test_node_ignores_kb_checks_gap(issuer_key: KeyPair, holder_key: KeyPair) -> None:
    # Without keyBindingNonce, @sd-jwt/core never looks at the KB-JWT; with it, aud and iat are unchecked.
    now = 1_760_000_000
    issued = _issue_email(issuer_key, holder_key, now)
    forged = _forge_kb(issued.issuer_jwt, KeyPair.generate("p256"), now)
    assert not _node_verify(forged, issuer_key, now, NONCE)["ok"]
    assert _node_verify(forged, issuer_key, now, None)["ok"]
    with pytest.raises(MudrikaError) as info:
        _our_verify_unbound(forged, issuer_key, now)
    assert info.value.code == "unexpected_key_binding"
    stale_elsewhere = sdjwt.present(
        issued, disclose=[], holder_key=holder_key, aud="https://other.example", nonce=NONCE, iat=now - 86_000
    )
    assert _node_verify(stale_elsewhere, issuer_key, now, NONCE)["ok"]
    with pytest.raises(VerificationError) as info:
        _our_verify(stale_elsewhere, issuer_key, now)
    assert info.value.code == "kb_too_old"


# -- PyPI sd-jwt (openwallet-foundation-labs/sd-jwt-python) ---------------------------------------


def _jwcrypto(jwk: Mapping[str, str]) -> Any:
    return JWK(**jwk)


def test_sd_jwt_python_verifies_our_sd_jwt_kb(issuer_key: KeyPair, holder_key: KeyPair) -> None:
    now = int(time.time())
    presentation = _our_presentation(issuer_key, holder_key, now)
    public = _jwcrypto(issuer_key.public_key.to_jwk())
    verifier = SDJWTVerifier(
        presentation, lambda _iss, _header: public, expected_aud=AUD, expected_nonce=NONCE
    )
    payload = verifier.get_verified_payload()
    for name, value in EXPECTED_DISCLOSED.items():
        assert payload[name] == value
    assert "email" not in payload
    assert payload == dict(_our_verify(presentation, issuer_key, now).payload)


def test_we_verify_sd_jwt_python_sd_jwt_kb(issuer_key: KeyPair, holder_key: KeyPair) -> None:
    now = int(time.time())
    claims: dict[Any, Any] = {
        "iss": ISSUER,
        "iat": now - 10,
        "exp": now + 3600,
        SDObj("given_name"): "Ada",
        SDObj("email"): "ada@example.com",
        SDObj("address"): {SDObj("locality"): "London", "country": "GB"},
        "nationalities": ["GB", SDObj("FR")],
    }
    issuer = SDJWTIssuer(
        claims,
        _jwcrypto(issuer_key.private_jwk()),
        holder_key=_jwcrypto(holder_key.public_key.to_jwk()),
        sign_alg="ES256",
        extra_header_parameters={"typ": "dc+sd-jwt"},
    )
    holder = SDJWTHolder(issuer.sd_jwt_issuance)
    holder.create_presentation(
        {"given_name": True, "address": {"locality": True}, "nationalities": [False, True]},
        nonce=NONCE,
        aud=AUD,
        holder_key=_jwcrypto(holder_key.private_jwk()),
        sign_alg="ES256",
    )
    # The library stamps the KB-JWT with the real clock (time.time()), so "now" is the real clock too.
    verified = _our_verify(holder.sd_jwt_presentation, issuer_key, time.time())
    assert verified.payload["given_name"] == "Ada"
    assert verified.payload["address"] == {"locality": "London", "country": "GB"}
    assert verified.payload["nationalities"] == ["GB", "FR"]
    assert "email" not in verified.payload
    assert verified.key_bound


def test_sd_jwt_python_gaps(issuer_key: KeyPair, holder_key: KeyPair) -> None:
    # sd-jwt 0.10.4 accepts an unreferenced Disclosure and skips the KB-JWT when aud/nonce are omitted.
    now = int(time.time())
    issued = _issue_email(issuer_key, holder_key, now)
    public = _jwcrypto(issuer_key.public_key.to_jwk())
    stray = "WyJzdHJheS1zYWx0LXN0cmF5LXNhbHQiLCJpc19hZG1pbiIsdHJ1ZV0"
    SDJWTVerifier(f"{issued.issuer_jwt}~{stray}~", lambda _i, _h: public).get_verified_payload()
    forged = _forge_kb(issued.issuer_jwt, KeyPair.generate("p256"), now)
    SDJWTVerifier(forged, lambda _i, _h: public).get_verified_payload()
    for presentation, code in (
        (f"{issued.issuer_jwt}~{stray}~", "unreferenced_disclosure"),
        (forged, "unexpected_key_binding"),
    ):
        with pytest.raises(VerificationError) as info:
            _our_verify(
                presentation,
                issuer_key,
                now,
                require_key_binding=False,
                expected_aud=None,
                expected_nonce=None,
            )
        assert info.value.code == code


# -- RFC 9901 (draft) published examples -----------------------------------------------------------


def _draft_presentation(text: str, anchor: str) -> tuple[str, dict[str, Any]]:
    """The first compact example after ``anchor`` and the processed payload printed after it."""
    lines = text[text.index(anchor) :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("   eyJ"))
    end = start
    while lines[end].strip():
        end += 1
    compact = "".join(line.strip() for line in lines[start:end])
    rest = "\n".join(lines[end:])
    marker = (
        rest.index("Processed SD-\n   JWT Payload")
        if "Processed SD-\n   JWT Payload" in rest
        else rest.index("Processed\n   SD-JWT Payload")
    )
    body = rest[marker:]
    opening = body.index("\n   {")
    closing = body.index("\n   }\n", opening)
    processed = json.loads(body[opening : closing + 6])
    assert isinstance(processed, dict)
    return compact, processed


DRAFT_EXAMPLES = [
    pytest.param(
        "shows an SD-JWT+KB as it would be", "example+sd-jwt", "https://issuer.example.com", id="s5.2"
    ),
    pytest.param(
        "SD-JWT+KB that discloses only\n   nationality",
        "dc+sd-jwt",
        "https://pid-issuer.bund.de.example",
        id="A.3",
    ),
    pytest.param("SD-JWT+KB that discloses only type", "example+sd-jwt", None, id="A.4"),
]


@pytest.mark.parametrize(("anchor", "typ", "issuer"), DRAFT_EXAMPLES)
def test_draft_presentation_examples_verify(anchor: str, typ: str, issuer: str | None) -> None:
    text = vectors("sd-jwt", "draft-latest.txt").read_text(encoding="utf-8")
    settings = yaml.safe_load(
        Path(vectors("sd-jwt", "sd-jwt-python-settings.yml")).read_text(encoding="utf-8")
    )
    issuer_jwk = {k: v for k, v in settings["key_settings"]["issuer_keys"][0].items() if k != "d"}
    holder_jwk = {k: v for k, v in settings["key_settings"]["holder_key"].items() if k != "d"}
    presentation, processed = _draft_presentation(text, anchor)
    kb_claims = json.loads(b64url_decode(presentation.split("~")[-1].split(".")[1]))
    # The draft's KB-JWTs are fixed: aud, nonce (the settings file's) and iat are read from the text.
    assert kb_claims["nonce"] == settings["key_binding_nonce"]
    verified = sdjwt.verify(
        presentation,
        issuer_key=TrustedKey.from_jwk(issuer_jwk, algorithms=["ES256"]),
        issuer=issuer,
        now=kb_claims["iat"] + 1,
        require_key_binding=True,
        expected_aud="https://verifier.example.org",
        expected_nonce=settings["key_binding_nonce"],
        kb_max_age=60,
        expected_typ=typ,
        required_claims=("iat", "exp") if issuer else (),
    )
    assert dict(verified.payload) == processed
    assert verified.holder_key is not None
    assert verified.holder_key.to_jwk() == holder_jwk
    # And it is bound: the same presentation under another nonce fails.
    with pytest.raises(VerificationError) as info:
        sdjwt.verify(
            presentation,
            issuer_key=TrustedKey.from_jwk(issuer_jwk, algorithms=["ES256"]),
            issuer=issuer,
            now=kb_claims["iat"] + 1,
            require_key_binding=True,
            expected_aud="https://verifier.example.org",
            expected_nonce="0000000000",
            kb_max_age=60,
            expected_typ=typ,
            required_claims=(),
        )
    assert info.value.code == "kb_wrong_nonce"


def test_a_chain_whose_credential_python_sd_jwt_issued_verifies_under_a_trust_root() -> None:
    """The payment credential issued by PyPI sd-jwt (kid header, AP2 claims, cnf), presented in an
    AP2 chain, verifies under a trust root that pins that issuer key.

    The key-binding JWT is ours: sd-jwt 0.10.4's ``create_presentation`` writes a fixed KB payload
    (nonce, aud, iat from the real clock, sd_hash) and cannot carry the profile's ``transaction_data``.
    """
    builder = evidence_builder()
    chain = builder.build_chain(key_type="p256", seeded=False)
    claims: dict[Any, Any] = {
        "iss": builder.ISSUER,
        "iat": chain.now - 86400,
        "exp": chain.now + 86400,
        "vct": PAYMENT_CREDENTIAL_VCT,
        "sub": chain.user_did,
        SDObj("email"): "a.sharma@example.com",
    }
    issuer = SDJWTIssuer(
        claims,
        _jwcrypto(chain.issuer_key.private_jwk()),
        holder_key=_jwcrypto(chain.user_key.public_key.to_jwk()),
        sign_alg="ES256",
        extra_header_parameters={"typ": "dc+sd-jwt", "kid": builder.ISSUER_KID},
    )
    payment = sign_payment(
        chain.payment.plain()["payment_mandate_contents"],
        credential=issuer.sd_jwt_issuance,
        user_key=chain.user_key,
        cart=chain.cart,
        intent=chain.intent,
        aud=chain.kb_audience,
        nonce=chain.nonce,
        now=chain.now - 2,
        disclose=["/email"],
    )
    expectations = chain.expectations()
    report = inspect_chain(
        chain.intent, chain.cart, payment, replay_store=MemoryReplayStore(), **expectations
    )
    assert report.verdict == "OK", [(c.id, c.code, c.detail) for c in report.failures]
    assert report.keys[2].thumbprint == chain.issuer_key.public_key.thumbprint()
    assert report.keys[2].provenance == "trust-root"
    # Under a trust root that pins another key for that issuer, the same credential is refused.
    stranger = KeyPair.generate("p256")
    jwks = {"keys": [{**stranger.public_key.to_jwk(), "kid": builder.ISSUER_KID}]}
    other = chain.trust_root(issuers={builder.ISSUER: {"jwks": jwks}})
    refused = inspect_chain(
        chain.intent,
        chain.cart,
        payment,
        replay_store=MemoryReplayStore(),
        **{**expectations, "trust_root": other},
    )
    assert [check.id for check in refused.failures] == ["issuer.jwt.key"]
    assert refused.by_id("issuer.jwt.key").code == "evidence_key_mismatch"
