"""What the faster pass path of the AP2 v0.1 verifier must keep: timestamps read once yet never stale,
a cart verified only against a real trust root, a JWS refused at the same phase as before, and a
remembered trust-root key that never vouches for other evidence."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mudrika.errors import InvalidInput, MudrikaError, UntrustedKeyError
from mudrika.payments.chain import KeyMaterial, inspect_chain, verify_cart
from mudrika.payments.chain._keys import Anchors
from mudrika.payments.models import CartContents, IntentMandate, PaymentMandateContents
from mudrika.payments.trustroot import UnsafeNoTrustRoot
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import evidence_builder


def test_a_timestamp_is_the_same_instant_on_every_read_and_follows_a_copy() -> None:
    intent = IntentMandate(natural_language_description="d", intent_expiry="2030-01-01T00:00:00+02:00")
    first = intent.intent_expiry_at
    assert first == datetime(2029, 12, 31, 22, 0, tzinfo=UTC)
    assert intent.intent_expiry_at is first
    moved = intent.model_copy(update={"intent_expiry": "2031-01-01T00:00:00Z"})
    assert moved.intent_expiry_at == datetime(2031, 1, 1, tzinfo=UTC)
    assert intent.intent_expiry_at == first


@pytest.mark.parametrize(
    ("text", "code"), [("2030-01-01T00:00:00", "naive_timestamp"), ("soon", "bad_timestamp")]
)
def test_an_unvalidated_timestamp_is_refused_on_every_read(text: str, code: str) -> None:
    intent = IntentMandate.model_construct(natural_language_description="d", intent_expiry=text)
    for _ in range(2):
        with pytest.raises(InvalidInput) as refused:
            _ = intent.intent_expiry_at
        assert refused.value.code == code


def test_a_timestamp_that_is_not_text_is_refused_as_before() -> None:
    contents: Any = CartContents.model_construct(cart_expiry=["2030-01-01T00:00:00Z"])
    with pytest.raises(InvalidInput) as refused:
        _ = contents.cart_expiry_at
    assert refused.value.code == "bad_timestamp"
    paid: Any = PaymentMandateContents.model_construct(timestamp=None)
    with pytest.raises(InvalidInput):
        _ = paid.timestamp_at


def test_verify_cart_needs_a_trust_root() -> None:
    chain = evidence_builder().build_chain()
    expectations = chain.expectations()
    unsafe: Any = UnsafeNoTrustRoot([chain.trusted_issuers[0]])
    with pytest.raises(InvalidInput) as refused:
        verify_cart(
            chain.cart,
            trust_root=unsafe,
            keys=expectations["keys"],
            audience=chain.merchant_audience,
            now=chain.now,
            replay_store=MemoryReplayStore(),
        )
    assert refused.value.code == "bad_policy"


def _phases(report: Any, prefix: str) -> list[tuple[str, str, str | None]]:
    return [(check.id, check.status, check.code) for check in report.checks if check.id.startswith(prefix)]


@pytest.mark.parametrize(
    ("token", "failed"),
    [
        ("not-a-jws", "merchant.jws.header"),
        ("eyJhbGciOiJFUzI1NiJ9.e30.c2ln", "merchant.jws.key"),
    ],
)
def test_a_merchant_jws_is_refused_at_its_phase_and_the_later_ones_are_skipped(
    token: str, failed: str
) -> None:
    chain = evidence_builder().build_chain()
    cart = {**chain.cart.plain(), "merchant_authorization": token}
    report = inspect_chain(
        chain.intent, cart, chain.payment, replay_store=MemoryReplayStore(), **chain.expectations()
    )
    phases = _phases(report, "merchant.jws.")
    statuses = [status for _, status, _ in phases[1:]]
    failed_at = [check_id for check_id, status, _ in phases].index(failed)
    assert statuses[: failed_at - 1] == ["passed"] * (failed_at - 1)
    assert statuses[failed_at - 1] == "failed"
    assert set(statuses[failed_at:]) <= {"skipped"}
    with pytest.raises(MudrikaError):
        report.raise_for_failure()


def test_a_remembered_merchant_key_stays_with_its_evidence() -> None:
    builder = evidence_builder()
    chain = builder.build_chain()
    root = chain.trust_root()
    genuine = chain.keys()
    impostor = builder.seed_key("an impostor merchant").public_key.to_jwk()
    forged = KeyMaterial.offline_snapshot({builder.MERCHANT_DID: builder.merchant_document(impostor)})
    for _ in range(2):
        admitted = Anchors(root, genuine).merchant_key(builder.MERCHANT_KID, owner=builder.MERCHANT_DID)
        assert admitted.anchored
        assert admitted.key == chain.merchant_key.public_key
        with pytest.raises(UntrustedKeyError) as refused:
            Anchors(root, forged).merchant_key(builder.MERCHANT_KID, owner=builder.MERCHANT_DID)
        assert refused.value.code == "evidence_key_mismatch"
