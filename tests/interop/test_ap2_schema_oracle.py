"""Our AP2 v0.1 models against PyPI ``ap2`` 0.1.1, the reference pydantic models (test-only oracle).

Both directions: the snake_case JSON we produce validates with ``ap2.types``, and what ``ap2.types``
models dump validates with ours.  A parity test pins field names, required-ness and defaults, so a
drift from AP2 v0.1 shows up here and not in a peer's error log.  The documented differences
(``docs/payments.md``) are listed explicitly.
"""

from __future__ import annotations

import json
import warnings
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic.warnings import PydanticDeprecatedSince20

from mudrika.crypto.jcs import mandate_hash
from mudrika.payments import a2a
from mudrika.payments import models as ours
from mudrika.payments.models import (
    cart_contents_hash,
    cart_mandate_hash,
    intent_hash,
    payment_contents_hash,
    receive,
    receive_cart,
    receive_intent,
    receive_payment,
)
from tests._support.paths import FIXTURES

with warnings.catch_warnings():
    # ap2 0.1.1 passes ``example=`` to Field(), which pydantic 2 deprecates; not our code.
    warnings.filterwarnings("ignore", category=PydanticDeprecatedSince20)
    from ap2.types import contact_picker as ap2_contact
    from ap2.types import mandate as ap2_mandate
    from ap2.types import payment_request as ap2_pr

pytestmark = pytest.mark.interop

AP2 = FIXTURES / "ap2"

PAIRS: list[tuple[type[ours.Ap2Model], type[BaseModel]]] = [
    (ours.ContactAddress, ap2_contact.ContactAddress),
    (ours.PaymentCurrencyAmount, ap2_pr.PaymentCurrencyAmount),
    (ours.PaymentItem, ap2_pr.PaymentItem),
    (ours.PaymentShippingOption, ap2_pr.PaymentShippingOption),
    (ours.PaymentOptions, ap2_pr.PaymentOptions),
    (ours.PaymentMethodData, ap2_pr.PaymentMethodData),
    (ours.PaymentDetailsModifier, ap2_pr.PaymentDetailsModifier),
    (ours.PaymentDetailsInit, ap2_pr.PaymentDetailsInit),
    (ours.PaymentRequest, ap2_pr.PaymentRequest),
    (ours.PaymentResponse, ap2_pr.PaymentResponse),
    (ours.IntentMandate, ap2_mandate.IntentMandate),
    (ours.CartContents, ap2_mandate.CartContents),
    (ours.CartMandate, ap2_mandate.CartMandate),
    (ours.PaymentMandateContents, ap2_mandate.PaymentMandateContents),
    (ours.PaymentMandate, ap2_mandate.PaymentMandate),
]

EXTENSIONS = {"PaymentItem": {"sku"}, "IntentMandate": {"user_authorization"}}
"""Our documented extension members (AP2 v0.1 has neither)."""

REQUIRED_HERE_ONLY = {"PaymentMandateContents": {"timestamp"}}
"""Required by us, defaulted to "now" by ap2: a verifier must not invent evidence."""


def _load(name: str) -> Any:
    return json.loads((AP2 / name).read_text(encoding="utf-8"))


