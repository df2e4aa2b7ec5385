"""payments/models.py: AP2 v0.1 types, exact money, timestamps, raw retention and the hashes over it."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic.alias_generators import to_camel

from mudrika.crypto.jcs import mandate_hash
from mudrika.errors import InvalidInput
from mudrika.payments.models import (
    CartMandate,
    IntentMandate,
    PaymentCurrencyAmount,
    PaymentItem,
    PaymentMandateContents,
    Received,
    cart_contents_hash,
    cart_mandate_hash,
    intent_hash,
    money_equal,
    outgoing,
    parse_timestamp,
    payment_contents_hash,
    receive,
    receive_cart,
    receive_intent,
    receive_payment,
    sum_amounts,
)
from tests._support.paths import FIXTURES

AP2 = FIXTURES / "ap2"


def _load(name: str) -> Any:
    return json.loads((AP2 / name).read_text(encoding="utf-8"))


def _intent_bytes() -> bytes:
    return (AP2 / "intent_mandate.json").read_bytes()


def _cart_obj() -> dict[str, Any]:
    return {"contents": _load("cart_contents.json"), "merchant_authorization": None}


def _payment_obj() -> dict[str, Any]:
    return {"payment_mandate_contents": _load("payment_mandate_contents.json"), "user_authorization": None}


def _camelise(value: Any) -> Any:
    """camelCase every member name, except inside method-specific ``data`` (free-form, not AP2's)."""
    if isinstance(value, dict):
        return {to_camel(key): item if key == "data" else _camelise(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_camelise(item) for item in value]
    return value


def _keys(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            found.add(key)
            found |= _keys(item)
    elif isinstance(value, list):
        for item in value:
            found |= _keys(item)
    return found


def _amount(value: Any, currency: str = "USD") -> PaymentCurrencyAmount:
    return PaymentCurrencyAmount.model_validate({"currency": currency, "value": value})


def _error_types(exc: InvalidInput) -> set[str]:
    return {err["type"] for err in exc.fields["errors"]}


# ------------------------------------------------------------------ fixtures and shapes


def test_fixture_chain_parses() -> None:
    intent = receive_intent(_intent_bytes())
    cart = receive_cart(json.dumps(_cart_obj()))
    payment = receive_payment(_payment_obj())
    assert intent.model.skus == ["TR-GTX-42", "SOCK-MER-2"]
    assert [item.sku for item in cart.model.contents.payment_request.details.display_items] == [
        "TR-GTX-42",
        "SOCK-MER-2",
    ]
    contents = payment.model.payment_mandate_contents
    assert contents.payment_details_id == cart.model.contents.payment_request.details.id
    assert money_equal(
        contents.payment_details_total.amount, cart.model.contents.payment_request.details.total.amount
    )


def test_camel_case_input_gives_the_same_model_and_snake_case_output() -> None:
    snake = receive_cart(_cart_obj())
    camel_obj = _camelise(_cart_obj())
    assert "userCartConfirmationRequired" in camel_obj["contents"]
    camel = receive_cart(camel_obj)
    assert camel.model == snake.model
    assert camel.model.to_wire() == snake.model.to_wire()
    wire_keys = _keys(camel.model.to_wire())
    assert "display_items" in wire_keys
    assert "user_cart_confirmation_required" in wire_keys
    assert not {key for key in wire_keys if any(ch.isupper() for ch in key)}


def test_mixed_spelling_within_one_object_is_fine() -> None:
    obj = _load("intent_mandate.json")
    obj["naturalLanguageDescription"] = obj.pop("natural_language_description")
    assert receive_intent(obj).model.natural_language_description.startswith("Waterproof")


def test_member_spelled_both_ways_is_refused() -> None:
    obj = _load("intent_mandate.json")
    obj["intentExpiry"] = "2030-01-01T00:00:00Z"
    with pytest.raises(InvalidInput) as info:
        receive_intent(obj)
    assert info.value.code == "schema_mismatch"
    assert "ambiguous_member" in _error_types(info.value)


def test_camel_case_hashes_use_the_camel_members() -> None:
    camel = receive_payment(_camelise(_payment_obj()))
    assert payment_contents_hash(camel) == mandate_hash(_camelise(_payment_obj())["paymentMandateContents"])
    cart_camel = receive_cart(_camelise(_cart_obj()))
    assert cart_contents_hash(cart_camel) == mandate_hash(_camelise(_cart_obj())["contents"])


def test_extension_members_are_omitted_when_unset_and_emitted_when_set() -> None:
    item = PaymentItem(label="x", amount=_amount(1))
    assert "sku" not in item.to_wire()
    assert PaymentItem(label="x", amount=_amount(1), sku="S-1").to_wire()["sku"] == "S-1"
    intent = receive_intent(_intent_bytes()).model
    assert "user_authorization" not in intent.to_wire()
    signed = intent.model_copy(update={"user_authorization": "a.b.c"})
    assert signed.to_wire()["user_authorization"] == "a.b.c"


def test_defaults_follow_ap2_v01() -> None:
    intent = IntentMandate(natural_language_description="d", intent_expiry="2030-01-01T00:00:00Z")
    assert intent.user_cart_confirmation_required is True
    assert intent.requires_refundability is False
    item = PaymentItem(label="x", amount=_amount(1))
    assert item.refund_period == 30
    assert item.pending is None


def test_payment_mandate_contents_timestamp_is_required() -> None:
    obj = _payment_obj()
    del obj["payment_mandate_contents"]["timestamp"]
    with pytest.raises(InvalidInput) as info:
        receive_payment(obj)
    assert info.value.code == "schema_mismatch"
    assert info.value.fields["errors"][0]["loc"] == "payment_mandate_contents.timestamp"


def test_types_are_strict() -> None:
    obj = _load("intent_mandate.json")
    obj["user_cart_confirmation_required"] = "false"
    with pytest.raises(InvalidInput) as info:
        receive_intent(obj)
    assert info.value.fields["errors"][0]["loc"] == "user_cart_confirmation_required"


@pytest.mark.parametrize(
    ("value", "ok"), [(30, True), (30.0, True), (30.5, False), (True, False), ("30", False)]
)
def test_refund_period_accepts_only_json_integers(value: Any, ok: bool) -> None:
    obj: dict[str, Any] = {"label": "x", "amount": {"currency": "USD", "value": 1}, "refund_period": value}
    if ok:
        item = receive(PaymentItem, obj)
        assert item.model.refund_period == 30
        assert type(item.model.refund_period) is int
    else:
        with pytest.raises(InvalidInput):
            receive(PaymentItem, obj)


def test_schema_errors_never_echo_values() -> None:
    obj = _payment_obj()
    obj["payment_mandate_contents"]["payment_response"]["method_name"] = ["tok_SECRET_4242"]
    obj["payment_mandate_contents"]["payment_details_total"]["amount"]["value"] = "tok_SECRET_4242"
    with pytest.raises(InvalidInput) as info:
        receive_payment(obj)
    assert "SECRET" not in str(info.value)
    assert "SECRET" not in repr(info.value.fields)
    assert len(info.value.fields["errors"]) == 2


# ------------------------------------------------------------------ money


def test_amounts_are_exact_decimals_of_the_json_text() -> None:
    received = receive(PaymentCurrencyAmount, b'{"currency": "USD", "value": 29.99}')
    assert received.model.value == Decimal("29.99")
    assert received.model.value != Decimal.from_float(29.99)  # the binary double, which is not 29.99
    assert sum_amounts([_amount(29.99), _amount(0.01)], "USD") == Decimal("30.00")
    assert sum_amounts([_amount(0.1), _amount(0.2)], "USD") == Decimal("0.3")
    assert 0.1 + 0.2 != 0.3  # what float arithmetic would have said


def test_fixture_total_is_the_exact_sum_where_floats_are_not() -> None:
    details = receive_cart(_cart_obj()).model.contents.payment_request.details
    total = sum_amounts(details.display_items, "USD")
    assert total == details.total.amount.value == Decimal("138.49")
    assert 138.49 - 120 != 18.49


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1e2", Decimal(100)),
        ("2.5E-1", Decimal("0.25")),
        ("120", Decimal(120)),
        ("120.0", Decimal(120)),
        ("-0.0", Decimal(0)),
        ("1E-7", Decimal("0.0000001")),
        ('"29.990"', Decimal("29.99")),
        ('"0.1"', Decimal("0.1")),
    ],
)
def test_number_spellings_give_exact_values(text: str, expected: Decimal) -> None:
    raw = '{"currency": "EUR", "value": ' + text + "}"
    assert receive(PaymentCurrencyAmount, raw).model.value == expected


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("1e2", "amount_syntax"),
        ("+1.00", "amount_syntax"),
        (" 1.00", "amount_syntax"),
        ("1.", "amount_syntax"),
        ("0x10", "amount_syntax"),
        (True, "amount_type"),
        (None, "amount_type"),
        ([1], "amount_type"),
        (1e18, "amount_out_of_range"),
        ("1000000000000000000", "amount_out_of_range"),
        (1e-19, "amount_out_of_range"),
        ("0.1234567890123456789", "amount_out_of_range"),
        ("12345678901234567.5", "amount_not_representable"),
        ("0.12345678901234567", "amount_not_representable"),
    ],
)
def test_bad_amounts_are_refused(value: Any, error: str) -> None:
    with pytest.raises(InvalidInput) as info:
        receive(PaymentCurrencyAmount, {"currency": "USD", "value": value})
    assert _error_types(info.value) == {error}


