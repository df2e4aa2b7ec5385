"""Step 1 of the demo: three parties get keys, DIDs, DID documents and CSRs; the analyst writes a trust root.

Why three DID methods: each party uses the method that fits its job.  The shopping agent signs HTTP
requests with a self-certifying ``did:key`` (nothing to publish); the merchant has a ``did:web``
document whose copy the analyst pins; the credential issuer is a self-certifying ``did:bindu`` agent
whose document the analyst pins too.  The merchant's server and the analyst never learn a key from
the messages they receive: the policy file and the trust root name every key they trust.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.crypto.keystore import load_private_key, write_file_atomic
from mudrika.identity.provision import ProvisionResult, provision
from mudrika.payments.profile import PAYMENT_CREDENTIAL_VCT
from mudrika.payments.trustroot import TrustRoot, parse_trust_root
from mudrika.payments.v02 import VCT_CHECKOUT_OPEN, VCT_PAYMENT_OPEN

__all__ = [
    "MERCHANT_HOST",
    "MERCHANT_NAME",
    "PASSWORD_FILE",
    "Party",
    "Provisioned",
    "iso",
    "kid_of",
    "provision_parties",
]

MERCHANT_NAME: Final = "Demo Outfitters"
MERCHANT_HOST: Final = "merchant.demo.example"
ISSUER_AUTHOR: Final = "issuer@demo.example"
PASSWORD_FILE: Final = "key-password"  # noqa: S105 - the file name, not a password
"""The demo's key password, in a 0600 file so the printed CLI commands can unlock the keys."""


@dataclass(frozen=True, slots=True)
class Party:
    """One provisioned party: its DID, the key that signs for it, and its files."""

    role: str
    did: str
    kid: str
    key: KeyPair
    document: dict[str, Any]
    directory: Path
    files: dict[str, str]

    def __repr__(self) -> str:  # the key stays out of every repr
        return f"Party(role={self.role!r}, did={self.did!r})"


@dataclass(frozen=True, slots=True)
class Provisioned:
    """Everything step 1 made: the three parties, the trust root (parsed and on disk), the password file."""

    merchant: Party
    shopper: Party
    issuer: Party
    trust_root: TrustRoot
    trust_root_path: Path
    password_file: Path


def iso(epoch: float) -> str:
    """An RFC 3339 UTC timestamp with a ``Z`` (what AP2 mandates and bundles carry)."""
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


def kid_of(document: dict[str, Any]) -> str:
    """The id of the document's first assertionMethod (the key that signs mandates and credentials)."""
    first = document["assertionMethod"][0]
    return first if isinstance(first, str) else str(first["id"])


def _party(role: str, result: ProvisionResult, password: bytes) -> Party:
    document = dict(result.identity.did_document)
    return Party(
        role=role,
        did=result.identity.did,
        kid=kid_of(document),
        key=load_private_key(result.files["private_key"], password),
        document=document,
        directory=result.files["private_key"].parent,
        files={name: str(path) for name, path in result.files.items()},
    )


def trust_root_document(
    *, merchant: Party, issuer: Party, merchant_audience: str, kb_audience: str
) -> dict[str, Any]:
    """The analyst's trust root: the issuer and the merchant pinned by the documents step 1 wrote."""
    return {
        "format": "mudrika.trust-root/v1",
        "description": "mudrika demo: the analyst pinned the credential issuer's and the merchant's "
        "DID documents when they were provisioned.",
        "issuers": {
            issuer.did: {
                "did_document": issuer.document,
                "source": f"pinned from {issuer.files['did_document']} at provisioning",
            }
        },
        "merchants": {
            merchant.did: {
                "did_document": merchant.document,
                "source": f"pinned from {merchant.files['did_document']} at provisioning",
            }
        },
        "accepted_vct": [PAYMENT_CREDENTIAL_VCT, VCT_CHECKOUT_OPEN, VCT_PAYMENT_OPEN],
        "algorithms": ["ES256", "EdDSA", "Ed25519"],
        "leeway_seconds": 0,
        "max_age_seconds": {"key_binding": 300},
        "verifier": {"merchant_audience": merchant_audience, "kb_audience": kb_audience},
        "accept_legacy_unbound_intent": False,
    }


def provision_parties(out: Path, *, merchant_endpoint: str) -> Provisioned:
    """Provision the merchant (did:web), the shopping agent (did:key) and the issuer (did:bindu).

    The key password is random and written to a 0600 file (never printed): the CLI commands the
    demo prints read it with ``--password-file``.
    """
    password = secrets.token_urlsafe(24).encode()
    password_file = write_file_atomic(out / PASSWORD_FILE, password, force=False, private_dir=True)
    merchant = _party(
        "merchant",
        provision(
            name="demo-merchant",
            out_dir=out / "merchant",
            password=password,
            key_type=KeyType.P256,  # the v0.2 checkout JWT needs a randomised (ECDSA) signature
            method="web",
            web_host=MERCHANT_HOST,
            endpoint=merchant_endpoint,
        ),
        password,
    )
    shopper = _party(
        "shopping agent",
        provision(
            name="demo-shopper",
            out_dir=out / "shopper",
            password=password,
            key_type=KeyType.P256,  # AP2 v0.2 binds delegate mandates to P-256 keys (cnf.jwk)
            method="key",
        ),
        password,
    )
    issuer = _party(
        "credential issuer",
        provision(
            name="demo-issuer",
            out_dir=out / "issuer",
            password=password,
            method="bindu",
            author=ISSUER_AUTHOR,
        ),
        password,
    )
    document = trust_root_document(
        merchant=merchant, issuer=issuer, merchant_audience=shopper.did, kb_audience=merchant.did
    )
    trust_root = parse_trust_root(document)
    trust_root_path = write_file_atomic(
        out / "analyst" / "trust-root.json",
        (trust_root.to_json() + "\n").encode(),
        force=False,
        private_dir=False,
    )
    return Provisioned(
        merchant=merchant,
        shopper=shopper,
        issuer=issuer,
        trust_root=trust_root,
        trust_root_path=trust_root_path,
        password_file=password_file,
    )


def dump(value: Any) -> bytes:
    """Pretty JSON bytes with a final newline (every file the demo writes)."""
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode()
