"""The AP2 v0.1 data model: every mandate type, exact money, and the raw JSON each mandate arrived as.

Three rules from docs/payments.md, "Hashes", shape this module:

1. **Hash what was received.**  A mandate is received as JSON and parsed strictly once
   (:func:`receive_intent`, :func:`receive_cart`, :func:`receive_payment`).  The result is a
   :class:`Received` holding the validated pydantic model *and* the raw JSON object, read-only.  The
   hash helpers (:func:`intent_hash`, :func:`cart_contents_hash`, :func:`cart_mandate_hash`,
   :func:`payment_contents_hash`) hash the raw object, never a model dump: a dump adds defaults
   (``refund_period: 30``), may drop or reorder what the model does not know, and re-formats numbers,
   so its bytes are not the bytes the other party signed.
2. **Be liberal in names, exact in values.**  The types are wire formats we do not own, so unknown
   members are kept (``extra="allow"``) and camelCase spellings are accepted beside the snake_case
   AP2 peers send; output is always snake_case (:meth:`Ap2Model.to_wire`).  An object that spells
   one member both ways is refused: two parsers would pick different values.
3. **Money is exact.**  ``PaymentCurrencyAmount.value`` is a :class:`decimal.Decimal` equal to the
   JSON number (see :mod:`mudrika.payments._values` for why ``Decimal(repr(float))`` is exact here);
   totals are compared with :func:`money_equal` / :func:`sum_amounts`, never with floats.

Field names, optionality and defaults follow AP2 v0.1 (``src/ap2/types/`` of the AP2 repository,
PyPI ``ap2`` 0.1.1), which borrows the W3C Payment Request API and Contact Picker API objects.  Our
deliberate differences, all documented in ``docs/payments.md``:

* ``PaymentItem.sku`` and ``IntentMandate.user_authorization`` are mudrika extensions (omitted from
  the output when unset, so plain AP2 peers never see them).
* ``PaymentMandateContents.timestamp`` is required: AP2's model fills in "now" when it is missing,
  which a verifier must never do for evidence.
* Types are strict (a JSON ``"true"`` is not a boolean), amounts are decimals, currency codes are
  upper-case ISO 4217 and timestamps must carry a UTC offset.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Generic, TypedDict, TypeVar, Unpack, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from mudrika.crypto.frozenjson import FrozenJSONDict, freeze, thaw
from mudrika.crypto.jcs import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_DEPTH,
    canonicalize,
    loads_received,
    mandate_hash,
)
from mudrika.errors import InvalidInput
from mudrika.payments._time import parse_time
from mudrika.payments._values import (
    CurrencyCode,
    IsoTimestamp,
    JsonInt,
    MoneyValue,
    exact_sum,
    parse_timestamp,
)

__all__ = [
    "Ap2Model",
    "CartContents",
    "CartMandate",
    "ContactAddress",
    "IntentMandate",
    "PaymentCurrencyAmount",
    "PaymentDetailsInit",
    "PaymentDetailsModifier",
    "PaymentItem",
    "PaymentMandate",
    "PaymentMandateContents",
    "PaymentMethodData",
    "PaymentOptions",
    "PaymentRequest",
    "PaymentResponse",
    "PaymentShippingOption",
    "ReceiveLimits",
    "Received",
    "cart_contents_hash",
    "cart_mandate_hash",
    "intent_hash",
    "intent_mandate_hash",
    "money_equal",
    "outgoing",
    "parse_time",
    "parse_timestamp",
    "payment_contents_hash",
    "receive",
    "receive_cart",
    "receive_intent",
    "receive_payment",
    "sum_amounts",
]


def _omit_when_none(value: object) -> bool:
    return value is None


class Ap2Model(BaseModel):
    """Base of every AP2 wire type: frozen, strict, unknown members kept, both spellings read."""

    model_config = ConfigDict(
        frozen=True,
        strict=True,
        extra="allow",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=False,
        hide_input_in_errors=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _one_spelling_per_member(cls, data: Any) -> Any:
        """Refuse ``{"display_items": ..., "displayItems": ...}``: which one counts would be a guess."""
        if isinstance(data, Mapping):
            for name, field in cls.model_fields.items():
                alias = field.alias
                if alias is not None and alias != name and name in data and alias in data:
                    raise PydanticCustomError(
                        "ambiguous_member",
                        "member given twice, as {name} and {alias}",
                        {"name": name, "alias": alias},
                    )
        return data

    def to_wire(self) -> dict[str, Any]:
        """The snake_case JSON object for this value (defaults and unknown members included).

        This is what a *sender* puts on the wire; use :func:`outgoing` to get it as a
        :class:`Received` whose hashes are the ones the receiver will compute.
        """
        return self.model_dump(mode="json", by_alias=False)


# ------------------------------------------------------------------ W3C Contact Picker API


class ContactAddress(Ap2Model):
    """A physical address (W3C Contact Picker API, "ContactAddress")."""

    city: str | None = None
    country: str | None = None
    dependent_locality: str | None = None
    organization: str | None = None
    phone_number: str | None = None
    postal_code: str | None = None
    recipient: str | None = None
    region: str | None = None
    sorting_code: str | None = None
    address_line: list[str] | None = None


# ------------------------------------------------------------------ W3C Payment Request API


class PaymentCurrencyAmount(Ap2Model):
    """A monetary amount (W3C Payment Request API, "PaymentCurrencyAmount"), held exactly."""

    currency: CurrencyCode
    value: MoneyValue


class PaymentItem(Ap2Model):
    """An item and the amount asked for it (W3C "PaymentItem")."""

    label: str
    amount: PaymentCurrencyAmount
    pending: bool | None = None
    refund_period: JsonInt = 30
    """Refund period in days (AP2 v0.1 default 30)."""
    sku: str | None = Field(default=None, exclude_if=_omit_when_none)
    """mudrika extension: the merchant's SKU, checked against ``IntentMandate.skus``."""


