"""The five mandate hashes of one chain, each computed once.

Why here: every hash is over the raw received object (docs/payments.md, "Hashes"), and
canonicalising a 2 KB cart costs far more than the comparisons that use the hash.  The verifier
needs H(intent without user_authorization), H(IntentMandate) (the whole intent, which the user's
key-binding JWT covers), H(CartContents), H(CartMandate) and H(PaymentMandateContents); it computes
them once, here, and hands them to the stages.

One shortcut, exact by construction: a CartMandate that is exactly ``{"contents": C,
"merchant_authorization": T}`` has the RFC 8785 form ``{"contents":<C>,"merchant_authorization":"T"}``
(members sorted by UTF-16 code units: ``contents`` < ``merchant_authorization``; a compact JWS is
ASCII letters, digits, ``-``, ``_`` and ``.``, which RFC 8785 §3.2.2.2 writes unescaped).  So
H(CartMandate) reuses the canonical bytes of C instead of canonicalising the cart twice.  Any other
shape goes through :func:`~mudrika.payments.models.cart_mandate_hash`; a unit test holds the two
equal.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

from mudrika.crypto.b64url import b64url_encode
from mudrika.crypto.jcs import canonicalize
from mudrika.payments.models import (
    CartMandate,
    IntentMandate,
    PaymentMandate,
    Received,
    cart_contents_hash,
    cart_mandate_hash,
    intent_hash,
    intent_mandate_hash,
    payment_contents_hash,
)

__all__ = ["cart_hashes", "chain_hashes"]

_PLAIN_JWS: Final = re.compile(r"[A-Za-z0-9_.-]*")
_CART_MEMBERS: Final = frozenset({"contents", "merchant_authorization"})


def _b64_sha256(data: bytes) -> str:
    return b64url_encode(hashlib.sha256(data).digest())


def cart_hashes(cart: Received[CartMandate]) -> tuple[str, str]:
    """(H(CartContents), H(CartMandate)) of the raw cart."""
    raw = cart.raw
    token = raw.get("merchant_authorization")
    if raw.keys() == _CART_MEMBERS and isinstance(token, str) and _PLAIN_JWS.fullmatch(token):
        contents = canonicalize(raw["contents"])
        whole = b'{"contents":' + contents + b',"merchant_authorization":"' + token.encode("ascii") + b'"}'
        return _b64_sha256(contents), _b64_sha256(whole)
    return cart_contents_hash(cart), cart_mandate_hash(cart)


def chain_hashes(
    intent: Received[IntentMandate] | None,
    cart: Received[CartMandate] | None,
    payment: Received[PaymentMandate] | None,
) -> dict[str, str]:
    """The hashes of the mandates that were received (a report quotes them in a dispute)."""
    hashes: dict[str, str] = {}
    if intent is not None:
        hashes["intent"] = intent_hash(intent)
        hashes["intent_mandate"] = intent_mandate_hash(intent)
    if cart is not None:
        hashes["cart_contents"], hashes["cart"] = cart_hashes(cart)
    if payment is not None:
        hashes["payment_contents"] = payment_contents_hash(payment)
    return hashes
