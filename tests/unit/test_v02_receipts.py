"""v0.2 receipts keep the same time rule as the mandates: integer NumericDates, exp and nbf with the
trust root's leeway, no iat in the future."""

from __future__ import annotations

from typing import Any

import pytest

from mudrika.errors import ExpiredError, InvalidInput, MudrikaError, VerificationError
from mudrika.payments.v02.receipts import verify_receipt_jwt
from tests._support.ap2_v02 import MERCHANT_DID, build


def _verify(change: dict[str, Any], *, later: float = 0.0) -> None:
    transaction = build(checkout_receipt_hook=lambda claims: claims.update(change))
    verify_receipt_jwt(
        transaction.checkout_receipt,
        kind="checkout",
        trust_root=transaction.trust_root,
        expected_issuer=MERCHANT_DID,
        now=transaction.now + later,
    )


def test_a_receipt_inside_its_window_verifies() -> None:
    _verify({"exp": 10_000_000_000, "nbf": 0})


@pytest.mark.parametrize(
    ("change", "later", "error", "code"),
    [
        ({"exp": 1}, 0.0, ExpiredError, "expired"),
        ({"nbf": 10_000_000_000}, 0.0, VerificationError, "not_yet_valid"),
        ({"exp": "soon"}, 0.0, InvalidInput, "bad_time_claim"),
        ({"nbf": True}, 0.0, InvalidInput, "bad_time_claim"),
        ({}, -3600.0, VerificationError, "iat_in_future"),
    ],
)
def test_receipt_time_claims(
    change: dict[str, Any], later: float, error: type[MudrikaError], code: str
) -> None:
    with pytest.raises(error) as caught:
        _verify(change, later=later)
    assert caught.value.code == code
