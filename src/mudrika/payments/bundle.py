"""Evidence bundles (``mudrika.evidence/v1``): everything a dispute needs to re-verify a chain offline.

Why a bundle: months after a payment, keys have rotated, a did:web server may be gone, and a
resolver would answer with *today's* keys.  A dispute must be decided on the key material and the
expectations that held *when the payment was made*.  So the bundle carries the three mandates as
raw JSON (the bytes that were hashed and signed), a snapshot of every key needed (DID documents,
an issuer's JWKS, pinned keys), the verifier's expectations (audiences, nonce, trusted issuers,
algorithms) and the evidence time.  :func:`inspect_bundle` verifies it without ever touching the
network: its key source is :meth:`~mudrika.payments.chain.KeyMaterial.offline_snapshot`.

Format (``docs/payments.md`` "Evidence bundle format"); we own it, so unknown members are refused::

    {"format": "mudrika.evidence/v1",
     "evidence_time": "2025-10-01T12:21:10Z",
     "description": "optional free text",
     "mandates": {"intent": {...}, "cart": {...}, "payment": {...}},
     "expectations": {"merchant_audience": "...", "kb_audience": "...", "kb_nonce": "...",
                      "trusted_issuers": ["..."], "algorithms": ["ES256", "EdDSA"],
                      "leeway_seconds": 0, "kb_max_age_seconds": 300},
     "keys": {"did_documents": {"did:web:...": {...}},
              "jwks": {"https://issuer.example": {"keys": [...]}},
              "pinned": {"<kid>": {"owner": "...", "jwk": {...}}},
              "fetched": {"did:web:...": {"at": "2025-10-01T12:19:10Z", "via": "https GET ..."}}},
     "status_lists": [{"uri": "https://issuer.example/statuslists/1", "token": "<statuslist+jwt>",
                       "at": "2025-10-01T12:21:09Z", "via": "https GET ..."}]}

Parsing is strict (:func:`~mudrika.crypto.jcs.loads_strict`: no duplicate keys, no NaN, safe
integers) and capped (:data:`MAX_BUNDLE_BYTES`, depth 64, 64 DID documents / JWKS / pinned keys).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from mudrika.crypto.frozenjson import thaw
from mudrika.crypto.jcs import canonicalize, loads_strict
from mudrika.net.limits import read_capped
from mudrika.payments._load import AwareTimestamp, validate_bundle
from mudrika.payments._time import Time, epoch, iso
from mudrika.payments.chain import KeyMaterial, inspect_chain
from mudrika.payments.credential_status import RecordedStatusList
from mudrika.payments.models import CartMandate, IntentMandate, PaymentMandate, Received, parse_timestamp
from mudrika.payments.profile import DEFAULT_ALGORITHMS, KB_MAX_AGE, MAX_LEEWAY
from mudrika.payments.report import VerificationReport
from mudrika.payments.trustroot import TrustRoot, UnsafeNoTrustRoot
from mudrika.stores.replay import MemoryReplayStore, ReplayStore

__all__ = [
    "BUNDLE_FORMAT",
    "MAX_BUNDLE_BYTES",
    "BundleExpectations",
    "BundleKeys",
    "BundleMandates",
    "EvidenceBundle",
    "FetchRecord",
    "build_bundle",
    "bundle_from_value",
    "inspect_bundle",
    "load_bundle",
    "parse_bundle",
]

BUNDLE_FORMAT: Final = "mudrika.evidence/v1"
MAX_BUNDLE_BYTES: Final = 4 * 1024 * 1024
_MAX_ENTRIES: Final = 64
_MAX_TEXT: Final = 2048


class _Owned(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, hide_input_in_errors=True)


class BundleMandates(_Owned):
    """The three mandates exactly as they were received (raw JSON objects)."""

    intent: dict[str, Any]
    cart: dict[str, Any]
    payment: dict[str, Any]


class BundleExpectations(_Owned):
    """What the verifier expected at the time of the payment, *as the bundle states it* (evidence).

    The analyst's trust root and command line override every value; one taken from here leaves the
    verdict UNANCHORED.  ``trusted_issuers`` is consulted only when no trust root is given (and the
    verdict is then UNANCHORED); ``algorithms``, ``leeway_seconds`` and ``kb_max_age_seconds``
    record what the original verifier used and are never consulted: the trust root decides them.
    """

    merchant_audience: str = Field(min_length=1, max_length=_MAX_TEXT)
    kb_audience: str = Field(min_length=1, max_length=_MAX_TEXT)
    kb_nonce: str = Field(min_length=1, max_length=_MAX_TEXT)
    trusted_issuers: list[str] = Field(default_factory=list, max_length=_MAX_ENTRIES)
    algorithms: list[str] = Field(
        default_factory=lambda: sorted(DEFAULT_ALGORITHMS), min_length=1, max_length=16
    )
    leeway_seconds: float = Field(default=0.0, ge=0.0, le=MAX_LEEWAY)
    kb_max_age_seconds: float = Field(default=KB_MAX_AGE, gt=0.0, le=86400.0)


class FetchRecord(_Owned):
    """When and how a key snapshot was fetched, as the bundle's author recorded it."""

    at: AwareTimestamp
    via: str = Field(min_length=1, max_length=_MAX_TEXT)


