"""W3C Data Integrity proofs with the ``eddsa-jcs-2022`` cryptosuite (VC Data Integrity EdDSA
Cryptosuites v1.0 §3.3): what did:webvh log entries and witness approvals are signed with.

The suite, step by step (§3.3.1-§3.3.6):

1. the proof configuration is the proof object without ``proofValue``; ``type`` must be
   ``DataIntegrityProof`` and ``cryptosuite`` ``eddsa-jcs-2022`` (§3.3.5);
2. the document is canonicalised with RFC 8785 JCS *without* its ``proof`` (§3.3.3), the
   configuration likewise (§3.3.5);
3. hash data = SHA-256(canonical configuration) || SHA-256(canonical document) (§3.3.4);
4. the signature is Ed25519 over the hash data; ``proofValue`` is multibase base58btc (``z``).

Why here, on the crypto floor: it is a signature format like JWS, needed by identity (did:webvh)
and reusable by anything that verifies Data Integrity proofs.  Only Ed25519 verification keys are
accepted: the suite names the algorithm, so a P-256 Multikey is refused before any check runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from mudrika.crypto.jcs import canonicalize
from mudrika.crypto.keys import KeyPair, KeyType, PublicKey
from mudrika.crypto.multibase import base58btc_decode, base58btc_encode
from mudrika.errors import InvalidInput, SignatureError

__all__ = ["CRYPTOSUITE", "PROOF_TYPE", "did_key_of_proof", "sign_eddsa_jcs_2022", "verify_eddsa_jcs_2022"]

CRYPTOSUITE: Final = "eddsa-jcs-2022"
PROOF_TYPE: Final = "DataIntegrityProof"
_MAX_PROOF_VALUE: Final = 200


def _hash_data(document: Mapping[str, Any], options: Mapping[str, Any]) -> bytes:
    unsecured = {name: value for name, value in document.items() if name != "proof"}
    return (
        hashlib.sha256(canonicalize(dict(options))).digest()
        + hashlib.sha256(canonicalize(unsecured)).digest()
    )


def sign_eddsa_jcs_2022(
    document: Mapping[str, Any],
    key: KeyPair,
    *,
    verification_method: str,
    proof_purpose: str = "assertionMethod",
    created: datetime | None = None,
) -> dict[str, Any]:
    """A proof object over ``document`` (its own ``proof`` member, if any, is not covered)."""
    if key.key_type is not KeyType.ED25519:
        raise InvalidInput("eddsa-jcs-2022 signs with Ed25519 keys only", code="bad_key_type")
    moment = (created or datetime.now(UTC)).astimezone(UTC)  # written to the second, below
    options: dict[str, Any] = {
        "type": PROOF_TYPE,
        "cryptosuite": CRYPTOSUITE,
        "verificationMethod": verification_method,
        "created": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "proofPurpose": proof_purpose,
    }
    signature = key.sign(_hash_data(document, options), "EdDSA")
    return {**options, "proofValue": "z" + base58btc_encode(signature)}


def did_key_of_proof(proof: Mapping[str, Any]) -> str:
    """The Multikey of a proof whose ``verificationMethod`` is ``did:key:<mk>#<mk>`` (the form
    did:webvh requires for update keys and witnesses), or InvalidInput ``bad_proof``."""
    method = proof.get("verificationMethod")
    if not isinstance(method, str) or not method.startswith("did:key:") or "#" not in method:
        raise InvalidInput("proof verificationMethod is not a did:key URL", code="bad_proof")
    did, _, fragment = method.partition("#")
    multikey = did.removeprefix("did:key:")
    if fragment != multikey or not multikey.startswith("z"):
        raise InvalidInput("proof verificationMethod fragment must repeat the did:key", code="bad_proof")
    return multikey


def verify_eddsa_jcs_2022(
    document: Mapping[str, Any],
    proof: Mapping[str, Any],
    *,
    key: PublicKey,
    proof_purpose: str,
) -> None:
    """Verify one ``eddsa-jcs-2022`` proof over ``document`` with ``key`` (the verifier chose it),
    or raise SignatureError ``bad_signature`` / InvalidInput ``bad_proof``."""
    if not isinstance(proof, Mapping):
        raise InvalidInput("a proof is a JSON object", code="bad_proof")
    if proof.get("type") != PROOF_TYPE or proof.get("cryptosuite") != CRYPTOSUITE:
        raise InvalidInput("not an eddsa-jcs-2022 Data Integrity proof", code="bad_proof")
    if proof.get("proofPurpose") != proof_purpose:
        raise InvalidInput("proof made for another purpose", code="bad_proof", expected=proof_purpose)
    if key.key_type is not KeyType.ED25519:
        raise SignatureError("eddsa-jcs-2022 verifies with Ed25519 keys only", code="bad_signature")
    value = proof.get("proofValue")
    if not isinstance(value, str) or not value.startswith("z") or len(value) > _MAX_PROOF_VALUE:
        raise InvalidInput("proofValue must be multibase base58btc", code="bad_proof")
    try:
        signature = base58btc_decode(value[1:])
    except InvalidInput:
        raise InvalidInput("proofValue must be multibase base58btc", code="bad_proof") from None
    options = {name: item for name, item in proof.items() if name != "proofValue"}
    key.verify(signature, _hash_data(document, options), "EdDSA")
