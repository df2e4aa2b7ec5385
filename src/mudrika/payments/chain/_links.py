"""The links between the three mandates: what the intent allows, what the cart asks, what is paid.

These checks run only after all three signatures verified, so every value compared here is one a
party signed: the intent (user), the cart (merchant), the payment contents (user, through
``transaction_data``).

How the merchant's identity is bound (``docs/payments.md`` "Checks"):

* The merchant *is* the DID in ``merchant_authorization``'s ``iss``, proven by the signature and by
  ``kid`` naming a key of that DID authorised for ``assertionMethod``.
* ``PaymentMandateContents.merchant_agent`` must name that merchant: the DID itself, or the cart's
  ``merchant_name`` (which the same DID signed as its own name).
* ``IntentMandate.merchants`` (when given): an entry must be the merchant DID (a cryptographic
  match) or the cart's ``merchant_name`` (a name match, as AP2 v0.1 intents list names).  The
  report says which kind of match held; a user who needs more than the merchant's own word for
  its name lists the DID.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Final

from mudrika.payments._values import format_money
from mudrika.payments.chain._cart import CartFacts
from mudrika.payments.chain._intent import IntentFacts
from mudrika.payments.chain._payment import PaymentFacts
from mudrika.payments.models import (
    CartMandate,
    IntentMandate,
    PaymentMandate,
    Received,
    money_equal,
)
from mudrika.payments.report import Recorder, Texts

__all__ = ["LINK_CHECKS", "check_links"]

LINK_CHECKS: Final = (
    ("chain.payment_details_id", "user"),
    ("chain.request_id", "user"),
    ("chain.total", "user"),
    ("chain.method", "user"),
    ("chain.merchant_agent", "user"),
    ("chain.timestamp.cart", "user"),
    ("chain.timestamp.intent", "user"),
    ("intent.merchants", "merchant"),
    ("intent.skus", "merchant"),
    ("intent.refundability", "merchant"),
    ("intent.cart_confirmation", "merchant"),
    ("intent.signer_is_holder", "user"),
    ("intent.unsigned_members", "user"),
)


def check_links(
    rec: Recorder,
    *,
    intent: Received[IntentMandate],
    intent_facts: IntentFacts,
    cart: Received[CartMandate],
    cart_facts: CartFacts,
    payment: Received[PaymentMandate],
    payment_facts: PaymentFacts,
    leeway: float,
) -> bool:
    """Record every cross-object check; True when all passed."""
    mark = rec.last_not_passed
    intent_model = intent.model
    contents = cart.model.contents
    details = contents.payment_request.details
    paid = payment.model.payment_mandate_contents
    merchant_did = cart_facts.merchant_did

    # Cart <-> payment: the same order, the same total, a method the merchant accepts.
    rec.check(
        "chain.payment_details_id",
        "user",
        paid.payment_details_id == details.id,
        error="binding",
        code="payment_details_id_mismatch",
        expected=details.id,
        got=paid.payment_details_id,
    )
    rec.check(
        "chain.request_id",
        "user",
        paid.payment_response.request_id == details.id,
        error="binding",
        code="request_id_mismatch",
        expected=details.id,
        got=paid.payment_response.request_id,
    )
    cart_total = details.total.amount
    paid_total = paid.payment_details_total.amount
    rec.check_later(
        "chain.total",
        "user",
        money_equal(paid_total, cart_total),
        _amounts_texts,
        cart_total.currency,
        cart_total.value,
        paid_total.currency,
        paid_total.value,
        error="binding",
        code="total_mismatch",
    )
    accepted = tuple(method.supported_methods for method in contents.payment_request.method_data)
    rec.check_later(
        "chain.method",
        "user",
        paid.payment_response.method_name in accepted,
        _one_of_texts,
        accepted,
        paid.payment_response.method_name,
        error="policy",
        code="method_not_accepted",
    )
    rec.check_later(
        "chain.merchant_agent",
        "user",
        paid.merchant_agent in (merchant_did, contents.merchant_name),
        _merchant_agent_texts,
        merchant_did,
        contents.merchant_name,
        paid.merchant_agent,
        error="binding",
        code="merchant_mismatch",
    )
    # Timestamps: the payment was made while the cart and the intent were valid.
    paid_at = paid.timestamp_at.timestamp()
    rec.check_later(
        "chain.timestamp.cart",
        "user",
        paid_at <= contents.cart_expiry_at.timestamp() + leeway,
        _not_after_texts,
        contents.cart_expiry,
        paid.timestamp,
        error="expired",
        code="paid_after_cart_expiry",
    )
    rec.check_later(
        "chain.timestamp.intent",
        "user",
        paid_at <= intent_model.intent_expiry_at.timestamp() + leeway,
        _not_after_texts,
        intent_model.intent_expiry,
        paid.timestamp,
        error="expired",
        code="paid_after_intent_expiry",
    )

    # Intent -> cart: the merchant, the items and the terms the user allowed.
    merchants = intent_model.merchants
    if merchants is None:
        rec.passed("intent.merchants", "merchant", expected="any merchant (no restriction)", got=merchant_did)
    else:
        by = "DID" if merchant_did in merchants else "name" if contents.merchant_name in merchants else None
        rec.check_later(
            "intent.merchants",
            "merchant",
            by is not None,
            _merchants_texts,
            merchants,
            merchant_did,
            contents.merchant_name,
            by,
            error="policy",
            code="merchant_not_allowed",
        )
    skus = intent_model.skus
    if skus is None:
        rec.passed("intent.skus", "merchant", expected="any SKU (no restriction)")
    else:
        outside = [item.sku or "(no sku)" for item in details.display_items if item.sku not in skus]
        rec.check_later(
            "intent.skus",
            "merchant",
            not outside,
            _skus_texts,
            skus,
            outside,
            len(details.display_items),
            error="policy",
            code="sku_not_allowed",
        )
    if intent_model.requires_refundability:
        not_refundable = [item.label for item in details.display_items if item.refund_period <= 0]
        rec.check(
            "intent.refundability",
            "merchant",
            not not_refundable,
            error="policy",
            code="item_not_refundable",
            expected="every item refundable (refund_period > 0)",
            got=("not refundable: " + ", ".join(not_refundable)) if not_refundable else "all refundable",
        )
    else:
        rec.passed("intent.refundability", "merchant", expected="refundability not required")
    confirmation = intent_model.user_cart_confirmation_required
    rec.check_later(
        "intent.cart_confirmation",
        "merchant",
        not confirmation or contents.user_cart_confirmation_required,
        _confirmation_texts,
        confirmation,
        contents.user_cart_confirmation_required,
        error="policy",
        code="confirmation_waived",
    )
    # The person who signed the intent is the person who authorised the payment.
    signer = intent_facts.signer
    if signer is not None:
        rec.check(
            "intent.signer_is_holder",
            "user",
            signer.key == payment_facts.holder_key,
            error="binding",
            code="intent_signer_not_holder",
            expected=payment_facts.holder_thumbprint,
            got="the key of " + signer.kid,
            key=signer.kid,
        )
    else:
        rec.passed(
            "intent.signer_is_holder",
            "user",
            expected="not applicable: unsigned intent, the user confirmed the cart in the payment mandate",
        )
    # No member of the intent may be covered by no signature: the intent JWS covers every member but
    # itself, and the user's key-binding JWT covers the whole intent (H(IntentMandate)).  Only an
    # unsigned intent in a legacy chain has members nobody signed.
    covered_by = [
        name
        for name, covers in (
            ("the intent JWS", signer is not None),
            ("the key-binding JWT", payment_facts.intent_bound),
        )
        if covers
    ]
    rec.check(
        "intent.unsigned_members",
        "user",
        bool(covered_by),
        error="binding",
        code="unsigned_member",
        expected="every intent member covered by the intent JWS or the key-binding JWT",
        got=("covered by " + " and ".join(covered_by))
        if covered_by
        else "unsigned intent in a legacy chain: no signature covers any of its members",
    )
    return rec.last_not_passed == mark


# The texts of the link checks, formatted only when a report is drawn (or the check failed).
def _amounts_texts(currency: str, value: Decimal, paid_currency: str, paid_value: Decimal) -> Texts:
    return format_money(currency, value), format_money(paid_currency, paid_value)


def _one_of_texts(accepted: tuple[str, ...], got: str) -> Texts:
    return "one of: " + ", ".join(accepted), got


def _merchant_agent_texts(merchant_did: str, merchant_name: str, got: str) -> Texts:
    return f"{merchant_did} or {merchant_name}", got


def _merchants_texts(merchants: list[str], merchant_did: str, merchant_name: str, by: str | None) -> Texts:
    return "one of: " + ", ".join(merchants), f"{merchant_did} ({merchant_name})" + (
        f", matched by {by}" if by else ""
    )


def _skus_texts(skus: list[str], outside: list[str], items: int) -> Texts:
    return "every item in: " + ", ".join(skus), (
        ("not allowed: " + ", ".join(outside)) if outside else f"{items} items allowed"
    )


def _confirmation_texts(intent_requires: bool, cart_requires: bool) -> Texts:
    return (
        "cart keeps user_cart_confirmation_required=true" if intent_requires else "not required",
        f"cart user_cart_confirmation_required={str(cart_requires).lower()}",
    )


def _not_after_texts(deadline: str, got: str) -> Texts:
    return f"not after {deadline}", got