def test_amount_from_decimal_and_back_to_json() -> None:
    amount = PaymentCurrencyAmount(currency="USD", value=Decimal("29.99"))
    assert amount.to_wire() == {"currency": "USD", "value": 29.99}
    assert PaymentCurrencyAmount(currency="USD", value=Decimal("120.00")).to_wire()["value"] == 120
    with pytest.raises(ValueError, match="finite"):
        PaymentCurrencyAmount(currency="USD", value=Decimal("NaN"))


@settings(max_examples=200, deadline=None)
@given(
    st.decimals(
        min_value=Decimal("-9999999999999.99"),
        max_value=Decimal("9999999999999.99"),
        places=2,
        allow_nan=False,
    )
)
def test_any_two_place_amount_survives_json_exactly(value: Decimal) -> None:
    text = format(value, "f")
    received = receive(PaymentCurrencyAmount, '{"currency": "USD", "value": ' + text + "}")
    assert received.model.value == value
    back = receive(PaymentCurrencyAmount, json.dumps(received.model.to_wire()))
    assert back.model.value == value


@pytest.mark.parametrize("currency", ["usd", "US", "USDT", "U$D", "", "ÜSD"])
def test_currency_must_be_upper_case_iso_4217(currency: str) -> None:
    with pytest.raises(InvalidInput) as info:
        receive(PaymentCurrencyAmount, {"currency": currency, "value": 1})
    assert _error_types(info.value) == {"currency_code"}


