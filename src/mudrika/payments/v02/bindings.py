"""The bindings between the mandates of a v0.2 transaction, checked from the evidence itself.

Why each check exists (AP2 v0.2 ``specification.md`` "Verification", ``agent_authorization.md``
"Verification and Processing Rules"; the SDK issue each closes is in docs/ap2-v02.md):

* ``checkout_hash`` is **recomputed** from the presented ``checkout_jwt`` string (specification,
  Dispute: "MUST be independently computed") — never taken from a caller or from the mandate;
* the ``checkout_jwt`` is **verified** as the merchant's JWS, with the merchant's key from the trust
  root (the Checkout object names the merchant; its ``id`` must be a pinned merchant DID);
* a closed mandate repeats **every value its open mandates pre-set** (rule 2);
* a closed payment's ``transaction_id`` equals that recomputed checkout hash, its payee is the
  checkout's merchant and its amount is the checkout's total, and its open mandate carries a
  ``payment.reference`` (schema ``contains``) — always, not when a caller thinks to ask.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mudrika.crypto.b64url import b64url_decode
from mudrika.crypto.jcs import canonicalize, loads_strict
from mudrika.crypto.jose import header_kid, parse_unverified_header, verify_compact
from mudrika.errors import BindingError, InvalidInput, UntrustedKeyError, VerificationError
from mudrika.payments._values import format_minor_units, parse_timestamp
from mudrika.payments.trustroot import AnchoredKey, TrustRoot
from mudrika.payments.v02.hops import VerifiedToken
from mudrika.payments.v02.models import Checkout, CheckoutMandate, PaymentMandate, parse_model
from mudrika.payments.v02.profile import CHECKOUT_JWT_ALGORITHMS
from mudrika.payments.v02.wire import sd_digest

__all__ = [
    "VerifiedCheckoutJwt",
    "check_checkout_hash",
    "check_payment_amount",
    "check_payment_payee",
    "check_preset_values",
    "check_reference_present",
    "check_transaction_id",
    "merchant_anchor",
    "read_checkout",
    "verify_checkout_jwt",
]

#: Members of an open mandate that describe the mandate itself rather than pre-set closed values.
_NOT_PRESET = frozenset({"vct", "constraints", "cnf", "iat", "exp", "nbf"})
_MAX_CHECKOUT_JWT = 128 * 1024


@dataclass(frozen=True, slots=True)
class VerifiedCheckoutJwt:
    """The merchant-signed checkout: its parsed Checkout, its hash and the key it rests on."""

    checkout: Checkout
    checkout_hash: str
    merchant: str
    key: str
    thumbprint: str
    raw: Mapping[str, Any] = field(repr=False)


def _equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("ascii", "replace"), b.encode("ascii", "replace"))


def check_checkout_hash(closed: CheckoutMandate) -> str:
    """``checkout_hash`` == base64url(SHA-256(``checkout_jwt``)), recomputed here; returns the hash."""
    computed = sd_digest(closed.checkout_jwt) if closed.checkout_jwt.isascii() else ""
    if not computed or not _equal(computed, closed.checkout_hash):
        raise BindingError(
            "checkout_hash is not the hash of the presented checkout_jwt",
            code="checkout_hash_mismatch",
            expected=computed or "(checkout_jwt is not ASCII)",
            got=closed.checkout_hash,
        )
    return computed


def read_checkout(checkout_jwt: str) -> Checkout:
    """The Checkout the ``checkout_jwt`` *says*, without verifying the merchant's signature.

    For the report only: when the signature did not verify, the payee, amount and constraint checks
    are still evaluated against what the merchant's JWT carries, so a person sees every value beside
    the signature failure (the verdict is FAILED by then).  Never a substitute for
    :func:`verify_checkout_jwt`."""
    segments = checkout_jwt.split(".")
    if len(segments) != 3:
        raise InvalidInput("the checkout JWT is not a compact JWS", code="malformed_checkout")
    return parse_model(Checkout, _payload(segments[1]), what="checkout")


def merchant_anchor(checkout_jwt: str, *, trust_root: TrustRoot) -> AnchoredKey:
    """The pinned key of the merchant the Checkout names, chosen by the JWT's ``kid`` under the one
    anchoring rule; raises ``UntrustedKeyError`` (``untrusted_merchant``, ``*_refused``, the rule's
    codes) or ``InvalidInput`` (``checkout_without_merchant``)."""
    header = parse_unverified_header(checkout_jwt, max_bytes=_MAX_CHECKOUT_JWT)
    for name in ("x5c", "x5u", "jku", "jwk"):
        if name in header:
            raise UntrustedKeyError("merchant keys come only from the trust root", code=f"{name}_refused")
    kid = header_kid(header, what="the checkout JWT")
    unverified = _payload(checkout_jwt.split(".")[1])
    merchant = unverified.get("merchant")
    merchant_id = merchant.get("id") if isinstance(merchant, dict) else None
    if not isinstance(merchant_id, str) or not merchant_id:
        raise InvalidInput("the checkout names no merchant id", code="checkout_without_merchant")
    if not trust_root.pins_merchant(merchant_id):
        raise UntrustedKeyError(
            "the checkout's merchant is not pinned in the trust root",
            code="untrusted_merchant",
            got=merchant_id[:200],
        )
    return trust_root.anchor(
        "merchant", merchant_id, kid, algorithms=trust_root.algorithm_set & CHECKOUT_JWT_ALGORITHMS
    )


def verify_checkout_jwt(
    checkout_jwt: str, *, trust_root: TrustRoot, closed_at: int | None
) -> VerifiedCheckoutJwt:
    """Verify the merchant's signature on ``checkout_jwt`` with the trust root's key for the merchant
    the Checkout names, and parse the Checkout (UCP).  ``closed_at`` (the closing hop's ``iat``) must
    not be after the checkout's ``expires_at``.

    A building block of :func:`~mudrika.payments.v02.verify_v02`, which also judges the merchant key's
    pinned window (``v02.checkout.merchant_key_window``); this alone judges no window, so it is no
    verdict."""
    anchor = merchant_anchor(checkout_jwt, trust_root=trust_root)
    merchant_id = anchor.owner
    verified = verify_compact(checkout_jwt, key=anchor.trusted, max_bytes=_MAX_CHECKOUT_JWT)
    raw = _payload_bytes(verified.payload)
    checkout = parse_model(Checkout, raw, what="checkout")
    if checkout.merchant.id != merchant_id:  # pragma: no cover - same signed bytes as read above
        raise BindingError("checkout merchant changed", code="checkout_merchant_mismatch")
    _ = checkout.total  # raises bad_checkout_totals unless the checkout has exactly one total
    _check_checkout_times(raw, closed_at=closed_at, leeway=trust_root.leeway_seconds)
    return VerifiedCheckoutJwt(
        checkout=checkout,
        checkout_hash=sd_digest(checkout_jwt),
        merchant=merchant_id,
        key=anchor.kid,
        thumbprint=anchor.key.thumbprint(),
        raw=raw,
    )


def _check_checkout_times(raw: Mapping[str, Any], *, closed_at: int | None, leeway: float) -> None:
    """The checkout's time claims, judged at the moment the closing hop says the mandate closed it:
    signed before (``iat``), valid then (``nbf``, ``exp``, UCP ``expires_at``)."""
    for claim in ("iat", "nbf", "exp"):
        value = raw.get(claim)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidInput(f"checkout '{claim}' must be an integer", code="bad_time_claim")
    if closed_at is None:
        raise VerificationError("the closing hop has no iat to judge the checkout at", code="iat_missing")
    if isinstance(raw.get("iat"), int) and raw["iat"] > closed_at + leeway:
        raise VerificationError(
            "the checkout was signed after the mandate closed it", code="checkout_after_mandate"
        )
    if isinstance(raw.get("nbf"), int) and closed_at + leeway < raw["nbf"]:
        raise VerificationError(
            "the checkout was not yet valid when the mandate closed it", code="not_yet_valid"
        )
    if isinstance(raw.get("exp"), int) and closed_at >= raw["exp"] + leeway:
        raise VerificationError("the checkout expired before the mandate closed it", code="checkout_expired")
    expires_at = raw.get("expires_at")
    if expires_at is not None and closed_at > _timestamp(expires_at) + leeway:
        raise VerificationError("the checkout expired before the mandate closed it", code="checkout_expired")


def _payload(segment: str) -> Mapping[str, Any]:
    return _payload_bytes(b64url_decode(segment, max_len=_MAX_CHECKOUT_JWT))


def _payload_bytes(data: bytes) -> Mapping[str, Any]:
    value = loads_strict(data, max_bytes=_MAX_CHECKOUT_JWT)
    if not isinstance(value, dict):
        raise InvalidInput("checkout payload is not a JSON object", code="malformed_checkout")
    return value


def _timestamp(value: object) -> float:
    """An RFC 3339 date-time with an offset (``Z`` or ``±hh:mm``) as a UNIX time.

    Parsed by the payments wing's one timestamp parser (length cap, offset required); only the
    error code is this module's, so a checkout's bad ``expires_at`` reads as ``bad_datetime``.
    """
    if not isinstance(value, str):
        raise InvalidInput("a date-time must be an RFC 3339 string", code="bad_datetime")
    try:
        return parse_timestamp(value).timestamp()
    except InvalidInput as exc:
        raise InvalidInput(exc.message, code="bad_datetime") from None


def _content(token: VerifiedToken) -> Mapping[str, Any]:
    """A token's mandate content; a token whose content could not be read is refused explicitly
    (the verifier does not ask, but a caller of these public checks might)."""
    if token.content is None:
        raise InvalidInput("the token's mandate could not be read", code="mandate_unreadable")
    return token.content


def check_preset_values(opens: Sequence[VerifiedToken], closed: VerifiedToken) -> None:
    """Rule 2: every value an open mandate pre-set appears unchanged (same RFC 8785 bytes) in the
    closed mandate."""
    closed_content = _content(closed)
    for token in opens:
        for name, value in _content(token).items():
            if name in _NOT_PRESET:
                continue
            if name not in closed_content:
                raise BindingError(
                    "the closed mandate drops a value its open mandate pre-set",
                    code="preset_missing",
                    expected=name,
                    got="(absent)",
                )
            if canonicalize(closed_content[name]) != canonicalize(value):
                raise BindingError(
                    "the closed mandate changes a value its open mandate pre-set",
                    code="preset_changed",
                    expected=name,
                    got=name,
                )


def check_reference_present(opens: Sequence[VerifiedToken], constraint_type: str) -> None:
    """The schema's ``contains``: the open mandates carry at least one ``constraint_type`` constraint."""
    for token in opens:
        constraints = _content(token).get("constraints")
        if isinstance(constraints, list) and any(
            isinstance(item, dict) and item.get("type") == constraint_type for item in constraints
        ):
            return
    raise BindingError(
        f"the open mandate carries no {constraint_type} constraint",
        code="required_constraint_missing",
        expected=constraint_type,
    )


def check_transaction_id(payment: PaymentMandate, checkout_hash: str) -> None:
    """The closed payment's ``transaction_id`` is the recomputed hash of the checkout JWT."""
    if not _equal(payment.transaction_id, checkout_hash):
        raise BindingError(
            "transaction_id is not the hash of the checkout JWT",
            code="transaction_id_mismatch",
            expected=checkout_hash,
            got=payment.transaction_id,
        )


def check_payment_amount(payment: PaymentMandate, checkout: Checkout) -> None:
    """The payment pays the checkout's total, in the checkout's currency (exact integers)."""
    total = checkout.total
    paid = payment.payment_amount
    if paid.currency != checkout.currency or paid.amount != total.amount:
        raise BindingError(
            "the payment amount is not the checkout total",
            code="amount_mismatch",
            expected=format_minor_units(checkout.currency, total.amount),
            got=format_minor_units(paid.currency, paid.amount),
        )


def check_payment_payee(payment: PaymentMandate, checkout: Checkout) -> None:
    """The payee is the merchant whose checkout is being paid."""
    if payment.payee.id != checkout.merchant.id:
        raise BindingError(
            "the payee is not the checkout's merchant",
            code="payee_mismatch",
            expected=checkout.merchant.id,
            got=payment.payee.id,
        )
