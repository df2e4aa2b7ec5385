"""RFC 8785 canonicalisation and strict parsing: published vectors, the edge set, every rejection code."""

from __future__ import annotations

import base64
import collections
import datetime
import decimal
import enum
import hashlib
import json
import struct
import subprocess
import sys
import uuid
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

import pytest

from mudrika.crypto.jcs import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_DEPTH,
    MAX_CANONICAL_DEPTH,
    canonical_sha256,
    canonicalize,
    loads_strict,
    mandate_hash,
)
from mudrika.crypto.jcs import _serialize as _jcs_serialize
from mudrika.crypto.jcs._serialize import DEFAULT_ENCODER, ENCODERS, serialize_with
from mudrika.errors import InvalidInput
from tests._support.paths import vectors

VECTOR_NAMES = ["arrays", "french", "structures", "unicode", "values", "weird"]


class _Colour(enum.Enum):
    RED = "red"


@dataclass(frozen=True)
class _Point:
    x: int
    y: int


def _general(value: Any) -> bytes:
    """The general (slow) serialiser on its own, to prove both paths agree."""
    return _jcs_serialize._general(value)


def _code(exc: pytest.ExceptionInfo[InvalidInput]) -> str:
    return exc.value.code


# ----------------------------------------------------------------------------- published vectors


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_cyberphone_vector(name: str) -> None:
    raw = (vectors("jcs", "input") / f"{name}.json").read_bytes()
    expected = (vectors("jcs", "output") / f"{name}.json").read_bytes()
    expected_hex = bytes.fromhex((vectors("jcs", "outhex") / f"{name}.txt").read_text())
    value = loads_strict(raw)
    assert canonicalize(value) == expected
    assert canonicalize(value) == expected_hex
    assert _general(value) == expected
    for encoder in ENCODERS:
        assert serialize_with(encoder, value) == expected, encoder


def test_every_vector_file_is_covered() -> None:
    names = sorted(p.stem for p in vectors("jcs", "input").glob("*.json"))
    assert names == VECTOR_NAMES


# RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text (checked against node's String(x)).
APPENDIX_B = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


@pytest.mark.parametrize(("bits", "text"), APPENDIX_B)
def test_rfc8785_appendix_b_numbers(bits: str, text: str) -> None:
    (x,) = struct.unpack(">d", bytes.fromhex(bits))
    assert canonicalize(x) == text.encode()
    assert canonicalize([x]) == f"[{text}]".encode()
    assert canonicalize({"n": x}) == f'{{"n":{text}}}'.encode()
    if not (x.is_integer() and abs(x) > 2**53 - 1 and "e" not in text):
        assert loads_strict(canonicalize(x)) == x


@pytest.mark.parametrize("x", [2.0**53, -(2.0**53), 1e20, 2.0**60, 999999999999999900000.0])
def test_large_integral_floats_canonicalize_to_integers_that_strict_parsing_refuses(x: float) -> None:
    """The documented asymmetry: ECMAScript prints these doubles as plain integers beyond 2^53-1, and
    loads_strict refuses such integer literals (I-JSON), so their canonical text does not re-parse."""
    text = canonicalize(x)
    assert b"." not in text
    assert b"e" not in text
    assert float(text) == x
    with pytest.raises(InvalidInput) as exc:
        loads_strict(text)
    assert _code(exc) == "integer_out_of_range"


# ------------------------------------------------------------------------------------- edge set


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (5e-324, "5e-324"),
        (-0.0, "0"),
        (0.1 + 0.2, "0.30000000000000004"),
        (29.99, "29.99"),
        (2**53 - 1, "9007199254740991"),
        (-(2**53 - 1), "-9007199254740991"),
        (12.0, "12"),
        (-12.0, "-12"),
        (0.0, "0"),
        (1e20, "100000000000000000000"),
        (1e16, "10000000000000000"),
        (1e-6, "0.000001"),
        (1.5e-7, "1.5e-7"),
        (0.00012, "0.00012"),
        (0.000012, "0.000012"),
        (2.0**60, "1152921504606847000"),
        (4503599627370495.5, "4503599627370495.5"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        (0, "0"),
    ],
)
def test_number_and_literal_edges(value: Any, text: str) -> None:
    assert canonicalize(value) == text.encode()
    assert canonicalize([value, {"k": value}]) == f'[{text},{{"k":{text}}}]'.encode()
    assert _general([value]) == f"[{text}]".encode()
    for encoder in ENCODERS:
        assert serialize_with(encoder, [value, {"k": value}]) == f'[{text},{{"k":{text}}}]'.encode()


