"""AP2 v0.2 evidence bundles (``mudrika.evidence/ap2-v0.2``): one transaction, offline, for a dispute.

Why a format of its own beside ``mudrika.evidence/v1``: a v0.2 transaction is not three JSON
mandates plus key snapshots but up to four compact strings (two delegation chains, two receipts)
whose keys come *only* from the analyst's trust root — the root issuer's by ``iss``/``kid``, the
merchant's by the Checkout's merchant id, every hop's from the ``cnf`` of the token before it — so
the bundle carries no key material at all.  What it does carry is evidence: the hops' ``aud`` and
``nonce`` as the parties recorded them; an expectation taken from there leaves the verdict
UNANCHORED unless the analyst (or the trust root's ``verifier`` section, for audiences) supplies it.

Format (``docs/ap2-v02.md`` "Evidence bundle"); we own it, so unknown members are refused::

    {"format": "mudrika.evidence/ap2-v0.2",
     "evidence_time": "2026-05-01T12:00:00Z",
     "description": "optional free text",
     "checkout_chain": "<root>~<d>~~<hop>~<d>~",
     "payment_chain": "...", "checkout_receipt": "<jwt>", "payment_receipt": "<jwt>",
     "expectations": {"checkout_hops": [{"aud": "...", "nonce": "..."}],
                      "payment_hops": [{"aud": "...", "nonce": "..."}]},
     "status_lists": [{"uri": "...", "token": "<statuslist+jwt>", "at": "...", "via": "..."}]}

:func:`mudrika.payments.batch.verifier_for` picks the verifier of a bundle by this ``format`` member.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from mudrika.crypto.jcs import loads_strict
from mudrika.errors import InvalidInput
from mudrika.net.limits import read_capped
from mudrika.payments._load import AwareTimestamp, validate_bundle
from mudrika.payments._time import Time
from mudrika.payments.credential_status import RecordedStatusList
from mudrika.payments.models import parse_timestamp
from mudrika.payments.report import VerificationReport
from mudrika.payments.trustroot import TrustRoot
from mudrika.payments.v02.constraints import MandateUsage
from mudrika.payments.v02.hops import HopExpectation
from mudrika.payments.v02.verifier import V02Evidence, inspect_v02

__all__ = [
    "BUNDLE_FORMAT_V02",
    "MAX_BUNDLE_BYTES",
    "BundleHop",
    "V02Bundle",
    "inspect_v02_bundle",
    "inspect_v02_case",
    "load_v02_bundle",
    "parse_v02_bundle",
    "v02_bundle_from_value",
]

BUNDLE_FORMAT_V02: Final = "mudrika.evidence/ap2-v0.2"
MAX_BUNDLE_BYTES: Final = 4 * 1024 * 1024
_MAX_TOKEN: Final = 512 * 1024
_MAX_TEXT: Final = 2048


class _Owned(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, hide_input_in_errors=True)


class BundleHop(_Owned):
    """One hop's ``aud`` and ``nonce`` as recorded with the evidence."""

    aud: str = Field(min_length=1, max_length=_MAX_TEXT)
    nonce: str = Field(min_length=1, max_length=_MAX_TEXT, repr=False)


class BundleExpectations(_Owned):
    checkout_hops: list[BundleHop] = Field(min_length=1, max_length=8)
    payment_hops: list[BundleHop] = Field(default_factory=list, max_length=8)


class V02Bundle(_Owned):
    """A parsed ``mudrika.evidence/ap2-v0.2`` bundle."""

    format: Literal["mudrika.evidence/ap2-v0.2"]
    evidence_time: AwareTimestamp
    description: str | None = Field(default=None, max_length=_MAX_TEXT)
    checkout_chain: str = Field(min_length=1, max_length=_MAX_TOKEN, repr=False)
    payment_chain: str | None = Field(default=None, min_length=1, max_length=_MAX_TOKEN, repr=False)
    checkout_receipt: str | None = Field(default=None, min_length=1, max_length=_MAX_TOKEN, repr=False)
    payment_receipt: str | None = Field(default=None, min_length=1, max_length=_MAX_TOKEN, repr=False)
    expectations: BundleExpectations
    status_lists: list[RecordedStatusList] | None = Field(default=None, min_length=1, max_length=16)
    """The Token Status List tokens the merchant checked at the purchase (each with when and from
    where): the evidence the open mandates' status is judged on as of the purchase."""

    @property
    def evidence(self) -> V02Evidence:
        return V02Evidence(
            checkout_chain=self.checkout_chain,
            payment_chain=self.payment_chain,
            checkout_receipt=self.checkout_receipt,
            payment_receipt=self.payment_receipt,
        )

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.model_dump(mode="json", exclude_none=True), indent=indent, ensure_ascii=False)


