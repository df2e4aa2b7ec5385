"""Builds complete AP2 v0.2 transactions (checkout + payment chains, receipts, trust root) for tests.

Every piece is signed by mudrika's own v0.2 signers with fresh keys; :func:`build` takes hooks that
change a mandate *before* it is signed, so a test can produce a validly signed transaction that
breaks exactly one rule.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.crypto.statuslist import StatusReference
from mudrika.payments.report import VerificationReport
from mudrika.payments.trustroot import TrustRoot, parse_trust_root
from mudrika.payments.v02 import (
    VCT_CHECKOUT,
    VCT_CHECKOUT_OPEN,
    VCT_PAYMENT,
    VCT_PAYMENT_OPEN,
    HopExpectation,
    V02Evidence,
    append_hop,
    inspect_v02,
    issue_open_mandate,
    present_root,
    receipt_reference,
    sd_digest,
    sign_checkout_jwt,
    sign_receipt,
)
from mudrika.payments.v02.bundle import BUNDLE_FORMAT_V02

__all__ = [
    "AGENT_PROVIDER",
    "AGENT_PROVIDER_KID",
    "CHECKOUT_NONCE",
    "CP_AUDIENCE",
    "FIXTURE_TIME",
    "MERCHANT_DID",
    "MERCHANT_KID",
    "PAYMENT_NONCE",
    "SIGNING_ROLES",
    "Keys",
    "Signer",
    "Transaction",
    "build",
    "decode_segment",
    "inspect",
    "refused",
    "replace_hop_jwt",
    "resign",
    "trust_root_for",
    "write_fixture",
]

AGENT_PROVIDER: Final = "https://agent-provider.example"
AGENT_PROVIDER_KID: Final = "ap-key-1"
MERCHANT_DID: Final = "did:web:merchant.example"
MERCHANT_KID: Final = MERCHANT_DID + "#key-1"
CP_AUDIENCE: Final = "https://credentials.example"
CHECKOUT_NONCE: Final = "checkout-nonce-7f3a"
PAYMENT_NONCE: Final = "payment-nonce-91c2"
MERCHANT: Final[dict[str, str]] = {
    "id": MERCHANT_DID,
    "name": "Demo Merchant",
    "website": "https://merchant.example",
}
INSTRUMENT: Final[dict[str, str]] = {"id": "pi-card-1", "type": "card", "description": "card 1234"}

Hook = Callable[[dict[str, Any]], None]

#: The v0.2 roles whose signing key the verifier anchors in the trust root (the anchoring matrix
#: overrides each one's key and kid in turn).
SIGNING_ROLES: Final = ("root_issuer", "checkout_jwt", "checkout_receipt", "payment_receipt")


@dataclass(frozen=True)
class Signer:
    """Who signs one role's token: the key and the kid its header names."""

    key: KeyPair
    kid: str


def _noop(_: dict[str, Any]) -> None:
    return None


@dataclass
class Keys:
    issuer: KeyPair = field(default_factory=lambda: KeyPair.generate(KeyType.P256))
    merchant: KeyPair = field(default_factory=lambda: KeyPair.generate(KeyType.P256))
    agent: KeyPair = field(default_factory=lambda: KeyPair.generate(KeyType.P256))


@dataclass
class Transaction:
    keys: Keys
    trust_root: TrustRoot
    now: int
    checkout: dict[str, Any]
    checkout_jwt: str
    open_checkout: dict[str, Any]
    closed_checkout: dict[str, Any]
    open_payment: dict[str, Any]
    closed_payment: dict[str, Any]
    checkout_root: str
    payment_root: str
    checkout_chain: str
    payment_chain: str
    checkout_receipt: str
    payment_receipt: str
    checkout_hops: tuple[HopExpectation, ...] = (HopExpectation(MERCHANT_DID, CHECKOUT_NONCE),)
    payment_hops: tuple[HopExpectation, ...] = (HopExpectation(CP_AUDIENCE, PAYMENT_NONCE),)

    def evidence(self, *, receipts: bool = True, payment: bool = True) -> V02Evidence:
        return V02Evidence(
            checkout_chain=self.checkout_chain,
            payment_chain=self.payment_chain if payment else None,
            checkout_receipt=self.checkout_receipt if receipts else None,
            payment_receipt=self.payment_receipt if receipts and payment else None,
        )

    def verifier_arguments(self) -> dict[str, Any]:
        """The verifier's keyword arguments under which this transaction is valid (its trust root, hop
        expectations and time; no usage ledger), so each test states only what it changes.  The
        replay store is left to the caller: whether anything is consumed is what a test decides."""
        return {
            "trust_root": self.trust_root,
            "checkout_hops": self.checkout_hops,
            "payment_hops": self.payment_hops,
            "now": self.now,
            "usage": None,
        }


