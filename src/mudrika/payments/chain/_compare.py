"""What the mandates say, read from them whether or not their signatures held: facts and comparisons.

Why: when a hash fails (``user.kb.transaction_data``: the payment contents changed after the user
signed them), the checks that would show *what* changed (``chain.total``: USD 1384.90 against
USD 138.49) are skipped, because the state machine admits no link after a failed one.  A person
deciding the dispute still needs to see the differing amounts, ids and merchants.  So this module
reads the same values straight from the parsed mandates and compares them, and the report marks
every such comparison as *evidence from unsigned data*: a value here may be exactly the part that
was altered after signing, so it informs the analyst and never changes a verdict.

:func:`chain_facts` gives the verdict paragraph its who/what/how much/when; :func:`compare_values`
gives the differing values.  Both only read models that already passed the strict parser.
"""

from __future__ import annotations

import json
from typing import Any, Final

from mudrika.crypto.b64url import b64url_decode
from mudrika.payments._time import iso
from mudrika.payments._values import format_money, parse_timestamp
from mudrika.payments.models import (
    CartMandate,
    IntentMandate,
    PaymentMandate,
    Received,
    money_equal,
)
from mudrika.payments.report import Comparison

__all__ = ["chain_facts", "compare_values", "user_signed_at"]

_MAX_ITEMS: Final = 8
_SAME_MOMENT: Final = 60.0
"""Seconds within which the payment's ``timestamp`` and the user's ``iat`` are the same moment: a
wallet stamps the payment contents and signs them at once, so only a date moved by more than the
clocks' skew is shown as differing (sub-second fractions and a slow device are not a change)."""
_MAX_KB_BYTES: Final = 16 * 1024


def user_signed_at(payment: Received[PaymentMandate]) -> float | None:
    """The ``iat`` of the user's key-binding JWT, read from the presentation without verifying it.

    The caller passes it on only when the report's ``user.kb.signature`` and ``user.kb.iat`` passed:
    then it is the one time in a changed payment that the user's verified signature still vouches
    for, and the analyst reads the payment's date beside it.  ``None`` when it cannot be read.
    """
    token = payment.raw.get("user_authorization")
    if not isinstance(token, str) or len(token) > _MAX_KB_BYTES * 8:
        return None
    kb_jwt = token.rsplit("~", 1)[-1]
    segments = kb_jwt.split(".")
    if len(segments) != 3 or len(segments[1]) > _MAX_KB_BYTES:
        return None
    try:
        claims = json.loads(b64url_decode(segments[1]))
    except (ValueError, UnicodeDecodeError):
        return None
    iat = claims.get("iat") if isinstance(claims, dict) else None
    if isinstance(iat, bool) or not isinstance(iat, int | float):
        return None
    return float(iat)


def _money(amount: Any) -> str:
    return format_money(amount.currency, amount.value)


def chain_facts(
    intent: Received[IntentMandate] | None,
    cart: Received[CartMandate] | None,
    payment: Received[PaymentMandate] | None,
) -> dict[str, str]:
    """The facts a verdict paragraph quotes, each from the mandate (and so the signature) it rests on.

    Keys: ``merchant_name``, ``cart_id``, ``order_id``, ``items``, ``cart_total``, ``cart_expiry``
    (the merchant's cart); ``paid_total``, ``paid_to``, ``paid_at``, ``payment_id``, ``method``
    (the user's payment contents); ``intent`` (the user's intent description).  A mandate that did
    not parse contributes nothing.
    """
    facts: dict[str, str] = {}
    if intent is not None:
        facts["intent"] = intent.model.natural_language_description
    if cart is not None:
        contents = cart.model.contents
        details = contents.payment_request.details
        labels = [item.label for item in details.display_items[:_MAX_ITEMS]]
        if len(details.display_items) > _MAX_ITEMS:
            labels.append(f"and {len(details.display_items) - _MAX_ITEMS} more")
        facts.update(
            merchant_name=contents.merchant_name,
            cart_id=contents.id,
            order_id=details.id,
            items="; ".join(labels),
            cart_total=_money(details.total.amount),
            cart_expiry=contents.cart_expiry,
        )
    if payment is not None:
        paid = payment.model.payment_mandate_contents
        facts.update(
            paid_total=_money(paid.payment_details_total.amount),
            paid_to=paid.merchant_agent,
            paid_at=paid.timestamp,
            payment_id=paid.payment_mandate_id,
            method=paid.payment_response.method_name,
        )
    return facts


