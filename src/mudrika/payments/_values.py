"""Scalar wire types of the AP2 v0.1 profile: exact money, ISO 4217 codes, JSON integers, timestamps.

Money is the reason this module exists.  AP2 v0.1 declares ``PaymentCurrencyAmount.value`` as a JSON
number and its reference models hold it in a Python ``float``; adding floats (``29.99 + 0.01``) is
not exact, and a verifier that compares totals with float arithmetic can be fooled by rounding.  We
keep every amount as a :class:`decimal.Decimal` equal to the JSON value, obtained from its *text*:

* A JSON number with a fraction or exponent reaches us as the ``float`` that
  :func:`mudrika.crypto.jcs.loads_strict` produced with correctly rounded decimal-to-binary conversion.
  ``repr(float)`` is the *shortest* decimal string that converts back to the same double (Python's
  float repr since 3.1), so ``Decimal(repr(x))`` recovers the literal the sender wrote whenever it
  had at most 15 significant digits (``29.99`` -> ``Decimal("29.99")``, ``1e2`` -> ``Decimal("100.0")``).
  ``Decimal(x)`` would instead expose the binary value (``29.989999999999998436805981327779591083526611328125``).
  For longer literals the double is the value: RFC 8785 (and so the mandate hash) and every I-JSON
  peer see that same double, and its shortest repr is the one decimal they all agree on.
* A JSON integer reaches us as an ``int``: ``Decimal(int)`` is exact.
* A string (the W3C Payment Request API spells amounts as strings) must match the W3C "valid decimal
  monetary value" grammar ``-?[0-9]+(\\.[0-9]+)?``; no exponent, no spaces, no ``+``.

Every accepted amount must survive the trip back to a JSON number exactly (``Decimal(repr(float(d)))
== d``), lie below 10**18 in magnitude and have at most 18 fraction digits.  Those limits keep every
sum exact in a 60-digit decimal context, and mean that what we emit is the amount we hold.
"""

from __future__ import annotations

import decimal
import functools
import math
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Final

from pydantic import AfterValidator, BeforeValidator, PlainSerializer
from pydantic_core import PydanticCustomError

from mudrika.crypto.jcs import MAX_SAFE_INTEGER
from mudrika.errors import InvalidInput

__all__ = [
    "ISO_4217_EXPONENTS",
    "MAX_AMOUNT_DIGITS",
    "MAX_FRACTION_DIGITS",
    "CurrencyCode",
    "IsoTimestamp",
    "JsonInt",
    "MoneyValue",
    "amount_from_json",
    "amount_to_json",
    "exact_sum",
    "format_minor_units",
    "format_money",
    "parse_timestamp",
]

MAX_AMOUNT_DIGITS = 18
"""Amounts must be smaller than 10**MAX_AMOUNT_DIGITS in magnitude."""

MAX_FRACTION_DIGITS = 18
"""At most this many digits after the decimal point (18 covers the smallest unit of common tokens)."""

_W3C_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_CURRENCY = re.compile(r"[A-Z]{3}")
_MAX_TEXT = 64
_SUM_PRECISION = 60


def _custom(kind: str, message: str) -> PydanticCustomError:
    return PydanticCustomError(kind, message)


# ------------------------------------------------------------------------------------------- money