def _numbers_as_floats(value: Any) -> Any:
    """What ap2's ``float`` amounts look like after a dump: compare JSON values, not int/float types."""
    if isinstance(value, dict):
        return {key: _numbers_as_floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_numbers_as_floats(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _without(value: Any, names: set[str]) -> Any:
    if isinstance(value, dict):
        return {key: _without(item, names) for key, item in value.items() if key not in names}
    if isinstance(value, list):
        return [_without(item, names) for item in value]
    return value


# ------------------------------------------------------------------ parity of the schemas


@pytest.mark.parametrize(("mine", "theirs"), PAIRS, ids=[m.__name__ for m, _ in PAIRS])
def test_field_names_required_ness_and_defaults_match_ap2(
    mine: type[ours.Ap2Model], theirs: type[BaseModel]
) -> None:
    extensions = EXTENSIONS.get(mine.__name__, set())
    assert set(mine.model_fields) - extensions == set(theirs.model_fields)
    required_only_here = REQUIRED_HERE_ONLY.get(mine.__name__, set())
    for name, field in theirs.model_fields.items():
        own = mine.model_fields[name]
        if name in required_only_here:
            assert own.is_required()
            continue
        assert own.is_required() == field.is_required(), name
        if not field.is_required():
            assert own.get_default(call_default_factory=True) == field.get_default(
                call_default_factory=True
            ), name


def test_data_part_keys_match_ap2() -> None:
    assert a2a.INTENT_MANDATE_KEY == ap2_mandate.INTENT_MANDATE_DATA_KEY
    assert a2a.CART_MANDATE_KEY == ap2_mandate.CART_MANDATE_DATA_KEY
    assert a2a.PAYMENT_MANDATE_KEY == ap2_mandate.PAYMENT_MANDATE_DATA_KEY


# ------------------------------------------------------------------ ours -> ap2


def test_fixtures_validate_with_ap2() -> None:
    intent = ap2_mandate.IntentMandate.model_validate(_load("intent_mandate.json"))
    assert intent.skus == ["TR-GTX-42", "SOCK-MER-2"]
    contents = ap2_mandate.CartContents.model_validate(_load("cart_contents.json"))
    assert contents.payment_request.details.total.amount.value == 138.49
    cart = ap2_mandate.CartMandate.model_validate({"contents": _load("cart_contents.json")})
    assert cart.merchant_authorization is None
    payment = ap2_mandate.PaymentMandate.model_validate(
        {"payment_mandate_contents": _load("payment_mandate_contents.json")}
    )
    assert payment.payment_mandate_contents.payment_details_id == contents.payment_request.details.id


def _built_models() -> list[ours.Ap2Model]:
    """One value of every type, built in Python with every optional member set."""
    address = ours.ContactAddress(
        city="Pune",
        country="IN",
        dependent_locality="Kothrud",
        organization="Example Org",
        phone_number="+91 20 0000 0000",
        postal_code="411038",
        recipient="R. Rao",
        region="MH",
        sorting_code="",
        address_line=["Flat 4", "Example Lane"],
    )
    amount = ours.PaymentCurrencyAmount(currency="INR", value=Decimal("2499.50"))
    item = ours.PaymentItem(label="Kettle", amount=amount, pending=False, refund_period=7, sku="KTL-1")
    shipping = ours.PaymentShippingOption(
        id="express",
        label="Express",
        amount=ours.PaymentCurrencyAmount(currency="INR", value=Decimal(99)),
        selected=True,
    )
    options = ours.PaymentOptions(
        request_payer_name=True,
        request_payer_email=True,
        request_payer_phone=False,
        request_shipping=True,
        shipping_type="delivery",
    )
    method = ours.PaymentMethodData(supported_methods="UPI", data={"vpa_required": True})
    modifier = ours.PaymentDetailsModifier(
        supported_methods="UPI", total=item, additional_display_items=[item], data={"discount": "none"}
    )
    details = ours.PaymentDetailsInit(
        id="order-1", display_items=[item], shipping_options=[shipping], modifiers=[modifier], total=item
    )
    request = ours.PaymentRequest(
        method_data=[method], details=details, options=options, shipping_address=address
    )
    response = ours.PaymentResponse(
        request_id="order-1",
        method_name="UPI",
        details={"txn": "t-1"},
        shipping_address=address,
        shipping_option=shipping,
        payer_name="R. Rao",
        payer_email="r@example.com",
        payer_phone="+91 20 0000 0000",
    )
    intent = ours.IntentMandate(
        user_cart_confirmation_required=False,
        natural_language_description="An electric kettle under 3000 INR",
        merchants=["Example Appliances"],
        skus=["KTL-1"],
        requires_refundability=True,
        intent_expiry="2030-01-01T00:00:00+05:30",
        user_authorization="h.p.s",
    )
    contents = ours.CartContents(
        id="cart-1",
        user_cart_confirmation_required=False,
        payment_request=request,
        cart_expiry="2029-12-31T23:00:00Z",
        merchant_name="Example Appliances",
    )
    cart = ours.CartMandate(contents=contents, merchant_authorization="h.p.s")
    payment_contents = ours.PaymentMandateContents(
        payment_mandate_id="pm-1",
        payment_details_id="order-1",
        payment_details_total=item,
        payment_response=response,
        merchant_agent="Example Appliances",
        timestamp="2029-12-31T22:59:00Z",
    )
    payment = ours.PaymentMandate(payment_mandate_contents=payment_contents, user_authorization="sd.jwt~kb")
    return [
        address,
        amount,
        item,
        shipping,
        options,
        method,
        modifier,
        details,
        request,
        response,
        intent,
        contents,
        cart,
        payment_contents,
        payment,
    ]


BUILT = _built_models()
ORACLE = {mine.__name__: theirs for mine, theirs in PAIRS}


@pytest.mark.parametrize("model", BUILT, ids=[type(m).__name__ for m in BUILT])
def test_our_wire_json_validates_with_ap2_and_means_the_same(model: ours.Ap2Model) -> None:
    wire = json.loads(json.dumps(model.to_wire()))
    theirs = ORACLE[type(model).__name__].model_validate(wire)
    # ap2 ignores our extension members; everything else must come back unchanged.
    extensions = {"sku"} | ({"user_authorization"} if isinstance(model, ours.IntentMandate) else set())
    assert _numbers_as_floats(theirs.model_dump(mode="json")) == _numbers_as_floats(
        _without(wire, extensions)
    )


def test_all_types_are_covered() -> None:
    assert {type(m).__name__ for m in BUILT} == set(ORACLE)


# ------------------------------------------------------------------ ap2 -> ours


def _ap2_chain() -> tuple[BaseModel, BaseModel, BaseModel]:
    amount = ap2_pr.PaymentCurrencyAmount(currency="USD", value=29.99)
    item = ap2_pr.PaymentItem(label="Socks", amount=amount)
    total = ap2_pr.PaymentItem(
        label="Total", amount=ap2_pr.PaymentCurrencyAmount(currency="USD", value=29.99)
    )
    request = ap2_pr.PaymentRequest(
        method_data=[ap2_pr.PaymentMethodData(supported_methods="CARD", data={"network": ["visa"]})],
        details=ap2_pr.PaymentDetailsInit(
            id="order-9",
            display_items=[item],
            shipping_options=[
                ap2_pr.PaymentShippingOption(
                    id="std", label="Standard", amount=ap2_pr.PaymentCurrencyAmount(currency="USD", value=0)
                )
            ],
            modifiers=[ap2_pr.PaymentDetailsModifier(supported_methods="CARD", total=total)],
            total=total,
        ),
        options=ap2_pr.PaymentOptions(),
        shipping_address=ap2_contact.ContactAddress(city="Springfield", address_line=["1 Main St"]),
    )
    intent = ap2_mandate.IntentMandate(
        natural_language_description="Socks", intent_expiry="2030-01-01T00:00:00Z", merchants=["Sock Shop"]
    )
    cart = ap2_mandate.CartMandate(
        contents=ap2_mandate.CartContents(
            id="cart-9",
            user_cart_confirmation_required=True,
            payment_request=request,
            cart_expiry="2030-01-01T00:00:00Z",
            merchant_name="Sock Shop",
        ),
        merchant_authorization="eyJhbGciOiJFUzI1NiJ9.e30.sig",
    )
    payment = ap2_mandate.PaymentMandate(
        payment_mandate_contents=ap2_mandate.PaymentMandateContents(
            payment_mandate_id="pm-9",
            payment_details_id="order-9",
            payment_details_total=total,
            payment_response=ap2_pr.PaymentResponse(
                request_id="order-9", method_name="CARD", details={"token": "t"}, payer_email="a@example.com"
            ),
            merchant_agent="Sock Shop",
        ),
        user_authorization="issuer.jwt~kb.jwt",
    )
    return intent, cart, payment


def test_ap2_dumps_validate_with_ours_and_hash_as_dumped() -> None:
    intent, cart, payment = _ap2_chain()
    intent_json = intent.model_dump(mode="json")
    cart_json = cart.model_dump(mode="json")
    payment_json = payment.model_dump(mode="json")

    got_intent = receive_intent(json.dumps(intent_json))
    got_cart = receive_cart(json.dumps(cart_json))
    got_payment = receive_payment(json.dumps(payment_json))

    assert got_intent.model.merchants == ["Sock Shop"]
    assert got_cart.model.contents.payment_request.details.total.amount.value == Decimal("29.99")
    assert got_payment.model.payment_mandate_contents.timestamp_at.tzinfo is not None
    assert intent_hash(got_intent) == mandate_hash(intent_json)
    assert cart_contents_hash(got_cart) == mandate_hash(cart_json["contents"])
    assert cart_mandate_hash(got_cart) == mandate_hash(cart_json)
    assert payment_contents_hash(got_payment) == mandate_hash(payment_json["payment_mandate_contents"])
    # and what we would emit for them means the same to ap2
    for got, theirs in ((got_intent, intent), (got_cart, cart), (got_payment, payment)):
        again = type(theirs).model_validate(got.model.to_wire())
        assert _numbers_as_floats(again.model_dump(mode="json")) == _numbers_as_floats(
            theirs.model_dump(mode="json")
        )


@pytest.mark.parametrize(("mine", "theirs"), PAIRS[:10], ids=[m.__name__ for m, _ in PAIRS[:10]])
def test_every_w3c_type_dumped_by_ap2_validates_with_ours(
    mine: type[ours.Ap2Model], theirs: type[BaseModel]
) -> None:
    _, cart, payment = _ap2_chain()
    request = cart.contents.payment_request  # type: ignore[attr-defined]
    response = payment.payment_mandate_contents.payment_response  # type: ignore[attr-defined]
    samples: dict[str, BaseModel] = {
        "ContactAddress": request.shipping_address,
        "PaymentCurrencyAmount": request.details.total.amount,
        "PaymentItem": request.details.display_items[0],
        "PaymentShippingOption": request.details.shipping_options[0],
        "PaymentOptions": request.options,
        "PaymentMethodData": request.method_data[0],
        "PaymentDetailsModifier": request.details.modifiers[0],
        "PaymentDetailsInit": request.details,
        "PaymentRequest": request,
        "PaymentResponse": response,
    }
    sample = samples[mine.__name__]
    assert isinstance(sample, theirs)
    dumped = sample.model_dump(mode="json")
    received = receive(mine, json.dumps(dumped))
    assert _numbers_as_floats(received.model.to_wire()) == _numbers_as_floats(dumped)