def inspect(
    transaction: Transaction, evidence: V02Evidence | None = None, **changes: Any
) -> VerificationReport:
    """The dispute-analysis report (nothing consumed) of ``evidence`` (default: the transaction's own),
    under the transaction's verifier arguments with ``changes`` applied."""
    arguments = {**transaction.verifier_arguments(), "replay_store": None, **changes}
    return inspect_v02(evidence or transaction.evidence(), **arguments)


def refused(report: VerificationReport, check_id: str, code: str) -> None:
    """The named check failed with ``code``, and so the whole report did."""
    check = report.by_id(check_id)
    assert check.failed, check
    assert check.code == code, check
    assert report.verdict == "FAILED"


def trust_root_for(keys: Keys, **overrides: Any) -> TrustRoot:
    issuer_jwk = {**keys.issuer.public_key.to_jwk(), "kid": AGENT_PROVIDER_KID}
    merchant_jwk = {**keys.merchant.public_key.to_jwk(), "kid": MERCHANT_KID}
    document: dict[str, Any] = {
        "format": "mudrika.trust-root/v1",
        "issuers": {
            AGENT_PROVIDER: {"jwks": {"keys": [issuer_jwk]}, "vct": [VCT_CHECKOUT_OPEN, VCT_PAYMENT_OPEN]}
        },
        "merchants": {MERCHANT_DID: {"jwks": {"keys": [merchant_jwk]}}},
        "algorithms": ["ES256"],
        "leeway_seconds": 0.0,
        "max_age_seconds": {"key_binding": 300.0},
    }
    document.update(overrides)
    return parse_trust_root(document)


