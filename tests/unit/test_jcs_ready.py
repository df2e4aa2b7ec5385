"""The strict-parser-to-encoder path of RFC 8785 (``loads_received``) and the Fragment fix-up for floats
outside the shortest-form range: byte-identical to PyPI ``rfc8785`` (an independent implementation) and to
the pure-Python general path, on the published vectors, every code point, wide-exponent floats and
Hypothesis-generated documents; and the parser's readiness facts refuse every document they must."""

from __future__ import annotations

import hashlib
import json
import math
import pickle
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.crypto.frozenjson import (
    EncoderReadyDict,
    EncoderReadyList,
    FrozenJSONDict,
    FrozenJSONList,
    OrjsonReadyDict,
    OrjsonReadyList,
)
from mudrika.crypto.jcs import _serialize as _jcs_serialize
from mudrika.crypto.jcs import canonical_sha256, canonicalize, loads_received, loads_strict, mandate_hash
from mudrika.crypto.jcs._parse import parse_strict_with_facts
from mudrika.crypto.jcs._serialize import ENCODERS, serialize_with
from mudrika.errors import InvalidInput
from tests._support.doubles import random_doubles
from tests._support.paths import REPO_ROOT, vectors

MAX_SAFE = 2**53 - 1
VECTOR_NAMES = ["arrays", "french", "structures", "unicode", "values", "weird"]
_READY = (EncoderReadyDict, EncoderReadyList)


def _general(value: Any) -> bytes:
    return _jcs_serialize._general(value)


def _every_path(value: Any) -> list[bytes]:
    """The bytes of ``value`` from canonicalize and from every compiled encoder's path; the digest of
    canonical_sha256 (which reads a ready value's text in pieces) is checked against them on the way."""
    canonical = canonicalize(value)
    assert canonical_sha256(value) == hashlib.sha256(canonical).digest()
    return [canonical, *(serialize_with(encoder, value) for encoder in ENCODERS)]


# ----------------------------------------------------------------------------- published vectors


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_published_vectors_through_the_received_copy(name: str) -> None:
    raw = (vectors("jcs", "input") / f"{name}.json").read_bytes()
    expected = (vectors("jcs", "output") / f"{name}.json").read_bytes()
    received = loads_received(raw)
    assert rfc8785.dumps(received.value) == expected
    assert _every_path(received.frozen) == [expected] * (1 + len(ENCODERS))
    assert canonicalize(received.value) == expected


def test_the_bench_cart_is_encoder_ready_and_hashes_like_rfc8785() -> None:
    raw = (REPO_ROOT / "bench" / "data" / "cart_contents_2kb.json").read_bytes()
    received = loads_received(raw)
    assert type(received.frozen) is EncoderReadyDict  # integral floats (4.0, 2.0) and all
    expected = rfc8785.dumps(received.value)
    assert _every_path(received.frozen) == [expected] * (1 + len(ENCODERS))
    # Any part of a ready document is ready, and so is the same part wrapped in containers built by code.
    request = received.frozen["payment_request"]
    assert type(request) is EncoderReadyDict
    assert _every_path(request) == [rfc8785.dumps(received.value["payment_request"])] * (1 + len(ENCODERS))
    unsigned = {key: item for key, item in received.frozen.items() if key != "id"}
    unsigned["extra"] = [4.0, 1e-7, {"n": 2.0**60}]
    plain = {key: item for key, item in received.value.items() if key != "id"}
    plain["extra"] = [4.0, 1e-7, {"n": 2.0**60}]
    assert _every_path(unsigned) == [rfc8785.dumps(plain)] * (1 + len(ENCODERS))
    assert mandate_hash(received.frozen) == mandate_hash(received.value)


# ----------------------------------------------------------------------------- every code point


def _code_points() -> list[int]:
    points = [cp for cp in range(0x30000) if not 0xD800 <= cp <= 0xDFFF]
    return [*points, 0x10FFFF, 0xE0001, 0x10FFFD]


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_every_code_point_as_a_string_through_the_received_copy(ensure_ascii: bool) -> None:
    """§3.2.2.2 on the ready path: literal UTF-8 text and \\uXXXX escapes (surrogate pairs above U+FFFF)."""
    strings = [chr(cp) for cp in _code_points()]
    received = loads_received(json.dumps(strings, ensure_ascii=ensure_ascii), max_bytes=10_000_000)
    assert type(received.frozen) is EncoderReadyList
    expected = rfc8785.dumps(strings)
    assert _every_path(received.frozen) == [expected] * (1 + len(ENCODERS))