class BundleKeys(_Owned):
    """The key material snapshot: nothing else is consulted in dispute mode (and it is evidence)."""

    did_documents: dict[str, dict[str, Any]] = Field(default_factory=dict, max_length=_MAX_ENTRIES)
    jwks: dict[str, dict[str, Any]] = Field(default_factory=dict, max_length=_MAX_ENTRIES)
    pinned: dict[str, dict[str, Any]] = Field(default_factory=dict, max_length=_MAX_ENTRIES)
    fetched: dict[str, FetchRecord] = Field(default_factory=dict, max_length=_MAX_ENTRIES)
    """Owner (DID or issuer) → when and how its snapshot was fetched (shown with each key)."""


class EvidenceBundle(_Owned):
    """A parsed ``mudrika.evidence/v1`` bundle."""

    format: Literal["mudrika.evidence/v1"]
    evidence_time: AwareTimestamp
    description: str | None = Field(default=None, max_length=_MAX_TEXT)
    mandates: BundleMandates
    expectations: BundleExpectations
    keys: BundleKeys
    status_lists: list[RecordedStatusList] | None = Field(default=None, min_length=1, max_length=16)
    """The Token Status List tokens the merchant checked at the purchase (each with when and from
    where): the evidence the credential's status is judged on as of the purchase."""

    @property
    def evidence_at(self) -> datetime:
        """The evidence time as an aware datetime."""
        return parse_timestamp(self.evidence_time)

    def key_source(self) -> KeyMaterial:
        """An offline key source over exactly this bundle's key material (never the network)."""
        keys = self.keys
        notes = {
            owner: f"carried in the bundle; fetched {record.at} via {record.via}"
            for owner, record in keys.fetched.items()
        }
        for owner in (*keys.did_documents, *keys.jwks):
            notes.setdefault(owner, "carried in the bundle; when and how it was fetched is not recorded")
        return KeyMaterial.offline_snapshot(
            keys.did_documents, jwks=keys.jwks, pinned=keys.pinned, notes=notes
        )

    def to_json(self, *, indent: int | None = 2) -> str:
        """The bundle as JSON text (members in the documented order)."""
        return json.dumps(self.model_dump(mode="json", exclude_none=True), indent=indent, ensure_ascii=False)


def parse_bundle(raw: bytes | str, *, max_bytes: int = MAX_BUNDLE_BYTES) -> EvidenceBundle:
    """Strictly parse a bundle; every problem is :class:`~mudrika.errors.InvalidInput`.

    Codes: those of :func:`~mudrika.crypto.jcs.loads_strict` (``too_large``, ``duplicate_key`` …),
    ``not_a_bundle`` (not an object / wrong ``format``) and ``bad_bundle`` (``errors`` lists the
    location and message of each violation, never the values).
    """
    return bundle_from_value(loads_strict(raw, max_bytes=max_bytes, max_depth=64))


def bundle_from_value(value: Any) -> EvidenceBundle:
    """Validate an already strictly parsed JSON value as a bundle (codes as :func:`parse_bundle`).

    Split from :func:`parse_bundle` so a caller that has parsed the JSON once to pick the profile
    (``format``) does not parse it twice.
    """
    return validate_bundle(EvidenceBundle, value, bundle_format=BUNDLE_FORMAT)


def load_bundle(path: str | Path, *, max_bytes: int = MAX_BUNDLE_BYTES) -> EvidenceBundle:
    """Read and parse a bundle file (at most ``max_bytes`` are read)."""
    data = read_capped(path, max_bytes=max_bytes, name="evidence bundle")
    return parse_bundle(data, max_bytes=max_bytes)


