"""did:jwk: the two examples printed in the spec, purposes by ``use``, and what must be refused.

The examples are transcribed from the did:jwk Method Specification (github.com/quartzjer/did-jwk,
``spec.md``, section "Examples": "P-256" and "X25519").  The spec's P-256 example document has a typo:
its ``authentication`` entry reads ``did:jwk:$eyJjcnYiOi...#0`` (a stray ``$`` left over from the
``${base64url-value}`` template), which is not the DID; we test the corrected value, i.e. the same
``#0`` reference the other relationships use.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair, PublicKey
from mudrika.errors import InvalidInput
from mudrika.identity._x25519 import X25519PublicKey
from mudrika.identity.document import PURPOSES, DIDDocument
from mudrika.identity.methods import jwk as did_jwk

# did:jwk spec, "Examples" → "P-256" → "DID" and the publicKeyJwk of its "DID Document".
SPEC_P256_DID = (
    "did:jwk:eyJjcnYiOiJQLTI1NiIsImt0eSI6IkVDIiwieCI6ImFjYklRaXVNczNpOF91c3pFakoydHBUdFJNNEVVM3l6OTFQSDZDZE"
    "gyVjAiLCJ5IjoiX0tjeUxqOXZXTXB0bm1LdG00NkdxRHo4d2Y3NEk1TEtncmwyR3pIM25TRSJ9"
)
SPEC_P256_JWK = {
    "crv": "P-256",
    "kty": "EC",
    "x": "acbIQiuMs3i8_uszEjJ2tpTtRM4EU3yz91PH6CdH2V0",
    "y": "_KcyLj9vWMptnmKtm46GqDz8wf74I5LKgrl2GzH3nSE",
}
# did:jwk spec, "Examples" → "X25519" → "DID" and the publicKeyJwk of its "DID Document".
SPEC_X25519_DID = (
    "did:jwk:eyJrdHkiOiJPS1AiLCJjcnYiOiJYMjU1MTkiLCJ1c2UiOiJlbmMiLCJ4IjoiM3A3YmZYdDl3YlRUVzJIQzdPUTFOei1EUThoYmV"
    "HZE5yZngtRkctSUswOCJ9"
)
SPEC_X25519_JWK = {
    "kty": "OKP",
    "crv": "X25519",
    "use": "enc",
    "x": "3p7bfXt9wbTTW2HC7OQ1Nz-DQ8hbeGdNrfx-FG-IK08",
}


def _expected_document(did: str, jwk: dict[str, Any], purposes: tuple[str, ...]) -> dict[str, Any]:
    """The document template of the spec ("To create the DID Document"), filled in."""
    doc: dict[str, Any] = {
        "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/jws-2020/v1"],
        "id": did,
        "verificationMethod": [
            {"id": f"{did}#0", "type": "JsonWebKey2020", "controller": did, "publicKeyJwk": jwk}
        ],
    }
    for purpose in purposes:
        doc[purpose] = [f"{did}#0"]
    return doc


def test_spec_p256_example() -> None:
    key = PublicKey.from_jwk(SPEC_P256_JWK)
    assert did_jwk.create(key) == SPEC_P256_DID  # the example's JSON is canonical (sorted, compact)
    doc = did_jwk.document(SPEC_P256_DID)
    # Corrected "authentication" entry: "did:jwk:<value>#0", not "did:jwk:$<value>#0".
    assert doc.to_json() == _expected_document(SPEC_P256_DID, SPEC_P256_JWK, PURPOSES)
    assert doc.key_for("#0", "authentication") == key
    assert doc.key_for(f"{SPEC_P256_DID}#0", "keyAgreement") == key


def test_spec_x25519_example() -> None:
    assert did_jwk.create_from_jwk(SPEC_X25519_JWK) == SPEC_X25519_DID  # member order as printed
    doc = did_jwk.document(SPEC_X25519_DID)
    assert doc.to_json() == _expected_document(SPEC_X25519_DID, SPEC_X25519_JWK, ("keyAgreement",))
    key = doc.key_for("#0", "keyAgreement")
    assert isinstance(key, X25519PublicKey)
    assert did_jwk.create(key, use="enc") != SPEC_X25519_DID  # canonical order differs from the example
    assert did_jwk.document(did_jwk.create(key, use="enc")).key_for("#0", "keyAgreement") == key


@pytest.mark.parametrize("kind", ["ed25519", "p256", "secp256k1", "rsa"])
def test_round_trip_for_every_key_type(kind: str) -> None:
    public = KeyPair.generate(kind).public_key
    did = did_jwk.create(public)
    value = did.removeprefix("did:jwk:")
    decoded = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    assert decoded == public.to_jwk()
    assert list(decoded) == sorted(decoded)
    doc = did_jwk.document(did)
    assert DIDDocument.from_json(doc.to_json()) == doc  # the driver's fast path equals full validation
    for purpose in ("authentication", "assertionMethod", "capabilityInvocation", "capabilityDelegation"):
        assert doc.key_for("#0", purpose) == public
    # An Ed25519 key cannot do ECDH, so it never appears under keyAgreement.
    assert doc.authorised("keyAgreement") == (() if kind == "ed25519" else (f"{did}#0",))


def test_use_sig_and_use_enc_select_relationships() -> None:
    public = KeyPair.generate("p256").public_key
    signing = did_jwk.document(did_jwk.create(public, use="sig"))
    assert signing.authorised("keyAgreement") == ()
    assert signing.authorised("assertionMethod") != ()
    encrypting = did_jwk.document(did_jwk.create(public, use="enc"))
    assert [p for p in PURPOSES if encrypting.authorised(p)] == ["keyAgreement"]


def test_kid_and_custom_members_are_kept_but_the_fragment_is_always_0() -> None:
    jwk = {**KeyPair.generate("ed25519").public_key.to_jwk(), "kid": "my-key", "x-custom": "kept"}
    did = did_jwk.create_from_jwk(jwk)
    doc = did_jwk.document(did)
    method = doc.to_json()["verificationMethod"][0]
    assert method["id"] == f"{did}#0"
    assert method["publicKeyJwk"] == jwk


def _did_from_text(text: str) -> str:
    return "did:jwk:" + base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


@pytest.mark.parametrize(
    ("did", "code"),
    [
        ("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", "invalidDid"),
        ("did:jwk:eyJ=", "bad_method_specific_id"),  # the DID parser already refuses '='
        ("did:jwk:e", "invalidDid"),
        (_did_from_text("not json"), "invalidDid"),
        (_did_from_text("[1, 2]"), "invalidDid"),
        (
            _did_from_text('{"kty": "OKP", "kty": "EC"}'),
            "invalidDid",
        ),  # duplicate member (reason duplicate_key)
        (_did_from_text('{"kty": "oct", "k": "AAAA"}'), "private_jwk"),
        (_did_from_text('{"kty": "RSA", "n": "AQAB", "e": "AQAB"}'), "weak_key"),
        (_did_from_text('{"kty": "OKP", "crv": "X25519", "use": "sig", "x": "' + "A" * 43 + '"}'), "bad_jwk"),
        (_did_from_text('{"kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"}'), "unsupported_key"),
    ],
)
def test_invalid_did_jwks_are_refused(did: str, code: str) -> None:
    with pytest.raises(InvalidInput) as info:
        did_jwk.document(did)
    assert info.value.code == code


def test_private_keys_use_and_alg_are_checked() -> None:
    pair = KeyPair.generate("ed25519")
    with pytest.raises(InvalidInput) as info:
        did_jwk.create_from_jwk(pair.private_jwk())
    assert info.value.code == "private_jwk"
    public = pair.public_key.to_jwk()
    with pytest.raises(InvalidInput) as info:
        did_jwk.create_from_jwk({**public, "use": "enc"})
    assert info.value.code == "bad_jwk"
    with pytest.raises(InvalidInput) as info:
        did_jwk.create_from_jwk({**public, "use": "wrap"})
    assert info.value.code == "bad_jwk"
    with pytest.raises(InvalidInput) as info:
        did_jwk.create_from_jwk({**public, "alg": "ES256"})
    assert info.value.code == "bad_jwk"
    assert did_jwk.document(did_jwk.create_from_jwk({**public, "alg": "EdDSA"})).key_for(
        "#0", "authentication"
    )