def parse_v02_bundle(raw: bytes | str, *, max_bytes: int = MAX_BUNDLE_BYTES) -> V02Bundle:
    """Strictly parse a v0.2 bundle (codes: those of ``loads_strict``, ``not_a_bundle``, ``bad_bundle``)."""
    return v02_bundle_from_value(loads_strict(raw, max_bytes=max_bytes, max_depth=64))


def v02_bundle_from_value(value: object) -> V02Bundle:
    """A v0.2 bundle from already strictly parsed JSON (as a dispute batch holds it)."""
    return validate_bundle(V02Bundle, value, bundle_format=BUNDLE_FORMAT_V02)


def load_v02_bundle(path: str | Path, *, max_bytes: int = MAX_BUNDLE_BYTES) -> V02Bundle:
    """Read and parse a v0.2 bundle file (at most ``max_bytes`` are read)."""
    data = read_capped(path, max_bytes=max_bytes, name="bundle")
    return parse_v02_bundle(data, max_bytes=max_bytes)


def _hops(
    recorded: Sequence[BundleHop], given: Sequence[HopExpectation] | None, terminal_audience: str | None
) -> tuple[HopExpectation, ...]:
    if given is not None:
        return tuple(given)
    hops: list[HopExpectation] = []
    for index, hop in enumerate(recorded):
        audience = (
            terminal_audience if terminal_audience is not None and index == len(recorded) - 1 else hop.aud
        )
        # The nonce always comes from the evidence here, so the expectation is the evidence's word.
        hops.append(HopExpectation(audience, hop.nonce, source="evidence"))
    return tuple(hops)


def inspect_v02_case(
    document: object,
    *,
    trust_root: TrustRoot | None,
    at: Time | None,
    kb_nonce: str | None,
    merchant_audience: str | None,
    kb_audience: str | None,
    checkout_hops: Sequence[HopExpectation] | None = None,
    payment_hops: Sequence[HopExpectation] | None = None,
    usage: MandateUsage | None = None,
    later_status_lists: Sequence[str] = (),
) -> VerificationReport:
    """The dispute batch's entry point (``mudrika dispute verify``): a parsed v0.2 bundle under the
    analyst's trust root, with the case's hop expectations and usage record.  A v0.1 case's
    ``kb_nonce`` / audiences name no v0.2 hop, so a case that gives them is refused
    (``v01_case_for_v02_bundle``) rather than silently ignored."""
    if kb_nonce is not None or merchant_audience is not None or kb_audience is not None:
        raise InvalidInput(
            "--kb-nonce, --kb-aud and --merchant-aud apply to v0.1 bundles; give a v0.2 bundle's hop "
            "expectations with --checkout-aud/--checkout-nonce and --payment-aud/--payment-nonce, or as "
            "checkout_hops/payment_hops in --cases",
            code="v01_case_for_v02_bundle",
        )
    if trust_root is None:
        raise InvalidInput("a v0.2 bundle is verified against a trust root", code="trust_root_required")
    return inspect_v02_bundle(
        v02_bundle_from_value(document),
        trust_root=trust_root,
        at=at,
        checkout_hops=checkout_hops,
        payment_hops=payment_hops,
        usage=usage,
        later_status_lists=later_status_lists,
    )


def inspect_v02_bundle(
    bundle: V02Bundle,
    *,
    trust_root: TrustRoot,
    at: Time | None = None,
    checkout_hops: Sequence[HopExpectation] | None = None,
    payment_hops: Sequence[HopExpectation] | None = None,
    usage: MandateUsage | None = None,
    later_status_lists: Sequence[str] = (),
) -> VerificationReport:
    """Verify a v0.2 bundle offline at ``at`` (default: its evidence time); never raises on a failed
    check.  Hop expectations come from the arguments (the analyst's), else from the bundle (then the
    verdict is UNANCHORED); the trust root's ``verifier.merchant_audience`` / ``kb_audience`` replace
    the recorded audience of the closing checkout / payment hop.  ``usage`` is the analyst's record
    of earlier payments under the open payment mandate (without it ``payment.budget`` and
    ``payment.agent_recurrence`` fail: nothing shows they held).  Nothing is consumed."""
    if not isinstance(trust_root, TrustRoot):
        raise InvalidInput("a v0.2 bundle is verified against a trust root", code="trust_root_required")
    identity = trust_root.verifier
    return inspect_v02(
        bundle.evidence,
        trust_root=trust_root,
        checkout_hops=_hops(bundle.expectations.checkout_hops, checkout_hops, identity.merchant_audience),
        payment_hops=_hops(bundle.expectations.payment_hops, payment_hops, identity.kb_audience)
        if bundle.payment_chain is not None
        else (),
        now=parse_timestamp(bundle.evidence_time) if at is None else at,
        usage=usage,
        replay_store=None,
        status_lists=bundle.status_lists or (),
        later_status_lists=later_status_lists,
    )
