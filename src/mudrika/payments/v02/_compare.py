"""The values that differ in an AP2 v0.2 transaction, read from its tokens after a check failed.

Why: a v0.2 failure names a broken binding (``v02.checkout.merchant_signature``: the checkout was
changed after the merchant signed it; ``v02.payment.transaction_id``: the payment covers another
checkout JWT), but the person deciding the dispute needs *what* changed: the checkout's total beside
the amount the agent paid, the forged date beside the time the agent's verified signature vouches
for, the payee beside the merchant.  Every value here is read from what the tokens say, whether or
not their signatures held, and each pair is one :class:`~mudrika.payments.report.Comparison` of the
report kernel, rendered by the same text, HTML and JSON code as the v0.1 chain's.  So each is
*evidence from unsigned data*: it informs the analyst and never changes a verdict.

Order: dates first (what a dispute over *when* turns on), each beside the ``iat`` of the agent's
key-binding token that closed the mandate, shown only when that token's signature and ``iat``
checks passed (otherwise nothing vouches for that time); then the checkout against the payment,
the checkout against its own line items, the open mandates' pre-set values against the closed
ones, and the receipts against the mandates they name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from mudrika.errors import MudrikaError
from mudrika.payments._time import iso
from mudrika.payments._values import format_minor_units, parse_timestamp
from mudrika.payments.report import Comparison
from mudrika.payments.v02.hops import VerifiedToken
from mudrika.payments.v02.models import Checkout, PaymentMandate
from mudrika.payments.v02.receipts import VerifiedReceipt
from mudrika.payments.v02.wire import sd_digest

__all__ = ["compare_v02"]

_SAME_MOMENT: Final = 60.0
"""Seconds within which two times are the same moment (an agent stamps a mandate and signs it at
once; a slow device or clock skew is not a change)."""
_NOT_PRESET: Final = frozenset({"vct", "constraints", "cnf", "iat", "exp", "nbf"})
_MAX_SHOWN: Final = 200


def _shown(value: Any) -> str:
    """A party-supplied JSON value as one compact line (the renderers escape and cut it)."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


def _money(value: Any) -> str:
    """An ``{amount, currency}`` member as money, or as it was written when it is not one."""
    if isinstance(value, Mapping):
        amount, currency = value.get("amount"), value.get("currency")
        if isinstance(amount, int) and not isinstance(amount, bool) and isinstance(currency, str):
            return format_minor_units(currency, amount)
    return _shown(value)