def test_integral_floats_hash_like_integers_and_input_is_not_modified() -> None:
    doc: dict[str, Any] = {"amount": {"currency": "EUR", "value": 4.0}, "items": [2.0, 2.5, [-0.0]]}
    snapshot = json.dumps(doc)
    assert canonicalize(doc) == b'{"amount":{"currency":"EUR","value":4},"items":[2,2.5,[0]]}'
    assert mandate_hash(doc) == mandate_hash(json.loads(snapshot.replace("4.0", "4")))
    assert json.dumps(doc) == snapshot
    assert type(doc["amount"]["value"]) is float


def test_key_order_is_utf16_code_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00: in UTF-16 it sorts *before* U+FB33, although its code
    # point is larger; "€" (U+20AC) sorts before both, "é" (U+00E9) before "€", controls first.
    doc = {"\U0001f600": 1, "\ufb33": 2, "€": 3, "é": 4, "\n": 5, "\x1f": 6, "a": 7}
    expected = '{"\\n":5,"\\u001f":6,"a":7,"é":4,"€":3,"\U0001f600":1,"\ufb33":2}'.encode()
    assert canonicalize(doc) == expected
    assert _general(doc) == expected
    for encoder in ENCODERS:
        assert serialize_with(encoder, doc) == expected, encoder
    # The same object nested, and with the astral key only in a value: code point order is then fine.
    assert canonicalize([{"x": doc}]) == b'[{"x":' + expected + b"}]"
    assert canonicalize({"\ufb33": "\U0001f600", "€": "x"}) == '{"€":"x","\ufb33":"\U0001f600"}'.encode()


def test_keys_that_differ_only_after_a_common_prefix() -> None:
    doc = {"ab\U0001f600": 1, "ab\ufb33": 2, "ab": 3, "a": 4}
    assert canonicalize(doc) == '{"a":4,"ab":3,"ab\U0001f600":1,"ab\ufb33":2}'.encode()


def test_string_escaping_follows_rfc8785_for_every_code_point() -> None:
    """§3.2.2.2: only \\b \\t \\n \\f \\r \\" \\\\ short forms, other C0 controls as lowercase \\u00xx."""
    short = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}

    def rule(cp: int) -> str:
        if cp in short:
            return short[cp]
        if cp < 0x20:
            return f"\\u{cp:04x}"
        return chr(cp)

    code_points = [cp for cp in range(0x30000) if not 0xD800 <= cp <= 0xDFFF]
    code_points += [0x10FFFF, 0xE0001, 0x10FFFD]
    strings = [chr(cp) for cp in code_points]
    expected = "[" + ",".join(f'"{rule(cp)}"' for cp in code_points) + "]"
    assert canonicalize(strings) == expected.encode("utf-8")
    for encoder in ENCODERS:
        assert serialize_with(encoder, strings) == expected.encode("utf-8"), encoder
    # The claim the fast path rests on, stated directly: json's C escaper is exactly this rule.
    assert all(encode_basestring(chr(cp)) == f'"{rule(cp)}"' for cp in code_points)
    for cp in (0x7F, 0x2028, 0x2029, 0xFEFF, 0xE000):
        assert canonicalize(chr(cp)) == f'"{chr(cp)}"'.encode()


def test_escapes_in_keys_and_values() -> None:
    doc = {"\x00\x1f\x7f": 'a"b\\c/\u2028', "\t": "\x08\x0c"}
    assert canonicalize(doc) == '{"\\u0000\\u001f\x7f":"a\\"b\\\\c/\u2028","\\t":"\\b\\f"}'.encode()