def build(
    *,
    now: int | None = None,
    keys: Keys | None = None,
    checkout_hook: Hook = _noop,
    open_checkout_hook: Hook = _noop,
    closed_checkout_hook: Hook = _noop,
    open_payment_hook: Hook = _noop,
    closed_payment_hook: Hook = _noop,
    checkout_receipt_hook: Hook = _noop,
    payment_receipt_hook: Hook = _noop,
    issuer: str = AGENT_PROVIDER,
    signers: Mapping[str, Signer] | None = None,
    trust_root: TrustRoot | None = None,
    root_status: StatusReference | None = None,
) -> Transaction:
    """A complete, valid transaction (unless a hook breaks it) issued at ``now``.

    ``issuer`` names the open mandates' issuer (``iss``); ``signers`` replaces the key and kid of any
    of :data:`SIGNING_ROLES` (default: the issuer's key under :data:`AGENT_PROVIDER_KID`, the
    merchant's under :data:`MERCHANT_KID`); ``trust_root`` replaces the default root; ``root_status``
    puts that Token Status List entry into both open mandates."""
    at = int(time.time()) if now is None else now
    keys = keys or Keys()
    unknown = set(signers or {}) - set(SIGNING_ROLES)
    assert not unknown, unknown
    default = {
        "root_issuer": Signer(keys.issuer, AGENT_PROVIDER_KID),
        "checkout_jwt": Signer(keys.merchant, MERCHANT_KID),
        "checkout_receipt": Signer(keys.merchant, MERCHANT_KID),
        "payment_receipt": Signer(keys.merchant, MERCHANT_KID),
    }
    signer = {**default, **(signers or {})}
    agent_jwk = keys.agent.public_key.to_jwk()
    checkout: dict[str, Any] = {
        "id": "chk_1",
        "merchant": dict(MERCHANT),
        "line_items": [
            {
                "id": "line_1",
                "item": {"id": "SKU-SHOE-9", "title": "Gold sneaker", "price": 19900},
                "quantity": 1,
                "totals": [{"type": "total", "amount": 19900}],
            },
            {
                "id": "line_2",
                "item": {"id": "SKU-SOCKS", "title": "Socks", "price": 500},
                "quantity": 2,
                "totals": [{"type": "total", "amount": 1000}],
            },
        ],
        "status": "ready_for_complete",
        "currency": "USD",
        "totals": [{"type": "subtotal", "amount": 20900}, {"type": "total", "amount": 20900}],
        "links": [],
    }
    checkout_hook(checkout)
    checkout_jwt = sign_checkout_jwt(
        checkout, merchant_key=signer["checkout_jwt"].key, kid=signer["checkout_jwt"].kid
    )
    open_checkout: dict[str, Any] = {
        "vct": VCT_CHECKOUT_OPEN,
        "constraints": [
            {
                "type": "checkout.line_items",
                "items": [
                    {
                        "id": "shoes",
                        "acceptable_items": [
                            {"id": "SKU-SHOE-9", "title": "Gold sneaker"},
                            {"id": "SKU-SHOE-10", "title": "Gold sneaker 10"},
                        ],
                        "quantity": 1,
                    },
                    {
                        "id": "socks",
                        "acceptable_items": [{"id": "SKU-SOCKS", "title": "Socks"}],
                        "quantity": 2,
                    },
                ],
            },
            {"type": "checkout.allowed_merchants", "allowed": [dict(MERCHANT)]},
        ],
        "cnf": {"jwk": agent_jwk},
        "iat": at - 60,
        "exp": at + 3600,
    }
    open_checkout_hook(open_checkout)
    root_signer = signer["root_issuer"]
    checkout_root_sd = issue_open_mandate(
        open_checkout,
        issuer=issuer,
        issuer_key=root_signer.key,
        kid=root_signer.kid,
        now=at - 60,
        status=root_status,
    )
    checkout_root = present_root(checkout_root_sd)
    closed_checkout: dict[str, Any] = {
        "vct": VCT_CHECKOUT,
        "checkout_jwt": checkout_jwt,
        "checkout_hash": sd_digest(checkout_jwt),
    }
    closed_checkout_hook(closed_checkout)
    checkout_chain = append_hop(
        checkout_root,
        closed_checkout,
        holder_key=keys.agent,
        audience=MERCHANT_DID,
        nonce=CHECKOUT_NONCE,
        now=at,
    )
    open_payment: dict[str, Any] = {
        "vct": VCT_PAYMENT_OPEN,
        "constraints": [
            {"type": "payment.amount_range", "currency": "USD", "min": 0, "max": 25000},
            {"type": "payment.allowed_payees", "allowed": [dict(MERCHANT)]},
            {"type": "payment.allowed_payment_instruments", "allowed": [dict(INSTRUMENT)]},
            {"type": "payment.reference", "conditional_transaction_id": sd_digest(checkout_root)},
        ],
        "cnf": {"jwk": agent_jwk},
        "payment_instrument": dict(INSTRUMENT),
        "iat": at - 60,
        "exp": at + 3600,
    }
    open_payment_hook(open_payment)
    payment_root = present_root(
        issue_open_mandate(
            open_payment,
            issuer=issuer,
            issuer_key=root_signer.key,
            kid=root_signer.kid,
            now=at - 60,
            status=root_status,
        )
    )
    closed_payment: dict[str, Any] = {
        "vct": VCT_PAYMENT,
        "transaction_id": sd_digest(checkout_jwt),
        "payee": dict(MERCHANT),
        "payment_amount": {"amount": 20900, "currency": "USD"},
        "payment_instrument": dict(INSTRUMENT),
    }
    closed_payment_hook(closed_payment)
    payment_chain = append_hop(
        payment_root, closed_payment, holder_key=keys.agent, audience=CP_AUDIENCE, nonce=PAYMENT_NONCE, now=at
    )
    checkout_claims: dict[str, Any] = {
        "status": "Success",
        "iss": MERCHANT_DID,
        "iat": at,
        "reference": receipt_reference(checkout_chain),
        "order_id": "order-1",
    }
    checkout_receipt_hook(checkout_claims)
    payment_claims: dict[str, Any] = {
        "status": "Success",
        "iss": MERCHANT_DID,
        "iat": at,
        "reference": receipt_reference(payment_chain),
        "payment_id": "pay-1",
        "psp_confirmation_id": "psp-1",
        "network_confirmation_id": "net-1",
    }
    payment_receipt_hook(payment_claims)
    return Transaction(
        keys=keys,
        trust_root=trust_root if trust_root is not None else trust_root_for(keys),
        now=at,
        checkout=checkout,
        checkout_jwt=checkout_jwt,
        open_checkout=open_checkout,
        closed_checkout=closed_checkout,
        open_payment=open_payment,
        closed_payment=closed_payment,
        checkout_root=checkout_root,
        payment_root=payment_root,
        checkout_chain=checkout_chain,
        payment_chain=payment_chain,
        checkout_receipt=sign_receipt(
            checkout_claims,
            kind="checkout",
            key=signer["checkout_receipt"].key,
            kid=signer["checkout_receipt"].kid,
        ),
        payment_receipt=sign_receipt(
            payment_claims,
            kind="payment",
            key=signer["payment_receipt"].key,
            kid=signer["payment_receipt"].kid,
        ),
    )


