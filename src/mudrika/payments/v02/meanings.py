"""What each check of the AP2 v0.2 verifier means, in words a person deciding the dispute can quote.

Why a table of its own: the report is shared with the v0.1 chain (:mod:`mudrika.payments.report`),
but a v0.2 failure must not read "check v02.checkout.hop1.aud did not hold" — an analyst who does not
know the delegate SD-JWT wire form needs "the shopping agent's key-binding token was addressed to
another audience".  Every report :func:`~mudrika.payments.v02.inspect_v02` draws carries
:data:`MEANINGS`.

The ids are those of ``docs/ap2-v02.md`` "Every check".  Most are templated by chain (``checkout``
or ``payment``) and by token position (``hop0`` is the root mandate its issuer signed, ``hopN`` the
key-binding token of the agent the token before it delegated to), so those sentences are patterns
over the whole id; ``tests/unit/test_report_meanings.py`` holds every id the verifier records over
the tamper matrix to a sentence of this table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from mudrika.payments.report import MeaningTable, TimelineStage
from mudrika.payments.v02.profile import MAX_HOPS

__all__ = ["MEANINGS"]

_CHAIN: Final = r"v02\.(?P<chain>checkout|payment)"
_ROOT: Final = _CHAIN + r"\.hop0\."
_HOP: Final = _CHAIN + r"\.hop(?P<hop>[1-9][0-9]*)\."

#: The root token (``hop0``): the open mandate its issuer (the agent provider) signed for the agent.
_ROOT_SENTENCES: Final[Mapping[str, str]] = {
    "typ": "the root {chain} mandate is not a token of a type this profile accepts",
    "iss": "the root {chain} mandate names no issuer your trust root trusts, or another issuer than you expect",
    "key": "the key that signed the root {chain} mandate is not one your trust root pins for its issuer",
    "signature": "the root {chain} mandate was not signed by its issuer, or was changed after it was signed",
    "sd_alg": "the root {chain} mandate uses a disclosure hash algorithm this profile does not allow",
    "disclosures": "the disclosed parts of the root {chain} mandate are not the ones its issuer signed over",
    "claims": (
        "the root {chain} mandate carries a claim outside the profile, or a signed issuer other than "
        "the one its key was chosen by"
    ),
    "delegate": "the root {chain} token does not disclose exactly one mandate",
    "vct": "the root {chain} mandate is not of a type you accept from its issuer",
    "schema": "the root {chain} mandate is not a well-formed open mandate, so nothing it says can be relied on",
    "time": "the root {chain} mandate was not valid when it was evaluated (expired, not yet valid, or never expiring)",
    "cnf": "the root {chain} mandate does not name a usable key for the agent it delegates to",
}

#: A key-binding hop (``hopN``, N ≥ 1): signed by the agent the token before it delegated to.
_HOP_SENTENCES: Final[Mapping[str, str]] = {
    "typ": "the agent's key-binding token at hop {hop} of the {chain} chain is not of the type its position requires",
    "signature": (
        "the agent's key-binding token at hop {hop} of the {chain} chain was not signed with the key the "
        "token before it delegated to, or was changed after it was signed"
    ),
    "sd_alg": (
        "the agent's key-binding token at hop {hop} of the {chain} chain uses a disclosure hash algorithm "
        "this profile does not allow"
    ),
    "disclosures": (
        "the disclosed parts of the agent's key-binding token at hop {hop} of the {chain} chain are not "
        "the ones the agent signed over"
    ),
    "claims": "the agent's key-binding token at hop {hop} of the {chain} chain carries a claim outside the profile",
    "binding": (
        "the agent's key-binding token at hop {hop} of the {chain} chain does not cover the token before "
        "it: a token of the chain was swapped or changed"
    ),
    "aud": (
        "the agent's key-binding token at hop {hop} of the {chain} chain was addressed to another audience "
        "than the one you expect"
    ),
    "nonce": (
        "the nonce of the agent's key-binding token at hop {hop} of the {chain} chain differs from the one "
        "you supplied (--{chain}-nonce), or from the bundle's own when you supplied none: a nonce typed "
        "wrong, or a token made for another session"
    ),
    "iat": (
        "the agent's key-binding token at hop {hop} of the {chain} chain has no issue time, is dated in the "
        "future, or is too old (possibly replayed)"
    ),
    "delegate": "the agent's key-binding token at hop {hop} of the {chain} chain does not disclose exactly one mandate",
    "vct": (
        "the {chain} mandate at hop {hop} is not of the type its position requires (open before the last "
        "hop, closed at the last)"
    ),
    "schema": "the {chain} mandate at hop {hop} is not well formed, so nothing it says can be relied on",
    "time": "the {chain} mandate at hop {hop} was not valid when it was evaluated (expired or not yet valid)",
    "cnf": (
        "the {chain} mandate at hop {hop} names the next agent's key where it must not, or does not name "
        "it where it must"
    ),
}

#: Ids that name neither a chain position nor a hop, written out.
_SENTENCES: Final[Mapping[str, str]] = {
    "v02.checkout.wire": "the checkout chain cannot be split into its tokens, so nothing it says can be relied on",
    "v02.payment.wire": "the payment chain cannot be split into its tokens, so nothing it says can be relied on",
    "v02.checkout.hops": "the checkout chain has fewer delegation hops than you expected",
    "v02.payment.hops": "the payment chain has fewer delegation hops than you expected",
    "v02.checkout.preset": "the closed checkout mandate changed or dropped a value an open mandate had fixed",
    "v02.payment.preset": "the closed payment mandate changed or dropped a value an open mandate had fixed",
    "v02.checkout.line_items_required": (
        "the open checkout mandates do not limit which items may be bought (no line-items constraint)"
    ),
    "v02.payment.reference_required": (
        "the open payment mandates do not tie the payment to a checkout (no payment-reference constraint)"
    ),
    "v02.checkout.checkout_hash": "the checkout the agent accepted is not the merchant's signed checkout",
    "v02.checkout.merchant_signature": (
        "the checkout was not signed by the merchant your trust root pins, or was not valid when the "
        "agent accepted it"
    ),
    "v02.payment.transaction_id": "the payment is for another checkout than the one verified",
    "v02.payment.payee": "the payment goes to another merchant than the one whose checkout was signed",
    "v02.payment.amount": "the amount paid is not the checkout's total",
    "v02.receipt.checkout.signature": (
        "the checkout receipt was not signed by the checkout's merchant under a key your trust root pins, "
        "or was not valid"
    ),
    "v02.receipt.payment.signature": (
        "the payment receipt was not signed under a key your trust root pins for its issuer, or was not valid"
    ),
    "v02.receipt.checkout.reference": "the checkout receipt is for another checkout mandate than the one presented",
    "v02.receipt.payment.reference": "the payment receipt is for another payment mandate than the one presented",
    "v02.receipt.checkout.status": "the merchant's receipt reports that the checkout failed",
    "v02.receipt.payment.status": "the payment receipt reports that the payment failed",
    "v02.checkout.status": (
        "the open checkout mandate had been revoked or suspended by its issuer at the purchase, or its "
        "status at the purchase cannot be shown"
    ),
    "v02.payment.status": (
        "the open payment mandate had been revoked or suspended by its issuer at the purchase, or its "
        "status at the purchase cannot be shown"
    ),
    "v02.checkout.root_key_window": (
        "the issuer's key that signed the open checkout mandate was not valid (compromised, rotated out "
        "or expired, per your trust root) when it signed, or that cannot be shown"
    ),
    "v02.payment.root_key_window": (
        "the issuer's key that signed the open payment mandate was not valid (compromised, rotated out "
        "or expired, per your trust root) when it signed, or that cannot be shown"
    ),
    "v02.checkout.merchant_key_window": (
        "the merchant's key that signed the checkout was not valid (compromised, rotated out or expired, "
        "per your trust root) when it signed, or that cannot be shown"
    ),
    "v02.receipt.checkout.key_window": (
        "the key that signed the checkout receipt was not valid per your trust root when it signed"
    ),
    "v02.receipt.payment.key_window": (
        "the key that signed the payment receipt was not valid per your trust root when it signed"
    ),
    "v02.single_use.checkout": "this checkout was already used, or the replay store could not say whether it was",
    "v02.single_use.payment": (
        "this payment authorisation was already used, or the replay store could not say whether it was"
    ),
}

#: The constraints an open mandate (the root or an intermediate hop) sets on what follows it;
#: constraints are numbered from 0 in the order the mandate lists them.
_CONSTRAINT_SENTENCES: Final = (
    (
        re.compile(_ROOT + "constraints"),
        "the constraints the root {chain} mandate sets could not be evaluated",
    ),
    (
        re.compile(_ROOT + r"constraint(?P<position>[0-9]+)"),
        "the purchase goes beyond what the root {chain} mandate allowed (its constraint {position}, counted from 0)",
    ),
    (
        re.compile(_HOP + "constraints"),
        "the constraints the open {chain} mandate at hop {hop} sets could not be evaluated",
    ),
    (
        re.compile(_HOP + r"constraint(?P<position>[0-9]+)"),
        "the purchase goes beyond what the open {chain} mandate at hop {hop} allowed (its constraint "
        "{position}, counted from 0)",
    ),
)

#: Checks whose ``got`` is a hash a party signed and ``expected`` the one recomputed here.
_SIGNED_HASH_CHECKS: Final = frozenset(
    {
        "v02.checkout.checkout_hash",
        "v02.payment.transaction_id",
        "v02.receipt.checkout.reference",
        "v02.receipt.payment.reference",
        *(
            f"v02.{chain}.hop{hop}.binding"
            for chain in ("checkout", "payment")
            for hop in range(1, MAX_HOPS + 1)
        ),
    }
)


def _closing_hops(chain: str, *steps: str) -> tuple[str, ...]:
    """The ids of ``steps`` at every key-binding hop a chain may have (only those recorded count)."""
    return tuple(f"v02.{chain}.hop{hop}.{step}" for hop in range(1, MAX_HOPS + 1) for step in steps)


#: Who signed what in a v0.2 transaction, in order (the timeline of the HTML report).
_TIMELINE: Final = (
    TimelineStage(
        "open checkout mandate",
        "its issuer (the agent provider)",
        ("v02.checkout.hop0.signature",),
        ("v02.checkout.hop0.disclosures",),
        "what checkouts the shopping agent may accept",
    ),
    TimelineStage(
        "checkout",
        "the merchant",
        ("v02.checkout.merchant_signature",),
        ("v02.checkout.checkout_hash",),
        "the merchant's checkout: items and total",
    ),
    TimelineStage(
        "closed checkout mandate",
        "the shopping agent",
        _closing_hops("checkout", "signature"),
        _closing_hops("checkout", "binding", "disclosures"),
        "the checkout the agent accepted",
    ),
    TimelineStage(
        "open payment mandate",
        "its issuer (the agent provider)",
        ("v02.payment.hop0.signature",),
        ("v02.payment.hop0.disclosures",),
        "what payments the shopping agent may make",
    ),
    TimelineStage(
        "closed payment mandate",
        "the shopping agent",
        _closing_hops("payment", "signature"),
        _closing_hops("payment", "binding", "disclosures"),
        "what the agent paid, to whom, for which checkout",
    ),
)

MEANINGS: Final = MeaningTable(
    sentences=_SENTENCES,
    patterns=(
        *((re.compile(_ROOT + re.escape(step)), sentence) for step, sentence in _ROOT_SENTENCES.items()),
        *((re.compile(_HOP + re.escape(step)), sentence) for step, sentence in _HOP_SENTENCES.items()),
        *_CONSTRAINT_SENTENCES,
    ),
    signed_hash_checks=_SIGNED_HASH_CHECKS,
    timeline=_TIMELINE,
)
"""The v0.2 verifier's table: every report :func:`~mudrika.payments.v02.inspect_v02` draws carries it."""