def test_accepted_python_shapes() -> None:
    class Color(enum.IntEnum):
        RED = 3

    class Name(str):
        pass

    ordered = collections.OrderedDict([("b", 1), ("a", (1, 2.0))])
    assert canonicalize(ordered) == b'{"a":[1,2],"b":1}'
    assert canonicalize([Color.RED, Name("x"), {Name("k"): Name("v")}]) == b'[3,"x",{"k":"v"}]'
    assert canonicalize("plain") == b'"plain"'
    assert canonicalize([]) == b"[]"
    assert canonicalize({}) == b"{}"


def test_hashes() -> None:
    doc = loads_strict(b'{"b": [1, 2.50, "x"], "a": {"z": null}}')
    canonical = b'{"a":{"z":null},"b":[1,2.5,"x"]}'
    assert canonicalize(doc) == canonical
    digest = hashlib.sha256(canonical).digest()
    assert canonical_sha256(doc) == digest
    assert mandate_hash(doc) == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert "=" not in mandate_hash(doc)


def test_fast_and_general_paths_agree_on_the_bench_cart() -> None:
    from tests._support.paths import REPO_ROOT

    cart = loads_strict((REPO_ROOT / "bench" / "data" / "cart_contents_2kb.json").read_bytes())
    assert canonicalize(cart) == _general(cart)
    assert canonicalize(loads_strict(canonicalize(cart))) == canonicalize(cart)


# ------------------------------------------------------------------------- loads_strict: accepts


def test_loads_strict_number_model() -> None:
    assert loads_strict(b"-0") == 0
    assert type(loads_strict(b"-0")) is int
    assert canonicalize(loads_strict(b"-0.0")) == b"0"
    assert type(loads_strict(b"1.0")) is float
    assert canonicalize(loads_strict(b"[1.0, 1e2, 1E-7, 9007199254740991, -9007199254740991]")) == (
        b"[1,100,1e-7,9007199254740991,-9007199254740991]"
    )
    assert loads_strict(b"1e-400") == 0.0  # underflow is a finite double, not an error


def test_loads_strict_surrogate_pairs_and_escaped_backslashes_are_fine() -> None:
    assert loads_strict(b'"\\ud83d\\ude00"') == "\U0001f600"
    assert loads_strict(b'{"\\uD83D\\uDE00": "\\\\ud800"}') == {"\U0001f600": "\\ud800"}
    assert loads_strict('"\U0001f600"') == "\U0001f600"


def test_loads_strict_accepts_limits_exactly() -> None:
    deep = b"[" * DEFAULT_MAX_DEPTH + b"]" * DEFAULT_MAX_DEPTH
    assert canonicalize(loads_strict(deep)) == deep
    # Brackets inside strings do not count towards the depth.
    assert loads_strict(json.dumps(["[" * 200 + "{" * 200]).encode()) == ["[" * 200 + "{" * 200]
    # Many containers, shallow: the exact measurement runs and lets it through.
    wide = json.dumps([[{"a": [i]}] for i in range(100)]).encode()
    assert len(loads_strict(wide)) == 100
    doc = b'"' + b"a" * (DEFAULT_MAX_BYTES - 2) + b'"'
    assert len(loads_strict(doc)) == DEFAULT_MAX_BYTES - 2
    assert loads_strict(b"[1]", max_bytes=3) == [1]
    assert loads_strict(b" [[1]] ", max_depth=2) == [[1]]
    assert loads_strict(bytearray(b"{}")) == {}
    assert loads_strict(" {} \n") == {}


# ------------------------------------------------------------------------- loads_strict: rejects


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 1, "a": 2}',
        b'{"a": 1, "\\u0061": 2}',
        b'[{"x": {"k": 1, "k": 1}}]',
        '{"é": 1, "é": 2}'.encode(),
    ],
)
def test_rejects_duplicate_keys(raw: bytes) -> None:
    with pytest.raises(InvalidInput) as exc:
        loads_strict(raw)
    assert _code(exc) == "duplicate_key"
    assert "offset" in exc.value.fields