def amount_from_json(value: object) -> Decimal:
    """Convert a JSON amount (``int``, ``float``, W3C decimal string or ``Decimal``) to an exact Decimal.

    Raises :class:`pydantic_core.PydanticCustomError` (a ``ValueError``) so that, used as a validator,
    the failure becomes part of the model's validation error with its location.
    """
    if isinstance(value, bool):
        raise _custom("amount_type", "amount must be a JSON number or decimal string, not a boolean")
    if isinstance(value, int):
        amount = Decimal(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _custom("amount_not_finite", "amount must be finite")
        # repr() is the shortest round-trip string of the double: see the module docstring.
        amount = Decimal(repr(value))
    elif isinstance(value, str):
        if len(value) > _MAX_TEXT or _W3C_DECIMAL.fullmatch(value) is None:
            raise _custom(
                "amount_syntax",
                "amount string must be a W3C valid decimal monetary value (-?[0-9]+(.[0-9]+)?)",
            )
        amount = Decimal(value)
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise _custom("amount_not_finite", "amount must be finite")
        amount = value
    else:
        raise _custom("amount_type", "amount must be a JSON number or decimal string")
    _check_amount_range(amount)
    return amount


def _check_amount_range(amount: Decimal) -> None:
    exponent = amount.as_tuple().exponent
    if not isinstance(exponent, int):  # NaN and infinities have a str exponent
        raise _custom("amount_type", "amount must be a finite number")
    if amount != 0 and amount.adjusted() >= MAX_AMOUNT_DIGITS:
        raise _custom("amount_out_of_range", f"amount must be smaller than 10**{MAX_AMOUNT_DIGITS}")
    if exponent < -MAX_FRACTION_DIGITS:
        raise _custom(
            "amount_out_of_range", f"amount must have at most {MAX_FRACTION_DIGITS} fraction digits"
        )
    if not _representable(amount):
        raise _custom(
            "amount_not_representable",
            "amount cannot be written as a JSON number without rounding (too many significant digits)",
        )


def _representable(amount: Decimal) -> bool:
    if amount == amount.to_integral_value() and abs(amount) <= MAX_SAFE_INTEGER:
        return True
    return Decimal(repr(float(amount))) == amount


#: ISO 4217 minor-unit exponents of the currencies a budget may be stated in (AP2 v0.2
#: ``payment.budget``: a currency missing here fails ``unknown_currency`` rather than guess an
#: exponent) and that :func:`format_money` pads to.
ISO_4217_EXPONENTS: Final[Mapping[str, int]] = {
    **dict.fromkeys(
        [
            "AED",
            "AUD",
            "BRL",
            "CAD",
            "CHF",
            "CNY",
            "CZK",
            "DKK",
            "EGP",
            "EUR",
            "GBP",
            "HKD",
            "HUF",
            "IDR",
            "ILS",
            "INR",
            "MXN",
            "MYR",
            "NOK",
            "NZD",
            "PHP",
            "PLN",
            "QAR",
            "RON",
            "RUB",
            "SAR",
            "SEK",
            "SGD",
            "THB",
            "TRY",
            "TWD",
            "USD",
            "ZAR",
            "NGN",
            "KES",
            "PKR",
            "COP",
            "ARS",
            "PEN",
        ],
        2,
    ),
    **dict.fromkeys(["JPY", "KRW", "VND", "CLP", "ISK", "UGX", "XAF", "XOF"], 0),
    **dict.fromkeys(["BHD", "JOD", "KWD", "OMR", "TND"], 3),
}

_DEFAULT_EXPONENT: Final = 2
"""The minor-unit digits shown for a code not in :data:`ISO_4217_EXPONENTS` (most ISO 4217 currencies)."""


def format_money(currency: str, value: Decimal) -> str:
    """An amount as a person reads money: ``USD 1,384.90``; the one form every report rendering uses.

    Why one form: ``USD 1384.9`` (the Decimal as parsed) reads as a typo beside ``USD 138.49``, and an
    analyst comparing two amounts must see them written alike.  The code comes first (ISO 4217, as
    the mandate spells it), thousands are grouped with commas, and the fraction is padded to the
    currency's minor unit (two digits for USD, none for JPY, three for BHD).  Never rounded: a value
    finer than the minor unit keeps every digit it has (``USD 0.001``), since the report quotes what
    was signed, not what a ledger would book.
    """
    exponent = ISO_4217_EXPONENTS.get(currency, _DEFAULT_EXPONENT)
    sign, _digits, power = value.as_tuple()
    fraction_digits = max(-power, exponent) if isinstance(power, int) else exponent
    text = f"{abs(value):,.{fraction_digits}f}"
    return f"{currency} {'-' if sign and value != 0 else ''}{text}"


def format_minor_units(currency: str, minor: int) -> str:
    """An amount in integer minor units (AP2 v0.2) as :func:`format_money` writes it; a currency with
    no known exponent is written as what it is (``N minor units of`` its code) rather than guessed."""
    exponent = ISO_4217_EXPONENTS.get(currency)
    if exponent is None:
        return f"{minor} minor units of {currency}"
    return format_money(currency, Decimal(minor).scaleb(-exponent))


def amount_to_json(amount: Decimal) -> int | float:
    """The JSON number for an accepted amount: an ``int`` when integral, else the exact double."""
    if amount == amount.to_integral_value() and abs(amount) <= MAX_SAFE_INTEGER:
        return int(amount)
    return float(amount)


def exact_sum(amounts: Iterable[Decimal]) -> Decimal:
    """Sum decimals exactly; any rounding would raise (it cannot happen within the amount limits).

    One context built once: entering a local context costs more than the additions themselves; the
    loop runs in ``functools.reduce`` (C), since a cart has only a few items to add."""
    return functools.reduce(_EXACT_SUM.add, amounts, _ZERO)


_ZERO = Decimal(0)


_EXACT_SUM = decimal.Context(
    prec=_SUM_PRECISION,
    traps=[
        decimal.InvalidOperation,
        decimal.DivisionByZero,
        decimal.Overflow,
        decimal.Inexact,
        decimal.Rounded,
    ],
)


MoneyValue = Annotated[
    Decimal,
    BeforeValidator(amount_from_json),
    PlainSerializer(amount_to_json, return_type=int | float),
]
"""An exact amount: parsed from the JSON text (see module docstring), emitted as a JSON number."""


def _check_currency(code: str) -> str:
    if _CURRENCY.fullmatch(code) is None:
        raise _custom("currency_code", "currency must be a three-letter ISO 4217 code in upper case (A-Z)")
    return code


CurrencyCode = Annotated[str, AfterValidator(_check_currency)]
"""An ISO 4217 alphabetic code, three upper-case ASCII letters (``USD``, ``EUR``, ``INR``)."""


# ---------------------------------------------------------------------------------------- integers


def _json_int(value: object) -> object:
    """Accept a JSON integer, including one a protobuf Struct turned into a double (``30.0``)."""
    if isinstance(value, bool):
        raise _custom("int_type", "expected a JSON integer, not a boolean")
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and abs(value) > MAX_SAFE_INTEGER:
        raise _custom("int_out_of_range", "integer beyond +-(2**53-1)")
    return value


JsonInt = Annotated[int, BeforeValidator(_json_int)]
"""A JSON integer within +-(2**53-1); an integral float (``30.0``) is accepted as the same number."""


# -------------------------------------------------------------------------------------- timestamps


def _parse(text: str) -> datetime:
    """Parse an ISO 8601 timestamp that carries a UTC offset; raise PydanticCustomError otherwise."""
    if len(text) > _MAX_TEXT:
        raise _custom("timestamp_syntax", "timestamp is too long for ISO 8601")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise _custom("timestamp_syntax", "timestamp is not ISO 8601") from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise _custom(
            "naive_timestamp",
            "timestamp has no UTC offset (add 'Z' or '+hh:mm'); a naive time means different "
            "instants to different parties",
        )
    return parsed


def _check_timestamp(text: str) -> str:
    _parse(text)
    return text


IsoTimestamp = Annotated[str, AfterValidator(_check_timestamp)]
"""An ISO 8601 timestamp string with a UTC offset; kept as the string that was sent."""


def parse_timestamp(text: str) -> datetime:
    """Parse an AP2 ISO 8601 timestamp into an aware ``datetime``.

    Why refuse naive times: ``2025-09-16T15:00:00`` is a different instant for the merchant, the user
    and a dispute analyst in three time zones, so an expiry without an offset cannot be checked.
    Fraction digits beyond microseconds are truncated (``datetime`` resolution).

    Raises :class:`~mudrika.errors.InvalidInput` with code ``naive_timestamp`` or ``bad_timestamp``.
    """
    if not isinstance(text, str):
        raise InvalidInput("timestamp must be a string", code="bad_timestamp")
    try:
        return _parse(text)
    except PydanticCustomError as exc:
        code = "naive_timestamp" if exc.type == "naive_timestamp" else "bad_timestamp"
        raise InvalidInput(exc.message(), code=code) from None