def _seconds(value: Any) -> float | None:
    """A NumericDate or an RFC 3339 date-time as UNIX seconds; ``None`` when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return parse_timestamp(value).timestamp()
        except MudrikaError:
            return None
    return None


def _date(value: Any) -> str:
    seconds = _seconds(value)
    return iso(seconds) if seconds is not None and not isinstance(value, str) else _shown(value)


def _total(checkout: Checkout) -> int | None:
    try:
        return checkout.total.amount
    except MudrikaError:
        return None


def _closed_at(
    tokens: Sequence[VerifiedToken] | None, kind: str, passed: Callable[[str], bool]
) -> float | None:
    """The ``iat`` of the closing hop when its signature and ``iat`` checks passed, else ``None``."""
    if tokens is None or len(tokens) < 2:
        return None
    closing = tokens[-1]
    prefix = f"v02.{kind}.hop{closing.index}"
    if closing.iat is None or not (passed(f"{prefix}.signature") and passed(f"{prefix}.iat")):
        return None
    return float(closing.iat)


def _closed_by(kind: str) -> str:
    return f"{kind} mandate closed at (iat, the agent's verified signature)"


class _Found:
    """The comparisons in the order they are found: dates first, then everything else."""

    def __init__(self) -> None:
        self.dates: list[Comparison] = []
        self.values: list[Comparison] = []

    def date(self, name: str, meaning: str, left: tuple[str, str], right: tuple[str, str]) -> None:
        self.dates.append(Comparison(name, meaning, left[0], left[1], right[0], right[1]))

    def value(self, name: str, meaning: str, left: tuple[str, str], right: tuple[str, str]) -> None:
        self.values.append(Comparison(name, meaning, left[0], left[1], right[0], right[1]))


def _checkout_dates(
    found: _Found, checkout: Checkout, merchant_verified: bool, closed_at: float | None
) -> None:
    """The checkout's own dates beside the time the agent's verified signature closed it: shown when
    they contradict that time, or when the merchant's signature did not verify (then the date is
    exactly what may have been changed) and it is not the same moment."""
    if closed_at is None:
        return
    extra = checkout.model_extra or {}
    signed = _seconds(extra.get("iat"))
    if signed is not None and (
        signed > closed_at + _SAME_MOMENT
        or (not merchant_verified and abs(signed - closed_at) > _SAME_MOMENT)
    ):
        found.date(
            "checkout date",
            "the checkout's date is not a time before the agent closed the checkout mandate over it",
            ("checkout iat (merchant, presented)", _date(extra.get("iat"))),
            (_closed_by("checkout"), iso(closed_at)),
        )
    expires = _seconds(extra.get("expires_at"))
    if expires is not None and (expires < closed_at or not merchant_verified):
        found.date(
            "checkout expiry",
            "the checkout expired before the agent closed the checkout mandate over it"
            if expires < closed_at
            else "the checkout's expiry, which no verified merchant signature vouches for",
            ("checkout expires_at (merchant, presented)", _date(extra.get("expires_at"))),
            (_closed_by("checkout"), iso(closed_at)),
        )


def _payment_dates(
    found: _Found,
    tokens: Sequence[VerifiedToken] | None,
    payment: PaymentMandate | None,
    closed_at: float | None,
) -> None:
    """The closed payment mandate's own ``iat`` beside the verified time its closing hop was signed."""
    if payment is None or closed_at is None or tokens is None or payment.iat is None:
        return
    if abs(payment.iat - closed_at) > _SAME_MOMENT:
        found.date(
            "payment date",
            "the payment mandate's date is not the time the agent signed it",
            ("payment mandate iat (presented)", iso(payment.iat)),
            (_closed_by("payment"), iso(closed_at)),
        )


def _checkout_against_payment(found: _Found, checkout: Checkout, payment: PaymentMandate) -> None:
    total = _total(checkout)
    paid = payment.payment_amount
    if total is not None and (paid.amount != total or paid.currency != checkout.currency):
        found.value(
            "total",
            "the amount paid is not the checkout's total",
            ("checkout total (merchant)", format_minor_units(checkout.currency, total)),
            ("payment amount (agent)", format_minor_units(paid.currency, paid.amount)),
        )
    if payment.payee.id != checkout.merchant.id:
        found.value(
            "payee",
            "the payment pays another party than the merchant of the checkout",
            ("checkout merchant (merchant)", f"{checkout.merchant.id} ({checkout.merchant.name})"),
            ("payment payee (agent)", f"{payment.payee.id} ({payment.payee.name})"),
        )
    elif payment.payee.name != checkout.merchant.name:
        found.value(
            "payee name",
            "the payment names the checkout's merchant under another name",
            ("checkout merchant (merchant)", checkout.merchant.name),
            ("payment payee (agent)", payment.payee.name),
        )


def _checkout_against_items(found: _Found, checkout: Checkout) -> None:
    """The checkout's lines against its totals: a total raised after signing leaves the lines behind."""
    line_totals = []
    for line in checkout.line_items:
        amounts = [entry.amount for entry in line.totals if entry.type == "total"]
        line_totals.append(amounts[0] if len(amounts) == 1 else line.item.price * line.quantity)
    subtotals = [entry.amount for entry in checkout.totals if entry.type == "subtotal"]
    if not line_totals or len(subtotals) != 1 or sum(line_totals) == subtotals[0]:
        return
    found.value(
        "items",
        "the checkout's line items do not add up to its subtotal",
        (
            "line items add up to (merchant)",
            format_minor_units(checkout.currency, sum(line_totals))
            + " ("
            + "; ".join(
                f"{line.quantity} x {line.item.title or line.item.id}" for line in checkout.line_items[:8]
            )
            + ")",
        ),
        ("checkout subtotal (merchant)", format_minor_units(checkout.currency, subtotals[0])),
    )


