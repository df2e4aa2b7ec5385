"""Shared pieces of the RFC 9421 (HTTP message signature) tests: the fixed time and origin, did:key
identities for generated keys, and signed request headers."""

from __future__ import annotations

from mudrika.crypto.keys import KeyPair
from mudrika.identity.document import DIDDocument
from mudrika.trust.httpsig import HttpMessageSigner

__all__ = ["HEADERS", "NOW", "ORIGIN", "did_key", "did_key_document", "sign_request"]

NOW = 1_800_000_000.0
"""The signers' and verifiers' clock in unit and attack tests."""
ORIGIN = "https://agent.example"
"""The one origin the verifiers under test accept."""
HEADERS = {"Content-Type": "application/json"}
"""The unsigned headers of every test request."""


def did_key(key: KeyPair) -> tuple[str, str]:
    """The ``did:key`` DID of ``key`` and its verification-method id (the signature ``keyid``)."""
    multikey = key.public_key.to_multikey()
    did = f"did:key:{multikey}"
    return did, f"{did}#{multikey}"


def did_key_document(key: KeyPair, relationship: str) -> DIDDocument:
    """A DID document for ``key``'s ``did:key`` whose one Multikey method is listed under
    ``relationship`` only (``authentication``, ``assertionMethod``...)."""
    did, keyid = did_key(key)
    return DIDDocument.from_json(
        {
            "@context": ["https://www.w3.org/ns/did/v1"],
            "id": did,
            "verificationMethod": [
                {
                    "id": keyid,
                    "type": "Multikey",
                    "controller": did,
                    "publicKeyMultibase": key.public_key.to_multikey(),
                }
            ],
            relationship: [keyid],
        }
    )


def sign_request(signer: HttpMessageSigner, method: str, url: str, body: bytes) -> dict[str, str]:
    """:data:`HEADERS` plus the ``Content-Digest``, ``Signature-Input`` and ``Signature`` headers."""
    return {**HEADERS, **signer.sign(method, url, HEADERS, body).as_dict()}
