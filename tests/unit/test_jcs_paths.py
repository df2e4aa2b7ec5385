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
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
import rfc8785

from mudrika.crypto.frozenjson import freeze
from mudrika.crypto.jcs import _serialize as _jcs_serialize
from mudrika.crypto.jcs import canonical_sha256, canonicalize, loads_received
from mudrika.crypto.jcs._number import es_number_to_string
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
        {"m": [1.7976931348623157e308, "s", -1.7976931348623157e308, 5e-324]},
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
        b"[1e-7, -9007199254740992.0, -9007199254740991.0, 9007199254740991.0, -0.0001]",
        b'{"two banded": [2e17, 3e-6, "s"], "max": [1.7976931348623157e308, -1.7976931348623157e308]}',
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
        {"a": loads_received(b'{"x": 1e-7}').frozen},  # repr would write 1e-07
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
    built = _jcs_serialize._make_json_encode()
    assert built is not _jcs_serialize._encode_with_json_encoder
    assert (
        built({"b": [1, 2.5], "a": "é"})
        == encode({"b": [1, 2.5], "a": "é"})
        == '{"a":"é","b":[1,2.5]}'.encode()
    )
    for value in [*_PLAIN_FOR_EVERY_ENCODER[:1], {"b": 1, "a": [1.5, "é"]}]:
        assert encode(value) == _jcs_serialize._encode_with_json_encoder(value)
    assert encode({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        encode([math.inf])
    with pytest.raises(TypeError):
        encode({(1, 2): 3})  # skipkeys off: a key json cannot write is refused, not dropped


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

    assert MAX_CANONICAL_DEPTH == 512  # the documented limit (docs/payments.md, the module docstring)
    assert canonicalize(nest(512)) == b"[" * 512 + b"]" * 512
    with pytest.raises(InvalidInput) as refused:
        canonicalize(nest(513))
    assert (refused.value.code, refused.value.fields["limit"]) == ("too_deep", MAX_CANONICAL_DEPTH)


@pytest.mark.parametrize("encoder", _jcs_serialize.ENCODERS)
def test_the_utf16_key_order_check_runs_only_for_text_above_u_ffff(
    encoder: _jcs_serialize.Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the orjson path the key walk runs only when the output holds a character above U+FFFF (a
    memchr per lead byte decides); the json path always needs it (it also refuses non-string keys)."""
    checked: list[Any] = []
    check = _jcs_serialize._check_keys

    def counted(value: Any) -> None:
        checked.append(value)
        check(value)

    monkeypatch.setattr(_jcs_serialize, "_check_keys", counted)
    plain: list[Any] = [{"b": "ascii", "a": 1}, {"b": "é ü \u4e2d \uffff", "a": [2]}]
    for value in plain:
        assert serialize_with(encoder, value) == rfc8785.dumps(value)
    assert len(checked) == (2 if encoder == "json" else 0)
    for lead in ("\U00010000", "\U00040000", "\U00080000", "\U000c0000", "\U00100000"):  # F0..F4
        checked.clear()
        astral: Any = {"b": lead, "a": 1}
        assert serialize_with(encoder, astral) == rfc8785.dumps(astral)
        assert checked == [astral]


def test_a_container_without_patches_is_encoded_as_it_is() -> None:
    frozen = loads_received(b'{"a": [1e-7, 1e300], "b": {"c": 4.0}}').frozen
    assert frozen["a"].patches == ()
    assert _jcs_serialize._patched(frozen["a"]) is frozen["a"]  # no copy
    patched = _jcs_serialize._patched(frozen)
    assert patched is not frozen
    assert patched["a"] is frozen["a"]
    assert patched["b"] == {"c": 4}
    assert type(patched["b"]["c"]) is int


def test_a_numbers_only_array_is_written_by_one_orjson_call() -> None:
    text = _jcs_serialize._numbers_only_text
    assert text([1e-7, 2e17, True, 1.5, False, 1e21]) == b"[1e-7,200000000000000000,true,1.5,false,1e+21]"
    assert text([2.5, 1e-300, -7]) == b"[2.5,1e-300,-7]"
    assert text([3.5, 0.0, 4.0]) == b"[3.5,0,4]"  # orjson's "0.0" and "4.0" rewritten, the last one too
    for mixed in (
        [1e-7, "s"],
        [1e-7, {"a": 1}],
        [1e-7, [2]],
        [[2.0], 1e-7],  # an array first: its "[" is the text's second character
        [1e-7, None],
        [1e-7, math.nan],
        [1e-7, math.inf],
    ):
        assert text(mixed) is None, mixed


def test_numbers_only_arrays_and_walked_floats_make_no_per_float_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One orjson call writes a numbers-only array; a float orjson already writes in ECMAScript's layout
    is kept as orjson wrote it (no Python formatting)."""
    formatted: list[float] = []
    fragments: list[float] = []
    es_text = es_number_to_string
    make_fragment = _jcs_serialize._float_fragment

    def counted_text(x: float) -> str:
        formatted.append(x)
        return es_text(x)

    def counted_fragment(x: float) -> Any:
        fragments.append(x)
        return make_fragment(x)

    monkeypatch.setattr(_jcs_serialize, "es_number_to_string", counted_text)
    monkeypatch.setattr(_jcs_serialize, "_float_fragment", counted_fragment)
    numbers: Any = {"a": [1e-7, 1e300, -5e-324, 1e21, 0.5]}
    assert serialize_with("orjson", numbers) == rfc8785.dumps(numbers)
    assert (formatted, fragments) == ([], [])
    mixed: Any = {"a": [1e-7, "s", 1e300]}
    assert serialize_with("orjson", mixed) == rfc8785.dumps(mixed)
    assert (formatted, fragments) == ([], [1e-7, 1e300])


def test_the_json_path_hands_an_encoder_ready_copy_over_without_the_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frozen = loads_received(b'{"a": 4.0, "b": [1.5, "x"]}').frozen

    def no_walk(value: Any) -> Any:
        raise AssertionError("walked a ready value")

    monkeypatch.setattr(_jcs_serialize, "_prepare", no_walk)
    assert serialize_with("json", frozen) == b'{"a":4,"b":[1.5,"x"]}'
    assert serialize_with("json", frozen["b"]) == b'[1.5,"x"]'


def test_a_float_orjson_cannot_write_is_refused_before_formatting() -> None:
    for x in (math.nan, math.inf, -math.inf):
        with pytest.raises(_jcs_serialize._UseGeneralPath):
            _jcs_serialize._float_fragment(x)


# ------------------------------------------------------------------- every refusal, every path

_REFUSALS: dict[str, list[Any]] = {
    "integer_out_of_range": [2**53, -(2**53), 10**30],
    "non_finite_number": [math.nan, math.inf, -math.inf],
    "unsupported_type": [Decimal("1"), b"bytes", {1, 2}, datetime(2026, 1, 1, tzinfo=UTC)],
    "lone_surrogate": ["\ud800", "a\udfffb"],
}
#: Where a bad value can sit, and the path the refusal must name for it.
_PLACES: list[tuple[str, Any]] = [
    ("$", lambda bad: bad),
    ("$.k", lambda bad: {"k": bad, "a": 1}),
    ("$[1]", lambda bad: [0.5, bad, "s"]),
    ("$.a[0].b", lambda bad: {"a": [{"b": bad}], "z": 4.0}),
    ("$[0][1]", lambda bad: [[1e-7, bad]]),
    ("$.f", lambda bad: freeze({"f": bad}, max_depth=4)),
    ("$.f[0]", lambda bad: freeze({"f": [bad]}, max_depth=4)),
]


def _refusal_cases() -> Iterator[Any]:
    for code, values in _REFUSALS.items():
        for index, bad in enumerate(values):
            for path, place in _PLACES:
                yield pytest.param(code, place(bad), path, id=f"{code}-{index}-{path}")
    for path, place in _PLACES[1:]:
        yield pytest.param("non_string_key", place({1: "x"}), path, id=f"non_string_key-{path}")


@pytest.mark.parametrize(("code", "value", "path"), list(_refusal_cases()))
@pytest.mark.parametrize("encoder", [*_jcs_serialize.ENCODERS, None])
def test_every_path_refuses_every_bad_value_wherever_it_sits(
    encoder: str | None, code: str, value: Any, path: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        serialize_with(encoder, value)  # type: ignore[arg-type]
    assert (refused.value.code, refused.value.fields["path"]) == (code, path)


@pytest.mark.parametrize("encoder", [*_jcs_serialize.ENCODERS, None])
def test_nesting_is_counted_alike_in_arrays_and_objects_on_every_path(encoder: str | None) -> None:
    def objects(levels: int) -> dict[str, Any]:
        value: dict[str, Any] = {}
        for _ in range(levels - 1):
            value = {"k": value}
        return value

    def arrays(levels: int) -> list[Any]:
        value: list[Any] = []
        for _ in range(levels - 1):
            value = [value]
        return value

    for nest in (objects, arrays):
        assert serialize_with(encoder, nest(512)) == rfc8785.dumps(nest(512))  # type: ignore[arg-type]
        with pytest.raises(InvalidInput) as refused:
            serialize_with(encoder, nest(513))  # type: ignore[arg-type]
        assert (refused.value.code, refused.value.fields["limit"]) == ("too_deep", 512)


def test_the_json_path_writes_deep_values_itself(no_general_path: list[Any]) -> None:
    """Up to orjson's own limit (255 levels) orjson writes nesting; the json path, up to the canonical
    limit: its container walks count every level once."""
    deep: list[Any] = [1.5]
    for _ in range(511):  # 512 levels, the canonical limit
        deep = [deep, {"k": 4.0}]
    assert serialize_with("json", deep) == rfc8785.dumps(deep)
    assert no_general_path == []


def test_an_error_never_echoes_more_than_40_characters_of_a_key() -> None:
    for key, shown in [
        ("k" * 64, "$." + "k" * 64),  # an identifier of up to 64 characters, as it is
        ("k" * 65, '$["' + "k" * 40 + '..."]'),
        ("not an identifier", '$["not an identifier"]'),
        ("x" * 40 + "!", '$["' + "x" * 40 + '..."]'),
        ("y" * 39 + "!", '$["' + "y" * 39 + '!"]'),
    ]:
        with pytest.raises(InvalidInput) as refused:
            canonicalize({key: math.nan})
        assert refused.value.fields["path"] == shown
        assert shown in str(refused.value)


def test_serialize_with_names_the_encoders_it_has() -> None:
    with pytest.raises(ValueError, match="'yaml' is not available here"):
        serialize_with("yaml", {"a": 1})  # type: ignore[arg-type]


# ----------------------------------------------------------------- more that must stay fast

_PARTS_WITHOUT_FLOATS = loads_received(b'{"a": "x", "b": [true, null, 1]}').frozen
_PARTS_WITH_FLOATS = loads_received(b'{"a": 4.0, "b": [1.5, 2.0]}').frozen


@pytest.mark.parametrize("encoder", _jcs_serialize.ENCODERS)
@pytest.mark.parametrize(
    "value",
    [
        {"f": 0.5, "g": 1e-4, "h": -1e-4, "i": 9007199254740991.0, "j": -9007199254740991.0},
        [0.5, 1e-4, 9007199254740991.0, -9007199254740991.0, "s"],
        {"i": 9007199254740991, "j": -9007199254740991, "l": [9007199254740991, -9007199254740991, "s"]},
        {"part": _PARTS_WITHOUT_FLOATS, "other": _PARTS_WITH_FLOATS},
        [_PARTS_WITHOUT_FLOATS, _PARTS_WITH_FLOATS, 1],
        9007199254740991.0,
        -9007199254740991.0,
        1e-4,
        -9007199254740991,
    ],
    ids=lambda value: type(value).__name__,
)
def test_values_at_the_edges_of_each_range_stay_on_their_fast_path(
    encoder: _jcs_serialize.Encoder, value: Any, no_general_path: list[Any]
) -> None:
    assert serialize_with(encoder, value) == rfc8785.dumps(value)
    assert no_general_path == []


@pytest.mark.parametrize(
    "value",
    [
        {"e": 2.0**53, "n": [1e-7, 2.5], "m": [2.0**53, "s"]},
        [[4.0, "s"], [2.0**53, "t"], [-(2.0**53), "t"], {"u": 1e300}],
        {"v": [1e-7, "s", 2e17, 3e-6]},
    ],
)
def test_values_past_the_exact_range_stay_on_orjson(value: Any, no_general_path: list[Any]) -> None:
    assert serialize_with("orjson", value) == rfc8785.dumps(value)
    assert no_general_path == []


def test_each_array_is_tried_whole_once(monkeypatch: pytest.MonkeyPatch) -> None:
    tried: list[Any] = []
    whole = _jcs_serialize._numbers_only_text

    def counted(array: list[Any]) -> bytes | None:
        tried.append(array)
        return whole(array)

    monkeypatch.setattr(_jcs_serialize, "_numbers_only_text", counted)
    mixed: Any = [1e-7, "s", 2e17, 3e-300, 1e21]
    numbers: Any = [1e-7, 2e17, 3e-300, 1e21]
    for value in (mixed, numbers):
        tried.clear()
        assert serialize_with("orjson", value) == rfc8785.dumps(value)
        assert tried == [value]


def test_the_orjson_path_hands_ready_copies_over_without_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    ready = loads_received(b'{"a": 4.0, "b": [1.5, "x"]}').frozen
    orjson_ready = loads_received(b'{"a": 4.0, "b": [1e-7, 2e17]}').frozen

    def no_walk(value: Any, fragments: bool) -> Any:
        raise AssertionError("walked a ready value")

    monkeypatch.setattr(_jcs_serialize, "_prepare_values", no_walk)
    for value in (ready, ready["b"], orjson_ready, orjson_ready["b"]):
        assert serialize_with("orjson", value) == rfc8785.dumps(value)
        assert canonicalize(value) == rfc8785.dumps(value)


def test_ready_parts_inside_built_values_become_fragments_unwalked(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[int] = []
    walk_dict, walk_list = _jcs_serialize._prepare_dict, _jcs_serialize._prepare_list

    def spy_dict(obj: dict[Any, Any], fragments: bool) -> Any:
        walked.append(id(obj))
        return walk_dict(obj, fragments)

    def spy_list(arr: list[Any], fragments: bool) -> Any:
        walked.append(id(arr))
        return walk_list(arr, fragments)

    monkeypatch.setattr(_jcs_serialize, "_prepare_dict", spy_dict)
    monkeypatch.setattr(_jcs_serialize, "_prepare_list", spy_list)
    parts = [
        loads_received(b'{"a": 4.0, "b": [1.5, "x"]}').frozen,
        loads_received(b"[4.0, 2.5]").frozen,
        loads_received(b'{"a": [1e-7, 2e17]}').frozen,
    ]
    built = {"parts": parts, "one": parts[0]}
    assert serialize_with("orjson", built) == rfc8785.dumps(built)
    assert sorted(walked) == sorted([id(built), id(parts)])


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 4.0, "b": "x"}',  # short: hashed piece by piece
        b'{"a": [' + b"4.0, " * 3000 + b'1.5], "b": "x"}',  # long: chunk by chunk
        b'[1.0, "' + b"x" * 10_000 + b'"]',  # long, and no comma after the first chunk
    ],
    ids=["short", "long", "long-tail"],
)
def test_a_ready_digest_never_holds_the_whole_text_twice(raw: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """canonical_sha256 of a ready copy digests orjson's text with the ``.0`` cut as it goes, without
    asking serialize for the canonical bytes."""
    frozen = loads_received(raw).frozen
    expected = hashlib.sha256(rfc8785.dumps(json.loads(raw))).digest()

    def no_whole_text(value: Any) -> bytes:
        raise AssertionError("built the whole canonical text")

    monkeypatch.setattr(_jcs_serialize, "serialize", no_whole_text)
    assert canonical_sha256(frozen) == expected


@pytest.mark.parametrize(
    "inner",
    [b"[" * 300 + b"4.0" + b"]" * 300, b'{"k":' * 300 + b"4.0" + b"}" * 300],
    ids=["arrays", "objects"],
)
def test_a_ready_part_counts_toward_the_depth_of_the_value_holding_it(inner: bytes) -> None:
    """Each part within the limit, together past it: every path counts the levels of both."""
    part = loads_received(inner, max_depth=400).frozen
    assert canonicalize(part) == rfc8785.dumps(json.loads(inner))
    built: Any = part
    for _ in range(300):
        built = [built]
    for encoder in [*_jcs_serialize.ENCODERS, None]:
        with pytest.raises(InvalidInput) as refused:
            serialize_with(encoder, built)
        assert refused.value.code == "too_deep"
