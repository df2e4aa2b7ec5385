"""The demo's second purchase, under AP2 v0.2: delegate SD-JWT checkout and payment chains.

Why a second purchase: v0.2 changes who signs what.  The agent provider (here the demo's credential
issuer) issues *open* mandates bound to the shopping agent's key with the user's constraints; the
merchant signs the checkout (a JWT); the shopping agent closes both mandates with key-binding hops
addressed to the merchant with the merchant's nonces; the merchant verifies both chains and signs
receipts.  The mandates travel as DataParts under the keys the AP2 v0.2 samples use
(``ap2.mandates.CheckoutMandateSdJwt`` / ``ap2.mandates.PaymentMandateSdJwt``); the receipts under
``ap2.CheckoutReceipt`` / ``ap2.PaymentReceipt``.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from mudrika.cli._demo._identities import MERCHANT_NAME, Party, Provisioned, iso
from mudrika.cli._demo._verified import Verified, keep_report
from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.jose import TrustedKey, verify_compact
from mudrika.crypto.keystore import write_file_atomic
from mudrika.errors import InvalidInput
from mudrika.payments.trustroot import TrustRoot, load_trust_root
from mudrika.payments.v02 import (
    VCT_CHECKOUT,
    VCT_CHECKOUT_OPEN,
    VCT_PAYMENT,
    VCT_PAYMENT_OPEN,
    HopExpectation,
    V02Evidence,
    append_hop,
    issue_open_mandate,
    present_root,
    receipt_reference,
    sd_digest,
    sign_checkout_jwt,
    sign_receipt,
    verify_v02,
)
from mudrika.payments.v02.bundle import (
    BUNDLE_FORMAT_V02,
    inspect_v02_bundle,
    load_v02_bundle,
    parse_v02_bundle,
)
from mudrika.payments.v02.models import Checkout, parse_model
from mudrika.payments.v02.profile import CHECKOUT_JWT_ALGORITHMS
from mudrika.stores.replay import ReplayStore

__all__ = [
    "CHECKOUT_KEY",
    "CHECKOUT_OFFER_KEY",
    "CHECKOUT_RECEIPT_KEY",
    "CHECKOUT_REQUEST_KEY",
    "PAYMENT_KEY",
    "PAYMENT_RECEIPT_KEY",
    "OpenMandates",
    "V02Sale",
    "close_mandates",
    "issue_open_mandates",
    "merchant_offer",
    "merchant_settle",
    "verify_v02_file",
    "write_v02_bundle",
]

CHECKOUT_KEY: Final = "ap2.mandates.CheckoutMandateSdJwt"
PAYMENT_KEY: Final = "ap2.mandates.PaymentMandateSdJwt"
CHECKOUT_RECEIPT_KEY: Final = "ap2.CheckoutReceipt"
PAYMENT_RECEIPT_KEY: Final = "ap2.PaymentReceipt"
CHECKOUT_REQUEST_KEY: Final = "mudrika.demo.checkout_request"
"""The demo's own request for a signed checkout (the SKUs wanted); AP2 leaves this step to UCP."""
CHECKOUT_OFFER_KEY: Final = "mudrika.demo.checkout_offer"
"""The merchant's answer: the checkout JWT and the two nonces the closing hops must carry."""

#: What the merchant sells under v0.2: SKU -> (title, unit price in minor units, quantity).
ITEMS: Final[dict[str, tuple[str, int, int]]] = {
    "TR-GTX-42": ("Trail Runner GTX, EU 42", 12000, 1),
    "SOCK-MER-2": ("Merino running socks, 2 pairs", 1849, 1),
}
INSTRUMENT: Final[dict[str, str]] = {"id": "pi-demo-card", "type": "card", "description": "demo card"}
_WEBSITE: Final = "https://merchant.demo.example"


def merchant_of(merchant: Party) -> dict[str, str]:
    """The merchant as v0.2 mandates name it (checkout, allowed merchants, payee)."""
    return {"id": merchant.did, "name": MERCHANT_NAME, "website": _WEBSITE}


@dataclass(frozen=True, slots=True)
class OpenMandates:
    """The agent provider's open mandates, presented: the roots the shopping agent closes."""

    checkout_root: str = field(repr=False)
    payment_root: str = field(repr=False)