def compare_values(
    intent: Received[IntentMandate] | None,
    cart: Received[CartMandate] | None,
    payment: Received[PaymentMandate] | None,
    *,
    signed_at: float | None = None,
    merchant_did: str | None = None,
) -> tuple[Comparison, ...]:
    """Every value the chain links compare, compared again straight from the parsed mandates.

    Only pairs that *differ* are returned (equal values tell the analyst nothing a passed check
    does not).  Money is compared as exact decimals with the currency, like ``chain.total``.

    ``signed_at`` is the ``iat`` of the user's *verified* key-binding signature (``None`` when it
    did not verify).  The payment's date comes first when it is not that moment: a changed purchase
    date is otherwise a bare hash failure, and the date is what a dispute over *when* turns on.

    ``merchant_did`` is the DID whose verified signature the cart carries (``None`` when the cart
    stage did not pass): a payment naming another DID is then a merchant that differs, as
    ``chain.merchant_agent`` would find; without it, a DID cannot be compared and is not shown.
    """
    found: list[Comparison] = []
    if payment is not None and signed_at is not None:
        stamped = payment.model.payment_mandate_contents.timestamp
        if abs(parse_timestamp(stamped).timestamp() - signed_at) > _SAME_MOMENT:
            found.append(
                Comparison(
                    "payment date",
                    "the payment's date is not the time the user signed it",
                    "payment timestamp (presented)",
                    stamped,
                    "user signed at (iat, user's verified signature)",
                    iso(signed_at),
                )
            )
    if cart is None or payment is None:
        return tuple(found)
    contents = cart.model.contents
    details = contents.payment_request.details
    paid = payment.model.payment_mandate_contents

    def differ(name: str, meaning: str, left: tuple[str, str], right: tuple[str, str], same: bool) -> None:
        if not same:
            found.append(Comparison(name, meaning, left[0], left[1], right[0], right[1]))

    differ(
        "total",
        "the amount paid is not the cart's total",
        ("cart (merchant)", _money(details.total.amount)),
        ("payment (user)", _money(paid.payment_details_total.amount)),
        money_equal(details.total.amount, paid.payment_details_total.amount),
    )
    differ(
        "order id",
        "the payment names another order than the cart",
        ("cart (merchant)", details.id),
        ("payment (user)", paid.payment_details_id),
        details.id == paid.payment_details_id,
    )
    differ(
        "request id",
        "the payment response answers another payment request",
        ("cart (merchant)", details.id),
        ("payment response (user)", paid.payment_response.request_id),
        details.id == paid.payment_response.request_id,
    )
    signer = contents.merchant_name if merchant_did is None else f"{contents.merchant_name} ({merchant_did})"
    differ(
        "merchant",
        "the payment names another merchant than the one that signed the cart",
        ("cart (merchant)", signer),
        ("payment (user)", paid.merchant_agent),
        paid.merchant_agent in (contents.merchant_name, merchant_did)
        or (merchant_did is None and paid.merchant_agent.startswith("did:")),
    )
    accepted = [method.supported_methods for method in contents.payment_request.method_data]
    differ(
        "payment method",
        "the user paid with a method the cart does not accept",
        ("cart accepts (merchant)", ", ".join(accepted)),
        ("payment (user)", paid.payment_response.method_name),
        paid.payment_response.method_name in accepted,
    )
    if intent is not None and intent.model.merchants is not None:
        allowed = intent.model.merchants
        differ(
            "allowed merchants",
            "the user's intent does not name the merchant of the cart",
            ("intent (user)", ", ".join(allowed)),
            ("cart (merchant)", contents.merchant_name),
            contents.merchant_name in allowed or paid.merchant_agent in allowed,
        )
    return tuple(found)
