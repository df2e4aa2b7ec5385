"""AP2 v0.2 models: exact vct, integer minor units, the cnf key restrictions, receipts' oneOf."""

from __future__ import annotations

from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import InvalidInput
from mudrika.payments.v02 import (
    VCT_CHECKOUT,
    VCT_CHECKOUT_OPEN,
    VCT_PAYMENT,
    VCT_PAYMENT_OPEN,
    CheckoutReceipt,
    OpenCheckoutMandate,
    OpenPaymentMandate,
    PaymentMandate,
    PaymentReceipt,
    major_to_minor,
)
from mudrika.payments.v02.models import Checkout, CheckoutMandate, parse_model

HASH = "A" * 43
P256 = KeyPair.generate(KeyType.P256).public_key.to_jwk()


def open_checkout(**changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "vct": VCT_CHECKOUT_OPEN,
        "constraints": [{"type": "checkout.line_items", "items": []}],
        "cnf": {"jwk": dict(P256)},
        "exp": 2_000_000_000,
    }
    value.update(changes)
    return value


def payment(**changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "vct": VCT_PAYMENT,
        "transaction_id": HASH,
        "payee": {"id": "did:web:m.example", "name": "M"},
        "payment_amount": {"amount": 27999, "currency": "USD"},
        "payment_instrument": {"id": "pi-1", "type": "card"},
    }
    value.update(changes)
    return value


def test_the_four_vct_values_carry_their_version_suffix() -> None:
    assert (VCT_CHECKOUT_OPEN, VCT_CHECKOUT, VCT_PAYMENT_OPEN, VCT_PAYMENT) == (
        "mandate.checkout.open.1",
        "mandate.checkout.1",
        "mandate.payment.open.1",
        "mandate.payment.1",
    )