def test_currency_mix_is_refused_when_summing() -> None:
    with pytest.raises(InvalidInput) as info:
        sum_amounts([_amount(1), PaymentItem(label="x", amount=_amount(2, "EUR"))], "USD")
    assert info.value.code == "currency_mismatch"
    assert info.value.fields == {"expected": "USD", "got": "EUR", "index": 1}


def test_money_equal_compares_currency_and_exact_value() -> None:
    assert money_equal(_amount(30), _amount("30.00"))
    assert money_equal(_amount(30.0), _amount(30))
    assert not money_equal(_amount(30), _amount(30, "EUR"))
    assert not money_equal(_amount("30.01"), _amount(30))


def test_empty_sum_is_zero() -> None:
    assert sum_amounts([], "USD") == 0


# ------------------------------------------------------------------ timestamps


def test_timestamps_parse_to_aware_datetimes() -> None:
    intent = receive_intent(_intent_bytes()).model
    assert intent.intent_expiry_at == datetime(2025, 10, 1, 18, 0, tzinfo=UTC)
    cart = receive_cart(_cart_obj()).model
    assert cart.contents.cart_expiry_at < intent.intent_expiry_at
    payment = receive_payment(_payment_obj()).model.payment_mandate_contents
    assert payment.timestamp_at.utcoffset() == timedelta(0)
    assert parse_timestamp("2025-10-01T23:30:00+05:30") == datetime(2025, 10, 1, 18, 0, tzinfo=UTC)


