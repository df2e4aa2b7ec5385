"""Orjson-ready received copies: documents with floats outside the shortest-form range, hashed by orjson
with the floats it misprints patched per container (mudrika.crypto.jcs._serialize, "Orjson-ready values").

Held against PyPI ``rfc8785`` (an independent implementation) and the pure-Python general path: the
whole document and every container in it, through every entry point; the probe's bands against
orjson itself on doubles of every digit count; and the fallbacks (no orjson, a refusing encoder).
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.crypto.frozenjson import (
    EncoderReadyList,
    FrozenJSONDict,
    FrozenJSONList,
    OrjsonReadyDict,
    OrjsonReadyList,
)
from mudrika.crypto.jcs import _parse, canonical_sha256, canonicalize, loads_received, mandate_hash
from mudrika.crypto.jcs import _serialize as _jcs_serialize
from mudrika.crypto.jcs._number import es_number_from_shortest, es_number_to_string
from mudrika.crypto.jcs._serialize import ENCODERS, freeze_orjson_ready, misprinted_by_orjson, serialize_with
from mudrika.errors import InvalidInput
from tests._support.doubles import random_doubles

_ORJSON_READY = (OrjsonReadyDict, OrjsonReadyList)


def _containers(value: Any) -> Iterator[Any]:
    """``value`` and every container inside it, outermost first."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _containers(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from _containers(item)


def _assert_every_part_canonical(frozen: Any) -> None:
    """Every container of ``frozen``, through every entry point, gives rfc8785's bytes."""
    for part in _containers(frozen):
        expected = rfc8785.dumps(part)
        assert canonicalize(part) == expected
        assert canonical_sha256(part) == hashlib.sha256(expected).digest()
        for encoder in (*ENCODERS, None):
            assert serialize_with(encoder, part) == expected


def _with_digits(x: float, digits: int) -> float:
    """``x`` rounded to ``digits`` significant digits (so short digit strings are tried too)."""
    return float(f"{x:.{digits - 1}e}")


# ------------------------------------------------------------------------------------------- probe


def test_the_bands_say_exactly_where_orjson_misprints() -> None:
    """The probe tries four digit counts per exponent; this tries every digit count on random doubles."""
    doubles = random_doubles(4_000, seed=11)
    candidates = [_with_digits(x, digits) for x in doubles for digits in (1, 3, 9, 15, 17)]
    candidates += [5e-324, 1e-6, 1e-5, 1e16, 1e21, 9.999999999999999e-6, 9.999999999999999e20]
    wide = [x for x in candidates if x != 0.0 and math.isfinite(x) and not (1e-4 <= abs(x) < 1e16)]
    assert len(wide) > 10_000
    texts = orjson.dumps(wide)[1:-1].split(b",")
    for x, text in zip(wide, texts, strict=True):
        assert misprinted_by_orjson(x) is (text != es_number_to_string(x).encode()), x
    # The probe itself, asked again (it runs once per process, so the first test to need it would be
    # the only one to execute it), against a re-derivation with every digit count from 1 to 17.
    assert _jcs_serialize._probe_orjson() == _bands_with_every_digit_count()


def _bands_with_every_digit_count() -> tuple[tuple[float, float], ...]:
    """The probe's answer worked out independently: for every exponent outside [1e-4, 1e16), doubles of
    1 to 17 digits, both signs, compared with es_number_to_string; misprinted decades merged."""
    digits = "12345678912345678"
    found: list[tuple[int, float]] = [(-324, 5e-324)]
    for exponent in [*range(-323, -4), *range(16, 309)]:
        found += [(exponent, float(f"{digits[0]}.{digits[1:count]}e{exponent}")) for count in range(1, 18)]
    values = [x for _, x in found]
    texts = orjson.dumps(values + [-x for x in values])[1:-1].split(b",")
    bad = sorted(
        {
            exponent
            for index, (exponent, x) in enumerate(found)
            if texts[index] != es_number_to_string(x).encode()
            or texts[index + len(found)] != b"-" + es_number_to_string(x).encode()
        }
    )
    bands: list[list[float]] = []
    for exponent in bad:
        low = 5e-324 if exponent == -324 else float(f"1e{exponent}")
        high = float(f"1e{exponent + 1}")
        if bands and bands[-1][1] == low:
            bands[-1][1] = high
        else:
            bands.append([low, high])
    return tuple((low, high) for low, high in bands)


