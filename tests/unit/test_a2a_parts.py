"""payments/a2a.py: AP2 mandates in A2A 0.3 and 1.0 DataParts, read and written."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from a2a.compat.v0_3 import types as a2a_v03
from a2a.types import a2a_pb2
from google.protobuf import json_format  # type: ignore[import-untyped]

from mudrika.errors import InvalidInput
from mudrika.payments.a2a import (
    CART_MANDATE_KEY,
    INTENT_MANDATE_KEY,
    PAYMENT_MANDATE_KEY,
    extract_mandates,
    wrap_mandates,
)
from mudrika.payments.models import (
    PaymentItem,
    Received,
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

AP2 = FIXTURES / "ap2"


def _load(name: str) -> Any:
    return json.loads((AP2 / name).read_text(encoding="utf-8"))


def _chain() -> tuple[Received[Any], Received[Any], Received[Any]]:
    intent = receive_intent(_load("intent_mandate.json"))
    cart = receive_cart({"contents": _load("cart_contents.json"), "merchant_authorization": "h.p.s"})
    payment = receive_payment({"payment_mandate_contents": _load("payment_mandate_contents.json")})
    return intent, cart, payment


def _data_part(key: str, value: Any) -> dict[str, Any]:
    return {"kind": "data", "data": {key: value}}


def test_round_trip_a2a_03_keeps_every_hash() -> None:
    intent, cart, payment = _chain()
    message = wrap_mandates(intent, cart, payment, role="user", context_id="ctx-1", task_id="task-1")
    found = extract_mandates(json.dumps(message))
    assert intent_hash(found.intents[0]) == intent_hash(intent)
    assert cart_contents_hash(found.carts[0]) == cart_contents_hash(cart)
    assert cart_mandate_hash(found.carts[0]) == cart_mandate_hash(cart)
    assert payment_contents_hash(found.payments[0]) == payment_contents_hash(payment)
    assert found.unknown_ap2_keys == ()
    assert message["contextId"] == "ctx-1"
    assert message["taskId"] == "task-1"


def test_a2a_03_message_validates_with_the_a2a_sdk() -> None:
    intent, cart, _ = _chain()
    message = wrap_mandates(intent, cart)
    parsed = a2a_v03.Message.model_validate(message)
    assert parsed.role == a2a_v03.Role.agent
    assert str(uuid.UUID(parsed.message_id)) == parsed.message_id
    first = parsed.parts[0].root
    assert isinstance(first, a2a_v03.DataPart)
    assert first.data[INTENT_MANDATE_KEY] == intent.plain()
    again = extract_mandates(parsed.model_dump(mode="json", by_alias=True, exclude_none=True))
    assert cart_mandate_hash(again.carts[0]) == cart_mandate_hash(cart)


def test_a2a_10_message_validates_with_protobuf_and_keeps_hashes() -> None:
    intent, cart, payment = _chain()
    message = wrap_mandates(intent, cart, payment, a2a_version="1.0", message_id="m-1")
    assert message["role"] == "ROLE_AGENT"
    proto = json_format.ParseDict(message, a2a_pb2.Message())
    assert proto.role == a2a_pb2.ROLE_AGENT
    # protobuf turns every JSON number into a double (120 -> 120.0); the hashes must not move.
    rendered = json_format.MessageToJson(proto)
    assert '"refund_period": 30.0' in rendered
    found = extract_mandates(rendered)
    assert intent_hash(found.intents[0]) == intent_hash(intent)
    assert cart_mandate_hash(found.carts[0]) == cart_mandate_hash(cart)
    assert payment_contents_hash(found.payments[0]) == payment_contents_hash(payment)
    assert found.carts[0].model.contents.payment_request.details.display_items[0].refund_period == 30


def test_spec_shaped_message_with_text_and_risk_data() -> None:
    message = {
        "messageId": "e0b84c60",
        "role": "user",
        "parts": [
            {"kind": "text", "text": "Here is my intent"},
            _data_part(INTENT_MANDATE_KEY, _load("intent_mandate.json")),
            {"kind": "data", "data": {"risk_data": "opaque-signals"}},
            {"kind": "file", "file": {"uri": "https://example.com/x"}},
        ],
    }
    found = extract_mandates(message)
    assert len(found.intents) == 1
    assert found.carts == ()
    assert found.payments == ()
    assert found.as_dict() == {INTENT_MANDATE_KEY: [found.intents[0]]}


def test_cart_mandate_artifact() -> None:
    artifact = {
        "name": "Cart",
        "artifactId": "artifact_001",
        "parts": [_data_part(CART_MANDATE_KEY, {"contents": _load("cart_contents.json")})],
    }
    assert extract_mandates(artifact).carts[0].model.contents.id == "cart_7f3c2a9e"


def test_a2a_10_parts_without_kind() -> None:
    message = {
        "messageId": "m",
        "role": "ROLE_USER",
        "parts": [
            {"text": "hello"},
            {"data": [1, 2, 3]},
            {
                "data": {
                    PAYMENT_MANDATE_KEY: {"payment_mandate_contents": _load("payment_mandate_contents.json")}
                }
            },
        ],
    }
    found = extract_mandates(message)
    assert [p.model.payment_mandate_contents.payment_mandate_id for p in found.payments] == ["pm_5b1d0c44"]


def test_several_mandates_of_one_kind_are_kept_in_order() -> None:
    first = _load("intent_mandate.json")
    second = dict(first, natural_language_description="second")
    message = {"parts": [_data_part(INTENT_MANDATE_KEY, first), _data_part(INTENT_MANDATE_KEY, second)]}
    found = extract_mandates(message)
    assert [i.model.natural_language_description for i in found.intents][1] == "second"
    assert len(found.as_dict()[INTENT_MANDATE_KEY]) == 2


def test_unknown_ap2_keys_are_reported_not_parsed() -> None:
    message = {
        "parts": [
            {"kind": "data", "data": {"ap2.mandates.CheckoutMandate": {"anything": 1}, "other": 2}},
            {"kind": "data", "data": {"ap2.mandates.CheckoutMandate": 3, "ap2.risk": {}}},
        ]
    }
    found = extract_mandates(message)
    assert found.unknown_ap2_keys == ("ap2.mandates.CheckoutMandate", "ap2.risk")
    assert found.as_dict() == {}


def test_wrapped_mandate_is_the_raw_object_not_a_model_dump() -> None:
    raw = {"contents": _load("cart_contents.json"), "x_merchant_note": "kept"}
    del raw["contents"]["payment_request"]["details"]["display_items"][0]["refund_period"]
    cart = receive_cart(raw)
    message = wrap_mandates(cart)
    assert message["parts"][0]["data"][CART_MANDATE_KEY] == raw


def test_bytes_message_is_parsed_strictly() -> None:
    with pytest.raises(InvalidInput) as info:
        extract_mandates(b'{"parts": [], "parts": []}')
    assert info.value.code == "duplicate_key"
    with pytest.raises(InvalidInput) as large:
        extract_mandates(json.dumps(wrap_mandates(_chain()[0])), max_bytes=64)
    assert large.value.code == "too_large"


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ([], "not_a_message"),
        ({"role": "user"}, "not_a_message"),
        ({"parts": {"kind": "data"}}, "not_a_message"),
        ({"parts": "data"}, "not_a_message"),
        ({"parts": ["text"]}, "bad_part"),
        ({"parts": [{"kind": "data", "data": [1]}]}, "bad_part"),
        ({"parts": [{"kind": "data"}]}, "bad_part"),
        ({"parts": [{"text": "t", "data": {}}]}, "bad_part"),
        ({"parts": [{"kind": "text", "text": "t"}] * 65}, "too_many_parts"),
    ],
)
def test_wrong_shapes_are_refused(message: Any, code: str) -> None:
    with pytest.raises(InvalidInput) as info:
        extract_mandates(message)
    assert info.value.code == code


def test_mandate_count_is_capped() -> None:
    part = _data_part(INTENT_MANDATE_KEY, _load("intent_mandate.json"))
    assert len(extract_mandates({"parts": [part] * 3}, max_mandates=3).intents) == 3
    with pytest.raises(InvalidInput) as info:
        extract_mandates({"parts": [part] * 4}, max_mandates=3)
    assert info.value.code == "too_many_mandates"


def test_a_bad_mandate_says_where_it_was() -> None:
    message = {
        "parts": [{"kind": "text", "text": "x"}, _data_part(CART_MANDATE_KEY, {"contents": {"id": 1}})]
    }
    with pytest.raises(InvalidInput) as info:
        extract_mandates(message)
    assert info.value.code == "schema_mismatch"
    assert info.value.fields["part"] == 1
    assert info.value.fields["key"] == CART_MANDATE_KEY
    with pytest.raises(InvalidInput) as not_object:
        extract_mandates({"parts": [_data_part(PAYMENT_MANDATE_KEY, "eyJ...")]})
    assert not_object.value.code == "not_an_object"


def test_wrap_refuses_nothing_and_non_mandates() -> None:
    with pytest.raises(InvalidInput) as empty:
        wrap_mandates()
    assert empty.value.code == "no_mandates"
    item = receive(PaymentItem, {"label": "x", "amount": {"currency": "USD", "value": 1}})
    with pytest.raises(InvalidInput) as info:
        wrap_mandates(item)
    assert info.value.code == "not_a_mandate"