class PaymentShippingOption(Ap2Model):
    """A shipping option (W3C "PaymentShippingOption")."""

    id: str
    label: str
    amount: PaymentCurrencyAmount
    selected: bool | None = False


class PaymentOptions(Ap2Model):
    """What the payee wants to collect from the payer (W3C "PaymentOptions")."""

    request_payer_name: bool | None = False
    request_payer_email: bool | None = False
    request_payer_phone: bool | None = False
    request_shipping: bool | None = True
    shipping_type: str | None = None


class PaymentMethodData(Ap2Model):
    """A payment method the merchant accepts and its method-specific data (W3C "PaymentMethodData")."""

    supported_methods: str
    data: dict[str, Any] | None = Field(default_factory=dict)


class PaymentDetailsModifier(Ap2Model):
    """A change to the details when a given method is used (W3C "PaymentDetailsModifier")."""

    supported_methods: str
    total: PaymentItem | None = None
    additional_display_items: list[PaymentItem] | None = None
    data: dict[str, Any] | None = None


class PaymentDetailsInit(Ap2Model):
    """Items, options and the total of the payment being requested (W3C "PaymentDetailsInit")."""

    id: str
    display_items: list[PaymentItem]
    shipping_options: list[PaymentShippingOption] | None = None
    modifiers: list[PaymentDetailsModifier] | None = None
    total: PaymentItem


class PaymentRequest(Ap2Model):
    """A request for payment (W3C "PaymentRequest" interface, as data)."""

    method_data: list[PaymentMethodData]
    details: PaymentDetailsInit
    options: PaymentOptions | None = None
    shipping_address: ContactAddress | None = None


class PaymentResponse(Ap2Model):
    """The payer's choice of method and approval of a request (W3C "PaymentResponse")."""

    request_id: str
    method_name: str
    details: dict[str, Any] | None = None
    shipping_address: ContactAddress | None = None
    shipping_option: PaymentShippingOption | None = None
    payer_name: str | None = None
    payer_email: str | None = None
    payer_phone: str | None = None


# ------------------------------------------------------------------ AP2 v0.1 mandates


