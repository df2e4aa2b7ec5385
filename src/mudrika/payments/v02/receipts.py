"""Checkout and Payment Receipts: the verifier-signed JWTs that close a v0.2 transaction.

Why ``reference`` is checked the way it is: the specification says a receipt's ``reference`` "MUST
match the hash of the closed … Mandate. This is calculated in the same manner as the ``sd_hash``
would be" (``specification.md`` "Dispute"), and, for a chain, "a hash over the final SD-JWT in the
chain" (``agent_authorization.md`` "Action Authorization") — i.e. base64url(SHA-256) of the closing
hop *as presented*, ``<hop JWT>~<disclosures>~``.  The official SDK and its samples instead hash the
closing hop's JWT alone (``MandateClient.get_closed_mandate_jwt`` then ``compute_sha256_b64url``).
We follow the specification: the SD-JWT form also commits to the disclosures the verifier saw, so a
receipt cannot be re-pointed at a presentation that revealed different values.  A receipt built the
SDK's way is refused with ``receipt_reference_is_jwt_hash`` so the mismatch is named, not hidden.

The receipt's signer comes from the trust root: a checkout receipt is the merchant's (its ``iss`` is
the checkout's merchant DID, pinned in ``merchants``); a payment receipt's ``iss`` must be a pinned
merchant or trusted issuer of the trust root.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mudrika.crypto.b64url import b64url_decode
from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.jose import header_kid, parse_unverified_header, verify_compact
from mudrika.errors import (
    BindingError,
    InvalidInput,
    PolicyDenied,
    UntrustedKeyError,
)
from mudrika.payments.trustroot import AnchoredKey, TrustRoot
from mudrika.payments.v02.hops import VerifiedToken, check_times
from mudrika.payments.v02.models import CheckoutReceipt, PaymentReceipt, parse_model
from mudrika.payments.v02.profile import RECEIPT_ALGORITHMS
from mudrika.payments.v02.wire import sd_digest

__all__ = [
    "ReceiptKind",
    "VerifiedReceipt",
    "check_receipt_reference",
    "check_receipt_status",
    "receipt_signer",
    "verify_receipt_jwt",
]

ReceiptKind = Literal["checkout", "payment"]
_MAX_RECEIPT = 16 * 1024


@dataclass(frozen=True, slots=True)
class VerifiedReceipt:
    """A receipt whose signature verified under a trust-root key."""

    receipt: CheckoutReceipt | PaymentReceipt
    key: str
    thumbprint: str
    claims: Mapping[str, Any]


def _signer(trust_root: TrustRoot, kind: ReceiptKind, iss: str, kid: str) -> AnchoredKey:
    allowed = trust_root.algorithm_set & RECEIPT_ALGORITHMS
    if trust_root.pins_merchant(iss):
        return trust_root.anchor("merchant", iss, kid, algorithms=allowed)
    if kind == "payment" and trust_root.trusts_issuer(iss):
        return trust_root.anchor("issuer", iss, kid, algorithms=allowed)
    raise UntrustedKeyError("the receipt's issuer is not in the trust root", code="untrusted_receipt_issuer")


def receipt_signer(token: str, *, kind: ReceiptKind, trust_root: TrustRoot) -> AnchoredKey:
    """The trust-root key the receipt's ``iss`` and ``kid`` name (no signature checked): what the
    report lists as the receipt signer's key, and whether it is anchored."""
    header = parse_unverified_header(token, max_bytes=_MAX_RECEIPT)
    kid = header_kid(header, what="the receipt")
    unverified = loads_strict(
        b64url_decode(token.split(".")[1], max_len=_MAX_RECEIPT), max_bytes=_MAX_RECEIPT
    )
    iss = unverified.get("iss") if isinstance(unverified, dict) else None
    if not isinstance(iss, str) or not iss:
        raise InvalidInput("the receipt names no issuer", code="receipt_without_iss")
    return _signer(trust_root, kind, iss, kid)


def verify_receipt_jwt(
    token: str, *, kind: ReceiptKind, trust_root: TrustRoot, expected_issuer: str | None, now: float
) -> VerifiedReceipt:
    """Verify a receipt JWT's signature (trust-root key by ``iss`` and ``kid``), parse it by its schema
    and check ``iat`` (present, not in the future) and ``exp``/``nbf`` when present.

    A building block of :func:`~mudrika.payments.v02.verify_v02`, which also judges the key's pinned
    window (``v02.receipt.<kind>.key_window``); this alone judges no window, so it is no verdict."""
    header = parse_unverified_header(token, max_bytes=_MAX_RECEIPT)
    kid = header_kid(header, what="the receipt")
    unverified = loads_strict(
        b64url_decode(token.split(".")[1], max_len=_MAX_RECEIPT), max_bytes=_MAX_RECEIPT
    )
    iss = unverified.get("iss") if isinstance(unverified, dict) else None
    if not isinstance(iss, str) or not iss:
        raise InvalidInput("the receipt names no issuer", code="receipt_without_iss")
    if expected_issuer is not None and iss != expected_issuer:
        raise BindingError(
            "the receipt is not issued by the expected party",
            code="wrong_receipt_issuer",
            expected=expected_issuer,
            got=iss[:200],
        )
    anchor = _signer(trust_root, kind, iss, kid)
    verified = verify_compact(token, key=anchor.trusted, max_bytes=_MAX_RECEIPT)
    claims = loads_strict(verified.payload, max_bytes=_MAX_RECEIPT)
    model: type[CheckoutReceipt] | type[PaymentReceipt] = (
        CheckoutReceipt if kind == "checkout" else PaymentReceipt
    )
    receipt = parse_model(model, claims, what=f"{kind} receipt")  # refuses anything but an object
    check_times(claims, now=now, leeway=trust_root.leeway_seconds, what="receipt")
    return VerifiedReceipt(receipt=receipt, key=anchor.kid, thumbprint=anchor.key.thumbprint(), claims=claims)


def check_receipt_reference(receipt: CheckoutReceipt | PaymentReceipt, closed: VerifiedToken) -> str:
    """``reference`` == hash of the closing hop as presented (the specification's rule)."""
    expected = closed.sd_hash
    if hmac.compare_digest(receipt.reference.encode("ascii"), expected.encode("ascii")):
        return expected
    if hmac.compare_digest(
        receipt.reference.encode("ascii"), sd_digest(closed.parsed.issuer_jwt).encode("ascii")
    ):
        raise BindingError(
            "the receipt references the closing hop's JWT alone (the SDK's rule), not the closed "
            "mandate as presented (the specification's rule)",
            code="receipt_reference_is_jwt_hash",
            expected=expected,
            got=receipt.reference,
        )
    raise BindingError(
        "the receipt does not reference this closed mandate",
        code="receipt_reference_mismatch",
        expected=expected,
        got=receipt.reference,
    )


def check_receipt_status(receipt: CheckoutReceipt | PaymentReceipt) -> None:
    """A receipt with ``status: Error`` records a refusal: the transaction did not complete."""
    if receipt.status != "Success":
        raise PolicyDenied(
            "the receipt records an error", code="receipt_error", got=(receipt.error or "")[:100]
        )