def test_duplicate_key_offset_is_in_bytes_and_points_at_the_second_key() -> None:
    raw = '{"é": 1, "é": 2}'.encode()
    with pytest.raises(InvalidInput) as exc:
        loads_strict(raw)
    offset = exc.value.fields["offset"]
    assert raw[offset:].startswith('"é": 2'.encode())
    assert exc.value.fields["line"] == 1
    assert f"byte offset {offset}" in exc.value.message


@pytest.mark.parametrize(
    "raw",
    [
        b'"\\ud800"',
        b'"\\uDC00"',
        b'["ok", "x\\ud83dy"]',
        b'{"\\udfff": 1}',
        b'{"a": [{"b": "\\ud83d\\ud83d\\ude00"}]}',
        b'"\\ude00\\ud83d"',
        b'"\\\\\\ud800"',
    ],
)
def test_rejects_lone_surrogates(raw: bytes) -> None:
    with pytest.raises(InvalidInput) as exc:
        loads_strict(raw)
    assert _code(exc) == "lone_surrogate"
    assert raw[exc.value.fields["offset"] : exc.value.fields["offset"] + 1] == b'"'


@pytest.mark.parametrize(
    "raw", [b"NaN", b"[Infinity]", b'{"a": -Infinity}', b"1e400", b"[-1e400]", b"1" * 400 + b".5"]
)
def test_rejects_non_finite_numbers(raw: bytes) -> None:
    with pytest.raises(InvalidInput) as exc:
        loads_strict(raw)
    assert _code(exc) == "non_finite_number"
    assert "offset" in exc.value.fields


@pytest.mark.parametrize(
    "raw",
    [b"9007199254740992", b"[-9007199254740992]", b'{"n": 123456789012345678901234567890}', b"1" * 5000],
)
def test_rejects_integers_out_of_range(raw: bytes) -> None:
    with pytest.raises(InvalidInput) as exc:
        loads_strict(raw)
    assert _code(exc) == "integer_out_of_range"
    assert len(exc.value.message) < 200


def test_rejects_too_deep() -> None:
    deep = b"[" * (DEFAULT_MAX_DEPTH + 1) + b"]" * (DEFAULT_MAX_DEPTH + 1)
    with pytest.raises(InvalidInput) as exc:
        loads_strict(deep)
    assert _code(exc) == "too_deep"
    assert exc.value.fields["offset"] == DEFAULT_MAX_DEPTH
    with pytest.raises(InvalidInput) as exc:
        loads_strict(b'{"a": {"b": [1]}}', max_depth=2)
    assert _code(exc) == "too_deep"
    # Far deeper than Python's recursion limit: the scanner stops at its own limit, reported as too_deep.
    with pytest.raises(InvalidInput) as exc:
        loads_strict(b"[" * 100_000 + b"]" * 100_000)
    assert _code(exc) == "too_deep"
    assert exc.value.fields["offset"] == DEFAULT_MAX_DEPTH


def test_depth_is_measured_on_the_parsed_value() -> None:
    # Many brackets, few levels: brackets inside strings and wide arrays are not nesting.
    wide = json.dumps({"items": [{"label": "[{[{" * 20, "tags": [[1], {"a": [2]}]} for _ in range(500)]})
    value = loads_strict(wide.encode(), max_depth=6)
    assert len(value["items"]) == 500
    # Exactly at the limit passes; one level more fails at the first bracket past it, in an object
    # member reached after a wide sibling.
    at_limit = '{"wide": [' + ",".join(["[]"] * 100) + '], "deep": ' + "[" * 7 + "]" * 7 + "}"
    assert loads_strict(at_limit.encode(), max_depth=8)["wide"] == [[]] * 100
    with pytest.raises(InvalidInput) as exc:
        loads_strict(at_limit.encode(), max_depth=7)
    assert _code(exc) == "too_deep"
    assert at_limit[exc.value.fields["offset"] :].startswith("[]" + "]" * 6)
    # Top-level scalars and empty containers have depth 0 and 1.
    assert loads_strict(b"1", max_depth=0) == 1
    assert loads_strict(b"[]", max_depth=1) == []


