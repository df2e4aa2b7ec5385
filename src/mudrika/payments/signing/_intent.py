"""The user's signature on an AP2 v0.1 IntentMandate (a mudrika extension).

AP2 v0.1 has no intent signature, so an IntentMandate alone proves nothing about what the user
wanted.  The profile (docs/payments.md, "What is signed") adds one: the user signs

    intent_hash = H(the intent's raw JSON object without user_authorization)

in a compact JWS stored in the extension member ``user_authorization``:

* header ``{"alg", "kid", "typ": "ap2-intent+jwt"}`` — ``kid`` is a DID URL of the user's DID;
  the distinct ``typ`` keeps this JWS from being accepted as any other JWT (RFC 8725 §3.11);
* payload ``{"iss": <user DID>, "iat": <NumericDate>, "intent_hash": <H>}``.

An **unsigned** intent is allowed only with ``user_cart_confirmation_required = true``: the user
then confirms the cart itself by signing the payment mandate, whose key-binding JWT covers H(cart).
An unsigned intent that says ``false`` would let an agent buy on the strength of an intent anybody
could have written, so the verifier fails it (check ``intent.authorization``).
"""

from __future__ import annotations

from mudrika.crypto.jose import sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput
from mudrika.payments._time import Time, epoch
from mudrika.payments.models import IntentMandate, Received, intent_hash, outgoing
from mudrika.payments.profile import INTENT_JWS_TYP, did_of_kid

__all__ = ["sign_intent"]


def sign_intent(
    intent: Received[IntentMandate] | IntentMandate,
    user_key: KeyPair,
    *,
    kid: str,
    now: Time,
    alg: str | None = None,
) -> Received[IntentMandate]:
    """Sign ``intent`` as the user; return it with ``user_authorization`` set.

    ``kid`` is the DID URL of the user's key (its DID becomes ``iss``); ``now`` is the signing time
    (``iat``).  A model is first turned into what goes on the wire (:func:`outgoing`), and the hash
    is computed over that raw object, so the receiver's :func:`intent_hash` matches.  An existing
    ``user_authorization`` is replaced (it is not part of the hash).
    """
    received = intent if isinstance(intent, Received) else outgoing(intent)
    if not isinstance(received.model, IntentMandate):
        raise InvalidInput("sign_intent needs an IntentMandate", code="not_an_intent")
    user_did = did_of_kid(kid)
    claims = {"iss": user_did, "iat": int(epoch(now)), "intent_hash": intent_hash(received)}
    token = sign_jwt(claims, user_key, alg=alg, kid=kid, typ=INTENT_JWS_TYP)
    return received.with_member("user_authorization", token)
