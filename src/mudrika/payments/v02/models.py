"""AP2 v0.2 mandate, constraint and receipt types, exactly as the v0.2 JSON Schemas define them.

Why these models are strict: a mandate arrives as evidence from a party to the transaction, so a
field the schema does not name is refused (``extra="forbid"``) rather than carried along unsigned
in our understanding; integers are integers (no ``true`` for ``1``, no ``12.0`` for ``12``); money
is an integer number of minor units (ISO 4217), never a float.  The UCP ``Checkout`` object inside
the merchant-signed ``checkout_jwt`` is the one exception: UCP declares it open
(``additionalProperties: true``), so unknown members are kept, not refused.

Constraints stay raw JSON objects on the open mandates: the specification requires an unknown
constraint type to *fail evaluation*, not to make the mandate unreadable, so each constraint is
parsed by :mod:`mudrika.payments.v02.constraints` when it is evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from mudrika.crypto.jcs import MAX_SAFE_INTEGER
from mudrika.errors import InvalidInput
from mudrika.payments._load import validation_errors

__all__ = [
    "Amount",
    "Checkout",
    "CheckoutLineItem",
    "CheckoutMandate",
    "CheckoutReceipt",
    "Cnf",
    "ConstraintItem",
    "LineItemRequirement",
    "Merchant",
    "OpenCheckoutMandate",
    "OpenPaymentMandate",
    "P256Jwk",
    "PaymentInstrument",
    "PaymentMandate",
    "PaymentReceipt",
    "Pisp",
    "ProductItem",
    "Total",
    "parse_model",
]

_MAX_TEXT: Final = 2048
_MAX_LIST: Final = 256

Text = Annotated[str, StringConstraints(min_length=1, max_length=_MAX_TEXT)]
OptionalText = Annotated[str, StringConstraints(max_length=_MAX_TEXT)]
Currency = Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")]
MinorUnits = Annotated[int, Field(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
NumericDate = Annotated[int, Field(ge=0, le=MAX_SAFE_INTEGER)]
Coordinate = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{43}$")]


class _Strict(BaseModel):
    """AP2-owned types: frozen, strict, unknown members refused, input never echoed in errors."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, hide_input_in_errors=True)


class _Open(BaseModel):
    """UCP types (``additionalProperties: true``): frozen and strict, unknown members kept."""

    model_config = ConfigDict(frozen=True, extra="allow", strict=True, hide_input_in_errors=True)


# -- common types (types/*.json) -------------------------------------------------------------------


class Amount(_Strict):
    """``types/amount.json``: integer minor units of an ISO 4217 currency."""

    amount: MinorUnits
    currency: Currency


class Merchant(_Strict):
    """``types/merchant.json``."""

    id: Text
    name: Text
    website: OptionalText | None = None


class PaymentInstrument(_Strict):
    """``types/payment_instrument.json``."""

    id: Text
    type: Text
    description: OptionalText | None = None


class Pisp(_Strict):
    """``types/pisp.json``."""

    legal_name: Text
    brand_name: Text
    domain_name: Text


class P256Jwk(_Strict):
    """``types/jwk.json`` narrowed to what a hop key may be: a *public* P-256 key for signatures.

    The schema also lists ``x5u``/``x5c``/``x5t``; a ``cnf`` key is trusted because the previous
    signer put it there, never because of a certificate URL, so those members are refused, and so
    is ``d`` (a private key has no place in a credential).
    """

    kty: Literal["EC"]
    crv: Literal["P-256"]
    x: Coordinate
    y: Coordinate
    use: Literal["sig"] | None = None
    key_ops: list[Literal["verify"]] | None = Field(default=None, min_length=1, max_length=1)
    alg: Literal["ES256"] | None = None
    kid: OptionalText | None = None


class Cnf(_Strict):
    """RFC 7800 §3.1 confirmation claim holding the next delegate's key."""

    jwk: P256Jwk


# -- open checkout mandate (open_checkout_mandate.json) --------------------------------------------


class ConstraintItem(_Strict):
    """``open_checkout_mandate.json#/$defs/item``: an acceptable product by id (and title)."""

    id: Text
    title: OptionalText


class LineItemRequirement(_Strict):
    """``#/$defs/line_item_requirements``: ``quantity`` of items from the revealed ``acceptable_items``."""

    id: Text
    acceptable_items: list[ConstraintItem] = Field(max_length=_MAX_LIST)
    quantity: Annotated[int, Field(gt=0, le=MAX_SAFE_INTEGER)]


def _typed_constraint(constraint: dict[str, Any]) -> dict[str, Any]:
    # Only the discriminator here: each type's own members are validated when the verifier evaluates
    # it (:mod:`.constraints`), where an unknown type fails as its own named check.
    kind = constraint.get("type")
    if not isinstance(kind, str) or not kind or len(kind) > 256:
        raise ValueError("every constraint needs a string 'type'")
    return constraint


_Constraint = Annotated[dict[str, Any], AfterValidator(_typed_constraint)]


class OpenCheckoutMandate(_Strict):
    """``mandate.checkout.open.1``: constraints on the checkout a delegate may close, and its key."""

    vct: Literal["mandate.checkout.open.1"]
    constraints: list[_Constraint] = Field(min_length=1, max_length=_MAX_LIST)
    cnf: Cnf
    iat: NumericDate | None = None
    exp: NumericDate | None = None


class CheckoutMandate(_Strict):
    """``mandate.checkout.1``: the closed checkout, bound to the merchant-signed ``checkout_jwt``."""

    vct: Literal["mandate.checkout.1"]
    checkout_jwt: Annotated[str, StringConstraints(min_length=5, max_length=128 * 1024)]
    checkout_hash: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{43,86}$")]
    iat: NumericDate | None = None
    exp: NumericDate | None = None