def test_every_bmp_code_point_as_a_key_through_the_received_copy() -> None:
    """Keys in code point order equal UTF-16 order below U+10000: such objects stay ready."""
    document = {chr(cp): cp for cp in range(0x10000) if not 0xD800 <= cp <= 0xDFFF}
    for ensure_ascii in (False, True):
        received = loads_received(json.dumps(document, ensure_ascii=ensure_ascii), max_bytes=10_000_000)
        assert type(received.frozen) is EncoderReadyDict
        assert _every_path(received.frozen) == [rfc8785.dumps(document)] * (1 + len(ENCODERS))


def test_astral_keys_beside_other_keys_are_never_ready() -> None:
    for document in ({"\U0001f600": 1, "\uffff": 2}, {"a": {"\U00010000": 1, "\ue000": 2}}):
        for ensure_ascii in (False, True):
            received = loads_received(json.dumps(document, ensure_ascii=ensure_ascii))
            assert not isinstance(received.frozen, _READY)
            assert _every_path(received.frozen) == [rfc8785.dumps(document)] * (1 + len(ENCODERS))
    # Alone in its object, or only in values, an astral character changes no order.
    alone: list[Any] = [{"a": {"\U0001f600": 1}}, {"k": "\U0001f602", "b": "\U00010000"}]
    for document in alone:
        for ensure_ascii in (False, True):
            received = loads_received(json.dumps(document, ensure_ascii=ensure_ascii))
            assert type(received.frozen) is EncoderReadyDict
            assert _every_path(received.frozen) == [rfc8785.dumps(document)] * (1 + len(ENCODERS))


# ----------------------------------------------------------------------------- wide-exponent floats


def test_twenty_thousand_random_doubles_through_every_shape() -> None:
    """Doubles from random bit patterns in flat arrays (one text, fixed run by run), in objects (one
    Fragment per float), in arrays beside strings and nested arrays, plain and received."""
    numbers = random_doubles(20_000, seed=8785)
    chunks = [numbers[i : i + 100] for i in range(0, len(numbers), 100)]
    for chunk in chunks:
        shapes: list[Any] = [
            chunk,
            {f"k{j}": x for j, x in enumerate(chunk)},
            [*chunk[:50], "text", True, None, 7, *chunk[50:]],
            [chunk[:30], [chunk[30:60], chunk[60:]], {"x": chunk[:5]}],
            [*chunk, True, False, 3, -0.0, 4.0],
        ]
        for shape in shapes:
            expected = rfc8785.dumps(shape)
            assert _every_path(shape) == [expected] * (1 + len(ENCODERS))
            received = loads_received(json.dumps(shape))
            assert _every_path(received.frozen) == [expected] * (1 + len(ENCODERS))


@pytest.mark.parametrize(
    "x",
    [
        1e-7, 1.5e-7, 9.99999999999e-7, 1e-6, 4.8e-6, 1e-5, 9.99e-5, 1e16, 1e20, 1e21, 2.0**53, 2.0**60,
        1.7976931348623157e308, 5e-324, 2.2250738585072014e-308, 123456789012345680000.0, 1e-300, 1e300,
    ],
)  # fmt: skip
def test_float_edges_outside_the_shortest_form_range(x: float) -> None:
    for value in (x, -x):
        documents: list[Any] = [
            [value],
            [value, 1.5],
            {"v": value},
            [value, "s"],
            [[value]],
            {"a": [value, None]},
        ]
        for document in documents:
            expected = rfc8785.dumps(document)
            assert _every_path(document) == [expected] * (1 + len(ENCODERS))
            assert _every_path(loads_received(json.dumps(document)).frozen) == [expected] * (
                1 + len(ENCODERS)
            )


def test_numbers_only_arrays_refuse_what_orjson_would_write_as_null() -> None:
    for document in ([1e-7, math.nan], [1e-7, math.inf], {"a": [1e300, -math.inf]}):
        for encoder in (*ENCODERS, None):
            with pytest.raises(InvalidInput) as exc:
                serialize_with(encoder, document)
            assert exc.value.code == "non_finite_number"
    assert canonicalize([1e-7, None, 2.0]) == b"[1e-7,null,2]"


