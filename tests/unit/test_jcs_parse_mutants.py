"""The strict parser's less travelled lines, each pinned by the behaviour it exists for.

Found by the mutation check (``scripts/mutation.sh --module jcs/_parse.py``): every test here fails
when one small change is made to mudrika.crypto.jcs._parse, a change the other JSON tests let
through.  They cover the receive path's own refusals (``loads_received`` converts numbers in its own
hook), the positions reported for each kind of error, the input checks before parsing, the
encoder-ready facts and their per-thread recorder, and which decoder a document is handed to (work
the parser promises to skip, observed by making the skipped work fail).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from mudrika.crypto.frozenjson import EncoderReadyDict, EncoderReadyList
from mudrika.crypto.jcs import (
    MAX_CANONICAL_DEPTH,
    MAX_SAFE_INTEGER,
    _parse,
    canonicalize,
    loads_received,
    loads_strict,
)
from mudrika.crypto.jcs._parse import Readiness, locate, parse_strict_with_facts
from mudrika.errors import InvalidInput

Parser = Callable[..., Any]
BOTH: list[Parser] = [loads_strict, loads_received]


def refusal(parse: Parser, raw: Any, **limits: int) -> InvalidInput:
    with pytest.raises(InvalidInput) as exc:
        parse(raw, **limits) if limits else parse(raw)
    return exc.value


def in_another_thread(work: Callable[[], None]) -> None:
    """Run ``work`` on a fresh thread (with its own, not yet created, fact recorder)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(work).result()


class _MustNotRun:
    """Stands in for a decoder the document at hand must not be handed to."""

    def __init__(self, name: str) -> None:
        self.name = name

    def decode(self, text: str) -> Any:
        raise AssertionError(f"{self.name} was used for a document that does not need it")


# -- overflowing numbers on the receive path -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "culprit"),
    [
        ("[1e400]", "1e400"),
        ('{"amount":-1e400}', "-1e400"),
        ('{"a":1,"\U0001f600":2.5e308}', "2.5e308"),
        ("[1, 2,\n 1E999]", "1E999"),
    ],
)
def test_the_receive_path_refuses_a_number_that_overflows_a_double(text: str, culprit: str) -> None:
    # loads_received converts floats in its own recording hook (not _float): it must refuse an
    # overflow too, or a mandate could be received holding infinity.  The third case goes through
    # the decoder that also checks astral keys.
    for raw in (text, text.encode()):
        error = refusal(loads_received, raw)
        assert error.code == "non_finite_number"
        assert error.fields["offset"] == len(text[: text.index(culprit)].encode())
        assert refusal(loads_strict, raw).fields == error.fields


# -- positions -------------------------------------------------------------------------------------


def test_line_and_column_are_counted_from_the_last_newline() -> None:
    text = '{"a": 1,\n  "b": [2,\n    1e400]}'
    error = refusal(loads_strict, text)
    assert error.code == "non_finite_number"
    assert error.fields["offset"] == text.index("1e400")
    assert (error.fields["line"], error.fields["column"]) == (3, 5)


def test_a_leading_newline_is_a_line_of_its_own() -> None:
    error = refusal(loads_strict, "\n1e400")
    assert (error.fields["offset"], error.fields["line"], error.fields["column"]) == (1, 2, 1)


@pytest.mark.parametrize(
    ("text", "culprit"),
    [
        # The offending integer, not an in-range one of 16 digits or exactly 2^53 - 1 before it.
        ("[1000000000000000, 9007199254740992]", "9007199254740992"),
        ("[9007199254740991, 9007199254740992]", "9007199254740992"),
        ("[-9007199254740991, -9007199254740992]", "-9007199254740992"),
    ],
)
def test_the_integer_out_of_range_is_the_one_named(text: str, culprit: str) -> None:
    assert str(MAX_SAFE_INTEGER) == "9007199254740991"
    for raw in (text, text.encode()):
        error = refusal(loads_strict, raw)
        assert error.code == "integer_out_of_range"
        assert error.fields["offset"] == text.rindex(culprit)


@pytest.mark.parametrize(
    "text",
    [
        '{"a":"a","a":1}',  # a value equal to a key is not a key
        '{"v":"k","k":1,"k":2}',  # a value equal to a later key is not a key either
        '["k","k","k",{"k":1,"k":2}]',  # repeated strings in an array are not keys
        '[{"k":[]},{"k":1,"k":2}]',  # each object has its own keys
    ],
)
def test_the_duplicate_named_is_the_repeated_key(text: str) -> None:
    error = refusal(loads_strict, text)
    assert error.code == "duplicate_key"
    last_key = text.rindex('"', 0, text.rindex(":"))
    assert error.fields["offset"] == text.rindex('"', 0, last_key)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('["\\x", "\\ud800"]', "lone_surrogate"),
        ('{"\\x":1, "a":1, "a":2}', "duplicate_key"),
        ('["\\u12", 1e400]', "non_finite_number"),
    ],
)
def test_the_locator_stops_at_an_escape_json_does_not_have(text: str, code: str) -> None:
    # The text stops being JSON at the bad escape, before the token of the kind asked for.
    assert locate(text, code) is None