def test_integral_floats_below_1e16_are_patched_and_the_rest_of_the_range_is_not() -> None:
    for x in (0.0, 4.0, -25.0, 2.0**53, 9007199254740994.0, 9999999999999998.0):
        assert misprinted_by_orjson(x)
    for x in (1e-4, 0.5, -1.25, 123456.789, 9999999999999.998):
        assert not misprinted_by_orjson(x)


def test_the_probe_turns_misprinted_exponents_into_merged_bands(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake encoder that writes repr's layout misprints -6 and -5 ("1e-6" for "0.000001") and 16..20
    ("1e+16"); with its own misprints at exponent -200 and of the least subnormal (exponent -324),
    the bands are those decades, adjacent ones merged."""

    def repr_layout(values: list[float]) -> bytes:
        texts = [repr(x).replace("e-0", "e-") for x in values]
        texts = ["9" if x in (1.7e-200, 5e-324) else text for x, text in zip(values, texts, strict=True)]
        return ("[" + ",".join(texts) + "]").encode()

    monkeypatch.setitem(_jcs_serialize._ENCODERS, "orjson", repr_layout)
    monkeypatch.setattr(_jcs_serialize, "_PROBE_DIGITS", ("1", "1.7", "1.2"))
    bands = _jcs_serialize._probe_orjson()
    assert bands == ((5e-324, 1e-323), (1e-200, 1e-199), (1e-6, 1e-4), (1e16, 1e21))


def test_floats_outside_the_range_are_patched_only_where_the_probe_found_a_band(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Integral from 1e16 does not by itself mean misprinted: an orjson without bands needs no patch."""
    monkeypatch.setitem(_jcs_serialize._ORJSON_FACTS, "misprint_edges", ())
    for x in (1e16, 2e17, -1e16, 1e21, 1e-7, 5e-324, 1e-6):
        assert not misprinted_by_orjson(x), x
    for x in (4.0, 0.0, -9999999999999998.0):
        assert misprinted_by_orjson(x), x
    frozen = freeze_orjson_ready({"a": [1e16, -1e16, 2e17, 4.0], "b": 1e16, "c": -0.0}, max_depth=3)
    assert frozen.patches == ("a", "c")
    assert frozen["a"].patches == (3,)
    monkeypatch.setitem(_jcs_serialize._ORJSON_FACTS, "misprint_edges", (1e16, 1e17))
    assert misprinted_by_orjson(1e16)
    assert not misprinted_by_orjson(1e17)


def test_the_lowest_decade_starts_at_the_least_subnormal() -> None:
    assert _jcs_serialize._decade(-324) == 5e-324
    assert _jcs_serialize._decade(-323) == 1e-323
    assert _jcs_serialize._decade(21) == 1e21


def test_the_probe_runs_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def probe() -> tuple[tuple[float, float], ...]:
        calls.append(1)
        return ((1e16, 1e21),)

    monkeypatch.setattr(_jcs_serialize, "_ORJSON_FACTS", {})
    monkeypatch.setattr(_jcs_serialize, "_probe_orjson", probe)
    assert misprinted_by_orjson(2e17)
    assert not misprinted_by_orjson(2e21)
    assert misprinted_by_orjson(3e18)
    assert calls == [1]


def test_the_layout_is_redone_from_any_shortest_text() -> None:
    for text, expected in [
        ("1e+16", "10000000000000000"), ("1.5E17", "150000000000000000"), ("-1e-6", "-0.000001"),
        ("1.2345e-6", "0.0000012345"), ("100.0", "100"), ("0.00001", "0.00001"), ("12e20", "1.2e+21"),
        ("9007199254740994.0", "9007199254740994"), ("-1.5e300", "-1.5e+300"), ("5e-324", "5e-324"),
    ]:  # fmt: skip
        assert es_number_from_shortest(text) == expected
    for x in random_doubles(2_000, seed=3):
        if x != 0.0:
            assert es_number_from_shortest(repr(x)) == es_number_to_string(x)
            assert es_number_from_shortest(orjson.dumps(x).decode()) == es_number_to_string(x)


# ------------------------------------------------------------------------------ received documents


@pytest.mark.parametrize(
    "raw",
    [
        b"[1e16]",
        b"[1e-5]",
        b"[1e-7, 4.0, 2.5]",
        b"[12345678901234567.0]",
        b'{"a": 1e-6, "b": "version 2.0, final"}',  # ".0," in a string: nothing is cut from the text
        b'{"+16,": 1.5e17, "s": "e+16,", "t": "\\u002e0,"}',  # strings that look like what is patched
        b'{"a": [1e21, 1e-7, {"b": [2e17, 3.0]}], "c": {"d": 4e-6}, "e": [0.5]}',
        b'{"\\ud83d\\ude00": 1e300}',  # one astral key alone: its order cannot differ
        b"[9007199254740994.0, 9999999999999998.0, -0.5e-300, 0.0, 1e-300]",
    ],
)
def test_documents_ready_for_orjson_alone(raw: bytes) -> None:
    received = loads_received(raw)
    assert type(received.frozen) in _ORJSON_READY
    assert received.value == json.loads(raw)
    assert rfc8785.dumps(received.frozen) == rfc8785.dumps(received.value)
    _assert_every_part_canonical(received.frozen)


def test_patches_name_the_banded_and_integral_floats_and_the_containers_holding_them() -> None:
    received = loads_received(b'{"a": [0.5, 1e-7, 2e17, 3.0, "x"], "b": {"c": 1e-300}, "d": 4e-6, "e": 1.5}')
    frozen = received.frozen
    assert type(frozen) is OrjsonReadyDict
    assert frozen.patches == ("a", "d")  # "b" holds only a float orjson writes right
    assert frozen["a"].patches == (2, 3)
    assert frozen["b"].patches == ()
    _assert_every_part_canonical(frozen)


def test_the_freeze_patches_exactly_what_misprinted_by_orjson_names() -> None:
    """The freeze writes the misprint test out in its loop: it must agree with the function, float by
    float, in arrays and in objects."""
    doubles = random_doubles(3_000, seed=5)
    numbers = [_with_digits(x, digits) for x in doubles for digits in (1, 2, 17)]
    numbers = [x for x in numbers if math.isfinite(x)]
    numbers += [0.0, 4.0, -4.0, 1e-4, -1e-4, 1e16, 1e21, 1e-6, 1e-5, 2.0**53, 9.999999999999999e15]
    frozen = freeze_orjson_ready({"array": numbers, "objects": [{"v": x} for x in numbers]}, max_depth=4)
    expected = tuple(index for index, x in enumerate(numbers) if misprinted_by_orjson(x))
    assert frozen["array"].patches == expected
    assert frozen["objects"].patches == expected
    assert all(
        part.patches == (("v",) if misprinted_by_orjson(part["v"]) else ()) for part in frozen["objects"]
    )
    assert frozen.patches == ("array", "objects")
    assert 0 < len(expected) < len(numbers)


def test_the_freeze_refuses_nesting_past_its_limit() -> None:
    assert type(freeze_orjson_ready([[[1e-7]]], max_depth=3)) is OrjsonReadyList
    assert freeze_orjson_ready({"a": {"b": 1e-7}}, max_depth=2) == {"a": {"b": 1e-7}}
    assert freeze_orjson_ready([{"a": [1e-7]}], max_depth=3) == [{"a": [1e-7]}]
    for value, limit in (([[[1e-7]]], 2), ({"a": {"b": [1e-7]}}, 2), (_nest(100_000), 1_000_000)):
        with pytest.raises(InvalidInput) as refused:
            freeze_orjson_ready(value, max_depth=limit)
        assert (refused.value.code, refused.value.fields["limit"]) == ("too_deep", limit)


def _nest(levels: int) -> list[Any]:
    value: list[Any] = [1e-7]
    for _ in range(levels):
        value = [value]
    return value


def test_a_patched_hash_leaves_the_received_copy_as_it_was() -> None:
    received = loads_received(b'{"a": [2e17, 4.0], "b": 1e-6}')
    before = repr(received.frozen)
    assert mandate_hash(received.frozen) == mandate_hash(received.value)
    assert repr(received.frozen) == before
    assert type(received.frozen["a"][0]) is float


def test_orjson_ready_parts_inside_values_built_by_code() -> None:
    """A received part placed in a dict built by code: the walk turns it into a Fragment (orjson) or
    hands the whole value to the general path (json); either way the bytes are rfc8785's."""
    part = loads_received(b'{"x": [1e17, 2.0, 1e-7], "y": "z"}').frozen
    built = {"part": part, "other": [part, 1.5, 4.0], "n": 1e-6}
    expected = rfc8785.dumps(built)
    for encoder in (*ENCODERS, None):
        assert serialize_with(encoder, built) == expected
    assert canonicalize(built) == expected


def test_past_orjsons_nesting_limit_the_general_path_writes_it() -> None:
    received = loads_received("[" * 300 + "1e-7" + "]" * 300, max_depth=1000)
    assert type(received.frozen) is OrjsonReadyList
    expected = b"[" * 300 + b"1e-7" + b"]" * 300
    assert canonicalize(received.frozen) == expected
    assert canonical_sha256(received.frozen) == hashlib.sha256(expected).digest()


def test_orjson_ready_containers_are_read_only_and_lose_the_fact_when_pickled() -> None:
    frozen = loads_received(b'{"a": [2e17], "b": 1e-7}').frozen
    with pytest.raises(TypeError):
        frozen["c"] = 1
    with pytest.raises(TypeError):
        frozen["a"].append(1)
    copy = pickle.loads(pickle.dumps(frozen))
    assert type(copy) is FrozenJSONDict
    assert type(copy["a"]) is FrozenJSONList
    assert canonicalize(copy) == canonicalize(frozen) == rfc8785.dumps(json.loads('{"a": [2e17], "b": 1e-7}'))


def test_without_orjson_wide_documents_are_not_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parse, "DEFAULT_ENCODER", "json")
    received = loads_received(b"[1e-7, 2e17]")
    assert type(received.frozen) is FrozenJSONList
    assert canonicalize(received.frozen) == b"[1e-7,200000000000000000]"
    monkeypatch.undo()
    assert type(loads_received(b"[1e-7, 4.0]").frozen) is OrjsonReadyList
    assert type(loads_received(b"[1.5, 4.0]").frozen) is EncoderReadyList


