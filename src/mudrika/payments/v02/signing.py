"""Signers for the AP2 v0.2 profile: open mandates (root SD-JWTs), delegation hops (KB-SD-JWTs),
the merchant's checkout JWT and receipts.

Why they live beside the verifier's profile: both read :mod:`mudrika.payments.v02.profile`, and
every signer validates its content with the same models the verifier uses, so we never issue what
our own verifier would refuse.  Selective disclosure follows the v0.2 schemas' annotations: the
delegate mandate is one disclosable array element; ``allowed`` lists (merchants, payees, payment
instruments), ``acceptable_items`` elements and a closed checkout's ``checkout_jwt`` are
disclosable one by one (``x-selectively-disclosable-array`` / ``-field``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Literal

from pydantic import BaseModel

from mudrika.crypto.jose import sign_jwt
from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.crypto.sdjwt import SdJwt, issue
from mudrika.crypto.statuslist import StatusReference
from mudrika.errors import InvalidInput
from mudrika.payments._time import Time, epoch
from mudrika.payments.v02.models import (
    Checkout,
    CheckoutMandate,
    CheckoutReceipt,
    OpenCheckoutMandate,
    OpenPaymentMandate,
    PaymentMandate,
    PaymentReceipt,
    parse_model,
)
from mudrika.payments.v02.profile import (
    CHAIN_SEPARATOR,
    DELEGATE_CLAIM,
    INTERMEDIATE_TYP,
    SIGNED_ROOT_TYP,
    TERMINAL_TYP,
    VCT_CHECKOUT,
    VCT_CHECKOUT_OPEN,
    VCT_PAYMENT,
    VCT_PAYMENT_OPEN,
)
from mudrika.payments.v02.wire import join_chain, sd_digest

__all__ = [
    "append_hop",
    "disclosable_paths",
    "issue_open_mandate",
    "present_root",
    "receipt_reference",
    "sign_checkout_jwt",
    "sign_receipt",
]

_MODELS: dict[str, type[BaseModel]] = {
    VCT_CHECKOUT_OPEN: OpenCheckoutMandate,
    VCT_CHECKOUT: CheckoutMandate,
    VCT_PAYMENT_OPEN: OpenPaymentMandate,
    VCT_PAYMENT: PaymentMandate,
}
_DISCLOSABLE_LISTS = frozenset(
    {"checkout.allowed_merchants", "payment.allowed_payees", "payment.allowed_payment_instruments"}
)


def _validated(content: Mapping[str, Any]) -> None:
    model = _MODELS.get(str(content.get("vct")))
    if model is None:
        raise InvalidInput("not an AP2 v0.2 mandate type", code="wrong_vct")
    parse_model(model, content, what="mandate")


def disclosable_paths(content: Mapping[str, Any]) -> list[str]:
    """The RFC 6901 paths (under the token's claims) the v0.2 schemas make selectively disclosable."""
    base = f"/{DELEGATE_CLAIM}/0"
    paths = [base]
    if "checkout_jwt" in content:
        paths.append(f"{base}/checkout_jwt")
    for j, constraint in enumerate(content.get("constraints", [])):
        kind = constraint.get("type")
        if kind in _DISCLOSABLE_LISTS:
            paths.extend(
                f"{base}/constraints/{j}/allowed/{k}" for k in range(len(constraint.get("allowed", [])))
            )
        elif kind == "checkout.line_items":
            for m, item in enumerate(constraint.get("items", [])):
                paths.extend(
                    f"{base}/constraints/{j}/items/{m}/acceptable_items/{k}"
                    for k in range(len(item.get("acceptable_items", [])))
                )
    return paths


def issue_open_mandate(
    content: Mapping[str, Any],
    *,
    issuer: str,
    issuer_key: KeyPair,
    kid: str,
    now: Time,
    status: StatusReference | None = None,
) -> SdJwt:
    """The root SD-JWT of a chain: ``iss``/``iat`` plus the open mandate as the one delegate element.

    ``content`` must be an open checkout or payment mandate (its ``cnf.jwk`` names the delegate)
    with an ``exp``.  ``status``: the issuer's Token Status List entry for this mandate, so the
    issuer can revoke or suspend it and a merchant (and later a dispute) can check; it is an
    always-visible claim, never a disclosure.  Returns the issued SD-JWT with all its Disclosures;
    :func:`present_root` picks the ones a presentation reveals.
    """
    if content.get("vct") not in (VCT_CHECKOUT_OPEN, VCT_PAYMENT_OPEN):
        raise InvalidInput("a root mandate is an open mandate", code="wrong_vct")
    _validated(content)
    if "exp" not in content:
        raise InvalidInput("an open mandate must expire (exp)", code="open_mandate_without_exp")
    claims: dict[str, Any] = {"iss": issuer, "iat": int(epoch(now)), DELEGATE_CLAIM: [dict(content)]}
    if status is not None:
        claims["status"] = status.to_claim()
    return _issue_link(claims, content, key=issuer_key, kid=kid, typ=SIGNED_ROOT_TYP)


def _issue_link(
    claims: dict[str, Any],
    content: Mapping[str, Any],
    *,
    key: KeyPair,
    kid: str | None,
    typ: str,
    alg: str | None = None,
) -> SdJwt:
    """One token of a delegation chain (the root or a hop).  ``content`` is its one delegate
    element, every member of it selectively disclosable; the next delegate's key travels inside the
    mandate (``cnf``), so the token itself names no holder key."""
    return issue(
        claims,
        issuer_key=key,
        kid=kid,
        disclosable=disclosable_paths(content),
        holder_key=None,
        typ=typ,
        alg=alg,
    )


def present_root(sd_jwt: SdJwt, *, reveal: Collection[str] | None = None) -> str:
    """``<jwt>~<disclosures>~`` revealing the delegate mandate and ``reveal`` (all paths when ``None``)."""
    chosen = set(sd_jwt.disclosable_paths if reveal is None else reveal) | {f"/{DELEGATE_CLAIM}/0"}
    unknown = chosen - set(sd_jwt.disclosable_paths)
    if unknown:
        raise InvalidInput("path is not selectively disclosable", code="not_disclosable")
    selected = [d.encoded for d in sd_jwt.disclosures if d.path in chosen]
    return "".join([sd_jwt.issuer_jwt, "~", *(d + "~" for d in selected)])


def append_hop(
    presentation: str,
    content: Mapping[str, Any],
    *,
    holder_key: KeyPair,
    audience: str,
    nonce: str,
    now: Time,
    binding: Literal["sd_hash", "issuer_jwt_hash"] = "sd_hash",
) -> str:
    """Append one KB-SD-JWT hop to ``presentation`` (a presented root SD-JWT or a chain) and return
    the chain.  ``holder_key`` is the private key of the previous token's ``cnf.jwk``; ``content``
    is an open mandate (with ``cnf``: an intermediate ``kb+sd-jwt+kb`` hop) or the closed mandate (a
    terminal ``kb+sd-jwt`` hop).  The hop binds to the previous token exactly as presented."""
    if holder_key.key_type is not KeyType.P256:
        raise InvalidInput("hop keys are P-256 (ES256)", code="alg_key_mismatch")
    if not audience or not nonce:
        raise InvalidInput("every hop carries aud and nonce", code="missing_kb_claim")
    _validated(content)
    previous_tokens = presentation.split(CHAIN_SEPARATOR)
    tokens = [t + "~" for t in previous_tokens[:-1]] + [previous_tokens[-1]]
    previous = tokens[-1]
    if not previous.endswith("~"):
        raise InvalidInput("the previous token must end with '~'", code="malformed_chain")
    bound = previous if binding == "sd_hash" else previous.split("~", 1)[0]
    claims = {
        DELEGATE_CLAIM: [dict(content)],
        "iat": int(epoch(now)),
        "aud": audience,
        "nonce": nonce,
        binding: sd_digest(bound),
    }
    typ = INTERMEDIATE_TYP if "cnf" in content else TERMINAL_TYP
    hop = _issue_link(claims, content, key=holder_key, kid=None, typ=typ, alg="ES256")
    return join_chain([*tokens, hop.compact()])


def sign_checkout_jwt(checkout: Mapping[str, Any], *, merchant_key: KeyPair, kid: str) -> str:
    """The merchant's JWS over a UCP Checkout (which must name the merchant)."""
    parsed = parse_model(Checkout, checkout, what="checkout")
    _ = parsed.total
    if merchant_key.key_type is KeyType.ED25519:
        raise InvalidInput(
            "the checkout JWT needs a randomised signature (ECDSA or RSA-PSS)", code="alg_key_mismatch"
        )
    alg = "PS256" if merchant_key.key_type is KeyType.RSA else None
    return sign_jwt(checkout, merchant_key, alg=alg, kid=kid, typ="JWT")


def sign_receipt(
    claims: Mapping[str, Any], *, kind: Literal["checkout", "payment"], key: KeyPair, kid: str
) -> str:
    """A signed Checkout or Payment Receipt JWT (claims validated by the receipt schema first)."""
    parse_model(CheckoutReceipt if kind == "checkout" else PaymentReceipt, claims, what=f"{kind} receipt")
    return sign_jwt(claims, key, kid=kid, typ="JWT")


def receipt_reference(chain: str) -> str:
    """The ``reference`` a receipt for the purchase ``chain`` closes must carry: the digest of the
    closing hop as presented (``<jwt>~<disclosures>~``).

    Why the hop as presented and not its JWT alone: that is the specification's rule, the one the
    verifier enforces (``v02.receipt.<kind>.reference``); the official SDK hashes the JWT alone.
    """
    parts = chain.rsplit(CHAIN_SEPARATOR, 1)
    if len(parts) != 2:
        raise InvalidInput("not a delegation chain (no '~~' between tokens)", code="malformed_chain")
    return sd_digest(parts[1])