@pytest.mark.parametrize(
    "vct", ["mandate.checkout.open", "mandate.checkout.open.2", "mandate.checkout.1", ""]
)
def test_vct_matches_exactly(vct: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_model(OpenCheckoutMandate, open_checkout(vct=vct), what="open mandate")
    assert caught.value.code == "malformed_mandate"


def test_a_valid_closed_payment_parses_with_integer_minor_units() -> None:
    parsed = parse_model(PaymentMandate, payment(), what="closed mandate")
    assert parsed.payment_amount.amount == 27999
    assert isinstance(parsed.payment_amount.amount, int)


@pytest.mark.parametrize("amount", [279.99, "27999", True, 2**53])
def test_amounts_are_exact_integers(amount: object) -> None:
    with pytest.raises(InvalidInput):
        parse_model(PaymentMandate, payment(payment_amount={"amount": amount, "currency": "USD"}), what="m")


@pytest.mark.parametrize("currency", ["usd", "US", "USDX", ""])
def test_currency_is_three_upper_case_letters(currency: str) -> None:
    with pytest.raises(InvalidInput):
        parse_model(PaymentMandate, payment(payment_amount={"amount": 1, "currency": currency}), what="m")


def test_unknown_members_are_refused() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_model(PaymentMandate, payment(note="unsigned meaning"), what="closed mandate")
    assert caught.value.fields["errors"][0]["loc"] == "note"


@pytest.mark.parametrize(
    "jwk",
    [
        {**P256, "d": "A" * 43},  # a private key in a credential
        KeyPair.generate(KeyType.ED25519).public_key.to_jwk(),
        KeyPair.generate(KeyType.SECP256K1).public_key.to_jwk(),
        {**P256, "use": "enc"},
        {**P256, "alg": "ES384"},
        {**P256, "x5c": ["MIIB"]},
        {**P256, "x5u": "https://keys.example/cert"},
        {**P256, "x": P256["x"][:-1]},
    ],
    ids=["private", "ed25519", "secp256k1", "enc", "es384", "x5c", "x5u", "short-x"],
)
def test_cnf_is_a_public_p256_signature_key(jwk: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        parse_model(OpenCheckoutMandate, open_checkout(cnf={"jwk": jwk}), what="open mandate")


def test_open_mandates_need_constraints_and_cnf() -> None:
    for missing in ("constraints", "cnf"):
        value = open_checkout()
        del value[missing]
        with pytest.raises(InvalidInput):
            parse_model(OpenCheckoutMandate, value, what="open mandate")
    typed = {"type": "checkout.line_items", "items": []}
    for model in (OpenCheckoutMandate, OpenPaymentMandate):
        value = open_checkout(constraints=[typed, {"items": []}])
        if model is OpenPaymentMandate:
            value["vct"] = "mandate.payment.open.1"
        with pytest.raises(InvalidInput) as info:
            parse_model(model, value, what="untyped constraint")
        assert [error["loc"] for error in info.value.fields["errors"]] == ["constraints.1"]
        assert "every constraint needs a string 'type'" in info.value.message


def test_open_payment_may_preset_closed_values() -> None:
    value = {
        "vct": VCT_PAYMENT_OPEN,
        "constraints": [{"type": "payment.reference", "conditional_transaction_id": HASH}],
        "cnf": {"jwk": dict(P256)},
        "payee": {"id": "did:web:m.example", "name": "M"},
        "payment_amount": {"amount": 100, "currency": "EUR"},
    }
    parsed = parse_model(OpenPaymentMandate, value, what="open mandate")
    assert parsed.payment_amount is not None
    assert parsed.payment_amount.amount == 100


def test_closed_checkout_hash_is_base64url_of_a_digest() -> None:
    good = {"vct": VCT_CHECKOUT, "checkout_jwt": "a.b.c", "checkout_hash": HASH}
    assert parse_model(CheckoutMandate, good, what="m").checkout_hash == HASH
    with pytest.raises(InvalidInput):
        parse_model(CheckoutMandate, {**good, "checkout_hash": "not a hash"}, what="m")


def test_checkout_needs_its_merchant_and_exactly_one_total() -> None:
    checkout = {
        "id": "c",
        "merchant": {"id": "did:web:m.example", "name": "M"},
        "line_items": [],
        "status": "incomplete",
        "currency": "USD",
        "totals": [{"type": "total", "amount": 5}],
        "links": [],
        "ucp_extension": {"kept": True},
    }
    parsed = parse_model(Checkout, checkout, what="checkout")
    assert parsed.total.amount == 5
    assert parsed.model_extra == {"ucp_extension": {"kept": True}}
    with pytest.raises(InvalidInput):
        parse_model(Checkout, {k: v for k, v in checkout.items() if k != "merchant"}, what="checkout")
    doubled = parse_model(Checkout, {**checkout, "totals": [{"type": "total", "amount": 5}] * 2}, what="c")
    with pytest.raises(InvalidInput) as caught:
        _ = doubled.total
    assert caught.value.code == "bad_checkout_totals"


def test_receipts_follow_their_one_of() -> None:
    base = {"iss": "did:web:m.example", "iat": 1, "reference": HASH}
    assert (
        parse_model(CheckoutReceipt, {**base, "status": "Success", "order_id": "o"}, what="r").order_id == "o"
    )
    with pytest.raises(InvalidInput):
        parse_model(CheckoutReceipt, {**base, "status": "Success"}, what="r")
    with pytest.raises(InvalidInput):
        parse_model(CheckoutReceipt, {**base, "status": "Error", "error": "invalid_mandate"}, what="r")
    error = parse_model(
        PaymentReceipt,
        {**base, "status": "Error", "error": "invalid_mandate", "error_description": "no", "payment_id": "p"},
        what="r",
    )
    assert error.status == "Error"
    with pytest.raises(InvalidInput):
        parse_model(PaymentReceipt, {**base, "status": "Success", "payment_id": "p"}, what="r")
    with pytest.raises(InvalidInput):
        parse_model(PaymentReceipt, {**base, "status": "Pending", "payment_id": "p"}, what="r")


@pytest.mark.parametrize(
    ("value", "currency", "minor"),
    [
        (1000, "USD", 100000),
        (100.5, "USD", 10050),
        (0.1, "USD", 10),
        (1000.0, "JPY", 1000),
        (1.234, "KWD", 1234),
    ],
)
def test_budget_major_units_convert_exactly(value: float, currency: str, minor: int) -> None:
    assert major_to_minor(value, currency) == minor


@pytest.mark.parametrize(
    ("value", "currency", "code"),
    [
        (100.505, "USD", "bad_amount"),
        (1.5, "JPY", "bad_amount"),
        (-1, "USD", "bad_amount"),
        (10, "XXX", "unknown_currency"),
    ],
)
def test_budget_values_finer_than_the_minor_unit_are_refused(value: float, currency: str, code: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        major_to_minor(value, currency)
    assert caught.value.code == code
