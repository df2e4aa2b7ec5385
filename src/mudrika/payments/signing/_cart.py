"""``CartMandate.merchant_authorization``: the merchant's signature over the cart.

AP2 v0.1 profile (docs/payments.md, "What is signed"): a compact JWS, ES256 by default (EdDSA and
ES256K allowed by policy),

* header ``{"alg", "kid", "typ": "JWT"}`` — ``kid`` is a DID URL of the merchant's DID;
* payload ``{"iss": <merchant DID>, "sub": <cart id>, "aud": <audience>, "iat", "exp", "jti",
  "cart_hash": H(CartContents)}`` with ``exp - iat <= 900`` seconds and a random ``jti``.

``cart_hash`` is computed over the *raw* ``contents`` object that is sent (and, on the receiving
side, over the raw object that arrived), never over a model dump.  The verifier checks each claim
as its own named check (``merchant.jwt.*``), and the ``jti`` is single use through a
:class:`~mudrika.stores.replay.ReplayStore` — claimed only once the whole chain verified, so a
chain that fails elsewhere cannot burn a merchant's ``jti``.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, Final

from mudrika.crypto.frozenjson import thaw
from mudrika.crypto.jcs import mandate_hash
from mudrika.crypto.jose import sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput
from mudrika.identity.did import parse_did, parse_did_url
from mudrika.payments._time import Time, epoch
from mudrika.payments.models import CartContents, CartMandate, Received, receive_cart
from mudrika.payments.profile import MAX_CART_LIFETIME, MERCHANT_ALGORITHMS, MERCHANT_JWT_TYP
from mudrika.payments.signing._contents import contents_to_sign

__all__ = ["sign_cart"]

_MAX_JTI: Final = 256


def sign_cart(
    cart_contents: Received[CartContents] | CartContents | Mapping[str, Any],
    merchant_key: KeyPair,
    *,
    merchant_did: str,
    kid: str,
    aud: str,
    now: Time,
    ttl: int = MAX_CART_LIFETIME,
    jti: str | None = None,
    alg: str = "ES256",
) -> Received[CartMandate]:
    """Sign the cart as the merchant; return the CartMandate ``{"contents", "merchant_authorization"}``.

    ``kid`` must be a DID URL of ``merchant_did``; ``ttl`` is 1..900 seconds; ``jti`` defaults to
    128 random bits.  ``alg`` must be one of :data:`MERCHANT_ALGORITHMS` and fit the key
    (``"EdDSA"`` for Ed25519, ``"ES256K"`` for secp256k1).  A mapping is received strictly as
    already-parsed JSON first; a model goes on the wire as ``to_wire()``.
    """
    contents = contents_to_sign(
        CartContents, cart_contents, message="sign_cart needs CartContents", code="not_cart_contents"
    )
    parse_did(merchant_did)
    url = parse_did_url(kid)
    if url.did_str != merchant_did or not url.fragment:
        raise InvalidInput("kid must be a DID URL (#fragment) of merchant_did", code="bad_kid")
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not 0 < ttl <= MAX_CART_LIFETIME:
        raise InvalidInput("ttl must be 1..900 seconds", code="bad_ttl", limit=MAX_CART_LIFETIME)
    if alg not in MERCHANT_ALGORITHMS:
        raise InvalidInput("algorithm not allowed for carts", code="alg_not_allowed", alg=str(alg)[:16])
    if not isinstance(aud, str) or not aud:
        raise InvalidInput("aud must be a non-empty string", code="bad_aud")
    token_id = secrets.token_urlsafe(16) if jti is None else jti
    if not isinstance(token_id, str) or not 0 < len(token_id) <= _MAX_JTI:
        raise InvalidInput("jti must be a non-empty string of at most 256 characters", code="bad_jti")
    plain = thaw(contents.raw)
    iat = int(epoch(now))
    claims = {
        "iss": merchant_did,
        "sub": contents.model.id,
        "aud": aud,
        "iat": iat,
        "exp": iat + ttl,
        "jti": token_id,
        "cart_hash": mandate_hash(plain),
    }
    token = sign_jwt(claims, merchant_key, alg=alg, kid=kid, typ=MERCHANT_JWT_TYP)
    return receive_cart({"contents": plain, "merchant_authorization": token})
