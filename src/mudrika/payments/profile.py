"""The AP2 v0.1 profile as mudrika signs and checks it: the constants both sides must agree on.

Why one module: the signers (:mod:`mudrika.payments.signing`) and the chain verifier
(:mod:`mudrika.payments.chain`) must never disagree on a ``typ``, an algorithm set or a lifetime.
Each value is defined here once, with the sentence of the profile (docs/payments.md) it implements.
"""

from __future__ import annotations

from typing import Final

from mudrika.errors import InvalidInput
from mudrika.identity.did import parse_did_url

__all__ = [
    "DEFAULT_ALGORITHMS",
    "INTENT_JWS_TYP",
    "KB_MAX_AGE",
    "MAX_CART_LIFETIME",
    "MAX_LEEWAY",
    "MAX_TOKEN_BYTES",
    "MERCHANT_ALGORITHMS",
    "MERCHANT_JWT_TYP",
    "PAYMENT_CREDENTIAL_VCT",
    "did_of_kid",
]

#: ES256 by default; EdDSA and ES256K allowed by policy.
DEFAULT_ALGORITHMS: Final = frozenset({"ES256", "EdDSA", "Ed25519", "ES256K"})
#: Algorithms a merchant may sign carts with.
MERCHANT_ALGORITHMS: Final = DEFAULT_ALGORITHMS
#: ``typ`` of the user's intent JWS: distinct, so it is never accepted as any other JWT (RFC 8725 §3.11).
INTENT_JWS_TYP: Final = "ap2-intent+jwt"
#: ``typ`` of ``merchant_authorization``.
MERCHANT_JWT_TYP: Final = "JWT"
#: ``exp`` of ``merchant_authorization`` is at most 15 minutes after its ``iat``.
MAX_CART_LIFETIME: Final = 900
#: ``vct`` of the payment-user credential mudrika issues (a URN we own).
PAYMENT_CREDENTIAL_VCT: Final = "urn:mudrika:ap2:payment-user:1"
#: Default maximum age of a key-binding JWT (seconds): the nonce challenge is short lived.
KB_MAX_AGE: Final = 300.0
#: Leeway is 0-30 s, never 60.
MAX_LEEWAY: Final = 30.0
#: Largest compact JWS / SD-JWT presentation accepted in a mandate.
MAX_TOKEN_BYTES: Final = 64 * 1024


def did_of_kid(kid: str) -> str:
    """The DID a signing-key DID URL belongs to; the kid must be absolute and name a fragment."""
    if not isinstance(kid, str):
        raise InvalidInput("kid must be a DID URL string", code="bad_kid")
    url = parse_did_url(kid)
    if url.fragment is None or not url.fragment:
        raise InvalidInput("kid must be a DID URL naming a verification method (#fragment)", code="bad_kid")
    return url.did_str