def test_rejects_deep_input_when_the_caller_allows_more_than_python_can_follow() -> None:
    with pytest.raises(InvalidInput) as exc:
        loads_strict(b"[" * 50_000 + b"]" * 50_000, max_depth=10**6)
    assert _code(exc) == "too_deep"


def test_rejects_too_large_before_parsing() -> None:
    with pytest.raises(InvalidInput) as exc:
        loads_strict(b"[1]", max_bytes=2)
    assert _code(exc) == "too_large"
    # Not even valid JSON: the size is checked first.
    with pytest.raises(InvalidInput) as exc:
        loads_strict(b"\xff" * (DEFAULT_MAX_BYTES + 1))
    assert _code(exc) == "too_large"
    # A str is measured in UTF-8 bytes: "é" is two.
    with pytest.raises(InvalidInput) as exc:
        loads_strict('"éé"', max_bytes=5)
    assert _code(exc) == "too_large"
    assert loads_strict('"éé"', max_bytes=6) == "éé"


@pytest.mark.parametrize(
    "raw",
    [
        b"\xef\xbb\xbf{}",
        b"\xff{}",
        b'"\xc0\xaf"',
        b'"\xed\xa0\x80"',
        b'["\xe2\x82"]',
        "{}".encode("utf-16-le"),
        "{}".encode("utf-16"),
        "\ufeff{}",
        '"\ud800"',
    ],
)
def test_rejects_bad_encoding(raw: bytes | str) -> None:
    with pytest.raises(InvalidInput) as exc:
        loads_strict(raw)
    assert _code(exc) == "bad_encoding"


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"   ",
        b"{",
        b'{"a": 1,}',
        b"[1,]",
        b"{'a': 1}",
        b"01",
        b"[1] [2]",
        b'{"a" 1}',
        b'"tab\there"',
        b"// comment\n{}",
        b"[.5]",
        b"[+1]",
        b"tru",
        b"\x00",
    ],
)
def test_rejects_malformed_json(raw: bytes) -> None:
    with pytest.raises(InvalidInput) as exc:
        loads_strict(raw)
    assert _code(exc) in {"malformed_json", "bad_encoding"}
    if raw != b"\x00":
        assert _code(exc) == "malformed_json"
        assert "offset" in exc.value.fields


def test_messages_never_echo_large_input() -> None:
    key = "k" * 10_000
    with pytest.raises(InvalidInput) as exc:
        loads_strict(json.dumps({key: 1}).replace("}", f', "{key}": 2}}'))
    assert len(exc.value.message) < 200
    assert len(repr(exc.value)) < 300
    with pytest.raises(InvalidInput) as exc:
        loads_strict(b'{"' + b"x" * 50_000 + b'": }')
    assert len(exc.value.message) < 200


def test_loads_strict_rejects_non_text_types() -> None:
    with pytest.raises(TypeError):
        loads_strict(123)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- canonicalize: rejects


@pytest.mark.parametrize(
    ("value", "code", "path"),
    [
        ({"a": {1, 2}}, "unsupported_type", "$.a"),
        ([b"bytes"], "unsupported_type", "$[0]"),
        ({"price": decimal.Decimal("1.10")}, "unsupported_type", "$.price"),
        ({1: "x"}, "non_string_key", "$"),
        ({"a": {None: "x"}}, "non_string_key", "$.a"),
        ({"a": 1, ("t",): 2}, "non_string_key", "$"),
        ({"x": [float("nan")]}, "non_finite_number", "$.x[0]"),
        (float("inf"), "non_finite_number", "$"),
        ([-float("inf")], "non_finite_number", "$[0]"),
        ({"n": 2**53}, "integer_out_of_range", "$.n"),
        ([-(2**53)], "integer_out_of_range", "$[0]"),
        (10**400, "integer_out_of_range", "$"),
        ({"s": "a\ud800"}, "lone_surrogate", "$.s"),
        ({"\udc00": 1}, "lone_surrogate", '$["\\udc00"]'),
        (["ok", ["\ud83d"]], "lone_surrogate", "$[1][0]"),
    ],
)
def test_canonicalize_rejections(value: Any, code: str, path: str) -> None:
    with pytest.raises(InvalidInput) as exc:
        canonicalize(value)
    assert _code(exc) == code
    assert exc.value.fields["path"] == path
    with pytest.raises(InvalidInput):
        mandate_hash(value)