def issue_open_mandates(world: Provisioned, *, now: float) -> OpenMandates:
    """The user's constraints, issued by the agent provider and bound to the shopping agent's key."""
    merchant = merchant_of(world.merchant)
    agent_jwk = world.shopper.key.public_key.to_jwk()
    lifetime = {"iat": int(now) - 60, "exp": int(now) + 3600}
    open_checkout = {
        "vct": VCT_CHECKOUT_OPEN,
        "constraints": [
            {
                "type": "checkout.line_items",
                "items": [
                    {
                        "id": sku.lower(),
                        "acceptable_items": [{"id": sku, "title": title}],
                        "quantity": quantity,
                    }
                    for sku, (title, _, quantity) in ITEMS.items()
                ],
            },
            {"type": "checkout.allowed_merchants", "allowed": [merchant]},
        ],
        "cnf": {"jwk": agent_jwk},
        **lifetime,
    }
    issuer = world.issuer
    checkout_root = present_root(
        issue_open_mandate(
            open_checkout, issuer=issuer.did, issuer_key=issuer.key, kid=issuer.kid, now=now - 60
        )
    )
    open_payment = {
        "vct": VCT_PAYMENT_OPEN,
        "constraints": [
            {"type": "payment.amount_range", "currency": "USD", "min": 0, "max": 15000},
            {"type": "payment.allowed_payees", "allowed": [merchant]},
            {"type": "payment.allowed_payment_instruments", "allowed": [dict(INSTRUMENT)]},
            {"type": "payment.reference", "conditional_transaction_id": sd_digest(checkout_root)},
        ],
        "cnf": {"jwk": agent_jwk},
        "payment_instrument": dict(INSTRUMENT),
        **lifetime,
    }
    payment_root = present_root(
        issue_open_mandate(
            open_payment, issuer=issuer.did, issuer_key=issuer.key, kid=issuer.kid, now=now - 60
        )
    )
    return OpenMandates(checkout_root=checkout_root, payment_root=payment_root)


def merchant_offer(merchant: Party, skus: list[str]) -> tuple[dict[str, Any], str, str]:
    """The merchant's signed checkout for ``skus`` and the nonces of the two closing hops."""
    lines = []
    total = 0
    for index, sku in enumerate(skus, 1):
        if sku not in ITEMS:
            raise InvalidInput("the merchant does not sell this item", code="nothing_to_sell")
        title, price, quantity = ITEMS[sku]
        total += price * quantity
        lines.append(
            {
                "id": f"line_{index}",
                "item": {"id": sku, "title": title, "price": price},
                "quantity": quantity,
                "totals": [{"type": "total", "amount": price * quantity}],
            }
        )
    checkout = {
        "id": "chk_" + secrets.token_hex(4),
        "merchant": merchant_of(merchant),
        "line_items": lines,
        "status": "ready_for_complete",
        "currency": "USD",
        "totals": [{"type": "subtotal", "amount": total}, {"type": "total", "amount": total}],
        "links": [],
    }
    checkout_jwt = sign_checkout_jwt(checkout, merchant_key=merchant.key, kid=merchant.kid)
    offer = {
        "checkout_jwt": checkout_jwt,
        "checkout_nonce": secrets.token_urlsafe(16),
        "payment_nonce": secrets.token_urlsafe(16),
    }
    return offer, offer["checkout_nonce"], offer["payment_nonce"]


def close_mandates(
    roots: OpenMandates, offer: dict[str, Any], *, shopper: Party, merchant: Party, now: float
) -> tuple[str, str]:
    """The shopping agent closes both mandates: key-binding hops to the merchant with its nonces."""
    checkout_jwt = str(offer["checkout_jwt"])
    checkout_chain = append_hop(
        roots.checkout_root,
        {"vct": VCT_CHECKOUT, "checkout_jwt": checkout_jwt, "checkout_hash": sd_digest(checkout_jwt)},
        holder_key=shopper.key,
        audience=merchant.did,
        nonce=str(offer["checkout_nonce"]),
        now=now,
    )
    checkout = _signed_checkout(checkout_jwt, merchant)
    payment_chain = append_hop(
        roots.payment_root,
        {
            "vct": VCT_PAYMENT,
            "transaction_id": sd_digest(checkout_jwt),
            "payee": merchant_of(merchant),
            "payment_amount": {"amount": checkout.total.amount, "currency": checkout.currency},
            "payment_instrument": dict(INSTRUMENT),
        },
        holder_key=shopper.key,
        audience=merchant.did,
        nonce=str(offer["payment_nonce"]),
        now=now,
    )
    return checkout_chain, payment_chain


def _signed_checkout(checkout_jwt: str, merchant: Party) -> Checkout:
    """The checkout the shopping agent is about to pay, read only once the merchant's signature
    verified under the merchant's own key: the agent pays the total the merchant signed, for the
    items the merchant put in the checkout, never a figure of its own."""
    public = merchant.key.public_key
    trusted = TrustedKey(
        key=public, algorithms=CHECKOUT_JWT_ALGORITHMS & public.algorithms, kid=None, owner=merchant.did
    )
    verified = verify_compact(checkout_jwt, key=trusted)
    return parse_model(Checkout, loads_strict(verified.payload), what="checkout")