def _presets(found: _Found, tokens: Sequence[VerifiedToken] | None, kind: str) -> None:
    """Every value an open mandate pre-set beside what the closed mandate says (dates first)."""
    if tokens is None or len(tokens) < 2 or tokens[-1].content is None:
        return
    closed = tokens[-1].content
    for token in tokens[:-1]:
        for name, value in (token.content or {}).items():
            if name in _NOT_PRESET or (name in closed and closed[name] == value):
                continue
            shown = _money if name.endswith("amount") else _shown
            record = found.date if name.endswith("date") else found.value
            record(
                f"{kind} {name.replace('_', ' ')}",
                f"the closed {kind} mandate does not repeat the value its open mandate pre-set",
                (f"open {kind} mandate (hop {token.index}, pre-set)", shown(value)),
                (f"closed {kind} mandate (agent)", shown(closed[name]) if name in closed else "(absent)"),
            )


def _receipt(
    found: _Found, kind: str, verified: VerifiedReceipt | None, tokens: Sequence[VerifiedToken] | None
) -> None:
    """A receipt's ``reference`` against the mandates of the chain it should acknowledge, and its date
    against the time the acknowledged mandate was closed."""
    if verified is None or tokens is None or not tokens:
        return
    reference = verified.receipt.reference
    closing = tokens[-1]
    if reference != closing.sd_hash:
        named = "no token of this chain"
        for token in tokens:
            if reference == token.sd_hash:
                named = f"token {token.index} of the chain as presented, not the closing one"
            elif reference == sd_digest(token.parsed.issuer_jwt):
                named = f"the JWT of token {token.index} alone (without its disclosures)"
        found.value(
            f"{kind} receipt reference",
            f"the {kind} receipt names {named}",
            (f"{kind} receipt reference (receipt signer)", reference),
            (f"closing {kind} hop as presented (hash)", closing.sd_hash),
        )
    if closing.iat is not None and verified.receipt.iat + _SAME_MOMENT < closing.iat:
        found.date(
            f"{kind} receipt date",
            f"the {kind} receipt is dated before the mandate it acknowledges was closed",
            (f"{kind} receipt iat (receipt signer)", iso(verified.receipt.iat)),
            (f"{kind} mandate closed at (iat, as presented)", iso(closing.iat)),
        )


def compare_v02(
    *,
    checkout_tokens: Sequence[VerifiedToken] | None,
    payment_tokens: Sequence[VerifiedToken] | None,
    checkout: Checkout | None,
    merchant_verified: bool,
    receipts: Mapping[str, VerifiedReceipt | None],
    passed: Callable[[str], bool],
) -> tuple[Comparison, ...]:
    """Every pair of values the v0.2 bindings tie together that differs, dates first.

    ``checkout`` is the Checkout the later checks were evaluated on (the verified one, else what the
    checkout JWT says); ``merchant_verified`` whether the merchant's signature over it held;
    ``passed(check_id)`` whether a check of the report passed (a closing hop's time is shown only
    when its signature and ``iat`` checks passed)."""
    found = _Found()
    payment_mandate = payment_tokens[-1].mandate if payment_tokens else None
    payment = payment_mandate if isinstance(payment_mandate, PaymentMandate) else None
    if checkout is not None:
        _checkout_dates(found, checkout, merchant_verified, _closed_at(checkout_tokens, "checkout", passed))
    _payment_dates(found, payment_tokens, payment, _closed_at(payment_tokens, "payment", passed))
    if checkout is not None and payment is not None:
        _checkout_against_payment(found, checkout, payment)
    if checkout is not None:
        _checkout_against_items(found, checkout)
    _presets(found, checkout_tokens, "checkout")
    _presets(found, payment_tokens, "payment")
    _receipt(found, "checkout", receipts.get("checkout"), checkout_tokens)
    _receipt(found, "payment", receipts.get("payment"), payment_tokens)
    return (*found.dates, *found.values)
