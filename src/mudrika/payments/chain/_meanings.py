"""What each check of the AP2 v0.1 chain means, in words a person deciding the dispute can quote.

Why here and not in the report: the report (:mod:`mudrika.payments.report`) is shared with the v0.2
verifier, whose check ids are its own; each profile hands its table to the reports it draws.  The
ids are listed in ``docs/payments.md`` "Checks"; ``tests/unit/test_report_meanings.py`` holds every
id the verifier records over the tamper matrix to a sentence of this table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from mudrika.payments.report import MeaningTable, TimelineStage

__all__ = ["MEANINGS"]

#: What a failed check means, in words a person deciding the dispute can quote (ids: docs/payments.md).
_SENTENCES: Final[Mapping[str, str]] = {
    "input.intent": "the intent is not a well-formed AP2 intent, so nothing it says can be relied on",
    "input.cart": "the cart is not a well-formed AP2 cart, so nothing it says can be relied on",
    "input.payment": "the payment is not a well-formed AP2 payment, so nothing it says can be relied on",
    "intent.constraints": "the intent sets a limit nobody can enforce, so it is refused",
    "intent.authorization": "an unsigned intent cannot authorise a purchase without the user confirming the cart",
    "intent.jws.header": "the intent's signature has a malformed or wrong-type header, so it cannot be checked",
    "intent.jws.key": "the key that signed the intent is not a key of the user's DID",
    "intent.jws.signature": "the intent was not signed by that user, or was changed afterwards",
    "intent.jws.iss": "the intent names another signer than the key that signed it",
    "intent.jws.intent_hash": "the intent was changed after the user signed it",
    "intent.expiry": "the intent had expired when the payment was evaluated",
    "cart.unsigned_members": "the cart carries something nobody signed",
    "merchant.jws.present": "the merchant never signed this cart",
    "merchant.key.window": (
        "the merchant's key was not valid (compromised, rotated out or expired, per your trust root) "
        "when it signed the cart, or that cannot be shown"
    ),
    "issuer.key.window": (
        "the credential issuer's key was not valid (compromised, rotated out or expired, per your trust "
        "root) when it signed the credential, or that cannot be shown"
    ),
    "issuer.credential.status": (
        "the user's credential had been revoked or suspended by its issuer at the purchase, or its status "
        "at the purchase cannot be shown"
    ),
    "merchant.jws.header": "the merchant's signature on the cart has a malformed or wrong-type header, so it cannot be checked",
    "merchant.jws.key": "the key that signed the cart is not one of the merchant's keys you trust",
    "merchant.jws.alg": "the cart was signed with an algorithm not allowed for the merchant's key",
    "merchant.jws.signature": "the cart's signature does not verify: the merchant did not sign these bytes",
    "merchant.jwt.typ": "the merchant's signature is not of the token type the profile requires (a token made for another purpose)",
    "merchant.jwt.iss": "one merchant signed in another merchant's name",
    "merchant.jwt.sub": "the merchant's signature is for another cart",
    "merchant.jwt.aud": "the merchant's signature was issued for another verifier",
    "merchant.jwt.exp": "the merchant's signature had expired when the payment was evaluated",
    "merchant.jwt.lifetime": "the merchant's signature was valid for longer than the profile allows",
    "merchant.jwt.jti": "the merchant's signature carries no single-use identifier, so its reuse could not be detected",
    "merchant.jwt.cart_hash": "the cart contents changed after the merchant signed them",
    "cart.expiry": "the cart had expired when the payment was evaluated",
    "cart.total": "the merchant's cart total is not the sum of its items",
    "payment.unsigned_members": "the payment carries something nobody signed",
    "user.authorization.present": "the user never authorised this payment",
    "issuer.sdjwt.format": "the user's authorisation is not a well-formed credential presentation",
    "issuer.trusted": "the user's credential comes from an issuer you do not trust",
    "issuer.jwt.header": "the user's credential has a malformed or wrong-type header, so its issuer's signature cannot be checked",
    "issuer.jwt.key": "the credential was signed with a key you do not trust for its issuer",
    "issuer.jwt.signature": "the user's credential was not issued by that issuer",
    "issuer.jwt.iss": "the user's credential names another issuer than the one whose key signed it",
    "issuer.sdjwt.disclosures": "claims were added to the user's credential that the issuer never signed",
    "issuer.jwt.exp": "the user's credential had expired",
    "issuer.jwt.vct": "the credential is not of a type you accept for payments",
    "issuer.jwt.cnf": "the credential does not name a usable key of the user",
    "issuer.jwt.sub": "the credential's subject contradicts the user's key",
    "user.kb.header": "the user's key-binding signature is missing or malformed",
    "user.kb.key": "the user's key-binding signature was not made with the key the credential binds to the user",
    "user.kb.signature": "the payment was not authorised by the holder of the credential",
    "user.kb.typ": "the user's key-binding signature is not a key-binding token (a token made for another purpose)",
    "user.kb.iat": "the user's authorisation is too old (replayed) or dated in the future",
    "user.kb.aud": "the user authorised the payment for another verifier",
    "user.kb.nonce": (
        "the key-binding nonce differs from the one you supplied (--kb-nonce), or from the bundle's own "
        "when you supplied none: a nonce typed wrong, or an authorisation made for another session"
    ),
    "user.kb.sd_hash": "the credential claims presented are not the ones the user signed over",
    "user.kb.transaction_data": "what the user signed is not this cart and these payment contents",
    "user.kb.intent_binding": "the user's signature does not cover this intent (swapped, or a legacy chain)",
    "chain.payment_details_id": "the payment names another order than the cart",
    "chain.request_id": "the payment response answers another payment request",
    "chain.total": "the amount paid is not the cart's total",
    "chain.method": "the user paid with a method the merchant does not accept",
    "chain.merchant_agent": "the payment names another merchant than the one that signed the cart",
    "chain.timestamp.cart": "the payment was made after the cart expired",
    "chain.timestamp.intent": "the payment was made after the intent expired",
    "intent.merchants": "the merchant is not one the user allowed",
    "intent.skus": "the cart holds an item the user did not allow",
    "intent.refundability": "the cart holds an item that cannot be refunded, though the user required it",
    "intent.cart_confirmation": "the merchant dropped the cart confirmation the user required",
    "intent.signer_is_holder": "the intent and the payment were signed by two different people",
    "intent.unsigned_members": "no signature covers the intent",
    "replay.merchant_jti": "this cart authorisation was already used",
    "replay.kb_nonce": "this payment authorisation was already used",
}

#: Which hash of ``transaction_data`` differed (set as the check's ``detail``) → what it means.
_TRANSACTION_DATA_MEANINGS: Final[Mapping[str, str]] = {
    "H(PaymentMandateContents)": "the payment contents changed after the user signed them",
    "H(CartMandate)": "the cart changed after the user signed the payment",
}

#: Checks that compare a hash a party signed with the one we recompute from the received bytes.
_HASH_CHECKS: Final = frozenset(
    {
        "intent.jws.intent_hash",
        "merchant.jwt.cart_hash",
        "user.kb.sd_hash",
        "user.kb.transaction_data",
        "user.kb.intent_binding",
    }
)

_PARTY_SIGNATURE: Final[Mapping[str, str]] = {
    "user": "the user's signature",
    "merchant": "the merchant's signature",
    "issuer": "the credential issuer's signature",
}

#: Who signed what, in order; each step green only when its signature and its content checks passed.
_TIMELINE: Final = (
    TimelineStage(
        "intent",
        "the user",
        ("intent.jws.signature",),
        ("intent.jws.intent_hash", "user.kb.intent_binding"),
        "IntentMandate: what the user asked for",
        absent="not signed (the user confirmed the cart in the payment instead)",
    ),
    TimelineStage(
        "cart",
        "the merchant",
        ("merchant.jws.signature",),
        ("merchant.jwt.cart_hash", "cart.unsigned_members"),
        "CartMandate: what the merchant offered, at what price",
    ),
    TimelineStage(
        "payment",
        "the user",
        ("user.kb.signature",),
        ("user.kb.transaction_data", "payment.unsigned_members"),
        "PaymentMandate: what the user authorised paying",
    ),
)

MEANINGS: Final = MeaningTable(
    sentences=_SENTENCES,
    by_detail={"user.kb.transaction_data": _TRANSACTION_DATA_MEANINGS},
    by_suffix=(
        (".alg", "the signature uses an algorithm not allowed for the signer's key"),
        (".iat", "a signature was not valid at the time the payment was evaluated"),
        (".nbf", "a signature was not valid at the time the payment was evaluated"),
        (".exp", "a signature was not valid at the time the payment was evaluated"),
    ),
    signed_hash_checks=_HASH_CHECKS,
    signatures=_PARTY_SIGNATURE,
    timeline=_TIMELINE,
)
"""The v0.1 chain's table: every report :func:`~mudrika.payments.chain.inspect_chain` draws carries it."""
