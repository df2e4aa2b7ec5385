"""Evaluation of every AP2 v0.2 constraint type against the closed mandate (or checkout).

Why each evaluator is strict (``checkout_mandate.md``/``payment_mandate.md`` "Constraints"):

* an unknown constraint ``type`` **fails** (``agent_authorization.md``: "Any unknown Constraints
  MUST be treated as failing evaluation"), and so does a known one that does not match its schema;
* only *revealed* elements count: an ``allowed`` list or ``acceptable_items`` whose elements were
  all withheld matches nothing (the SDK treats empty ``acceptable_items`` as a wildcard; the spec
  does not);
* ``checkout.line_items`` is the maximum-flow assignment of the spec (source → requirement with
  capacity ``quantity`` → matching checkout item → sink with the item's total quantity); met only
  when the flow equals both totals;
* money is integer minor units; ``payment.budget.max`` is in *major* units (a JSON number) and is
  converted exactly with the currency's ISO 4217 exponent — a value finer than the minor unit is
  malformed, never rounded;
* ``payment.budget`` and ``payment.agent_recurrence`` need the history of this open mandate
  (:class:`MandateUsage`); without it they fail closed (``usage_history_required``).
"""

from __future__ import annotations

import calendar
import hmac
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Annotated, Any, Final, Literal

from pydantic import Field

from mudrika.crypto.jcs import MAX_SAFE_INTEGER
from mudrika.errors import BindingError, InvalidInput, PolicyDenied
from mudrika.payments._values import ISO_4217_EXPONENTS, parse_timestamp
from mudrika.payments.v02.models import (
    Amount,
    Checkout,
    Currency,
    LineItemRequirement,
    Merchant,
    MinorUnits,
    PaymentInstrument,
    PaymentMandate,
    Pisp,
    Text,
    _Strict,
    parse_model,
)

__all__ = [
    "CHECKOUT_CONSTRAINTS",
    "ISO_4217_EXPONENTS",
    "PAYMENT_CONSTRAINTS",
    "CheckoutScope",
    "MandateUsage",
    "PaymentScope",
    "evaluate_checkout_constraint",
    "evaluate_payment_constraint",
    "line_items_satisfied",
    "major_to_minor",
    "usage_from_value",
]

_MAX_LIST: Final = 256


class _Constraint(_Strict):
    """A constraint type: one of the AP2-owned strict models."""


class AllowedMerchants(_Constraint):
    type: Literal["checkout.allowed_merchants"]
    allowed: list[Merchant] = Field(max_length=_MAX_LIST)


class LineItems(_Constraint):
    type: Literal["checkout.line_items"]
    items: list[LineItemRequirement] = Field(min_length=1, max_length=_MAX_LIST)


class AllowedPayees(_Constraint):
    type: Literal["payment.allowed_payees"]
    allowed: list[Merchant] = Field(max_length=_MAX_LIST)


class AmountRange(_Constraint):
    type: Literal["payment.amount_range"]
    currency: Currency
    max: MinorUnits
    min: MinorUnits | None = None


class PaymentReference(_Constraint):
    type: Literal["payment.reference"]
    conditional_transaction_id: Text


class AgentRecurrence(_Constraint):
    type: Literal["payment.agent_recurrence"]
    frequency: Literal["ON_DEMAND", "DAILY", "WEEKLY", "BIWEEKLY", "MONTHLY", "QUARTERLY", "ANNUALLY"]
    max_occurrences: Annotated[int, Field(ge=1, le=MAX_SAFE_INTEGER)] | None = None


class AllowedPaymentInstruments(_Constraint):
    type: Literal["payment.allowed_payment_instruments"]
    allowed: list[PaymentInstrument] = Field(max_length=_MAX_LIST)


class AllowedPisps(_Constraint):
    type: Literal["payment.allowed_pisps"]
    allowed: list[Pisp] = Field(max_length=_MAX_LIST)


class Budget(_Constraint):
    type: Literal["payment.budget"]
    max: int | float
    currency: Currency