# -- input checks before parsing -------------------------------------------------------------------


@pytest.mark.parametrize("parse", BOTH)
def test_only_bytes_and_text_are_accepted(parse: Parser) -> None:
    # A list of byte values would make bytes(raw) a JSON text: it is refused, not converted.
    for raw in ([91, 93], (91, 93), 7):
        with pytest.raises(TypeError, match="loads_strict takes bytes or str"):
            parse(raw)


@pytest.mark.parametrize("parse", BOTH)
def test_a_text_as_large_as_allowed_is_parsed(parse: Parser) -> None:
    for raw in ("[1]", bytearray(b"[1]"), memoryview(b"[1]")):
        result = parse(raw, max_bytes=3)
        assert (result.value if parse is loads_received else result) == [1]
        assert refusal(parse, raw, max_bytes=2).code == "too_large"


@pytest.mark.parametrize("parse", BOTH)
def test_oversized_text_is_refused_by_size_before_it_is_encoded(parse: Parser) -> None:
    # The size is the first question: an oversized text is too large even when it also holds a
    # surrogate that encoding would stumble over.
    error = refusal(parse, "\ud800" * 4, max_bytes=3)
    assert (error.code, error.fields["limit"]) == ("too_large", 3)


@pytest.mark.parametrize("parse", BOTH)
def test_a_nul_past_the_first_four_bytes_is_a_syntax_error_not_utf16(parse: Parser) -> None:
    # Only the first four bytes tell UTF-16/32 apart from UTF-8 (RFC 8259 §8.1's old detection);
    # a NUL later on is a control character where JSON has none, reported where it is.
    error = refusal(parse, b"[1, \x00]")
    assert (error.code, error.fields["offset"]) == ("malformed_json", 4)
    for utf16 in (b"\x00[\x00]", b"[\x00]\x00", "[1]".encode("utf-32-le")):
        error = refusal(parse, utf16)
        assert (error.code, error.fields["offset"]) == ("bad_encoding", 0)


@pytest.mark.parametrize("parse", BOTH)
def test_a_byte_order_mark_is_reported_at_the_start(parse: Parser) -> None:
    for raw in (b"\xef\xbb\xbf[]", "\ufeff[]"):
        error = refusal(parse, raw)
        assert (error.code, error.fields["offset"]) == ("bad_encoding", 0)


# -- depth -----------------------------------------------------------------------------------------


def test_max_depth_zero_accepts_scalars_only() -> None:
    # Brackets inside a string are no nesting, even when they outnumber the limit.
    assert loads_strict('"[[{"', max_depth=0) == "[[{"
    assert loads_strict(b'"[[{"', max_depth=0) == "[[{"
    assert loads_strict("7", max_depth=0) == 7
    error = refusal(loads_strict, "[]", max_depth=0)
    assert (error.code, error.fields["limit"]) == ("too_deep", 0)


def test_too_deep_is_refused_even_without_a_position(monkeypatch: pytest.MonkeyPatch) -> None:
    # The depth verdict on the parsed value stands on its own: should the tokenizer ever fail to
    # point at the bracket, the document is still refused (without a position), never returned.
    monkeypatch.setattr(_parse, "locate", lambda *args, **kwargs: None)
    error = refusal(loads_strict, "[[[1]]]", max_depth=2)
    assert (error.code, error.fields["limit"]) == ("too_deep", 2)
    assert "offset" not in error.fields


def test_an_object_nest_past_the_canonical_depth_is_not_encoder_ready() -> None:
    # max_depth above MAX_CANONICAL_DEPTH: the cheap bracket count must include "{" to send an
    # object-only nest to the exact depth measurement.  (The facts are read directly: freezing a
    # value this deep is beyond the interpreter's recursion limit.)
    for levels, ready in ((MAX_CANONICAL_DEPTH, "encoders"), (MAX_CANONICAL_DEPTH + 1, None)):
        text = '{"a":' * levels + "1" + "}" * levels
        facts = parse_strict_with_facts(text, max_bytes=1 << 20, max_depth=MAX_CANONICAL_DEPTH + 10)
        assert facts[1] is ready


class _DepthMeasurements:
    """Counts the exact depth measurements (the walks over the parsed value)."""

    def __init__(self) -> None:
        self.calls = 0
        self.measure = _parse._deeper_than

    def __call__(self, value: Any, max_depth: int) -> bool:
        self.calls += 1
        return self.measure(value, max_depth)