@dataclass(frozen=True, slots=True)
class V02Sale:
    """A v0.2 purchase the merchant accepted: the chains, its receipts and the nonces it issued."""

    evidence: V02Evidence
    audience: str
    checkout_nonce: str = field(repr=False)
    payment_nonce: str = field(repr=False)
    accepted_at: float
    total_minor: int
    currency: str


def merchant_settle(
    merchant: Party,
    checkout_chain: str,
    payment_chain: str,
    *,
    trust_root: TrustRoot,
    checkout_nonce: str,
    payment_nonce: str,
    replay_store: ReplayStore,
) -> V02Sale:
    """Verify both chains (raising on the first failed check), then sign the two receipts."""
    now = time.time()
    evidence = V02Evidence(checkout_chain=checkout_chain, payment_chain=payment_chain)
    verified = verify_v02(
        evidence,
        trust_root=trust_root,
        checkout_hops=[HopExpectation(merchant.did, checkout_nonce)],
        payment_hops=[HopExpectation(merchant.did, payment_nonce)],
        now=now,
        usage=None,
        replay_store=replay_store,
    )
    checkout_receipt = _receipt(
        merchant, "checkout", checkout_chain, now=now, ids={"order_id": "order_" + secrets.token_hex(4)}
    )
    payment_receipt = _receipt(
        merchant,
        "payment",
        payment_chain,
        now=now,
        ids={
            "payment_id": "pay_" + secrets.token_hex(4),
            "psp_confirmation_id": "psp_demo_" + secrets.token_hex(4),
            "network_confirmation_id": "net_demo_" + secrets.token_hex(4),
        },
    )
    total = verified.checkout.total
    return V02Sale(
        evidence=V02Evidence(
            checkout_chain=checkout_chain,
            payment_chain=payment_chain,
            checkout_receipt=checkout_receipt,
            payment_receipt=payment_receipt,
        ),
        audience=merchant.did,
        checkout_nonce=checkout_nonce,
        payment_nonce=payment_nonce,
        accepted_at=now,
        total_minor=int(total.amount),
        currency=verified.checkout.currency,
    )


def _receipt(
    merchant: Party, kind: Literal["checkout", "payment"], chain: str, *, now: float, ids: dict[str, str]
) -> str:
    """The merchant's signed receipt for the purchase ``chain`` closes.

    Both kinds carry the same claims first (success, the merchant, the time, the digest of the
    closing hop the receipt answers), then the identifiers of their own kind (order, payment).
    """
    claims = {
        "status": "Success",
        "iss": merchant.did,
        "iat": int(now),
        "reference": receipt_reference(chain),
        **ids,
    }
    return sign_receipt(claims, kind=kind, key=merchant.key, kid=merchant.kid)


def write_v02_bundle(sale: V02Sale, path: Path) -> Path:
    """The merchant's v0.2 evidence: both chains, both receipts, the hops' audience and nonces."""
    document = {
        "format": BUNDLE_FORMAT_V02,
        "evidence_time": iso(sale.accepted_at),
        "description": "mudrika demo: one AP2 v0.2 purchase over A2A, as the merchant accepted it",
        "checkout_chain": sale.evidence.checkout_chain,
        "payment_chain": sale.evidence.payment_chain,
        "checkout_receipt": sale.evidence.checkout_receipt,
        "payment_receipt": sale.evidence.payment_receipt,
        "expectations": {
            "checkout_hops": [{"aud": sale.audience, "nonce": sale.checkout_nonce}],
            "payment_hops": [{"aud": sale.audience, "nonce": sale.payment_nonce}],
        },
    }
    bundle = parse_v02_bundle(json.dumps(document))
    return write_file_atomic(path, (bundle.to_json() + "\n").encode(), force=False, private_dir=False)


def verify_v02_file(bundle_path: Path, trust_root_path: Path, sale: V02Sale, *, html: Path) -> Verified:
    """Verify a v0.2 bundle offline against the trust-root file, with the merchant's recorded nonces."""
    title = "mudrika demo: AP2 v0.2 purchase"
    report = inspect_v02_bundle(
        load_v02_bundle(bundle_path),
        trust_root=load_trust_root(trust_root_path),
        checkout_hops=[HopExpectation(sale.audience, sale.checkout_nonce, source="analyst")],
        payment_hops=[HopExpectation(sale.audience, sale.payment_nonce, source="analyst")],
    )
    return keep_report(report, title=title, html=html)