# ---------------------------------------------------------------------------------- differential

_wide_floats = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda x: not (x == 0.0 and math.copysign(1, x) < 0)
)
_json_leaves = (
    _wide_floats
    | st.sampled_from([1e-6, 5e-6, 1e16, 2e17, 9.5e20, 1e21, 1e-7, 4.0, 9007199254740994.0])
    | st.integers(-(2**53 - 1), 2**53 - 1)
    | st.text(alphabet=st.sampled_from(list("ab.0,]}+e6 \u00e9\U0001f600")), max_size=6)
    | st.booleans()
    | st.none()
)
_documents: st.SearchStrategy[Any] = st.recursive(
    _json_leaves,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(st.text(alphabet=st.sampled_from(list("ab+e.0")), max_size=3), children, max_size=5)
    ),
    max_leaves=30,
).filter(lambda value: isinstance(value, dict | list))

_WRITERS: list[Callable[[Any], str]] = [
    json.dumps,
    lambda value: json.dumps(value, indent=1, ensure_ascii=False),
    lambda value: orjson.dumps(value).decode(),
]


@settings(max_examples=400, deadline=None)
@given(_documents, st.integers(0, len(_WRITERS) - 1))
def test_received_copies_with_any_floats_match_rfc8785_in_every_part(value: Any, writer: int) -> None:
    received = loads_received(_WRITERS[writer](value))
    _assert_every_part_canonical(received.frozen)