def _instant(text: str) -> datetime:
    """:func:`parse_timestamp`, remembered per text: a verifier reads each mandate's expiry and
    timestamp in several checks, and a ``datetime`` is immutable, so every read gets the same value
    (a malformed text raises every time: errors are not remembered).  Keyed by the text, not stored
    on the model, so a ``model_copy(update=...)`` can never carry a stale instant."""
    if type(text) is str:
        return _instant_of_text(text)
    return parse_timestamp(text)  # only a model_construct()ed object gets here: refused as before


@functools.lru_cache(maxsize=256)
def _instant_of_text(text: str) -> datetime:
    return parse_timestamp(text)


class IntentMandate(Ap2Model):
    """The user's purchase intent (AP2 v0.1 "IntentMandate").

    ``user_authorization`` is our extension: the user's compact JWS over :func:`intent_hash`.  AP2
    v0.1 has no intent signature; an unsigned intent must keep ``user_cart_confirmation_required``.
    """

    user_cart_confirmation_required: bool = True
    natural_language_description: str
    merchants: list[str] | None = None
    skus: list[str] | None = None
    requires_refundability: bool | None = False
    intent_expiry: IsoTimestamp
    user_authorization: str | None = Field(default=None, exclude_if=_omit_when_none)

    @property
    def intent_expiry_at(self) -> datetime:
        """``intent_expiry`` as an aware datetime."""
        return _instant(self.intent_expiry)


class CartContents(Ap2Model):
    """The cart the merchant signs (AP2 v0.1 "CartContents")."""

    id: str
    user_cart_confirmation_required: bool
    payment_request: PaymentRequest
    cart_expiry: IsoTimestamp
    merchant_name: str

    @property
    def cart_expiry_at(self) -> datetime:
        """``cart_expiry`` as an aware datetime."""
        return _instant(self.cart_expiry)


class CartMandate(Ap2Model):
    """Cart contents plus the merchant's signature over them (AP2 v0.1 "CartMandate")."""

    contents: CartContents
    merchant_authorization: str | None = None


class PaymentMandateContents(Ap2Model):
    """What the user authorises the payment network to charge (AP2 v0.1 "PaymentMandateContents")."""

    payment_mandate_id: str
    payment_details_id: str
    payment_details_total: PaymentItem
    payment_response: PaymentResponse
    merchant_agent: str
    timestamp: IsoTimestamp

    @property
    def timestamp_at(self) -> datetime:
        """``timestamp`` as an aware datetime."""
        return _instant(self.timestamp)


class PaymentMandate(Ap2Model):
    """Payment mandate contents plus the user's SD-JWT-VC presentation (AP2 v0.1 "PaymentMandate")."""

    payment_mandate_contents: PaymentMandateContents
    user_authorization: str | None = None


# ------------------------------------------------------------------ money


def money_equal(a: PaymentCurrencyAmount, b: PaymentCurrencyAmount) -> bool:
    """True when both amounts have the same currency code and the same exact value.

    ``30``, ``30.0`` and ``"30.00"`` are equal; ``USD 30`` and ``EUR 30`` are not (no error: a
    mismatch between two mandates is a failed check for the verifier to report, not bad input).
    """
    return a.currency == b.currency and a.value == b.value


def sum_amounts(items: Iterable[PaymentItem | PaymentCurrencyAmount], currency: str) -> Decimal:
    """Exact sum of the amounts, all of which must be in ``currency``.

    Raises :class:`~mudrika.errors.InvalidInput` ``currency_mismatch`` (with ``expected``, ``got``
    and ``index``) when any item is in another currency: adding USD to EUR has no meaning.
    """
    values: list[Decimal] = []
    for index, item in enumerate(items):
        amount = item.amount if isinstance(item, PaymentItem) else item
        if amount.currency != currency:
            raise InvalidInput(
                f"amount {index} is in {amount.currency}, expected {currency}",
                code="currency_mismatch",
                expected=currency,
                got=amount.currency,
                index=index,
            )
        values.append(amount.value)
    return exact_sum(values)