@pytest.mark.parametrize("stamp", ["2025-10-01T18:00:00", "2025-10-01", "2025-10-01 18:00:00"])
def test_naive_timestamps_are_refused(stamp: str) -> None:
    obj = _load("intent_mandate.json")
    obj["intent_expiry"] = stamp
    with pytest.raises(InvalidInput) as info:
        receive_intent(obj)
    assert _error_types(info.value) == {"naive_timestamp"}
    with pytest.raises(InvalidInput) as direct:
        parse_timestamp(stamp)
    assert direct.value.code == "naive_timestamp"


@pytest.mark.parametrize("stamp", ["tomorrow", "2025-13-01T00:00:00Z", "", "2025-10-01T18:00:00Z" + " " * 60])
def test_malformed_timestamps_are_refused(stamp: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_timestamp(stamp)
    assert info.value.code == "bad_timestamp"
    obj = _payment_obj()
    obj["payment_mandate_contents"]["timestamp"] = stamp
    with pytest.raises(InvalidInput) as schema:
        receive_payment(obj)
    assert _error_types(schema.value) == {"timestamp_syntax"}


def test_model_constructed_with_naive_timestamp_is_refused() -> None:
    with pytest.raises(ValueError, match="UTC offset"):
        IntentMandate(natural_language_description="d", intent_expiry="2030-01-01T00:00:00")


# ------------------------------------------------------------------ strict parsing


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b'{"id": "a", "id": "b"}', "duplicate_key"),
        (b'{"x": NaN}', "non_finite_number"),
        (b'{"x": 9007199254740993}', "integer_out_of_range"),
        (b'{"x": "\\ud800"}', "lone_surrogate"),
        (b'{"x": ' + b"[" * 70 + b"]" * 70 + b"}", "too_deep"),
        (b'\xff{"x": 1}', "bad_encoding"),
        (b'{"x": 1', "malformed_json"),
        (b"[1, 2]", "not_an_object"),
        (b'"intent"', "not_an_object"),
    ],
)
def test_strict_parse_rejections_surface_as_invalid_input(raw: bytes, code: str) -> None:
    with pytest.raises(InvalidInput) as info:
        receive_intent(raw)
    assert info.value.code == code


def test_size_cap_applies_to_bytes_and_mappings() -> None:
    with pytest.raises(InvalidInput) as info:
        receive_intent(_intent_bytes(), max_bytes=100)
    assert info.value.code == "too_large"
    with pytest.raises(InvalidInput) as mapped:
        receive_intent(_load("intent_mandate.json"), max_bytes=100)
    assert mapped.value.code == "too_large"


@pytest.mark.parametrize(
    ("bad", "code"),
    [
        ({1, 2}, "unsupported_type"),
        (Decimal(1), "unsupported_type"),
        (float("inf"), "non_finite_number"),
        (2**60, "integer_out_of_range"),
        ("\ud800", "lone_surrogate"),
    ],
)
def test_mapping_input_must_be_i_json(bad: Any, code: str) -> None:
    obj = _load("intent_mandate.json")
    obj["extension_member"] = bad
    with pytest.raises(InvalidInput) as info:
        receive_intent(obj)
    assert info.value.code == code


def test_mapping_depth_cap() -> None:
    obj = _load("intent_mandate.json")
    nested: Any = 1
    for _ in range(70):
        nested = [nested]
    obj["deep"] = nested
    with pytest.raises(InvalidInput) as info:
        receive_intent(obj)
    assert info.value.code == "too_deep"


# ------------------------------------------------------------------ raw retention


