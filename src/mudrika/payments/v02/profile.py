"""What the AP2 v0.2 profile signs: credential types, hop types, algorithms and caps, in one place.

Why one module: signers (:mod:`mudrika.payments.v02.signing`) and the verifier read the same
constants, so they can never disagree about a ``vct`` suffix or a ``typ``.  The values come from the
AP2 v0.2 specification (``specification.md`` "Mandate Versioning", ``agent_authorization.md``
"Mandates using SD-JWT VCs") and its JSON Schemas (``mandate.checkout.open.1``,
``mandate.checkout.1``, ``mandate.payment.open.1``, ``mandate.payment.1``).
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = [
    "CHAIN_SEPARATOR",
    "CHECKOUT_JWT_ALGORITHMS",
    "CLOSED_VCT",
    "DELEGATE_CLAIM",
    "HOP_ALGORITHMS",
    "INTERMEDIATE_TYP",
    "MAX_CHAIN_BYTES",
    "MAX_HOPS",
    "OPEN_VCT",
    "RECEIPT_ALGORITHMS",
    "ROOT_TYPS",
    "SD_ALGORITHMS",
    "SIGNED_ROOT_TYP",
    "TERMINAL_TYP",
    "VCT_CHECKOUT",
    "VCT_CHECKOUT_OPEN",
    "VCT_PAYMENT",
    "VCT_PAYMENT_OPEN",
    "MandateKind",
]

MandateKind = Literal["checkout", "payment"]

#: The ``vct`` values, matched exactly including the version suffix (specification "Mandate Versioning").
VCT_CHECKOUT_OPEN: Final = "mandate.checkout.open.1"
VCT_CHECKOUT: Final = "mandate.checkout.1"
VCT_PAYMENT_OPEN: Final = "mandate.payment.open.1"
VCT_PAYMENT: Final = "mandate.payment.1"
OPEN_VCT: Final[dict[str, str]] = {"checkout": VCT_CHECKOUT_OPEN, "payment": VCT_PAYMENT_OPEN}
CLOSED_VCT: Final[dict[str, str]] = {"checkout": VCT_CHECKOUT, "payment": VCT_PAYMENT}

#: Delegate SD-JWT: mandate content sits in the one disclosed element of this array claim.
DELEGATE_CLAIM: Final = "delegate_payload"
#: Tokens of a delegation chain are joined by an empty disclosure: ``<root>~<d>~~<hop>~<d>~``.
CHAIN_SEPARATOR: Final = "~~"
#: KB-SD-JWT hop types: an intermediate hop delegates further (carries ``cnf``), a terminal one closes.
INTERMEDIATE_TYP: Final = "kb+sd-jwt+kb"
TERMINAL_TYP: Final = "kb+sd-jwt"
#: Root SD-JWT ``typ`` values accepted: SD-JWT VC's media type, and the value the official SDK and the
#: specification's examples carry (``example+sd-jwt``, the default of PyPI ``sd-jwt``).  Ours issue
#: :data:`SIGNED_ROOT_TYP`.
ROOT_TYPS: Final = frozenset({"dc+sd-jwt", "example+sd-jwt"})
SIGNED_ROOT_TYP: Final = "dc+sd-jwt"

#: ``_sd_alg`` allow-list (absent means sha-256, RFC 9901 §4.1.1).
SD_ALGORITHMS: Final = frozenset({"sha-256"})
#: ``cnf.jwk`` is a public P-256 key (``types/jwk.json``), so every hop is ES256.
HOP_ALGORITHMS: Final = frozenset({"ES256"})
#: The checkout JWT must use a randomised signature scheme (specification "Payment Mandate": a
#: deterministic one would let a rainbow table invert ``transaction_id``), so no EdDSA here.
CHECKOUT_JWT_ALGORITHMS: Final = frozenset({"ES256", "ES384", "ES256K", "PS256"})
RECEIPT_ALGORITHMS: Final = frozenset({"ES256", "ES384", "ES256K", "EdDSA", "Ed25519", "PS256"})

#: Caps applied before anything is decoded.
MAX_CHAIN_BYTES: Final = 256 * 1024
MAX_HOPS: Final = 8