# ------------------------------------------------------------------ received objects

M = TypeVar("M", bound=Ap2Model)


@dataclass(frozen=True, slots=True)
class Received(Generic[M]):
    """A validated AP2 object together with the raw JSON object it was validated from.

    ``raw`` is read-only (objects are ``dict`` subclasses, arrays ``list`` subclasses whose mutators
    raise ``TypeError``) and is what every hash is computed over.  Build instances only with
    :func:`receive` and its typed shortcuts, or :func:`outgoing` on the sending side.
    """

    model: M
    raw: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.raw, FrozenJSONDict):
            raise TypeError("build Received with receive_*() or outgoing(), not directly")

    def plain(self) -> dict[str, Any]:
        """A mutable deep copy of :attr:`raw` with plain ``dict``/``list`` containers."""
        result: dict[str, Any] = thaw(self.raw)
        return result

    def wire_bytes(self) -> bytes:
        """RFC 8785 bytes of :attr:`raw`: valid JSON that parses back to the same value and hashes."""
        return canonicalize(self.raw)

    def with_member(self, name: str, value: Any) -> Received[M]:
        """A new Received whose raw object has top-level member ``name`` set to ``value``.

        Used by signers: hash the unsigned object, sign, then attach the signature
        (``merchant_authorization`` / ``user_authorization``).  A camelCase spelling of the same
        member is replaced, not duplicated.
        """
        camel = to_camel(name)
        updated = {key: item for key, item in self.raw.items() if key not in (name, camel)}
        updated[name] = value
        return receive(type(self.model), updated)


def _from_json_value(
    model_type: type[M], value: Any, *, max_bytes: int, max_depth: int, frozen: Any
) -> Received[M]:
    """``frozen`` is the read-only copy :func:`loads_received` made of ``value``, or None (``value`` came
    from the caller already parsed and is checked and copied here)."""
    if not isinstance(value, Mapping):
        raise InvalidInput(
            f"{model_type.__name__} must be a JSON object", code="not_an_object", type=model_type.__name__
        )
    if frozen is not None:
        plain = cast("dict[str, Any]", value)  # fresh from the strict parser: nobody else holds it
    else:
        # Already-parsed input may hold anything; canonicalising it checks that it is I-JSON
        # (string keys, finite numbers, safe integers, no lone surrogates, no cycles) and measures
        # its size.  Then it is copied, so later changes by the caller cannot reach us.
        top = dict(value)
        if len(canonicalize(top)) > max_bytes:
            raise InvalidInput(
                f"JSON document larger than {max_bytes} bytes", code="too_large", limit=max_bytes
            )
        plain = thaw(top)
        frozen = freeze(plain, max_depth=max_depth)
    try:
        model = model_type.model_validate(plain)
    except ValidationError as exc:
        raise _schema_error(model_type, exc) from None
    return Received(model=model, raw=frozen)


def _schema_error(model_type: type[Ap2Model], exc: ValidationError) -> InvalidInput:
    errors = [
        {"loc": ".".join(str(part) for part in err["loc"]), "type": err["type"], "msg": err["msg"]}
        for err in exc.errors(include_url=False, include_input=False, include_context=False)
    ]
    first = errors[0]
    where = first["loc"] or "(top level)"
    return InvalidInput(
        f"{model_type.__name__} does not match the AP2 v0.1 schema: {where}: {first['msg']}"
        + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""),
        code="schema_mismatch",
        type=model_type.__name__,
        errors=errors,
    )


class ReceiveLimits(TypedDict, total=False):
    """The size limits :func:`receive` takes, by name, for its typed forms (``receive_cart`` …)."""

    max_bytes: int
    max_depth: int