def test_the_layout_check_accepts_exactly_ecmascript_text() -> None:
    """_ES_NUMBER (the check on orjson's digits) against es_number_to_string over every magnitude."""
    from mudrika.crypto.jcs._number import es_number_to_string

    for x in random_doubles(5_000, seed=7):
        for value in (x, float(int(x)) if abs(x) < 1e25 else x, x * 1e-300, abs(x) % 1e7):
            text = es_number_to_string(value).encode()
            assert _jcs_serialize._ES_NUMBER.fullmatch(text) is not None, text
    for wrong in [b"-0", b"0.0", b"1.0", b"1e21", b"1e+20", b"1e-6", b"0.0000001", b"1.50", b"1E+30",
                  b"1.5e-07", b"12e+30", b"0.5e-7", b"1000000000000000000000", b"+1", b"01", b"1."]:  # fmt: skip
        assert _jcs_serialize._ES_NUMBER.fullmatch(wrong) is None, wrong


# ----------------------------------------------------------------------------- readiness facts


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 4.0, "b": "version 2.0, final"}',  # ".0," in a string: the ".0" removal could reach it
        b'{"a": 4.5, "b": "v1.0]"}',
        b'{"a": 1, "b": "x.0}"}',
        b'{"a": "\\u002e0,", "b": 4.0}',  # an escaped printable character
        b'{"a": "\\u0030", "b": 4.0}',
        b'{"a": "x.0\\u002c", "b": 4.0}',
        b'{"a": "ok 1.0 fine", "b": 4.0}',  # ".0 " is counted like a literal before whitespace
        b"[-0.0]",
        b"[-0.0, 1e-7]",  # a wide float does not make -0.0 ready
        b'{"\\ud83d\\ude00": 1, "b": 2}',
        b'{"\\ud83d\\ude00": 1e-7, "b": 2}',
        b'"scalar"',
        b"4.0",
    ],
)
def test_documents_the_parser_must_not_call_ready(raw: bytes) -> None:
    received = loads_received(raw)
    assert not isinstance(received.frozen, (*_READY, OrjsonReadyDict, OrjsonReadyList))
    expected = rfc8785.dumps(received.value)
    assert _every_path(received.frozen) == [expected] * (1 + len(ENCODERS))


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 4.0, "b": [10.00, 2.5e0, 1E2, 0.0, 123.0e-1], "c": "ok 1.0"}',
        b'{"a": [1, 2.5, true, null], "b": {"c": "\\u00e9\\n\\t\\u001f\\"\\\\"}}',
        b'{"a": -9007199254740991, "b": 9999999999999998.0, "c": 0.0001, "d": -1e-4}',
        b"[]",
        b"{}",
    ],
)
def test_documents_the_parser_calls_ready(raw: bytes) -> None:
    received = loads_received(raw)
    assert isinstance(received.frozen, _READY)
    expected = rfc8785.dumps(received.value)
    assert _every_path(received.frozen) == [expected] * (1 + len(ENCODERS))


def test_deep_documents_are_ready_only_within_the_canonical_depth() -> None:
    # More brackets than MAX_CANONICAL_DEPTH (512) but 200 levels deep: measured, and ready.
    shallow = "[" + "[]," * 400 + "[" * 200 + "4.0" + "]" * 200 + "]"
    ready = loads_received(shallow, max_depth=1000)
    assert type(ready.frozen) is EncoderReadyList
    assert _every_path(ready.frozen) == [_general(ready.value)] * (1 + len(ENCODERS))
    # Ready but past orjson's own limit of 255 levels: orjson refuses, the general path writes it.
    past_orjson = loads_received("[" * 300 + "4.0" + "]" * 300, max_depth=1000)
    assert type(past_orjson.frozen) is EncoderReadyList
    assert _every_path(past_orjson.frozen) == [b"[" * 300 + b"4" + b"]" * 300] * (1 + len(ENCODERS))
    # Deeper than 512 levels (the parser allows it here): not ready, whatever else holds.
    value, encoder_ready = parse_strict_with_facts(
        "[" * 600 + "4.5" + "]" * 600, max_bytes=10_000, max_depth=1000
    )
    assert not encoder_ready
    with pytest.raises(InvalidInput) as exc:
        canonicalize(value)
    assert exc.value.code == "too_deep"


def test_loads_received_keeps_plain_values_and_the_parser_rules() -> None:
    received = loads_received(b'{"b": [1, 4.0, 0.5], "a": {"x": null}}')
    assert type(received.value) is dict
    assert type(received.value["b"]) is list
    assert [type(item) for item in received.value["b"]] == [int, float, float]
    assert received.frozen == received.value
    assert type(received.frozen["a"]) is EncoderReadyDict
    assert loads_strict(b'{"b": [1, 4.0]}') == {"b": [1, 4.0]}
    with pytest.raises(InvalidInput) as exc:
        loads_received(b'{"a": 1, "a": 2}')
    assert exc.value.code == "duplicate_key"