def test_canonicalize_rejects_too_deep_and_cycles() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(MAX_CANONICAL_DEPTH):
        child: list[Any] = []
        node.append(child)
        node = child
    with pytest.raises(InvalidInput) as exc:
        canonicalize(deep)
    assert _code(exc) == "too_deep"

    ok: list[Any] = []
    node = ok
    for _ in range(MAX_CANONICAL_DEPTH - 1):
        child = []
        node.append(child)
        node = child
    assert canonicalize(ok) == b"[" * MAX_CANONICAL_DEPTH + b"]" * MAX_CANONICAL_DEPTH

    cycle: dict[str, Any] = {"a": []}
    cycle["a"].append(cycle)
    with pytest.raises(InvalidInput) as exc:
        canonicalize(cycle)
    assert _code(exc) == "too_deep"

    # Every compiled encoder keeps the same limit (the json path bounds it itself, orjson's own limit
    # is lower and sends the value to the general path, which applies it).
    for encoder in ENCODERS:
        assert serialize_with(encoder, ok) == b"[" * MAX_CANONICAL_DEPTH + b"]" * MAX_CANONICAL_DEPTH
        for refused in (deep, cycle):
            with pytest.raises(InvalidInput) as exc:
                serialize_with(encoder, refused)
            assert _code(exc) == "too_deep"


def test_canonicalize_error_path_names_long_keys_briefly() -> None:
    key = "k" * 1000
    with pytest.raises(InvalidInput) as exc:
        canonicalize({key: {1}})
    assert exc.value.fields["path"].startswith('$["kkk')
    assert len(exc.value.message) < 200


# ------------------------------------------------------------------- error-path positions and fallbacks


@pytest.mark.parametrize(
    ("raw", "code", "at"),
    [
        # The offending token comes after closed containers and after other numbers and literals.
        (b'[[1], {"a": 1}, 2.5, true, {"a": 2, "a": 3}]', "duplicate_key", b'"a": 3'),
        (b'[{"a": [1, 2]}, [1e5, 2], "\\ud800"]', "lone_surrogate", b'"\\ud800"'),
        (b'{"x": [1, {"y": 2}], "z": 9007199254740993}', "integer_out_of_range", b"9007199254740993"),
        (b'{"x": [1.5, {"y": null}], "z": [-1e999]}', "non_finite_number", b"-1e999"),
        (b"[1.5, 2, null, NaN, " + b"[" * 70 + b"]" * 70 + b"]", "too_deep", b"[" * 7 + b"]"),
    ],
)
def test_offsets_point_at_the_offending_token(raw: bytes, code: str, at: bytes) -> None:
    with pytest.raises(InvalidInput) as exc:
        loads_strict(raw)
    assert _code(exc) == code
    assert raw[exc.value.fields["offset"] :].startswith(at)


@pytest.mark.parametrize(
    "raw",
    [
        b"[x" + b"[" * 100 + b"]" * 101,  # many brackets, but broken before the depth is exceeded
        b"]" + b"[" * 100,  # a closing bracket first
        b'["unterminated' + b"[" * 100,
    ],
)
def test_malformed_text_with_many_brackets_is_malformed_not_too_deep(raw: bytes) -> None:
    with pytest.raises(InvalidInput) as exc:
        loads_strict(raw)
    assert _code(exc) == "malformed_json"


