"""``PaymentMandate.user_authorization``: an SD-JWT-VC plus a key-binding JWT, issued and signed.

AP2 v0.1 profile (docs/payments.md, "What is signed"):

* A **credential issuer** (the user's bank or wallet provider) issues an SD-JWT VC (RFC 9901, typ
  ``dc+sd-jwt``) whose ``cnf.jwk`` is the user's public key — :func:`issue_user_credential`.
* For each payment the **user** presents it with a key-binding JWT (RFC 9901 §4.3) signed by that
  key: ``typ: kb+jwt``, ``aud`` (the payment processor / merchant that asked), ``nonce`` (that
  verifier's fresh challenge), ``iat``, ``sd_hash``, and ``transaction_data = [H(CartMandate),
  H(PaymentMandateContents), H(IntentMandate)]`` — :func:`sign_payment`.  The hashes are what makes
  the signature an authorisation of *this* cart, *this* payment and *this* intent: H(CartMandate)
  covers the merchant's signature too, so the user confirms exactly the cart the merchant signed,
  and H(IntentMandate) (the whole intent as sent, ``user_authorization`` included) binds the intent
  the cart is judged against, so nobody can swap in another intent afterwards.

How the verifier checks all of this (RFC 9901 §7.1 and §7.3 step 5, claim by claim) is explained
where it is done: :mod:`mudrika.payments.chain._payment`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

from mudrika.crypto import sdjwt
from mudrika.crypto.frozenjson import thaw
from mudrika.crypto.jcs import mandate_hash
from mudrika.crypto.keys import KeyPair, PublicKey
from mudrika.crypto.statuslist import StatusReference
from mudrika.errors import InvalidInput
from mudrika.payments._time import Time, epoch
from mudrika.payments.models import (
    CartMandate,
    IntentMandate,
    PaymentMandate,
    PaymentMandateContents,
    Received,
    cart_mandate_hash,
    intent_mandate_hash,
    receive_payment,
)
from mudrika.payments.profile import PAYMENT_CREDENTIAL_VCT
from mudrika.payments.signing._contents import contents_to_sign

__all__ = ["issue_user_credential", "sign_payment"]

_RESERVED: Final = frozenset({"iss", "iat", "exp", "nbf", "vct", "cnf", "sub", "_sd", "_sd_alg", "status"})


def issue_user_credential(
    *,
    issuer_key: KeyPair,
    issuer: str,
    kid: str,
    user_key: PublicKey,
    now: Time,
    ttl: int = 30 * 24 * 3600,
    subject: str | None = None,
    claims: Mapping[str, Any] | None = None,
    disclosable: Collection[str] = (),
    vct: str = PAYMENT_CREDENTIAL_VCT,
    alg: str | None = None,
    decoys: int = 0,
    salt: sdjwt.SaltSource | None = None,
    status: StatusReference | None = None,
) -> sdjwt.SdJwt:
    """Issue the user's payment credential: an SD-JWT VC bound to ``user_key`` (``cnf.jwk``).

    ``issuer`` is the ``iss`` (a DID, or an https identifier whose keys are published as a JWKS);
    ``kid`` names the issuer key (a DID URL of ``issuer``, or a JWKS kid).  ``claims`` are extra
    claims (name, e-mail, card art ...); ``disclosable`` lists RFC 6901 pointers into them that are
    made selectively disclosable.  ``subject`` becomes ``sub`` (e.g. the user's DID).  ``salt``
    replaces the CSPRNG salt source (reproducible fixtures only).  ``status`` points the credential
    at its entry in the issuer's Token Status List, so a verifier (or an analyst, later) can ask
    whether the issuer had revoked or suspended it.
    """
    extra = dict(claims or {})
    clash = _RESERVED.intersection(extra)
    if clash:
        raise InvalidInput("claims may not set registered claims", code="reserved_claim", names=sorted(clash))
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
        raise InvalidInput("ttl must be a positive number of seconds", code="bad_ttl")
    iat = int(epoch(now))
    payload: dict[str, Any] = {"iss": issuer, "iat": iat, "exp": iat + ttl, "vct": vct, **extra}
    if subject is not None:
        payload["sub"] = subject
    return sdjwt.issue(
        payload,
        issuer_key=issuer_key,
        kid=kid,
        disclosable=disclosable,
        holder_key=user_key,
        alg=alg,
        decoys=decoys,
        salt=salt,
        status=status,
    )


def sign_payment(
    payment_contents: Received[PaymentMandateContents] | PaymentMandateContents | Mapping[str, Any],
    *,
    credential: sdjwt.SdJwt | str,
    user_key: KeyPair,
    cart: Received[CartMandate],
    intent: Received[IntentMandate],
    aud: str,
    nonce: str,
    now: Time,
    disclose: Collection[str] = (),
    alg: str | None = None,
) -> Received[PaymentMandate]:
    """Authorise the payment as the user: present ``credential`` with a key-binding JWT.

    The KB-JWT carries ``transaction_data = [H(cart), H(payment_contents), H(intent)]`` over the
    raw objects that are sent.  ``cart`` must be the signed CartMandate exactly as received from
    the merchant, ``intent`` the IntentMandate exactly as it is sent with the payment (signed or not).
    ``disclose`` lists the credential's disclosable paths to reveal (none by default: data
    minimisation).  ``credential`` given as text is read structurally (its issuer signature is the
    verifier's business, and ours in :func:`mudrika.crypto.sdjwt.verify` when you hold the issuer key).
    """
    contents = contents_to_sign(
        PaymentMandateContents,
        payment_contents,
        message="sign_payment needs PaymentMandateContents",
        code="not_payment_contents",
    )
    if not isinstance(cart.model, CartMandate) or cart.model.merchant_authorization is None:
        raise InvalidInput("the cart must be a CartMandate signed by the merchant", code="unsigned_cart")
    if not isinstance(intent, Received) or not isinstance(intent.model, IntentMandate):
        raise InvalidInput("the intent must be a received IntentMandate", code="not_an_intent")
    issued = credential if isinstance(credential, sdjwt.SdJwt) else sdjwt.SdJwt.from_compact(credential)
    plain = thaw(contents.raw)
    transaction_data = [cart_mandate_hash(cart), mandate_hash(plain), intent_mandate_hash(intent)]
    presentation = sdjwt.present(
        issued,
        disclose=disclose,
        holder_key=user_key,
        aud=aud,
        nonce=nonce,
        iat=int(epoch(now)),
        extra_kb_claims={"transaction_data": transaction_data},
        kb_alg=alg,
    )
    return receive_payment({"payment_mandate_contents": plain, "user_authorization": presentation})