def test_raw_is_a_read_only_deep_copy() -> None:
    obj = _cart_obj()
    received = receive_cart(obj)
    obj["contents"]["id"] = "tampered"
    assert received.raw["contents"]["id"] == "cart_7f3c2a9e"
    with pytest.raises(TypeError):
        received.raw["contents"]["id"] = "x"
    items = received.raw["contents"]["payment_request"]["details"]["display_items"]
    with pytest.raises(TypeError):
        items.append({})
    with pytest.raises(TypeError):
        items[0] = {}
    with pytest.raises(TypeError):
        received.raw["contents"].update({"id": "x"})
    plain = received.plain()
    plain["contents"]["id"] = "mine"
    assert received.raw["contents"]["id"] == "cart_7f3c2a9e"
    assert isinstance(items, list)


_DICT_MUTATIONS: list[Callable[[Any], object]] = [
    lambda d: d.__setitem__("k", 1),
    lambda d: d.__delitem__("id"),
    lambda d: d.__ior__({"k": 1}),
    lambda d: d.clear(),
    lambda d: d.pop("id"),
    lambda d: d.popitem(),
    lambda d: d.setdefault("k", 1),
    lambda d: d.update(k=1),
]
_LIST_MUTATIONS: list[Callable[[Any], object]] = [
    lambda a: a.__setitem__(0, 1),
    lambda a: a.__delitem__(0),
    lambda a: a.__iadd__([1]),
    lambda a: a.__imul__(2),
    lambda a: a.append(1),
    lambda a: a.extend([1]),
    lambda a: a.insert(0, 1),
    lambda a: a.pop(),
    lambda a: a.remove("TR-GTX-42"),
    lambda a: a.clear(),
    lambda a: a.sort(),
    lambda a: a.reverse(),
]


@pytest.mark.parametrize("mutate", _DICT_MUTATIONS)
def test_every_dict_mutator_is_refused(mutate: Callable[[Any], object]) -> None:
    raw = receive_intent(_intent_bytes()).raw
    before = dict(raw)
    with pytest.raises(TypeError, match="read-only"):
        mutate(raw)
    assert dict(raw) == before


@pytest.mark.parametrize("mutate", _LIST_MUTATIONS)
def test_every_list_mutator_is_refused(mutate: Callable[[Any], object]) -> None:
    skus = receive_intent(_intent_bytes()).raw["skus"]
    with pytest.raises(TypeError, match="read-only"):
        mutate(skus)
    assert skus == ["TR-GTX-42", "SOCK-MER-2"]
    assert copy.copy(skus) is skus


def test_received_survives_pickle_and_copy() -> None:
    received = receive_cart(_cart_obj())
    again = pickle.loads(pickle.dumps(received))
    assert again.model == received.model
    assert cart_mandate_hash(again) == cart_mandate_hash(received)
    with pytest.raises(TypeError):
        again.raw["x"] = 1
    assert copy.deepcopy(received).raw is received.raw


def test_received_cannot_be_built_from_an_unfrozen_dict() -> None:
    model = receive_intent(_intent_bytes()).model
    with pytest.raises(TypeError):
        Received(model=model, raw={"natural_language_description": "x"})


def test_unknown_members_are_kept_in_raw_model_and_hash() -> None:
    obj = _cart_obj()
    obj["contents"]["loyalty_points"] = 12
    obj["contents"]["payment_request"]["details"]["display_items"][0]["giftWrap"] = {"paper": "red"}
    received = receive_cart(obj)
    assert received.raw["contents"]["loyalty_points"] == 12
    item = received.model.contents.payment_request.details.display_items[0]
    assert item.model_extra == {"giftWrap": {"paper": "red"}}
    assert received.model.to_wire()["contents"]["loyalty_points"] == 12
    before = cart_contents_hash(received)
    obj["contents"]["payment_request"]["details"]["display_items"][0]["giftWrap"] = {"paper": "blue"}
    assert cart_contents_hash(receive_cart(obj)) != before


# ------------------------------------------------------------------ hashes


def test_hash_helpers_equal_mandate_hash_of_the_raw_sub_objects() -> None:
    intent_obj = _load("intent_mandate.json")
    cart_obj = _cart_obj()
    payment_obj = _payment_obj()
    assert intent_hash(receive_intent(_intent_bytes())) == mandate_hash(intent_obj)
    cart = receive_cart(json.dumps(cart_obj).encode())
    assert cart_contents_hash(cart) == mandate_hash(cart_obj["contents"])
    assert cart_mandate_hash(cart) == mandate_hash(cart_obj)
    payment = receive_payment(payment_obj)
    assert payment_contents_hash(payment) == mandate_hash(payment_obj["payment_mandate_contents"])