def test_str_input_longer_than_the_cap_is_refused_without_encoding() -> None:
    with pytest.raises(InvalidInput) as exc:
        loads_strict("[" + "1," * 10 + "1]", max_bytes=10)
    assert _code(exc) == "too_large"


def test_encoder_fallbacks_produce_the_same_text(monkeypatch: pytest.MonkeyPatch) -> None:
    value = _jcs_serialize._prepare({"b": [1, 2.5, "é"], "a": {"z": None, "y": True}})
    expected = b'{"a":{"y":true,"z":null},"b":[1,2.5,"\xc3\xa9"]}'
    assert _jcs_serialize._ENCODERS[DEFAULT_ENCODER](value) == expected
    assert _jcs_serialize._encode_with_json_encoder(value) == expected
    for encoder in ENCODERS:
        assert serialize_with(encoder, value) == expected
    monkeypatch.setattr(_jcs_serialize, "c_make_encoder", None)
    assert _jcs_serialize._make_json_encode()(value) == expected
    # Unsupported types never reach an encoder, but if one did it would fail, not be stringified.
    for encoder in ENCODERS:
        with pytest.raises(TypeError):
            _jcs_serialize._ENCODERS[encoder]({"s": {1, 2}})


def test_orjson_is_the_default_encoder_when_installed() -> None:
    pytest.importorskip("orjson")
    assert DEFAULT_ENCODER == "orjson"
    assert ENCODERS == ("json", "orjson")


def test_json_encoder_is_selected_when_orjson_is_missing() -> None:
    # A fresh interpreter in which ``import orjson`` fails, as on a machine without the wheel.
    script = (
        "import sys; sys.modules['orjson'] = None\n"
        "from mudrika.crypto.jcs import _serialize, canonicalize\n"
        "assert _serialize.DEFAULT_ENCODER == 'json', _serialize.DEFAULT_ENCODER\n"
        "assert _serialize.ENCODERS == ('json',), _serialize.ENCODERS\n"
        "sys.stdout.buffer.write(canonicalize({'b': 1.0, 'a': ['\\u00e9', 2.5]}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True, timeout=60)
    assert done.stdout == '{"a":["é",2.5],"b":1}'.encode()


@pytest.mark.parametrize(
    "value",
    [
        {"when": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)},
        {"id": uuid.UUID(int=7)},
        {"colour": _Colour.RED},
        {"date": datetime.date(2026, 1, 1)},
        [_Point(1, 2)],
    ],
)
def test_types_orjson_would_write_are_refused_on_every_path(value: Any) -> None:
    # orjson writes datetimes, UUIDs, enums and dataclasses natively; RFC 8785 input must be JSON.
    for encoder in (*ENCODERS, None):
        with pytest.raises(InvalidInput) as exc:
            serialize_with(encoder, value)
        assert _code(exc) == "unsupported_type"


def test_nesting_beyond_orjsons_limit_takes_the_general_path() -> None:
    deep: Any = "x"
    for _ in range(150):  # 300 levels: orjson refuses more than 255; MAX_CANONICAL_DEPTH is 512
        deep = {"k": [deep]}
    expected = _general(deep)
    for encoder in ENCODERS:
        assert serialize_with(encoder, deep) == expected


def test_lone_surrogates_reach_the_general_path_from_every_encoder() -> None:
    for encoder in ENCODERS:
        with pytest.raises(InvalidInput) as exc:
            serialize_with(encoder, {"a": ["ok", "\ud800"]})
        assert _code(exc) == "lone_surrogate"
        assert exc.value.fields["path"] == "$.a[1]"


def test_locator_returns_none_when_the_text_has_no_such_problem() -> None:
    from mudrika.crypto.jcs._parse import locate

    text = '{"a": [1, 2.5, "x", null], "b": {"c": true}}'
    for code in ("duplicate_key", "lone_surrogate", "non_finite_number", "integer_out_of_range"):
        assert locate(text, code) is None
    assert locate(text, "too_deep", max_depth=2) is None
    assert locate(text, "too_deep", max_depth=1) == text.index("[")
