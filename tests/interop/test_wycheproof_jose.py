"""Wycheproof through crypto/jose.py's verification path (ES256 P1363, ES256K P1363, Ed25519, JWS).

Every invalid vector must be rejected.  Every valid vector whose algorithm mudrika allows must be
accepted.  Valid vectors refused by *policy* (HS*, P-521, JSON serialisation) are listed by name in
``POLICY_REFUSED_GROUPS`` so the refusal is a decision, not an accident.

The primitive files sign raw messages, not JWS signing inputs, so they run through
``PublicKey.verify`` — the exact function ``verify_compact`` calls after its header checks; the JSON Web
Signature file runs through ``verify_compact`` itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from mudrika.crypto.jose import TrustedKey, verify_compact
from mudrika.crypto.keys import PublicKey
from mudrika.errors import InvalidInput, MudrikaError, UntrustedKeyError
from tests._support.paths import vectors


def _primitive_cases(file: str, alg: str) -> Iterator[Any]:
    data = json.loads(vectors("wycheproof", file).read_text())
    for group in data["testGroups"]:
        for case in group["tests"]:
            yield pytest.param(group["publicKeyDer"], alg, case, id=f"{alg}-{case['tcId']}")


PRIMITIVES = [
    ("ecdsa_secp256r1_sha256_p1363_test.json", "ES256"),
    ("ecdsa_secp256k1_sha256_p1363_test.json", "ES256K"),
    ("ed25519_test.json", "EdDSA"),
]


def _all_primitive_cases() -> list[Any]:
    try:
        return [case for file, alg in PRIMITIVES for case in _primitive_cases(file, alg)]
    except pytest.skip.Exception:
        return [pytest.param(None, "", {}, marks=pytest.mark.skip(reason="../shared/vectors not present"))]


@pytest.mark.parametrize(("der", "alg", "case"), _all_primitive_cases())
def test_signature_primitive_vectors(der: str, alg: str, case: dict[str, Any]) -> None:
    msg, sig = bytes.fromhex(case["msg"]), bytes.fromhex(case["sig"])
    accepted = True
    try:
        PublicKey.from_der(bytes.fromhex(der)).verify(sig, msg, alg)
    except MudrikaError:
        accepted = False
    if case["result"] == "valid":
        assert accepted, case["comment"]
    elif case["result"] == "invalid":
        assert not accepted, case["comment"]
    # "acceptable" (none in these files for P1363/Ed25519) would be a policy choice either way.


#: Valid JWS vectors that mudrika refuses by policy, by Wycheproof group comment / test comment.
POLICY_REFUSED_GROUPS = {
    "hs256": "HMAC algorithms are never allowed: mudrika verifies only asymmetric signatures",
    "base64": "HS256 key (HMAC is refused by policy)",
    "rfc7520:oct": "HS256 key (HMAC is refused by policy)",
    "rfc7520:P-521": "ES512/P-521 is outside mudrika's key types",
    "rfc7520WithKeyOps:P-521": "ES512/P-521 is outside mudrika's key types",
}

#: Vectors whose upstream label we disagree with (../shared/vectors/README.md warns of mislabelled JWS
#: cases).  RFC 7520 Figure 20 is signed with PS384, but Wycheproof pairs it with a JWK whose "alg" is
#: PS256 and labels it valid; RFC 7517 §4.4 makes a JWK's "alg" the one algorithm the key is for, so
#: mudrika refuses it.  Keyed by (group comment, tcId).
MISLABELLED = {
    ("rfc7520", 346): "Figure 20 uses PS384 with a key whose JWK alg is PS256",
    ("rfc7520WithKeyOps", 350): "Figure 20 uses PS384 with a key whose JWK alg is PS256",
}


def _group_key(group: dict[str, Any]) -> str:
    key = group.get("public") or group.get("private") or {}
    comment = str(group.get("comment", ""))
    if key.get("kty") == "oct":
        return comment if comment in POLICY_REFUSED_GROUPS else f"{comment}:oct"
    if key.get("crv") == "P-521":
        return f"{comment}:P-521"
    return comment


def _jws_cases() -> list[Any]:
    try:
        data = json.loads(vectors("wycheproof", "json_web_signature_test.json").read_text())
    except pytest.skip.Exception:
        return [pytest.param({}, {}, marks=pytest.mark.skip(reason="../shared/vectors not present"))]
    return [
        pytest.param(group, case, id=f"{group.get('comment')}-{case['tcId']}")
        for group in data["testGroups"]
        for case in group["tests"]
    ]


def _verify_group_case(group: dict[str, Any], case: dict[str, Any]) -> bool:
    jwk = group.get("public") or group.get("private") or {}
    token = case["jws"]
    if not isinstance(token, str):
        return False  # JSON serialisation: mudrika accepts compact JWS only
    try:
        alg = jwk.get("alg") or {"EC": "ES256", "RSA": "RS256"}.get(str(jwk.get("kty")), "none")
        trusted = TrustedKey.from_jwk(jwk, algorithms={alg})
        verify_compact(token, key=trusted)
    except MudrikaError:
        return False
    return True


@pytest.mark.parametrize(("group", "case"), _jws_cases())
def test_json_web_signature_vectors(group: dict[str, Any], case: dict[str, Any]) -> None:
    accepted = _verify_group_case(group, case)
    if case["result"] == "invalid":
        assert not accepted, f"invalid vector accepted: {case['comment']}"
        return
    refused_reason = POLICY_REFUSED_GROUPS.get(_group_key(group))
    if (group.get("comment"), case["tcId"]) in MISLABELLED:
        assert not accepted, "a key's JWK alg must bind it to that one algorithm"
    elif refused_reason is not None:
        assert not accepted, f"policy-refused vector accepted: {case['comment']}"
    elif not isinstance(case["jws"], str):
        assert not accepted, "JSON serialisation must be refused"
    else:
        assert accepted, f"valid vector refused: {case['comment']}"


def test_private_jwk_in_a_public_slot_is_refused() -> None:
    data = json.loads(vectors("wycheproof", "json_web_signature_test.json").read_text())
    private_groups = [g for g in data["testGroups"] if "private" in g and g["private"].get("kty") != "oct"]
    for group in private_groups:
        with pytest.raises((InvalidInput, UntrustedKeyError)):
            TrustedKey.from_jwk(group["private"], algorithms={"ES256", "RS256"})