def test_ready_containers_are_read_only_and_lose_the_fact_when_pickled() -> None:
    received = loads_received(b'{"a": [1, 2.5], "b": {"c": 4.0}}')
    with pytest.raises(TypeError):
        received.frozen["a"] = 1
    with pytest.raises(TypeError):
        received.frozen["a"].append(3)
    again = pickle.loads(pickle.dumps(received.frozen))
    assert type(again) is FrozenJSONDict
    assert type(again["a"]) is FrozenJSONList
    assert type(again["b"]) is FrozenJSONDict
    assert canonicalize(again) == canonicalize(received.frozen) == b'{"a":[1,2.5],"b":{"c":4}}'


def test_facts_are_per_thread() -> None:
    """Documents of both kinds parsed on eight threads at once: each gets its own document's verdict."""
    documents = [
        b'{"a": [4.0, 2.5, "x"]}',
        b'{"a": [1e-7, 2.5, "x"]}',
        b'{"a": 4.0, "b": "2.0, or"}',
        b'{"\\ud83d\\ude00": 1, "b": 2}',
        '{"k": "\u00e9", "v": [1.5, 3]}'.encode(),
    ]
    expected = [isinstance(loads_received(doc).frozen, _READY) for doc in documents]
    assert expected == [True, False, False, False, True]
    work = [documents[i % len(documents)] for i in range(4000)]

    def verdict(raw: bytes) -> bool:
        return isinstance(loads_received(raw).frozen, _READY)

    with ThreadPoolExecutor(max_workers=8) as pool:
        verdicts = list(pool.map(verdict, work, chunksize=1))
    assert verdicts == [expected[i % len(documents)] for i in range(4000)]