class ExecutionDate(_Constraint):
    type: Literal["payment.execution_date"]
    not_before: Text | None = None
    not_after: Text | None = None


@dataclass(frozen=True, slots=True)
class MandateUsage:
    """What was already paid under one open payment mandate, as the verifier's own records say.

    ``occurrences`` counts earlier accepted closed payments, ``spent_minor`` their sum in minor units
    of ``currency``, ``last_used_at`` the UNIX time of the latest one (``None`` if never used).
    """

    occurrences: int
    spent_minor: int
    currency: str
    last_used_at: float | None

    def __post_init__(self) -> None:
        for name in ("occurrences", "spent_minor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SAFE_INTEGER:
                raise InvalidInput("usage counters are non-negative integers", code="bad_usage", field=name)


@dataclass(frozen=True, slots=True)
class CheckoutScope:
    """What a checkout constraint is evaluated against: the verified merchant-signed Checkout."""

    checkout: Checkout


@dataclass(frozen=True, slots=True)
class PaymentScope:
    """What a payment constraint is evaluated against."""

    payment: PaymentMandate
    open_checkout_hash: str
    """The hash of the open checkout mandate as presented in the checkout chain."""
    closed_at: int
    """The closing hop's ``iat``: when the payment was authorised (an absent ``execution_date`` is now)."""
    usage: MandateUsage | None


# -- checkout constraints --------------------------------------------------------------------------


def _merchant_listed(merchant: Merchant, allowed: Sequence[Merchant]) -> bool:
    # Every member the allowed entry states must match the merchant exactly.
    return any(
        entry.id == merchant.id
        and entry.name == merchant.name
        and (entry.website is None or entry.website == merchant.website)
        for entry in allowed
    )


def _allowed_merchants(raw: Mapping[str, Any], scope: CheckoutScope) -> None:
    constraint = parse_model(AllowedMerchants, raw, what="checkout.allowed_merchants")
    if not constraint.allowed:
        raise PolicyDenied("no allowed merchant is revealed", code="nothing_revealed")
    if not _merchant_listed(scope.checkout.merchant, constraint.allowed):
        raise PolicyDenied(
            "the checkout's merchant is not an allowed merchant",
            code="merchant_not_allowed",
            got=scope.checkout.merchant.id,
        )


def line_items_satisfied(requirements: Sequence[LineItemRequirement], cart: Mapping[str, int]) -> bool:
    """The specification's maximum-flow test: every requirement filled with exactly its quantity of
    items from its revealed ``acceptable_items``, and every checkout item used, none twice."""
    required = sum(requirement.quantity for requirement in requirements)
    present = sum(cart.values())
    if required != present or required == 0:
        return False
    skus = sorted(cart)
    # Nodes: 0 source, 1..R requirements, R+1..R+S items, R+S+1 sink.
    r, s = len(requirements), len(skus)
    sink = r + s + 1
    capacity: dict[tuple[int, int], int] = {}
    adjacent: list[set[int]] = [set() for _ in range(sink + 1)]

    def edge(u: int, v: int, c: int) -> None:
        capacity[(u, v)] = capacity.get((u, v), 0) + c
        capacity.setdefault((v, u), 0)
        adjacent[u].add(v)
        adjacent[v].add(u)

    position = {sku: r + 1 + i for i, sku in enumerate(skus)}
    for i, requirement in enumerate(requirements, start=1):
        edge(0, i, requirement.quantity)
        for acceptable in {item.id for item in requirement.acceptable_items}:
            if acceptable in position:
                edge(i, position[acceptable], present)  # "infinite": no flow can exceed the total
    for sku, node in position.items():
        edge(node, sink, cart[sku])
    flow = 0
    while True:  # Edmonds-Karp: shortest augmenting paths, O(V E^2) on at most 513 nodes
        parent: dict[int, int] = {0: 0}
        queue = deque([0])
        while queue and sink not in parent:
            u = queue.popleft()
            for v in adjacent[u]:
                if v not in parent and capacity[(u, v)] > 0:
                    parent[v] = u
                    queue.append(v)
        if sink not in parent:
            break
        bottleneck = present
        v = sink
        while v != 0:
            bottleneck = min(bottleneck, capacity[(parent[v], v)])
            v = parent[v]
        v = sink
        while v != 0:
            capacity[(parent[v], v)] -= bottleneck
            capacity[(v, parent[v])] += bottleneck
            v = parent[v]
        flow += bottleneck
    return flow == required == present


def _line_items(raw: Mapping[str, Any], scope: CheckoutScope) -> None:
    constraint = parse_model(LineItems, raw, what="checkout.line_items")
    cart: dict[str, int] = {}
    for line in scope.checkout.line_items:
        cart[line.item.id] = cart.get(line.item.id, 0) + line.quantity
    if not line_items_satisfied(constraint.items, cart):
        raise PolicyDenied(
            "the checkout's items do not fill the required line items", code="line_items_unmet"
        )


CHECKOUT_CONSTRAINTS: Final[Mapping[str, Callable[[Mapping[str, Any], CheckoutScope], None]]] = {
    "checkout.allowed_merchants": _allowed_merchants,
    "checkout.line_items": _line_items,
}


# -- payment constraints ---------------------------------------------------------------------------


def _allowed_payees(raw: Mapping[str, Any], scope: PaymentScope) -> None:
    constraint = parse_model(AllowedPayees, raw, what="payment.allowed_payees")
    if not _merchant_listed(scope.payment.payee, constraint.allowed):
        raise PolicyDenied(
            "the payee is not an allowed payee", code="payee_not_allowed", got=scope.payment.payee.id
        )


def _require_currency(amount: Amount, currency: str, *, message: str) -> None:
    """Amounts are compared only within one currency: a payment in another one is denied, never
    converted (``currency_mismatch``, with ``message`` naming the constraint that asked)."""
    if amount.currency != currency:
        raise PolicyDenied(message, code="currency_mismatch", expected=currency, got=amount.currency)


def _amount_range(raw: Mapping[str, Any], scope: PaymentScope) -> None:
    constraint = parse_model(AmountRange, raw, what="payment.amount_range")
    amount = scope.payment.payment_amount
    _require_currency(amount, constraint.currency, message="currency outside the mandate")
    low = constraint.min
    if amount.amount > constraint.max or (low is not None and amount.amount < low):
        raise PolicyDenied(
            "amount outside the allowed range",
            code="amount_out_of_range",
            expected=f"{low if low is not None else '-'}..{constraint.max}",
            got=str(amount.amount),
        )


def _payment_reference(raw: Mapping[str, Any], scope: PaymentScope) -> None:
    constraint = parse_model(PaymentReference, raw, what="payment.reference")
    if not hmac.compare_digest(
        constraint.conditional_transaction_id.encode("utf-8"), scope.open_checkout_hash.encode("utf-8")
    ):
        raise BindingError(
            "the payment is not for the open checkout mandate it references",
            code="reference_mismatch",
            expected=constraint.conditional_transaction_id,
            got=scope.open_checkout_hash,
        )


def _add_months(moment: datetime, months: int) -> datetime:
    month = moment.month - 1 + months
    year = moment.year + month // 12
    month = month % 12 + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


def _next_allowed(last: float, frequency: str) -> float:
    moment = datetime.fromtimestamp(last, tz=UTC)
    if frequency == "ON_DEMAND":
        return last
    days = {"DAILY": 1, "WEEKLY": 7, "BIWEEKLY": 14}.get(frequency)
    if days is not None:
        return (moment + timedelta(days=days)).timestamp()
    months = {"MONTHLY": 1, "QUARTERLY": 3, "ANNUALLY": 12}[frequency]
    return _add_months(moment, months).timestamp()


def _agent_recurrence(raw: Mapping[str, Any], scope: PaymentScope) -> None:
    constraint = parse_model(AgentRecurrence, raw, what="payment.agent_recurrence")
    usage = scope.usage
    if usage is None:
        raise PolicyDenied("recurrence needs this mandate's usage history", code="usage_history_required")
    if constraint.max_occurrences is not None and usage.occurrences + 1 > constraint.max_occurrences:
        raise PolicyDenied(
            "the mandate's occurrences are used up",
            code="occurrences_exceeded",
            expected=f"<= {constraint.max_occurrences}",
            got=str(usage.occurrences + 1),
        )
    if usage.last_used_at is not None and scope.closed_at < _next_allowed(
        usage.last_used_at, constraint.frequency
    ):
        raise PolicyDenied(
            "too soon after the previous payment", code="too_frequent", expected=constraint.frequency
        )


def _instrument_listed(instrument: PaymentInstrument, allowed: Sequence[PaymentInstrument]) -> bool:
    return any(entry.id == instrument.id and entry.type == instrument.type for entry in allowed)


def _allowed_payment_instruments(raw: Mapping[str, Any], scope: PaymentScope) -> None:
    constraint = parse_model(AllowedPaymentInstruments, raw, what="payment.allowed_payment_instruments")
    if not _instrument_listed(scope.payment.payment_instrument, constraint.allowed):
        raise PolicyDenied("the payment instrument is not allowed", code="instrument_not_allowed")


def _allowed_pisps(raw: Mapping[str, Any], scope: PaymentScope) -> None:
    constraint = parse_model(AllowedPisps, raw, what="payment.allowed_pisps")
    pisp = scope.payment.pisp
    if pisp is None:
        raise PolicyDenied("the payment names no PISP", code="pisp_missing")
    if pisp not in constraint.allowed:
        raise PolicyDenied("the PISP is not allowed", code="pisp_not_allowed", got=pisp.domain_name)


def major_to_minor(value: int | float, currency: str) -> int:
    """A JSON number of major units as exact minor units (``100.5`` USD → ``10050``); ``InvalidInput``
    when the currency's exponent is unknown or the value is finer than its minor unit."""
    exponent = ISO_4217_EXPONENTS.get(currency)
    if exponent is None:
        raise InvalidInput(
            "no ISO 4217 exponent known for this currency", code="unknown_currency", got=currency
        )
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput("budget max must be a JSON number", code="bad_amount")
    # repr() of a double is its shortest round-trip decimal: the number the sender wrote.
    amount = Decimal(value) if isinstance(value, int) else Decimal(repr(value))
    if not amount.is_finite() or amount < 0:
        raise InvalidInput("budget max must be a non-negative number", code="bad_amount")
    minor = amount.scaleb(exponent)
    if minor != minor.to_integral_value() or minor > MAX_SAFE_INTEGER:
        raise InvalidInput(
            "budget max is finer than the currency's minor unit", code="bad_amount", got=str(amount)
        )
    return int(minor)


def _budget(raw: Mapping[str, Any], scope: PaymentScope) -> None:
    constraint = parse_model(Budget, raw, what="payment.budget")  # strict: max is a JSON number
    limit = major_to_minor(constraint.max, constraint.currency)
    amount = scope.payment.payment_amount
    _require_currency(amount, constraint.currency, message="budget currency differs")
    usage = scope.usage
    if usage is None:
        raise PolicyDenied("a budget needs this mandate's usage history", code="usage_history_required")
    if usage.spent_minor and usage.currency != constraint.currency:
        raise PolicyDenied("usage history is in another currency", code="currency_mismatch")
    total = usage.spent_minor + amount.amount
    if total > limit:
        raise PolicyDenied(
            "the budget would be exceeded", code="budget_exceeded", expected=f"<= {limit}", got=str(total)
        )


def _instant(text: str, *, end_of_day: bool) -> float:
    """An ISO 8601 date or date-time with an offset as a UNIX time; a bare date means the start (or,
    for an upper bound, the end) of that day in UTC."""
    if len(text) == 10:
        try:
            day = date.fromisoformat(text)
        except ValueError:
            raise InvalidInput("not an ISO 8601 date", code="bad_date") from None
        start = datetime(day.year, day.month, day.day, tzinfo=UTC)
        return (
            (start + timedelta(days=1) - timedelta(microseconds=1)).timestamp()
            if end_of_day
            else start.timestamp()
        )
    try:
        # The payments wing's one timestamp parser: length cap, and a UTC offset required.
        return parse_timestamp(text).timestamp()
    except InvalidInput as exc:
        raise InvalidInput(exc.message, code="bad_date") from None


def _execution_date(raw: Mapping[str, Any], scope: PaymentScope) -> None:
    constraint = parse_model(ExecutionDate, raw, what="payment.execution_date")
    stated = scope.payment.execution_date
    # Absent means immediate execution: the moment the payment was authorised.
    earliest = _instant(stated, end_of_day=False) if stated is not None else float(scope.closed_at)
    latest = _instant(stated, end_of_day=True) if stated is not None else float(scope.closed_at)
    if constraint.not_before is not None and earliest < _instant(constraint.not_before, end_of_day=False):
        raise PolicyDenied("execution date before the allowed window", code="execution_too_early")
    if constraint.not_after is not None and latest > _instant(constraint.not_after, end_of_day=True):
        raise PolicyDenied("execution date after the allowed window", code="execution_too_late")


PAYMENT_CONSTRAINTS: Final[Mapping[str, Callable[[Mapping[str, Any], PaymentScope], None]]] = {
    "payment.agent_recurrence": _agent_recurrence,
    "payment.allowed_payees": _allowed_payees,
    "payment.allowed_payment_instruments": _allowed_payment_instruments,
    "payment.allowed_pisps": _allowed_pisps,
    "payment.amount_range": _amount_range,
    "payment.budget": _budget,
    "payment.execution_date": _execution_date,
    "payment.reference": _payment_reference,
}


def _unknown(kind: object) -> PolicyDenied:
    return PolicyDenied("unknown constraint type", code="unknown_constraint", got=str(kind)[:100])


def evaluate_checkout_constraint(raw: Mapping[str, Any], scope: CheckoutScope) -> None:
    """Evaluate one open-checkout constraint; raise when it does not hold (unknown types included)."""
    evaluator = CHECKOUT_CONSTRAINTS.get(str(raw.get("type")))
    if evaluator is None:
        raise _unknown(raw.get("type"))
    evaluator(raw, scope)


def evaluate_payment_constraint(raw: Mapping[str, Any], scope: PaymentScope) -> None:
    """Evaluate one open-payment constraint; raise when it does not hold (unknown types included)."""
    evaluator = PAYMENT_CONSTRAINTS.get(str(raw.get("type")))
    if evaluator is None:
        raise _unknown(raw.get("type"))
    evaluator(raw, scope)


_USAGE_MEMBERS: Final = frozenset({"occurrences", "spent_minor", "currency", "last_used_at"})


def usage_from_value(value: object) -> MandateUsage:
    """The verifier's usage record from parsed JSON (a ``--usage`` file or a dispute case's ``usage``).

    ``{"occurrences": int, "spent_minor": int, "currency": "EUR", "last_used_at": seconds | null}``;
    unknown members are refused (``bad_usage``), so a typo cannot make an exhausted budget look fresh.
    """
    if not isinstance(value, Mapping):
        raise InvalidInput("usage is a JSON object", code="bad_usage")
    unknown = set(value) - _USAGE_MEMBERS
    if unknown:
        raise InvalidInput(
            "unknown member in the usage record", code="bad_usage", members=sorted(unknown)[:8]
        )
    last = value.get("last_used_at")
    if last is not None and (isinstance(last, bool) or not isinstance(last, int | float)):
        raise InvalidInput("last_used_at must be UNIX seconds or null", code="bad_usage")
    currency = value.get("currency")
    if not isinstance(currency, str):
        raise InvalidInput("currency must be an ISO 4217 code", code="bad_usage")
    return MandateUsage(
        occurrences=value.get("occurrences", 0),
        spent_minor=value.get("spent_minor", 0),
        currency=currency,
        last_used_at=None if last is None else float(last),
    )
