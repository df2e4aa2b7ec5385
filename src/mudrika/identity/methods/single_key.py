"""The DID document of an identifier that names exactly one signing key (did:bindu, did:web agents).

Why shared: both methods publish the same shape — one Multikey verification method ``#key-1``
authorised for the four signing relationships, plus optional services — and a second copy of it
would drift (a relationship added in one place and not the other changes what a key may do).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from mudrika.crypto.keys import PublicKey
from mudrika.identity.document import SIGNING_PURPOSES, DIDDocument
from mudrika.identity.methods.key import CONTEXT_DID, CONTEXT_MULTIKEY

__all__ = ["KEY_FRAGMENT", "single_key_document"]

KEY_FRAGMENT: Final = "key-1"


def single_key_document(
    did: str, public_key: PublicKey, *, services: Sequence[Mapping[str, Any]] = ()
) -> DIDDocument:
    """``did``'s document: ``public_key`` as Multikey ``#key-1`` for every signing purpose."""
    method_id = f"{did}#{KEY_FRAGMENT}"
    data: dict[str, Any] = {
        "@context": [CONTEXT_DID, CONTEXT_MULTIKEY],
        "id": did,
        "verificationMethod": [
            {
                "id": method_id,
                "type": "Multikey",
                "controller": did,
                "publicKeyMultibase": public_key.to_multikey(),
            }
        ],
    }
    for purpose in SIGNING_PURPOSES:
        data[purpose] = [method_id]
    if services:
        data["service"] = [dict(service) for service in services]
    return DIDDocument.from_json(data)
