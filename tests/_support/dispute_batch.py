"""Batches of evidence bundles for the batch tests and the benchmark: genuine ones, amounts raised
after signing, cases whose nonce is not the one the user signed, and cases without a nonce."""

from __future__ import annotations

import json
from typing import Any, Final

from mudrika.payments.batch import Case
from tests._support.evidence import BUNDLE, NONCE, evidence_builder

__all__ = ["KINDS", "batch_of", "distinct_batch_of", "distinct_trust_root"]

KINDS: Final = ("genuine", "amount-raised", "other-nonce", "genuine", "no-case-nonce")
"""The kinds of case a batch cycles through, and the verdicts they come to: OK, FAILED (the payment
changed after the user signed it), FAILED (another payment's nonce), OK, UNANCHORED."""

_DISTINCT_SEED: Final = "mudrika batch"


def _case(kind: str, index: int, bundle: bytes) -> tuple[bytes, Case]:
    name = f"{index:04d}-{kind}"
    if kind == "amount-raised":
        document = json.loads(bundle)
        total = document["mandates"]["payment"]["payment_mandate_contents"]["payment_details_total"]
        total["amount"]["value"] = 138.49 + index
        return json.dumps(document).encode(), Case(name=name, kb_nonce=NONCE)
    if kind == "other-nonce":
        return bundle, Case(name=name, kb_nonce=f"someone-elses-nonce-{index}")
    if kind == "no-case-nonce":
        return bundle, Case(name=name)
    return bundle, Case(name=name, kb_nonce=NONCE)


def batch_of(count: int) -> list[tuple[bytes, Case]]:
    """``count`` (bundle bytes, the analyst's case) pairs over the one fixture bundle, cycling
    through :data:`KINDS` (the genuine cases share their bytes: a batch for the tests, not cold)."""
    genuine = json.dumps(json.loads(BUNDLE.read_text())).encode()
    return [_case(KINDS[index % len(KINDS)], index, genuine) for index in range(count)]


def _distinct_chain(index: int, seed: str) -> Any:
    builder = evidence_builder()
    user = builder.seed_key(f"{seed} user {index}", "p256")
    return builder.build_chain(key_type="p256", seed_prefix=seed, user_key=user)


def distinct_trust_root(seed: str = _DISTINCT_SEED) -> bytes:
    """The analyst's trust root for :func:`distinct_batch_of`: it pins the seeded P-256 merchant
    and credential issuer that every bundle of the batch shares."""
    chain = _distinct_chain(0, seed)
    text: str = chain.trust_root().to_json()
    return (text + "\n").encode()


def distinct_bundle(index: int, seed: str = _DISTINCT_SEED) -> tuple[bytes, Case]:
    """Bundle ``index`` of a batch of distinct ES256 chains: one merchant and one credential issuer
    (pinned by :func:`distinct_trust_root`), and a user of its own per bundle (its own P-256 key,
    so its own did:key, credential, intent and key-binding signatures), of kind
    ``KINDS[index % 5]``.  Keys are derived from ``seed`` and ``index``; ECDSA signatures are
    randomised, so the bytes differ from run to run while every verdict stays the same."""
    chain = _distinct_chain(index, seed)
    return _case(KINDS[index % len(KINDS)], index, chain.bundle().to_json().encode())


def distinct_batch_of(count: int, seed: str = _DISTINCT_SEED) -> list[tuple[bytes, Case]]:
    """``count`` :func:`distinct_bundle` pairs (no two bundles alike: every per-bundle cache misses)."""
    return [distinct_bundle(index, seed) for index in range(count)]