# -- crafting tokens our signers refuse to make ------------------------------------------------------


def decode_segment(segment: str) -> dict[str, Any]:
    value = json.loads(b64url_decode(segment))
    assert isinstance(value, dict)
    return value


def resign(
    jwt: str, key: KeyPair, *, header: dict[str, Any] | None = None, payload: dict[str, Any] | None = None
) -> str:
    """Re-sign ``jwt`` with ``key`` after replacing members of its header and payload (``None``
    values delete a member): a validly signed token with exactly the attacker's changes."""
    encoded_header, encoded_payload, _ = jwt.split(".")
    parts = [decode_segment(encoded_header), decode_segment(encoded_payload)]
    for part, changes in zip(parts, (header or {}, payload or {}), strict=True):
        for name, value in changes.items():
            if value is None:
                part.pop(name, None)
            else:
                part[name] = value
    signing_input = ".".join(
        b64url_encode(json.dumps(part, separators=(",", ":")).encode()) for part in parts
    )
    return signing_input + "." + b64url_encode(key.sign(signing_input.encode("ascii"), "ES256"))


def replace_hop_jwt(chain: str, index: int, new_jwt: str) -> str:
    """``chain`` with the issuer-signed JWT of token ``index`` replaced (its disclosures kept)."""
    tokens = chain.split("~~")
    rest = tokens[index].split("~", 1)
    tokens[index] = new_jwt + ("~" + rest[1] if len(rest) > 1 else "")
    return "~~".join(tokens)


# -- the fixture of fixtures/ap2-v02 ------------------------------------------------------------------

#: 2026-05-01T12:00:00Z, the evidence time of the committed fixture.
FIXTURE_TIME: Final = 1777636800


def write_fixture(directory: str) -> None:
    """(Re)write ``fixtures/ap2-v02``: a complete transaction bundle and the trust root that anchors it.

    Keys are fresh each run (ECDSA signatures are randomised anyway), so regenerating changes the
    bytes but not the verdicts the tests pin.
    """
    transaction = build(now=FIXTURE_TIME)
    target = Path(directory)
    bundle = bundle_document(transaction)
    (target / "bundle.json").write_text(json.dumps(bundle, indent=2) + "\n", encoding="utf-8")
    (target / "trust-root.json").write_text(transaction.trust_root.to_json() + "\n", encoding="utf-8")


def bundle_document(transaction: Transaction) -> dict[str, Any]:
    """The v0.2 evidence bundle of a transaction built at :data:`FIXTURE_TIME`."""
    return {
        "format": BUNDLE_FORMAT_V02,
        "evidence_time": "2026-05-01T12:00:00Z",
        "description": "A shoe and two pairs of socks bought by an agent under open checkout and payment mandates.",
        "checkout_chain": transaction.checkout_chain,
        "payment_chain": transaction.payment_chain,
        "checkout_receipt": transaction.checkout_receipt,
        "payment_receipt": transaction.payment_receipt,
        "expectations": {
            "checkout_hops": [{"aud": MERCHANT_DID, "nonce": CHECKOUT_NONCE}],
            "payment_hops": [{"aud": CP_AUDIENCE, "nonce": PAYMENT_NONCE}],
        },
    }
