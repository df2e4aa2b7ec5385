"""AP2 v0.2 behind the same verifier: delegate SD-JWT checkout and payment chains, receipts,
constraints, and every check the official SDK leaves to its callers.

The public face.  :func:`inspect_v02` / :func:`verify_v02` (:mod:`.verifier`) are the recipe; the
modules beside them hold one concept each: :mod:`.profile` (what the profile signs),
:mod:`.models` (the v0.2 JSON Schemas as strict models), :mod:`.wire` (the ``~~`` chain form),
:mod:`.hops` (root and hop admission), :mod:`.bindings` (checkout hash, merchant signature,
transaction id, pre-set values), :mod:`.constraints` (every constraint type), :mod:`.receipts`,
:mod:`.signing` (our signers) and :mod:`.meanings` (what each check means, in plain words).  The
checks are listed in ``docs/ap2-v02.md``.
"""

from __future__ import annotations

from mudrika.payments.v02.constraints import (
    MandateUsage,
    line_items_satisfied,
    major_to_minor,
    usage_from_value,
)
from mudrika.payments.v02.hops import HopExpectation, VerifiedToken
from mudrika.payments.v02.meanings import MEANINGS
from mudrika.payments.v02.models import (
    Amount,
    Checkout,
    CheckoutMandate,
    CheckoutReceipt,
    Merchant,
    OpenCheckoutMandate,
    OpenPaymentMandate,
    PaymentInstrument,
    PaymentMandate,
    PaymentReceipt,
    Pisp,
)
from mudrika.payments.v02.profile import (
    VCT_CHECKOUT,
    VCT_CHECKOUT_OPEN,
    VCT_PAYMENT,
    VCT_PAYMENT_OPEN,
)
from mudrika.payments.v02.signing import (
    append_hop,
    disclosable_paths,
    issue_open_mandate,
    present_root,
    receipt_reference,
    sign_checkout_jwt,
    sign_receipt,
)
from mudrika.payments.v02.verifier import V02Evidence, VerifiedTransaction, inspect_v02, verify_v02
from mudrika.payments.v02.wire import ParsedChain, join_chain, parse_chain, sd_digest

__all__ = [
    "MEANINGS",
    "VCT_CHECKOUT",
    "VCT_CHECKOUT_OPEN",
    "VCT_PAYMENT",
    "VCT_PAYMENT_OPEN",
    "Amount",
    "Checkout",
    "CheckoutMandate",
    "CheckoutReceipt",
    "HopExpectation",
    "MandateUsage",
    "Merchant",
    "OpenCheckoutMandate",
    "OpenPaymentMandate",
    "ParsedChain",
    "PaymentInstrument",
    "PaymentMandate",
    "PaymentReceipt",
    "Pisp",
    "V02Evidence",
    "VerifiedToken",
    "VerifiedTransaction",
    "append_hop",
    "disclosable_paths",
    "inspect_v02",
    "issue_open_mandate",
    "join_chain",
    "line_items_satisfied",
    "major_to_minor",
    "parse_chain",
    "present_root",
    "receipt_reference",
    "sd_digest",
    "sign_checkout_jwt",
    "sign_receipt",
    "usage_from_value",
    "verify_v02",
]