def test_json_encoder_path_without_orjson() -> None:
    # A fresh interpreter in which ``import orjson`` fails: ready values go to json's C encoder.
    script = (
        "import sys; sys.modules['orjson'] = None\n"
        "from mudrika.crypto.jcs import _serialize, canonicalize, loads_received\n"
        "assert _serialize.ENCODERS == ('json',)\n"
        'ready = loads_received(b\'{"b": [4.0, 2.5, 0.001], "a": {"c": 10.0}}\').frozen\n'
        "assert type(ready).__name__ == 'EncoderReadyDict', type(ready)\n"
        'wide = loads_received(b\'{"b": [4.0, 2.5, 1e-7], "a": {"c": 1e16}}\').frozen\n'
        "sys.stdout.buffer.write(canonicalize(ready) + b' ' + canonicalize(wide))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True, timeout=60)
    assert done.stdout == b'{"a":{"c":10},"b":[4,2.5,0.001]} {"a":{"c":10000000000000000},"b":[4,2.5,1e-7]}'


# ----------------------------------------------------------------------------- Hypothesis differential

# Strings that stress the readiness facts: ".0" before delimiters, digits, escapes of printable characters.
_FACT_TEXT = st.text(st.sampled_from('.0,]}1 9e"\\/aé\U0001f600\ufb33\x00\x1f'), max_size=8)
_floats = (
    st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(-(2**53), 2**53).map(float)
    | st.sampled_from([0.0, -0.0, 4.0, 1e16, 1e21, 1e-7, 1e-6, 1e-4, 9.5e-5, 2.0**60])
)
_keys = st.text(st.sampled_from("ab.0,]}\ue000\uffff\U0001f600\U00010000é"), max_size=4)
_documents = st.recursive(
    st.none() | st.booleans() | st.integers(-MAX_SAFE, MAX_SAFE) | _floats | _FACT_TEXT,
    lambda children: st.lists(children, max_size=6) | st.dictionaries(_keys, children, max_size=5),
    max_leaves=40,
).filter(lambda value: isinstance(value, dict | list))


def _write(value: Any, style: int) -> str:
    """A JSON text of ``value`` in one of several producers' styles (escaping, spacing, float forms)."""
    if style == 0:
        return json.dumps(value)
    if style == 1:
        return json.dumps(value, ensure_ascii=False, indent=1)
    # Floats as another producer might write them: "4.00", "4.0e0" (strings change too, harmlessly).
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace(".0,", ".00,").replace(".0]", ".0e0]") if style == 2 else text


@settings(max_examples=400, deadline=None)
@given(_documents, st.integers(0, 3))
def test_received_copy_matches_general_path_and_rfc8785(value: Any, style: int) -> None:
    """New path (received copy, ready or not, through every encoder) vs the general path vs rfc8785."""
    received = loads_received(_write(value, style))
    expected = rfc8785.dumps(received.value)
    assert _general(received.value) == expected
    assert _every_path(received.frozen) == [expected] * (1 + len(ENCODERS))
    # The same parts inside containers built by code (how an unsigned mandate is hashed).
    wrapped = {"doc": received.frozen, "list": [received.frozen, 4.0, 1e-7]}
    plain = {"doc": received.value, "list": [received.value, 4.0, 1e-7]}
    assert _every_path(wrapped) == [rfc8785.dumps(plain)] * (1 + len(ENCODERS))


@settings(max_examples=300, deadline=None)
@given(st.lists(_floats | st.integers(-MAX_SAFE, MAX_SAFE) | st.booleans(), min_size=1, max_size=30))
def test_float_arrays_match_general_path_and_rfc8785(numbers: list[Any]) -> None:
    expected = rfc8785.dumps(numbers)
    assert _general(numbers) == expected
    assert _every_path(numbers) == [expected] * (1 + len(ENCODERS))
    assert _every_path({"n": numbers, "s": "x"}) == [rfc8785.dumps({"n": numbers, "s": "x"})] * (
        1 + len(ENCODERS)
    )


@pytest.mark.parametrize("count", [3, 40, 2000])  # texts below and above the piece-copying threshold
def test_digest_of_ready_text_read_in_pieces(count: int) -> None:
    document: dict[str, Any] = {
        f"item{i:05d}": {"price": float(i % 7), "label": "x" * 40, "rate": 0.25 + i} for i in range(count)
    }
    received = loads_received(json.dumps(document))
    assert type(received.frozen) is EncoderReadyDict
    expected = rfc8785.dumps(document)
    assert canonical_sha256(received.frozen) == hashlib.sha256(expected).digest()
    assert mandate_hash(received.frozen) == mandate_hash(document)
    assert _every_path(received.frozen) == [expected] * (1 + len(ENCODERS))


def test_a_parse_reentered_on_the_same_thread_keeps_its_own_facts() -> None:
    """A parse started while this thread's recorder is mid-parse (a signal handler) must not reset it."""
    from mudrika.crypto.jcs import _parse

    recorder = _parse._recorder()
    recorder.busy, recorder.floats_ready, recorder.wide_floats, recorder.dot_zero_literals = (
        True,
        False,
        True,
        3,
    )  # an outer parse's state
    try:
        assert parse_strict_with_facts(b"[1.5, 4.0]", max_bytes=100, max_depth=4) == ([1.5, 4.0], "encoders")
        assert parse_strict_with_facts(b"[1e-7]", max_bytes=100, max_depth=4) == ([1e-7], "orjson")
        assert parse_strict_with_facts(b"[-0.0]", max_bytes=100, max_depth=4) == ([-0.0], None)
        assert (recorder.floats_ready, recorder.wide_floats, recorder.dot_zero_literals) == (False, True, 3)
    finally:
        recorder.busy = False
    assert parse_strict_with_facts(b"[2.5]", max_bytes=100, max_depth=4) == ([2.5], "encoders")


def test_received_mandates_hash_alike_from_bytes_and_from_a_mapping() -> None:
    """payments.receive keeps the ready copy as ``.raw``; every hash helper agrees with the Mapping path."""
    from mudrika.payments.models import (
        cart_contents_hash,
        cart_mandate_hash,
        intent_hash,
        intent_mandate_hash,
        receive_cart,
        receive_intent,
    )
    from tests._support.paths import FIXTURES

    contents = json.loads((FIXTURES / "ap2" / "cart_contents.json").read_text(encoding="utf-8"))
    cart = {"contents": contents, "merchant_authorization": "h.p.s"}
    from_bytes = receive_cart(json.dumps(cart).encode())
    assert type(from_bytes.raw) is EncoderReadyDict
    from_mapping = receive_cart(cart)
    assert type(from_mapping.raw) is FrozenJSONDict
    assert cart_contents_hash(from_bytes) == cart_contents_hash(from_mapping)
    assert cart_mandate_hash(from_bytes) == cart_mandate_hash(from_mapping)
    assert from_bytes.plain() == from_mapping.plain() == cart
    intent = json.loads((FIXTURES / "ap2" / "intent_mandate.json").read_text(encoding="utf-8"))
    intent["user_authorization"] = "h.p.s"
    received = receive_intent(json.dumps(intent).encode())
    assert intent_hash(received) == intent_hash(receive_intent(intent))
    assert intent_mandate_hash(received) == intent_mandate_hash(receive_intent(intent))
