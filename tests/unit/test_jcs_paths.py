"""Which path writes which value: the compiled-encoder paths must write every value they claim, and send
the rest to the general path.

Why: the general path catches whatever a fast path refuses, so a fast path that wrongly gives up (a
broken encoder, a range check off by a decade) still produces the right bytes -- only slowly, and a
byte-comparison test cannot see it.  Here the general path is replaced by a tripwire: a value the
module docstring assigns to a fast path must come out right without touching it.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import pytest
import rfc8785

from mudrika.crypto.jcs import _serialize as _jcs_serialize
from mudrika.crypto.jcs import canonical_sha256, canonicalize, loads_received
from mudrika.crypto.jcs._serialize import MAX_CANONICAL_DEPTH, serialize_with
from mudrika.errors import InvalidInput


class _FellBack(AssertionError):
    """The general path was asked to write a value a fast path claims."""


@pytest.fixture
def no_general_path(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    asked: list[Any] = []

    def tripwire(value: Any) -> bytes:
        asked.append(value)
        raise _FellBack(f"the general path was asked for {str(value)[:60]}")

    monkeypatch.setattr(_jcs_serialize, "_general", tripwire)
    return asked


_PLAIN_FOR_EVERY_ENCODER: list[Any] = [
    {"b": [1, 2.5, True, None, "é\U0001f600"], "a": {"c": -9007199254740991, "d": 4.0, "e": -0.5}},
    [0.0001, -0.0001, 9007199254740991.0, -9007199254740991.0, 123.456, {"\U0001f600": 1}],
    {"z": [[], {}, [[1.5]]], "y": 'line\nbreak "quoted" \\ \u001f'},
]
_SCALARS_FOR_EVERY_ENCODER: list[Any] = ["text", True, False, None, 0, -7, 9007199254740991, 0.5, 4.0, -1e15]


@pytest.mark.parametrize("value", _PLAIN_FOR_EVERY_ENCODER + _SCALARS_FOR_EVERY_ENCODER)
def test_plain_values_in_range_never_need_the_general_path(value: Any, no_general_path: list[Any]) -> None:
    expected = rfc8785.dumps(value)
    for encoder in _jcs_serialize.ENCODERS:
        assert serialize_with(encoder, value) == expected
    assert canonicalize(value) == expected
    assert no_general_path == []


@pytest.mark.parametrize(
    "value",
    [
        [
            1e-7,
            2e17,
            1e21,
            -5e-324,
            1.7976931348623157e308,
            1e-6,
            0.5,
            9999999999999998.0,
            2.0**53,
        ],  # numbers only
        {"a": [1e-7, "s", 2e17], "b": {"c": 1e300, "e": -(2.0**53)}, "d": [[1e-5, True]]},  # Fragments inside
    ],
)
def test_wide_floats_in_plain_values_stay_on_orjson(value: Any, no_general_path: list[Any]) -> None:
    assert serialize_with("orjson", value) == rfc8785.dumps(value)
    assert no_general_path == []


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 4.0, "b": [1.5, "x", {"c": null}], "d": "\\u00e9"}',  # encoder-ready
        b'{"a": 4.0, "b": [1e-7, 2e17, "x.0,"], "c": {"d": [1e300, 3.0, 9007199254740992.0]}}',  # orjson-ready
        b"[" * 60 + b"1e-7" + b"]" * 60,
    ],
)
def test_received_copies_never_need_the_general_path(raw: bytes, no_general_path: list[Any]) -> None:
    frozen = loads_received(raw).frozen
    expected = rfc8785.dumps(json.loads(raw))
    assert canonicalize(frozen) == expected
    assert canonical_sha256(frozen) == hashlib.sha256(expected).digest()
    assert serialize_with("orjson", frozen) == expected
    assert serialize_with("orjson", {"wrapped": frozen}) == rfc8785.dumps({"wrapped": json.loads(raw)})
    assert no_general_path == []


def test_the_json_encoder_path_writes_encoder_ready_copies_itself(no_general_path: list[Any]) -> None:
    frozen = loads_received(b'{"a": 4.0, "b": [1.5, 10.0, "x"]}').frozen
    assert serialize_with("json", frozen) == b'{"a":4,"b":[1.5,10,"x"]}'
    assert serialize_with("json", {"part": frozen}) == b'{"part":{"a":4,"b":[1.5,10,"x"]}}'
    assert no_general_path == []


@pytest.mark.parametrize(
    "value",
    [
        [1e-7],  # the json encoder's repr misprints it
        loads_received(b"[1e-7, 2.5]").frozen,  # orjson-ready: never trusted by the json path
        {"a": loads_received(b"[2e17]").frozen},
        9007199254740992.0,  # an integral float past the I-JSON range: no int for it on this path
        [-9007199254740994.0],
        1e-5,
        [math.nan],
        {1: "non-string key"},
        {"\U0001f600": 1, "a": 2},  # UTF-16 order differs from code point order
    ],
)
def test_the_json_encoder_path_leaves_what_it_cannot_write_to_the_general_path(value: Any) -> None:
    asked: list[Any] = []
    general = _jcs_serialize._general

    def counted(part: Any) -> bytes:
        asked.append(part)
        return general(part)

    refused: Exception | None = None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_jcs_serialize, "_general", counted)
        try:
            written = serialize_with("json", value)
        except InvalidInput as error:  # NaN and the int key: refused, by the general path
            refused = error
    assert asked == [value]
    if refused is None:
        assert written == rfc8785.dumps(value)


def test_the_json_encoder_is_the_c_accelerator_with_rfc8785_settings() -> None:
    encode = _jcs_serialize._ENCODERS["json"]
    assert encode is not _jcs_serialize._encode_with_json_encoder  # the accelerator, built once
    for value in [*_PLAIN_FOR_EVERY_ENCODER[:1], {"b": 1, "a": [1.5, "é"]}]:
        assert encode(value) == _jcs_serialize._encode_with_json_encoder(value)
    assert encode({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        encode([math.inf])
    with pytest.raises(TypeError):
        encode({1: 2, "a": 3})


def test_the_fallback_json_encoder_has_the_same_settings() -> None:
    """``_encode_with_json_encoder`` serves an interpreter without the C accelerator."""
    encode = _jcs_serialize._encode_with_json_encoder
    assert encode({"b": [1, 2.5], "a": "é\n"}) == '{"a":"é\\n","b":[1,2.5]}'.encode()
    with pytest.raises(ValueError, match="not JSON compliant"):
        encode([math.nan])
    with pytest.raises(TypeError):
        encode({(1, 2): "tuple key"})
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(RecursionError):  # no circular check: the walks bound the depth before it
        encode(cycle)


def test_nesting_is_canonical_up_to_the_limit_and_refused_past_it() -> None:
    def nest(levels: int) -> list[Any]:
        value: list[Any] = []
        for _ in range(levels - 1):
            value = [value]
        return value

    assert canonicalize(nest(MAX_CANONICAL_DEPTH)) == b"[" * MAX_CANONICAL_DEPTH + b"]" * MAX_CANONICAL_DEPTH
    with pytest.raises(InvalidInput) as refused:
        canonicalize(nest(MAX_CANONICAL_DEPTH + 1))
    assert (refused.value.code, refused.value.fields["limit"]) == ("too_deep", MAX_CANONICAL_DEPTH)
