"""``eddsa-jcs-2022`` Data Integrity proofs (VC Data Integrity EdDSA Cryptosuites v1.0 §3.3), the
signatures did:webvh log entries and witness approvals carry.

The hash data is rebuilt here independently — PyPI ``rfc8785`` for the canonical JSON,
``cryptography`` for Ed25519 — so that a proof mudrika makes is checked against the suite's text,
not against mudrika's own reading of it; then every refusal of the verifier, by what it says.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric import ed25519

from mudrika.crypto.dataintegrity import did_key_of_proof, sign_eddsa_jcs_2022, verify_eddsa_jcs_2022
from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.crypto.multibase import base58btc_decode
from mudrika.errors import InvalidInput, SignatureError

PAIR = KeyPair.generate(KeyType.ED25519)
MULTIKEY = PAIR.public_key.to_multikey()
METHOD = f"did:key:{MULTIKEY}#{MULTIKEY}"
DOCUMENT: dict[str, Any] = {"versionId": "1-QmHash", "state": {"id": "did:webvh:QmScid:shop.example"}}
CREATED = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def _proof(**changes: Any) -> dict[str, Any]:
    proof = sign_eddsa_jcs_2022(DOCUMENT, PAIR, verification_method=METHOD, created=CREATED)
    proof.update(changes)
    return proof


def _verify(proof: Any, document: dict[str, Any] = DOCUMENT, **options: Any) -> None:
    settings: dict[str, Any] = {"key": PAIR.public_key, "proof_purpose": "assertionMethod", **options}
    verify_eddsa_jcs_2022(document, proof, **settings)


def test_a_proof_is_the_suites_signature_over_both_hashes() -> None:
    proof = _proof()
    assert {name: value for name, value in proof.items() if name != "proofValue"} == {
        "type": "DataIntegrityProof",
        "cryptosuite": "eddsa-jcs-2022",
        "verificationMethod": METHOD,
        "created": "2025-03-01T12:00:00Z",
        "proofPurpose": "assertionMethod",
    }
    options = {name: value for name, value in proof.items() if name != "proofValue"}
    hash_data = (
        hashlib.sha256(rfc8785.dumps(options)).digest() + hashlib.sha256(rfc8785.dumps(DOCUMENT)).digest()
    )
    assert proof["proofValue"].startswith("z")
    public = ed25519.Ed25519PublicKey.from_public_bytes(PAIR.public_key.raw)
    public.verify(base58btc_decode(proof["proofValue"][1:]), hash_data)
    _verify(proof)


def test_created_is_utc_to_the_second_and_now_unless_given() -> None:
    later = datetime(2025, 3, 1, 13, 0, 0, 987654, tzinfo=timezone(timedelta(hours=1)))
    given = sign_eddsa_jcs_2022(DOCUMENT, PAIR, verification_method=METHOD, created=later)
    assert given["created"] == "2025-03-01T12:00:00Z"
    default = sign_eddsa_jcs_2022(DOCUMENT, PAIR, verification_method=METHOD, proof_purpose="authentication")
    made = datetime.strptime(default["created"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(datetime.now(UTC) - made) < timedelta(minutes=5)
    assert default["proofPurpose"] == "authentication"
    _verify(default, proof_purpose="authentication")


def test_only_ed25519_keys_sign() -> None:
    with pytest.raises(InvalidInput) as caught:
        sign_eddsa_jcs_2022(DOCUMENT, KeyPair.generate(KeyType.P256), verification_method=METHOD)
    assert (caught.value.code, str(caught.value)) == (
        "bad_key_type",
        "eddsa-jcs-2022 signs with Ed25519 keys only",
    )


def test_the_documents_own_proof_is_not_covered_and_everything_else_is() -> None:
    proof = _proof()
    _verify(proof, {**DOCUMENT, "proof": [{"any": "thing"}]})
    for changed in ({**DOCUMENT, "versionId": "2-QmHash"}, {**DOCUMENT, "extra": 1}):
        with pytest.raises(SignatureError) as caught:
            _verify(proof, changed)
        assert caught.value.code == "bad_signature"
    with pytest.raises(SignatureError) as options:
        _verify({**proof, "created": "2025-03-01T12:00:01Z"})
    assert options.value.code == "bad_signature"


@pytest.mark.parametrize(
    ("proof", "message", "fields"),
    [
        ([], "a proof is a JSON object", {}),
        (_proof(type="Ed25519Signature2020"), "not an eddsa-jcs-2022 Data Integrity proof", {}),
        (_proof(cryptosuite="eddsa-rdfc-2022"), "not an eddsa-jcs-2022 Data Integrity proof", {}),
        (
            _proof(proofPurpose="authentication"),
            "proof made for another purpose",
            {"expected": "assertionMethod"},
        ),
        (_proof(proofValue=7), "proofValue must be multibase base58btc", {}),
        (_proof(proofValue="uAAAA"), "proofValue must be multibase base58btc", {}),
        (_proof(proofValue="z" + "2" * 200), "proofValue must be multibase base58btc", {}),
        (_proof(proofValue="z0OIl"), "proofValue must be multibase base58btc", {}),
    ],
    ids=[
        "not-object",
        "type",
        "cryptosuite",
        "purpose",
        "not-text",
        "not-base58btc",
        "201-chars",
        "bad-alphabet",
    ],
)
def test_verifier_refusals(proof: Any, message: str, fields: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput) as caught:
        _verify(proof)
    assert (caught.value.code, str(caught.value), caught.value.fields) == ("bad_proof", message, fields)


def test_a_proof_value_of_200_characters_is_read() -> None:
    with pytest.raises(SignatureError) as caught:
        _verify(_proof(proofValue="z" + "2" * 199))
    assert caught.value.code == "bad_signature"


def test_only_an_ed25519_key_verifies() -> None:
    with pytest.raises(SignatureError) as caught:
        _verify(_proof(), key=KeyPair.generate(KeyType.P256).public_key)
    assert (caught.value.code, str(caught.value)) == (
        "bad_signature",
        "eddsa-jcs-2022 verifies with Ed25519 keys only",
    )


@pytest.mark.parametrize(
    ("method", "message"),
    [
        (None, "proof verificationMethod is not a did:key URL"),
        (f"did:web:shop.example#{MULTIKEY}", "proof verificationMethod is not a did:key URL"),
        (f"did:key:{MULTIKEY}", "proof verificationMethod is not a did:key URL"),
        (f"did:key:{MULTIKEY}#key-1", "proof verificationMethod fragment must repeat the did:key"),
        ("did:key:u123#u123", "proof verificationMethod fragment must repeat the did:key"),
    ],
    ids=["absent", "did-web", "no-fragment", "other-fragment", "not-base58btc"],
)
def test_the_signer_is_a_did_key_url_repeating_its_key(method: str | None, message: str) -> None:
    proof = {} if method is None else {"verificationMethod": method}
    with pytest.raises(InvalidInput) as caught:
        did_key_of_proof(proof)
    assert (caught.value.code, str(caught.value)) == ("bad_proof", message)
    assert did_key_of_proof(_proof()) == MULTIKEY