# -- payment mandates (open_payment_mandate.json, payment_mandate.json) ----------------------------


class OpenPaymentMandate(_Strict):
    """``mandate.payment.open.1``: constraints on the payment, optional pre-set values, the key."""

    vct: Literal["mandate.payment.open.1"]
    constraints: list[_Constraint] = Field(min_length=1, max_length=_MAX_LIST)
    cnf: Cnf
    payee: Merchant | None = None
    payment_amount: Amount | None = None
    payment_instrument: PaymentInstrument | None = None
    pisp: Pisp | None = None
    execution_date: Text | None = None
    risk_data: dict[str, Any] | None = None
    iat: NumericDate | None = None
    exp: NumericDate | None = None


class PaymentMandate(_Strict):
    """``mandate.payment.1``: the closed payment, bound to the checkout by ``transaction_id``."""

    vct: Literal["mandate.payment.1"]
    transaction_id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{43,86}$")]
    payee: Merchant
    payment_amount: Amount
    payment_instrument: PaymentInstrument
    pisp: Pisp | None = None
    execution_date: Text | None = None
    risk_data: dict[str, Any] | None = None
    iat: NumericDate | None = None
    exp: NumericDate | None = None


# -- the UCP checkout inside checkout_jwt (types/checkout.json and friends) ------------------------


class Total(_Open):
    """``types/total.json``: a signed amount in minor units."""

    type: Text
    amount: MinorUnits
    display_text: OptionalText | None = None


class ProductItem(_Open):
    """``types/item.json``: the product on a line, priced in minor units."""

    id: Text
    title: OptionalText
    price: Annotated[int, Field(ge=0, le=MAX_SAFE_INTEGER)]


class CheckoutLineItem(_Open):
    """``types/line_item.json``."""

    id: Text
    item: ProductItem
    quantity: Annotated[int, Field(ge=1, le=MAX_SAFE_INTEGER)]
    totals: list[Total] = Field(max_length=_MAX_LIST)


class Checkout(_Open):
    """``types/checkout.json`` (UCP checkout 2026-04-08 with AP2's ``merchant`` extension).

    ``merchant`` is optional in the schema but required here: without it nothing says whose
    signature the ``checkout_jwt`` must carry or whom ``checkout.allowed_merchants`` constrains.
    """

    id: Text
    merchant: Merchant
    line_items: list[CheckoutLineItem] = Field(max_length=_MAX_LIST)
    status: Literal[
        "incomplete",
        "requires_escalation",
        "ready_for_complete",
        "complete_in_progress",
        "completed",
        "canceled",
    ]
    currency: Currency
    totals: list[Total] = Field(min_length=1, max_length=_MAX_LIST)
    links: list[dict[str, Any]] = Field(max_length=_MAX_LIST)

    @property
    def total(self) -> Total:
        """The one ``total`` entry (``totals`` "must contain exactly one subtotal and one total")."""
        found = [entry for entry in self.totals if entry.type == "total"]
        if len(found) != 1:
            raise InvalidInput("a checkout needs exactly one 'total' entry", code="bad_checkout_totals")
        return found[0]


# -- receipts (checkout_receipt.json, payment_receipt.json) ----------------------------------------


class _Receipt(BaseModel):
    """Receipts are verifier-signed JWTs that "MAY contain additional use-case specific properties"
    (agent_authorization.md "Action Authorization"), so unknown members are kept."""

    model_config = ConfigDict(frozen=True, extra="allow", strict=True, hide_input_in_errors=True)

    status: Literal["Success", "Error"]
    iss: Text
    iat: NumericDate
    reference: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{43,86}$")]
    error: Text | None = None
    error_description: OptionalText | None = None

    def _check_error_fields(self) -> None:
        if self.status == "Error" and (self.error is None or self.error_description is None):
            raise ValueError("an Error receipt needs 'error' and 'error_description'")


class CheckoutReceipt(_Receipt):
    """``checkout_receipt.json``: ``order_id`` exactly when Success."""

    order_id: Text | None = None

    @model_validator(mode="after")
    def _one_of(self) -> CheckoutReceipt:
        self._check_error_fields()
        if self.status == "Success" and self.order_id is None:
            raise ValueError("a Success checkout receipt needs 'order_id'")
        return self


class PaymentReceipt(_Receipt):
    """``payment_receipt.json``: confirmation ids when Success."""

    payment_id: Text
    psp_confirmation_id: Text | None = None
    network_confirmation_id: Text | None = None

    @model_validator(mode="after")
    def _one_of(self) -> PaymentReceipt:
        self._check_error_fields()
        if self.status == "Success" and (
            self.psp_confirmation_id is None or self.network_confirmation_id is None
        ):
            raise ValueError(
                "a Success payment receipt needs 'psp_confirmation_id' and 'network_confirmation_id'"
            )
        return self


_Model = TypeVar("_Model", bound=BaseModel)


def parse_model(model: type[_Model], value: Mapping[str, Any] | object, *, what: str) -> _Model:
    """Validate received JSON into ``model``; every problem is ``InvalidInput`` listing locations only."""
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{what} is not a JSON object", code="malformed_mandate", what=what)
    try:
        return model.model_validate(dict(value))
    except ValidationError as exc:
        errors = validation_errors(exc, top_level="(top level)")[:16]
        raise InvalidInput(
            f"{what} does not match its schema: {errors[0]['loc']}: {errors[0]['msg']}",
            code="malformed_mandate",
            what=what,
            errors=errors,
        ) from None
