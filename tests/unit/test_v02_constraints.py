"""Every AP2 v0.2 constraint type, evaluated as the specification words it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.errors import BindingError, InvalidInput, PolicyDenied
from mudrika.payments.v02 import MandateUsage, line_items_satisfied
from mudrika.payments.v02.constraints import (
    CheckoutScope,
    PaymentScope,
    evaluate_checkout_constraint,
    evaluate_payment_constraint,
)
from mudrika.payments.v02.models import Checkout, LineItemRequirement, PaymentMandate, parse_model

MERCHANT = {"id": "did:web:m.example", "name": "Merchant Choice", "website": "https://m.example"}
OTHER = {"id": "did:web:other.example", "name": "Second Merchant"}
INSTRUMENT = {"id": "pi-1", "type": "card"}
PISP = {
    "legal_name": "Example Payment Services Ltd.",
    "brand_name": "ExamplePay",
    "domain_name": "examplepay.com",
}
HASH = "B" * 43
MAY_1 = int(datetime(2026, 5, 1, 12, tzinfo=UTC).timestamp())


def requirement(rid: str, ids: list[str], quantity: int) -> LineItemRequirement:
    return LineItemRequirement.model_validate(
        {"id": rid, "acceptable_items": [{"id": i, "title": i} for i in ids], "quantity": quantity}
    )


# -- checkout.line_items: the specification's own example ------------------------------------------

SHOES_AND_SOCKS = [requirement("shoes", ["BAB1234", "FAF1234"], 1), requirement("socks", ["QRT1234"], 1)]


@pytest.mark.parametrize(
    ("cart", "met"),
    [
        ({"BAB1234": 1, "QRT1234": 1}, True),  # Red Style + The Best Socks
        ({"FAF1234": 1, "QRT1234": 1}, True),  # Blue Style + The Best Socks
        ({"BAB1234": 1, "FAF1234": 1}, False),  # two shoes, no socks
        ({"BAB1234": 1}, False),
        ({"FAF1234": 1}, False),
        ({"QRT1234": 1}, False),
        ({"BAB1234": 1, "QRT1234": 1, "ZZZ": 1}, False),  # an item no requirement allows
        ({"BAB1234": 1, "QRT1234": 2}, False),  # an item used beyond its requirement
        ({}, False),
    ],
)
def test_line_items_follow_the_specification_example(cart: dict[str, int], met: bool) -> None:
    assert line_items_satisfied(SHOES_AND_SOCKS, cart) is met


def test_line_items_need_the_max_flow_not_a_greedy_choice() -> None:
    # A greedy assignment of X to the first requirement starves the second; the flow finds X→r2, Y→r1.
    requirements = [requirement("r1", ["X", "Y"], 1), requirement("r2", ["X"], 1)]
    assert line_items_satisfied(requirements, {"X": 1, "Y": 1})
    assert not line_items_satisfied(requirements, {"Y": 2})


def test_withheld_acceptable_items_match_nothing() -> None:
    # The SDK treats an empty acceptable_items list as a wildcard; the specification matches only
    # revealed items.
    assert not line_items_satisfied([requirement("any", [], 1)], {"X": 1})


def checkout(**changes: Any) -> CheckoutScope:
    value: dict[str, Any] = {
        "id": "c1",
        "merchant": dict(MERCHANT),
        "line_items": [
            {
                "id": "l1",
                "item": {"id": "BAB1234", "title": "Red", "price": 100},
                "quantity": 1,
                "totals": [],
            },
            {
                "id": "l2",
                "item": {"id": "QRT1234", "title": "Socks", "price": 5},
                "quantity": 1,
                "totals": [],
            },
        ],
        "status": "ready_for_complete",
        "currency": "USD",
        "totals": [{"type": "total", "amount": 105}],
        "links": [],
    }
    value.update(changes)
    return CheckoutScope(checkout=parse_model(Checkout, value, what="checkout"))


def test_line_items_constraint_against_a_checkout() -> None:
    constraint = {
        "type": "checkout.line_items",
        "items": [
            {"id": "shoes", "acceptable_items": [{"id": "BAB1234", "title": "Red"}], "quantity": 1},
            {"id": "socks", "acceptable_items": [{"id": "QRT1234", "title": "Socks"}], "quantity": 1},
        ],
    }
    evaluate_checkout_constraint(constraint, checkout())
    with pytest.raises(PolicyDenied) as caught:
        evaluate_checkout_constraint({**constraint, "items": constraint["items"][:1]}, checkout())
    assert caught.value.code == "line_items_unmet"


def test_allowed_merchants() -> None:
    evaluate_checkout_constraint(
        {"type": "checkout.allowed_merchants", "allowed": [OTHER, MERCHANT]}, checkout()
    )
    with pytest.raises(PolicyDenied) as caught:
        evaluate_checkout_constraint({"type": "checkout.allowed_merchants", "allowed": [OTHER]}, checkout())
    assert caught.value.code == "merchant_not_allowed"
    with pytest.raises(PolicyDenied) as caught:
        evaluate_checkout_constraint({"type": "checkout.allowed_merchants", "allowed": []}, checkout())
    assert caught.value.code == "nothing_revealed"
    impostor = {**MERCHANT, "website": "https://phish.example"}
    with pytest.raises(PolicyDenied):
        evaluate_checkout_constraint(
            {"type": "checkout.allowed_merchants", "allowed": [impostor]}, checkout()
        )


def test_unknown_and_malformed_constraints_fail() -> None:
    with pytest.raises(PolicyDenied) as caught:
        evaluate_checkout_constraint({"type": "com.example.loyalty"}, checkout())
    assert caught.value.code == "unknown_constraint"
    with pytest.raises(PolicyDenied) as caught:
        evaluate_payment_constraint({"type": "checkout.line_items", "items": []}, scope())
    assert caught.value.code == "unknown_constraint"
    with pytest.raises(InvalidInput):
        evaluate_checkout_constraint({"type": "checkout.allowed_merchants", "allowed": "all"}, checkout())


# -- payment constraints ---------------------------------------------------------------------------


def scope(usage: MandateUsage | None = None, closed_at: int = MAY_1, **changes: Any) -> PaymentScope:
    value: dict[str, Any] = {
        "vct": "mandate.payment.1",
        "transaction_id": HASH,
        "payee": dict(MERCHANT),
        "payment_amount": {"amount": 10050, "currency": "USD"},
        "payment_instrument": dict(INSTRUMENT),
        "pisp": dict(PISP),
    }
    value.update(changes)
    payment = parse_model(PaymentMandate, value, what="payment")
    return PaymentScope(payment=payment, open_checkout_hash=HASH, closed_at=closed_at, usage=usage)


def test_amount_range_is_inclusive_in_minor_units_and_currency_bound() -> None:
    evaluate_payment_constraint({"type": "payment.amount_range", "currency": "USD", "max": 10050}, scope())
    evaluate_payment_constraint(
        {"type": "payment.amount_range", "currency": "USD", "min": 10050, "max": 10050}, scope()
    )
    for bad, code in (
        ({"currency": "USD", "max": 10049}, "amount_out_of_range"),
        ({"currency": "USD", "min": 10051, "max": 20000}, "amount_out_of_range"),
        ({"currency": "EUR", "max": 20000}, "currency_mismatch"),
    ):
        with pytest.raises(PolicyDenied) as caught:
            evaluate_payment_constraint({"type": "payment.amount_range", **bad}, scope())
        assert caught.value.code == code
    with pytest.raises(InvalidInput):  # major units with a fraction are not minor units
        evaluate_payment_constraint(
            {"type": "payment.amount_range", "currency": "USD", "max": 100.5}, scope()
        )


def test_allowed_payees_instruments_and_pisps() -> None:
    evaluate_payment_constraint({"type": "payment.allowed_payees", "allowed": [MERCHANT]}, scope())
    evaluate_payment_constraint(
        {"type": "payment.allowed_payment_instruments", "allowed": [INSTRUMENT]}, scope()
    )
    evaluate_payment_constraint({"type": "payment.allowed_pisps", "allowed": [PISP]}, scope())
    with pytest.raises(PolicyDenied):
        evaluate_payment_constraint({"type": "payment.allowed_payees", "allowed": [OTHER]}, scope())
    with pytest.raises(PolicyDenied):
        evaluate_payment_constraint(
            {"type": "payment.allowed_payment_instruments", "allowed": [{"id": "pi-1", "type": "UPI"}]},
            scope(),
        )
    with pytest.raises(PolicyDenied):
        evaluate_payment_constraint(
            {"type": "payment.allowed_pisps", "allowed": [{**PISP, "brand_name": "X"}]}, scope()
        )
    with pytest.raises(PolicyDenied) as caught:
        evaluate_payment_constraint({"type": "payment.allowed_pisps", "allowed": [PISP]}, scope(pisp=None))
    assert caught.value.code == "pisp_missing"


def test_payment_reference_binds_the_open_checkout_mandate() -> None:
    evaluate_payment_constraint({"type": "payment.reference", "conditional_transaction_id": HASH}, scope())
    with pytest.raises(BindingError) as caught:
        evaluate_payment_constraint(
            {"type": "payment.reference", "conditional_transaction_id": "C" * 43}, scope()
        )
    assert caught.value.code == "reference_mismatch"


def test_budget_adds_this_payment_to_what_was_spent() -> None:
    budget = {"type": "payment.budget", "max": 1000.00, "currency": "USD"}
    evaluate_payment_constraint(
        budget, scope(MandateUsage(occurrences=3, spent_minor=89950, currency="USD", last_used_at=None))
    )
    with pytest.raises(PolicyDenied) as caught:
        evaluate_payment_constraint(
            budget, scope(MandateUsage(occurrences=3, spent_minor=89951, currency="USD", last_used_at=None))
        )
    assert caught.value.code == "budget_exceeded"
    with pytest.raises(PolicyDenied) as caught:
        evaluate_payment_constraint(budget, scope(None))
    assert caught.value.code == "usage_history_required"
    with pytest.raises(PolicyDenied):
        evaluate_payment_constraint({**budget, "currency": "EUR"}, scope(MandateUsage(0, 0, "EUR", None)))
    for not_a_number in (True, "1000", None):  # the strict model refuses what is not a JSON number
        with pytest.raises(InvalidInput):
            evaluate_payment_constraint(
                {**budget, "max": not_a_number}, scope(MandateUsage(0, 0, "USD", None))
            )


def test_agent_recurrence_counts_occurrences_and_spacing() -> None:
    monthly = {"type": "payment.agent_recurrence", "frequency": "MONTHLY", "max_occurrences": 12}
    april_1 = datetime(2026, 4, 1, 12, tzinfo=UTC).timestamp()
    april_2 = datetime(2026, 4, 2, 12, tzinfo=UTC).timestamp()
    evaluate_payment_constraint(monthly, scope(MandateUsage(11, 0, "USD", april_1)))
    with pytest.raises(PolicyDenied) as caught:
        evaluate_payment_constraint(monthly, scope(MandateUsage(12, 0, "USD", april_1)))
    assert caught.value.code == "occurrences_exceeded"
    with pytest.raises(PolicyDenied) as caught:
        evaluate_payment_constraint(monthly, scope(MandateUsage(1, 0, "USD", april_2)))
    assert caught.value.code == "too_frequent"
    evaluate_payment_constraint(
        {"type": "payment.agent_recurrence", "frequency": "ON_DEMAND"},
        scope(MandateUsage(5, 0, "USD", MAY_1)),
    )
    with pytest.raises(PolicyDenied):
        evaluate_payment_constraint({"type": "payment.agent_recurrence", "frequency": "DAILY"}, scope(None))
    with pytest.raises(InvalidInput):
        evaluate_payment_constraint(
            {"type": "payment.agent_recurrence", "frequency": "HOURLY"},
            scope(MandateUsage(0, 0, "USD", None)),
        )


def test_monthly_recurrence_uses_calendar_months() -> None:
    monthly = {"type": "payment.agent_recurrence", "frequency": "MONTHLY"}
    jan_31 = datetime(2026, 1, 31, 9, tzinfo=UTC).timestamp()
    feb_28 = int(datetime(2026, 2, 28, 9, tzinfo=UTC).timestamp())
    evaluate_payment_constraint(monthly, scope(MandateUsage(1, 0, "USD", jan_31), closed_at=feb_28))
    with pytest.raises(PolicyDenied):
        evaluate_payment_constraint(monthly, scope(MandateUsage(1, 0, "USD", jan_31), closed_at=feb_28 - 1))


def test_execution_date_window() -> None:
    window = {
        "type": "payment.execution_date",
        "not_before": "2026-03-31T00:00:00Z",
        "not_after": "2026-04-30T23:59:59Z",
    }
    evaluate_payment_constraint(window, scope(execution_date="2026-04-15"))
    evaluate_payment_constraint(window, scope(execution_date="2026-04-30T23:59:59Z"))
    for stated, code in (
        ("2026-03-30", "execution_too_early"),
        ("2026-05-01T00:00:00Z", "execution_too_late"),
    ):
        with pytest.raises(PolicyDenied) as caught:
            evaluate_payment_constraint(window, scope(execution_date=stated))
        assert caught.value.code == code
    # Absent execution_date means immediate execution: the moment the payment was closed (1 May).
    with pytest.raises(PolicyDenied):
        evaluate_payment_constraint(window, scope())
    with pytest.raises(InvalidInput):
        evaluate_payment_constraint(window, scope(execution_date="2026-04-15T10:00:00"))  # no offset


# -- the max-flow test against brute force ---------------------------------------------------------

SKUS = ("A", "B", "C", "D")


def brute_force(requirements: list[tuple[frozenset[str], int]], cart: dict[str, int]) -> bool:
    """Assign every unit in the cart to a requirement that accepts it, filling each exactly."""
    units = [sku for sku in sorted(cart) for _ in range(cart[sku])]
    if sum(quantity for _, quantity in requirements) != len(units) or not units:
        return False

    def place(index: int, remaining: tuple[int, ...]) -> bool:
        if index == len(units):
            return all(left == 0 for left in remaining)
        for slot, (accepted, _) in enumerate(requirements):
            if not remaining[slot] or units[index] not in accepted:
                continue
            if place(index + 1, (*remaining[:slot], remaining[slot] - 1, *remaining[slot + 1 :])):
                return True
        return False

    return place(0, tuple(quantity for _, quantity in requirements))


@given(
    requirements=st.lists(
        st.tuples(st.frozensets(st.sampled_from(SKUS), max_size=3), st.integers(min_value=1, max_value=2)),
        min_size=1,
        max_size=3,
    ),
    cart=st.dictionaries(st.sampled_from(SKUS), st.integers(min_value=1, max_value=2), max_size=3),
)
@settings(max_examples=300, deadline=None)
def test_line_items_agree_with_brute_force(
    requirements: list[tuple[frozenset[str], int]], cart: dict[str, int]
) -> None:
    models = [
        requirement(f"r{i}", sorted(accepted), quantity)
        for i, (accepted, quantity) in enumerate(requirements)
    ]
    assert line_items_satisfied(models, cart) is brute_force(requirements, cart)
