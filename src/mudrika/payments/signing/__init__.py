"""Signing AP2 v0.1 mandates: the user's intent, the merchant's cart, the user's payment.

Each signer hashes the raw object it sends (RFC 8785, :func:`~mudrika.crypto.jcs.mandate_hash`) so
the receiver recomputes the same bytes.  The constants both sides share live in
:mod:`mudrika.payments.profile`; the checks live in :mod:`mudrika.payments.chain`.
"""

from __future__ import annotations

from mudrika.payments.signing._cart import (
    sign_cart,
)
from mudrika.payments.signing._intent import (
    sign_intent,
)
from mudrika.payments.signing._payment import (
    issue_user_credential,
    sign_payment,
)

__all__ = [
    "issue_user_credential",
    "sign_cart",
    "sign_intent",
    "sign_payment",
]