def test_intent_hash_leaves_out_the_user_authorization_only() -> None:
    unsigned = receive_intent(_intent_bytes())
    signed = unsigned.with_member("user_authorization", "header.payload.signature")
    assert signed.model.user_authorization == "header.payload.signature"
    assert intent_hash(signed) == intent_hash(unsigned)
    camel_signed = dict(_load("intent_mandate.json"), userAuthorization="h.p.s")
    assert intent_hash(receive_intent(camel_signed)) == intent_hash(unsigned)
    changed = dict(_load("intent_mandate.json"), skus=["TR-GTX-42"])
    assert intent_hash(receive_intent(changed)) != intent_hash(unsigned)


def test_with_member_attaches_a_signature_and_keeps_contents_hash() -> None:
    cart = receive_cart({"contents": _load("cart_contents.json")})
    signed = cart.with_member("merchant_authorization", "h.p.s")
    assert signed.model.merchant_authorization == "h.p.s"
    assert cart_contents_hash(signed) == cart_contents_hash(cart)
    assert cart_mandate_hash(signed) != cart_mandate_hash(cart)
    camel = receive_cart({"contents": _load("cart_contents.json"), "merchantAuthorization": "old"})
    replaced = camel.with_member("merchant_authorization", "new")
    assert "merchantAuthorization" not in replaced.raw
    assert replaced.model.merchant_authorization == "new"


def test_why_we_hash_the_raw_object_not_a_model_dump() -> None:
    """A peer's cart whose JSON has ``120``, an unknown member and no default members.

    Re-serialising the model changes the bytes (defaults appear, numbers are re-derived, unknown
    members may be dropped), so a hash over a dump would not match the merchant's signature.
    """
    raw_text = (
        b'{"contents": {"id": "c-1", "user_cart_confirmation_required": true,'
        b' "payment_request": {"method_data": [{"supported_methods": "CARD"}],'
        b' "details": {"id": "o-1",'
        b' "display_items": [{"label": "Shoes", "amount": {"currency": "USD", "value": 120}}],'
        b' "total": {"label": "Total", "amount": {"currency": "USD", "value": "120.00"}}}},'
        b' "cart_expiry": "2030-01-01T00:00:00Z", "merchant_name": "M",'
        b' "gift_message": "Happy birthday"}}'
    )
    received = receive_cart(raw_text)
    signed_hash = mandate_hash(json.loads(raw_text)["contents"])  # what the merchant signed

    assert cart_contents_hash(received) == signed_hash
    dumped = received.model.contents.to_wire()
    assert dumped["payment_request"]["details"]["display_items"][0]["refund_period"] == 30
    assert dumped["payment_request"]["details"]["total"]["amount"]["value"] == 120
    assert mandate_hash(dumped) != signed_hash
    without_unknown = received.model.contents.model_dump(mode="json", exclude={"gift_message"})
    assert mandate_hash(without_unknown) != signed_hash
    assert mandate_hash(received.model.contents.model_dump(mode="json", exclude_unset=True)) != signed_hash


def test_outgoing_hashes_are_what_the_receiver_computes() -> None:
    model = CartMandate.model_validate(_cart_obj())
    sent = outgoing(model)
    got = receive_cart(sent.wire_bytes())
    assert cart_contents_hash(got) == cart_contents_hash(sent)
    assert cart_mandate_hash(got) == cart_mandate_hash(sent)
    via_json = receive_cart(json.dumps(sent.plain()))
    assert cart_mandate_hash(via_json) == cart_mandate_hash(sent)


def test_outgoing_payment_contents_round_trip() -> None:
    contents = PaymentMandateContents.model_validate(_load("payment_mandate_contents.json"))
    sent = outgoing(contents)
    assert sent.model == contents
    assert receive(PaymentMandateContents, sent.wire_bytes()).raw == sent.raw
