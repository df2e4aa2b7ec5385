"""The strict parser's plain-document path (orjson) against its hooked path (``json`` with hooks).

``parse_strict`` hands a plain document (no backslash, bounded brackets, no 16-digit run) to orjson
and everything else to the hooked parser.  The claim that makes this safe: whenever the plain path
returns a value, the hooked parser returns the very same value (same types, same key order) for the
same bytes; whenever the hooked parser refuses a document, the plain path declines it.  Every test
here checks that claim on a family of inputs: generated values written many ways, duplicate keys
placed to fool the colon count, every boundary of each exclusion, and arbitrary bytes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mudrika.crypto.jcs import _parse, loads_strict
from mudrika.errors import InvalidInput

MAX_SAFE = 2**53 - 1
DEPTH = 32


def hooked(data: bytes, max_depth: int = DEPTH) -> tuple[str, Any]:
    """What the hooked parser alone makes of ``data``: ("ok", repr of the value) or ("refused", code)."""
    try:
        text = _parse._decode(data, 1 << 20)
        return "ok", repr(_parse._parse(text, max_depth, _parse._DECODER))
    except InvalidInput as exc:
        return "refused", exc.code


def strict(data: bytes, max_depth: int = DEPTH) -> tuple[str, Any]:
    try:
        return "ok", repr(loads_strict(data, max_bytes=1 << 20, max_depth=max_depth))
    except InvalidInput as exc:
        return "refused", exc.code


def assert_agree(data: bytes, max_depth: int = DEPTH) -> None:
    """The plain path either declines or gives the hooked value; ``loads_strict`` gives the hooked outcome.

    ``repr`` compares types (``1`` is not ``1.0``, ``0.0`` is not ``-0.0``) and key order as well.
    """
    expected = hooked(data, max_depth)
    plain = _parse._parsed_plainly(data, max_depth)
    if plain is not _parse._DECLINED:
        assert expected == ("ok", repr(plain)), data[:200]
    assert strict(data, max_depth) == expected, data[:200]


def took_plain_path(data: bytes, max_depth: int = DEPTH) -> bool:
    return _parse._parsed_plainly(data, max_depth) is not _parse._DECLINED


# -- generated documents ---------------------------------------------------------------------------

# Colons, quotes, brackets and digits inside strings are what the plain path's counts could misread.
_CHARS = st.sampled_from(list(':,"[]{}0123456789 aé€\U0001f600\x7f')) | st.characters(codec="utf-8")
strings = st.text(_CHARS, max_size=10)
numbers = (
    st.integers(-MAX_SAFE, MAX_SAFE)
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
)
scalars = st.none() | st.booleans() | numbers | strings
in_range = (
    st.none()
    | st.booleans()
    | st.integers(-MAX_SAFE, MAX_SAFE)
    | st.floats(allow_nan=False, allow_infinity=False)
    | strings
)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(strings, children, max_size=5),
    max_leaves=30,
)


def writings(value: Any) -> list[bytes]:
    """The same value written several ways: compact, spaced, indented, ASCII-escaped."""
    return [
        json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(),
        json.dumps(value, ensure_ascii=False).encode(),
        json.dumps(value, ensure_ascii=False, indent=1).encode(),
        json.dumps(value).encode(),
    ]


@settings(max_examples=400, deadline=None)
@given(values)
def test_generated_documents_agree_however_written(value: Any) -> None:
    for data in writings(value):
        assert_agree(data)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(strings, in_range), min_size=1, max_size=6), st.data())
def test_objects_with_a_duplicated_key_are_refused_whatever_the_strings_hold(
    members: list[tuple[str, Any]], data: st.DataObject
) -> None:
    # A repeated key, with colons in the keys and values around it to try to even out the count.
    key, value = data.draw(st.sampled_from(members))
    again = data.draw(st.sampled_from([value, "a:b", "::", ":", 0, None, [":"], {":": ":"}]))
    position = data.draw(st.integers(0, len(members)))
    members = [*members[:position], (key, again), *members[position:]]
    body = ",".join(
        json.dumps(k, ensure_ascii=False) + ":" + json.dumps(v, ensure_ascii=False) for k, v in members
    )
    document = ("{" + body + "}").encode()
    assert_agree(document)
    assert strict(document) == ("refused", "duplicate_key")
    assert strict(b'{"outer":[' + document + b"]}") == ("refused", "duplicate_key")


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64))
@example(b'{"a":1,"a":1}')
@example(b"\xef\xbb\xbf{}")
@example(b'"\xed\xa0\x80"')
@example(b"[1e400]")
@example(b'"\x00"')
def test_arbitrary_bytes_agree(data: bytes) -> None:
    assert_agree(data)


@settings(max_examples=300, deadline=None)
@given(values, st.data())
def test_documents_with_one_byte_changed_agree(value: Any, data: st.DataObject) -> None:
    document = bytearray(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    where = data.draw(st.integers(0, len(document)))
    byte = data.draw(st.sampled_from([*list(b':,"[]{}\\0123456789-.eE '), 0, 127, 192, 237, 255]))
    document[where:where] = bytes([byte])
    assert_agree(bytes(document))


# -- each exclusion, at its boundary -------------------------------------------------------------


def test_a_plain_jwt_payload_takes_the_plain_path() -> None:
    payload = (
        b'{"exp":1795780627,"iat":1795777027,"jti":"j-1","iss":"https://idp.test/realms/m",'
        b'"aud":["agent-api","account"],"sub":"5f1c1c7e-0000-4000-8000-000000000000","typ":"Bearer",'
        b'"realm_access":{"roles":["agent"]},"scope":"profile email","ratio":0.25}'
    )
    assert took_plain_path(payload)
    assert_agree(payload)


@pytest.mark.parametrize(
    ("digits", "plain"),
    [("9" * 15, True), ("9007199254740991", False), ("9007199254740992", False), ("1" + "0" * 19, False)],
)
def test_sixteen_digits_in_a_row_go_to_the_hooks(digits: str, plain: bool) -> None:
    for document in (f"[{digits}]", f"[-{digits}]", f'["{digits}"]', f"[0.{digits}]"):
        assert took_plain_path(document.encode()) is plain
        assert_agree(document.encode())
    assert strict(b"[9007199254740992]") == ("refused", "integer_out_of_range")
    assert strict(b"[18446744073709551615]") == ("refused", "integer_out_of_range")


@pytest.mark.parametrize(
    "document",
    [b'["\\u0041"]', b'["a\\/b"]', b'["\\ud800"]', b'{"a\\u003a":1,"a\\u003a":2}', b'["\\n"]'],
)
def test_any_backslash_goes_to_the_hooks(document: bytes) -> None:
    assert not took_plain_path(document)
    assert_agree(document)
    assert strict(b'["\\ud800"]') == ("refused", "lone_surrogate")


def test_a_key_escaped_to_hide_its_colon_is_still_a_duplicate() -> None:
    # "a:" written once plainly and once with its colon escaped: equal keys after unescaping.
    assert strict(b'{"a:":1,"a\\u003a":2}') == ("refused", "duplicate_key")


@pytest.mark.parametrize("depth", [1, 2, 8])
def test_bracket_count_bounds_the_plain_path(depth: int) -> None:
    nested = b"[" * depth + b"]" * depth
    assert took_plain_path(nested, max_depth=depth)
    assert not took_plain_path(b"[" + nested + b"]", max_depth=depth)
    assert strict(b"[" + nested + b"]", max_depth=depth) == ("refused", "too_deep")
    # A bracket inside a string counts too (the count is a cheap upper bound, never an undercount).
    assert not took_plain_path(b'["' + b"{" * depth + b'"]', max_depth=depth)
    assert_agree(b'["' + b"{" * depth + b'"]', max_depth=depth)


def test_nesting_past_orjsons_writer_goes_to_the_hooks() -> None:
    deep = b"[" * 300 + b"]" * 300
    assert not took_plain_path(deep, max_depth=400)
    assert strict(deep, max_depth=400)[0] == "ok"


@pytest.mark.parametrize(
    ("document", "code"),
    [
        (b"\xef\xbb\xbf{}", "bad_encoding"),
        (b'["\xed\xa0\x80"]', "bad_encoding"),
        (b'["\xc3"]', "bad_encoding"),
        (b"[1e400]", "non_finite_number"),
        (b"[-1e400]", "non_finite_number"),
        (b"[NaN]", "non_finite_number"),
        (b'["a\x01"]', "malformed_json"),
        (b"[1,]", "malformed_json"),
        (b"[01]", "malformed_json"),
        (b"{} {}", "malformed_json"),
        (b"", "malformed_json"),
    ],
)
def test_what_orjson_refuses_the_hooks_refuse_by_name(document: bytes, code: str) -> None:
    assert not took_plain_path(document)
    assert strict(document) == ("refused", code)


def test_negative_zero_and_integral_floats_keep_their_types() -> None:
    for document in (b"[-0, -0.0, 1.0, 1, 1e2, 0.1e-400]", b'{"x":-0.0}'):
        assert took_plain_path(document)
        assert_agree(document)
    assert repr(loads_strict(b"[-0,-0.0,1.0]")) == "[0, -0.0, 1.0]"


def test_text_input_and_oversized_bytes_keep_their_checks() -> None:
    with pytest.raises(InvalidInput) as too_large:
        loads_strict(b"[1]" + b" " * 100, max_bytes=10)
    assert too_large.value.code == "too_large"
    assert loads_strict('{"a":1}') == {"a": 1}
    with pytest.raises(InvalidInput) as duplicate:
        loads_strict('{"a":1,"a":2}')
    assert duplicate.value.code == "duplicate_key"


@settings(max_examples=1000, deadline=None)
@given(
    st.integers(0, 10**15 - 1),
    st.integers(0, 15),
    st.integers(-340, 320),
    st.sampled_from(["", "-"]),
    st.sampled_from(["e", "E", "e+", "e-"]),
)
def test_numbers_of_up_to_fifteen_digits_read_as_the_same_double(
    mantissa: int, point: int, exponent: int, sign: str, marker: str
) -> None:
    # The plain path takes every number without a 16-digit run: orjson's reading of each decimal
    # must be the correctly rounded double that float() gives, at every exponent, or the hooked
    # parser's refusal (an overflow) must come back.
    digits = str(mantissa)
    point = min(point, len(digits) - 1)
    literal = digits if point == 0 else f"{digits[:-point]}.{digits[-point:]}"
    if marker == "e-":
        exponent = abs(exponent)
    text = (
        f"{sign}{literal}{marker}{exponent}"
        if marker != "e" or exponent >= 0
        else f"{sign}{literal}e{exponent}"
    )
    assert_agree(f"[{text}]".encode())


def test_a_duplicate_is_named_by_its_own_key_not_the_first() -> None:
    # Declined by the plain path (one colon too few once written back), named by the hooked one.
    with pytest.raises(InvalidInput) as duplicate:
        loads_strict(b'{"first":1,"second":2,"second":3}')
    assert duplicate.value.code == "duplicate_key"
    assert str(duplicate.value).startswith('duplicate object key "second"')


# -- the plain path is taken, not merely harmless --------------------------------------------------


class _HooksMustNotRun:
    """Stands in for the hooked decoder: a plain document must never reach it."""

    def decode(self, text: str) -> Any:
        raise AssertionError(f"the hooked parser ran on a plain document ({len(text)} characters)")


def test_a_plain_payload_never_reaches_the_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    # The plain path exists so that a JWT payload's objects and numbers never call back into Python;
    # with the hooked decoder unusable, a plain document still parses, to the value json gives.
    document = b'{"iss":"https://issuer.example","sub":"agent-7","exp":1893456000,"amount":12.5}'
    monkeypatch.setattr(_parse, "_DECODER", _HooksMustNotRun())
    assert loads_strict(document) == json.loads(document)


def test_a_document_of_exactly_max_bytes_takes_the_plain_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # The size cap is inclusive on both paths: a document as large as allowed is still plain.
    document = b'{"cart":[1,2,3],"total":6}'
    monkeypatch.setattr(_parse, "_DECODER", _HooksMustNotRun())
    assert loads_strict(document, max_bytes=len(document)) == {"cart": [1, 2, 3], "total": 6}
    with pytest.raises(InvalidInput) as too_large:
        loads_strict(document, max_bytes=len(document) - 1)
    assert too_large.value.code == "too_large"