def receive(
    model_type: type[M],
    raw: bytes | str | Mapping[str, Any],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Received[M]:
    """Parse (strictly) and validate one AP2 object received from a peer.

    ``bytes``/``str`` go through :func:`mudrika.crypto.jcs.loads_received` (the rules of
    ``loads_strict``: duplicate keys, lone surrogates, NaN/Infinity, unsafe integers, too deep or too
    large are refused; its read-only copy becomes :attr:`Received.raw` and hashes without a pre-pass
    when the parser found it encoder-ready).  A ``Mapping`` is
    taken as already-parsed JSON: it is checked to be I-JSON and within the same limits, then
    deep-copied.  Raises :class:`~mudrika.errors.InvalidInput`: the parser's codes, ``not_an_object``,
    ``too_large``, ``too_deep`` or ``schema_mismatch`` (``errors`` lists ``loc``/``type``/``msg`` of
    every violation, never the offending values).
    """
    if isinstance(raw, bytes | bytearray | str):
        received = loads_received(raw, max_bytes=max_bytes, max_depth=max_depth)
        return _from_json_value(
            model_type, received.value, max_bytes=max_bytes, max_depth=max_depth, frozen=received.frozen
        )
    return _from_json_value(model_type, raw, max_bytes=max_bytes, max_depth=max_depth, frozen=None)


def receive_intent(
    raw: bytes | str | Mapping[str, Any], **limits: Unpack[ReceiveLimits]
) -> Received[IntentMandate]:
    """:func:`receive` an :class:`IntentMandate`."""
    return receive(IntentMandate, raw, **limits)


def receive_cart(
    raw: bytes | str | Mapping[str, Any], **limits: Unpack[ReceiveLimits]
) -> Received[CartMandate]:
    """:func:`receive` a :class:`CartMandate`."""
    return receive(CartMandate, raw, **limits)


def receive_payment(
    raw: bytes | str | Mapping[str, Any], **limits: Unpack[ReceiveLimits]
) -> Received[PaymentMandate]:
    """:func:`receive` a :class:`PaymentMandate`."""
    return receive(PaymentMandate, raw, **limits)


def outgoing(model: M) -> Received[M]:
    """The sending side: ``model.to_wire()`` as a :class:`Received`, i.e. exactly what the peer gets.

    Send ``received.wire_bytes()`` (or ``json.dumps(received.plain())``); the receiver's hash helpers
    then agree with the ones computed here.
    """
    return receive(type(model), model.to_wire())


# ------------------------------------------------------------- hashes (docs/payments.md, "Hashes")

_INTENT_SIGNATURE_MEMBERS = ("user_authorization", "userAuthorization")


def _h(value: Any) -> str:
    """``mandate_hash`` of a raw (read-only) JSON value; the canonicaliser reads it in place."""
    return mandate_hash(value)


def _member(raw: Mapping[str, Any], name: str) -> Any:
    """The value of a required top-level member, under its snake_case or camelCase spelling."""
    if name in raw:
        return raw[name]
    camel = to_camel(name)
    if camel in raw:
        return raw[camel]
    raise InvalidInput(f"member {name} missing", code="schema_mismatch", member=name)


def intent_hash(intent: Received[IntentMandate]) -> str:
    """H(intent without ``user_authorization``): what the user's intent JWS signs."""
    unsigned = {key: value for key, value in intent.raw.items() if key not in _INTENT_SIGNATURE_MEMBERS}
    return _h(unsigned)


def cart_contents_hash(cart: Received[CartMandate]) -> str:
    """H(CartContents): the ``cart_hash`` claim of ``merchant_authorization``."""
    return _h(_member(cart.raw, "contents"))


def intent_mandate_hash(intent: Received[IntentMandate]) -> str:
    """H(whole IntentMandate, user_authorization included): ``transaction_data[2]`` of the KB-JWT."""
    return _h(intent.raw)


def cart_mandate_hash(cart: Received[CartMandate]) -> str:
    """H(whole CartMandate, merchant_authorization included): ``transaction_data[0]`` of the KB-JWT."""
    return _h(cart.raw)


def payment_contents_hash(payment: Received[PaymentMandate]) -> str:
    """H(PaymentMandateContents): ``transaction_data[1]`` of the user's key-binding JWT."""
    return _h(_member(payment.raw, "payment_mandate_contents"))
