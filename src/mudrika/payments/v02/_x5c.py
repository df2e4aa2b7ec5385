"""Root keys carried in an ``x5c`` header, admitted only by RFC 5280 path validation (private).

Why this exists: the official SDK's ``X5cOrKidPublicKeyProvider`` takes the key of any ``x5c``
chain when its caller passes no trusted roots, never checks validity dates or CA constraints, and
decodes the certificates as base64url although RFC 7515 §4.1.6 says base64.  Here an ``x5c`` key
is trusted only when its chain validates (``cryptography.x509.verification``: signatures, validity
at the *signing time*, basic constraints and key usage of the CAs, path length) to one of the CA
certificates the analyst's trust root lists for *that* issuer (``issuers[iss].x509_roots``), and the
leaf is an end-entity certificate allowed to sign (``digitalSignature``, not a CA).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

from cryptography import x509
from cryptography.x509.verification import (
    Criticality,
    ExtensionPolicy,
    PolicyBuilder,
    Store,
    VerificationError,
)

from mudrika.crypto.keys import PublicKey
from mudrika.errors import InvalidInput, UntrustedKeyError

__all__ = ["MAX_X5C_CERTIFICATES", "load_certificates", "validated_x5c_key"]

MAX_X5C_CERTIFICATES: Final = 5
_MAX_CERTIFICATE_BYTES: Final = 16 * 1024


def _certificate(text: object) -> x509.Certificate:
    if not isinstance(text, str) or len(text) > _MAX_CERTIFICATE_BYTES * 2:
        raise InvalidInput("an x5c entry is a base64 DER certificate", code="bad_x5c")
    try:
        return x509.load_der_x509_certificate(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError):
        raise InvalidInput("an x5c entry is a base64 DER certificate", code="bad_x5c") from None


def load_certificates(values: object) -> list[x509.Certificate]:
    """Base64 (not base64url: RFC 7515 §4.1.6) DER certificates, at most :data:`MAX_X5C_CERTIFICATES`."""
    if not isinstance(values, list) or not values or len(values) > MAX_X5C_CERTIFICATES:
        raise InvalidInput("x5c must be a non-empty list of at most 5 certificates", code="bad_x5c")
    return [_certificate(value) for value in values]


def _signing_leaf(_policy: Any, _certificate: Any, usage: x509.KeyUsage) -> None:
    if not usage.digital_signature:
        raise ValueError("the leaf certificate may not sign (no digitalSignature)")


def _not_a_ca(_policy: Any, _certificate: Any, constraints: x509.BasicConstraints | None) -> None:
    if constraints is not None and constraints.ca:
        raise ValueError("a CA certificate cannot be the signer")


def validated_x5c_key(x5c: object, *, roots: Sequence[str], signed_at: float) -> tuple[PublicKey, str]:
    """The leaf's public key after path validation to ``roots`` at ``signed_at``, with a description
    of the path (for the report); ``UntrustedKeyError`` (``x5c_path_invalid``) when it does not hold."""
    chain = load_certificates(x5c)
    anchors = [_certificate(root) for root in roots]
    leaf, intermediates = chain[0], chain[1:]
    ee_policy = (
        ExtensionPolicy.permit_all()
        .require_present(x509.KeyUsage, Criticality.AGNOSTIC, _signing_leaf)
        .may_be_present(x509.BasicConstraints, Criticality.AGNOSTIC, _not_a_ca)
    )
    verifier = (
        PolicyBuilder()
        .store(Store(anchors))
        .time(datetime.fromtimestamp(signed_at, UTC))
        .max_chain_depth(MAX_X5C_CERTIFICATES)
        .extension_policies(ca_policy=ExtensionPolicy.webpki_defaults_ca(), ee_policy=ee_policy)
        .build_client_verifier()
    )
    try:
        verified = verifier.verify(leaf, intermediates)
    except VerificationError as exc:
        raise UntrustedKeyError(
            "the x5c chain does not validate to a root the trust root lists for this issuer",
            code="x5c_path_invalid",
            detail=str(exc)[:200],
        ) from None
    try:
        key = PublicKey.from_cryptography(leaf.public_key())
    except InvalidInput:
        raise UntrustedKeyError(
            "the x5c leaf key is not a supported signing key", code="x5c_path_invalid"
        ) from None
    anchor = verified.chain[-1]
    path = f"x5c leaf {leaf.subject.rfc4514_string()[:80]} -> root {anchor.subject.rfc4514_string()[:80]}"
    return key, path