def _raw(mandate: Received[Any] | Mapping[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = thaw(mandate.raw if isinstance(mandate, Received) else mandate)
    canonicalize(value)  # exchangeable JSON only: the bundle must parse back strictly
    return value


def build_bundle(
    intent: Received[IntentMandate] | Mapping[str, Any],
    cart: Received[CartMandate] | Mapping[str, Any],
    payment: Received[PaymentMandate] | Mapping[str, Any],
    *,
    evidence_time: Time,
    merchant_audience: str,
    kb_audience: str,
    kb_nonce: str,
    trusted_issuers: Collection[str] = (),
    did_documents: Mapping[str, Any] | None = None,
    jwks: Mapping[str, Any] | None = None,
    pinned: Mapping[str, Any] | None = None,
    fetched: Mapping[str, Mapping[str, str]] | None = None,
    algorithms: Collection[str] = DEFAULT_ALGORITHMS,
    leeway: float = 0.0,
    kb_max_age: float = KB_MAX_AGE,
    description: str | None = None,
    status_lists: Sequence[RecordedStatusList] = (),
) -> EvidenceBundle:
    """Assemble a bundle from a chain as it was received and the key material that verified it.

    The result is validated exactly like a parsed one (and its key material loaded once), so a
    bundle that is written out parses back.
    """
    document = {
        "format": BUNDLE_FORMAT,
        "evidence_time": iso(epoch(evidence_time)),
        "description": description,
        "mandates": {"intent": _raw(intent), "cart": _raw(cart), "payment": _raw(payment)},
        "expectations": {
            "merchant_audience": merchant_audience,
            "kb_audience": kb_audience,
            "kb_nonce": kb_nonce,
            "trusted_issuers": sorted(trusted_issuers),
            "algorithms": sorted(algorithms),
            "leeway_seconds": float(leeway),
            "kb_max_age_seconds": float(kb_max_age),
        },
        "keys": {
            "did_documents": thaw(dict(did_documents or {})),
            "jwks": thaw(dict(jwks or {})),
            "pinned": thaw(dict(pinned or {})),
            "fetched": thaw(dict(fetched or {})),
        },
        "status_lists": [entry.model_dump(mode="json") for entry in status_lists] or None,
    }
    for optional in ("description", "status_lists"):
        if document[optional] is None:
            del document[optional]
    bundle = parse_bundle(json.dumps(document, ensure_ascii=False, allow_nan=False))
    bundle.key_source()
    return bundle


def inspect_bundle(
    bundle: EvidenceBundle,
    *,
    trust_root: TrustRoot | None,
    at: Time | None = None,
    replay_store: ReplayStore | None = None,
    merchant_audience: str | None = None,
    kb_audience: str | None = None,
    kb_nonce: str | None = None,
    later_status_lists: Sequence[str] = (),
) -> VerificationReport:
    """Verify the bundle's chain offline, at ``at`` (default: the bundle's evidence time).

    Dispute mode: trust comes from ``trust_root`` (required; ``None`` means "I have none" and the
    verdict is then UNANCHORED at best); key material comes only from the bundle and is evidence.
    Each expectation comes from the argument, else from the trust root's ``verifier`` section, else
    from the bundle — and then the report flags it as asserted by the evidence (UNANCHORED).
    Single use is checked within this evaluation (a fresh in-memory store unless ``replay_store`` is
    given, e.g. one shared by a batch to find a ``jti`` or nonce used in two disputed chains).
    The credential's status is judged on the status lists the bundle recorded, as of the purchase;
    ``later_status_lists`` (tokens the analyst fetched since) are shown as notes, never judged into
    the verdict.
    Raises :class:`~mudrika.errors.InvalidInput` only for unusable key material or a bad ``at``.
    """
    stated = bundle.expectations
    identity = trust_root.verifier if trust_root is not None else None
    chosen: dict[str, str] = {}
    asserted: list[str] = []
    for name, given, from_root in (
        ("merchant_audience", merchant_audience, identity.merchant_audience if identity else None),
        ("kb_audience", kb_audience, identity.kb_audience if identity else None),
        ("kb_nonce", kb_nonce, None),
    ):
        value = given if given is not None else from_root
        if value is None:
            value = getattr(stated, name)
            asserted.append(name)
        chosen[name] = value
    when = bundle.evidence_at if at is None else at
    return inspect_chain(
        bundle.mandates.intent,
        bundle.mandates.cart,
        bundle.mandates.payment,
        trust_root=trust_root if trust_root is not None else UnsafeNoTrustRoot(stated.trusted_issuers),
        keys=bundle.key_source(),
        merchant_audience=chosen["merchant_audience"],
        kb_audience=chosen["kb_audience"],
        kb_nonce=chosen["kb_nonce"],
        asserted_by_evidence=asserted,
        now=when,
        replay_store=replay_store if replay_store is not None else MemoryReplayStore(max_entries=16),
        status_lists=bundle.status_lists or (),
        later_status_lists=later_status_lists,
    )