@pytest.mark.parametrize(
    ("text", "max_depth", "measurements"),
    [
        # As many brackets as the limit allows: the count alone proves the depth, nothing is walked.
        ("[[],[]]", 3, 0),
        # A wide document at the canonical limit: walked once for max_depth, not again for readiness.
        ("[" + "[]," * 600 + "[]]", MAX_CANONICAL_DEPTH, 1),
        # Exactly MAX_CANONICAL_DEPTH brackets under a larger limit: readiness needs no walk.
        ("[" + "[]," * (MAX_CANONICAL_DEPTH - 2) + "[]]", MAX_CANONICAL_DEPTH + 100, 0),
    ],
)
def test_depth_is_measured_only_when_the_bracket_count_cannot_decide(
    monkeypatch: pytest.MonkeyPatch, text: str, max_depth: int, measurements: int
) -> None:
    counter = _DepthMeasurements()
    monkeypatch.setattr(_parse, "_deeper_than", counter)
    received = loads_received(text, max_depth=max_depth)
    assert received.value == json.loads(text)
    assert type(received.frozen) is EncoderReadyList
    assert counter.calls == measurements


def test_errors_in_shallow_documents_skip_the_depth_search(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    find = _parse.locate

    def spy(text: str, code: str, *, max_depth: int = 0) -> int | None:
        asked.append(code)
        return find(text, code, max_depth=max_depth)

    monkeypatch.setattr(_parse, "locate", spy)
    assert refusal(loads_strict, "[[1e400]]", max_depth=2).code == "non_finite_number"
    assert asked == ["non_finite_number"]


# -- the per-thread fact recorder ------------------------------------------------------------------


def test_each_thread_reuses_one_idle_recorder() -> None:
    def work() -> None:
        recorder = _parse._recorder()
        assert not recorder.busy
        value, ready = parse_strict_with_facts(b"[1.0, 2.5]", max_bytes=100, max_depth=4)
        assert (value, ready) == ([1.0, 2.5], "encoders")
        assert _parse._recorder() is recorder
        assert not recorder.busy
        assert recorder.dot_zero_literals == 1  # this thread's recorder did the counting

    in_another_thread(work)
    in_another_thread(work)


def test_a_parse_started_inside_a_parse_keeps_its_own_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    # A second parse on the same thread while one is under way (a signal handler, say) must record
    # into a recorder of its own: its float 1e300 (ready for orjson alone) must not spoil the outer
    # verdict.
    recorder = _parse._recorder()
    outer_decoder = recorder.decoder
    nested: list[tuple[Any, Readiness]] = []

    class Reentering:
        def decode(self, text: str) -> Any:
            if not nested:
                nested.append(parse_strict_with_facts(b"[1e300]", max_bytes=100, max_depth=4))
            return outer_decoder.decode(text)

    monkeypatch.setattr(recorder, "decoder", Reentering())
    outer = parse_strict_with_facts(b"[1.0]", max_bytes=100, max_depth=4)
    assert nested == [([1e300], "orjson")]
    assert outer == ([1.0], "encoders")
    assert not recorder.busy


@pytest.mark.parametrize(
    "document",
    [
        '{"name":"caf\\u00e9","id":1}',  # an escape, none of a surrogate
        '{"naïve":"crème brûlée","€":2.5,"ü":[1]}',  # non-ASCII, all below U+10000
    ],
)
def test_keys_below_u10000_skip_the_astral_key_check(monkeypatch: pytest.MonkeyPatch, document: str) -> None:
    monkeypatch.setattr(_parse._recorder(), "astral_decoder", _MustNotRun("the astral-key decoder"))
    received = loads_received(document.encode())
    assert received.value == json.loads(document)
    assert type(received.frozen) is EncoderReadyDict
    assert canonicalize(received.frozen) == canonicalize(received.value)


@pytest.mark.parametrize(
    "document",
    [
        '{"\U0001f600":1,"a":2}',
        '{"\\ud83d\\ude00":1,"a":2}',
        *(f'{{"{chr(first)}":1,"a":2}}' for first in (0x10000, 0x40000, 0x80000, 0xC0000, 0x100000)),
    ],
)
def test_keys_above_uffff_take_the_astral_key_check(monkeypatch: pytest.MonkeyPatch, document: str) -> None:
    # Each of the lead bytes F0-F4 (and the surrogate-pair escape) sends the text to the decoder
    # that checks keys; two keys, one astral, make the document not ready.
    monkeypatch.setattr(_parse._recorder(), "decoder", _MustNotRun("the BMP-only decoder"))
    received = loads_received(document.encode())
    assert type(received.frozen) is not EncoderReadyDict
    assert canonicalize(received.frozen) == canonicalize(received.value)


def test_a_nesting_deeper_than_the_interpreter_follows_is_too_deep_not_a_crash() -> None:
    # The parser follows 600 levels; the read-only copy of them would need more frames than Python
    # allows: a caller allowing that many levels gets the same refusal as for any nesting too deep.
    deep = b"[" * 600 + b"]" * 600
    with pytest.raises(InvalidInput) as refused:
        loads_received(deep, max_depth=1000)
    assert refused.value.code == "too_deep"
    assert loads_received(b"[" * 300 + b"]" * 300, max_depth=1000).value is not None
