"""Strict JSON parsing for hashed and signed documents (RFC 8259 + the I-JSON limits of RFC 7493).

Why strict: a mandate hash is computed over the *received* object.  If two parsers can read one byte
string as two different objects (duplicate keys: first or last wins?  ``1e400``: error or infinity?
``\\ud800``: replacement character or error?), a signer and a verifier can agree on a hash while seeing
different carts.  Every such ambiguity is refused here, with a stable code per kind.

How it stays fast: ``json``'s C scanner does the parsing, with small hooks for objects (duplicates)
and numbers (range, finiteness).  The text is parsed once; the depth is checked afterwards on the parsed
value, and cheap whole-text counts decide whether that measurement and the lone-surrogate search are
needed at all.  Positions are worked out only on the error path, by
:func:`locate`, a small tokenizer that re-reads the text and finds the first offending token of the
reported kind.

Encoder-ready facts (:func:`parse_strict_with_facts`, for values that will be frozen and hashed): the
parser already sees every number and can look at the whole text at C speed, so it also records whether
the document is one a compiled encoder (orjson, or ``json``'s C encoder) writes as RFC 8785 once the
``.0`` of its integral floats is dropped from the output -- see mudrika.crypto.jcs._serialize, "Ready
values", for the claim and why each condition below makes it true:

* every float is either non-integral with 1e-4 <= |x| < 1e16, or integral with |x| < 1e16 and not -0.0
  (the number hook checks each one as it converts it); a document whose only other floats lie outside
  that range ("wide" floats, never -0.0) is ready for orjson alone, with the floats orjson misprints
  patched before encoding (mudrika.crypto.jcs._serialize, "Orjson-ready values");
* no object has a key above U+FFFF beside another key (checked per object, and only when the text can
  hold such a character at all);
* no string, decoded, holds ``.0`` followed by ``,`` ``]`` or ``}``: the text escapes none of those
  five characters (``\u002e`` and the like cannot spell them unseen) and every ``.0`` that the text
  holds before whitespace or a delimiter belongs to a number literal (counted by the number hook);
  orjson-ready documents need not meet this one, since nothing is cut from their text;
* nesting stays within MAX_CANONICAL_DEPTH.

The hooks keep these facts in per-thread state (one recording decoder per thread, reset per call), so
parsing on several threads at once never mixes them up; :func:`parse_strict` keeps the stateless hooks.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any, Final, Literal, NoReturn

from mudrika.crypto.jcs._serialize import DEFAULT_ENCODER, MAX_CANONICAL_DEPTH, MAX_SAFE_INTEGER, short_text
from mudrika.errors import InvalidInput

__all__ = ["Readiness", "parse_strict", "parse_strict_with_facts"]

Readiness = Literal["encoders", "orjson"] | None
"""What the strict parser vouches for: ``"encoders"``, every compiled encoder writes the document as RFC
8785 once integral floats lose their ``.0``; ``"orjson"``, so does orjson once the floats it misprints
are patched (the document holds floats outside the shortest-form range); ``None``, neither."""


def _orjson_pair() -> tuple[Callable[[bytes], Any], Callable[[Any], bytes]] | None:
    """orjson's ``loads`` and ``dumps``, or None without the wheel (every document then takes the hooks)."""
    try:
        import orjson
    except ImportError:
        return None
    return orjson.loads, orjson.dumps


_ORJSON: Final = _orjson_pair()

_BOM = "\ufeff"
# \uD800-\uDFFF escapes: only text containing one can decode to a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
# ".0" before whitespace or a delimiter: in a number literal, the end of "4.0"; elsewhere, a string.
_DOT_ZERO_END = re.compile(r"\.0[ \t\n\r,\]}]")
# An escape of ".", "0", ",", "]" or "}": it could spell ".0," in a string without the text holding it.
_DOT_ZERO_ESCAPE = re.compile(r"\\u00(?:2[cCeE]|30|5[dD]|7[dD])")
# Strings (the unrolled-loop form stays linear on long strings).
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_TOKEN = re.compile(
    r"[ \t\n\r]*(?:"
    rf"(?P<string>{_STRING})"
    r"|(?P<open>[\[{])|(?P<close>[\]}])|(?P<colon>:)|(?P<comma>,)"
    r"|(?P<number>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    r"|(?P<literal>true|false|null)|(?P<constant>NaN|-?Infinity))"
)


class _Reject(Exception):
    """Raised from inside the C scanner's hooks; turned into InvalidInput with a position."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(code)
        self.code = code
        self.detail = detail


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        counts = Counter(key for key, _ in pairs)
        duplicate = next(key for key, n in counts.items() if n > 1)
        raise _Reject("duplicate_key", f"duplicate object key {short_text(duplicate)}")
    return obj


def _constant(name: str) -> NoReturn:
    raise _Reject("non_finite_number", f"{name} is not a JSON number")


def _int(text: str) -> int:
    # Compare lengths first: int() of a 100 kB digit string is slow (and capped by Python anyway).
    if len(text.lstrip("-")) > 16 or abs(value := int(text)) > MAX_SAFE_INTEGER:
        raise _Reject("integer_out_of_range", "integer outside the I-JSON range +-(2^53-1)")
    return value


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Reject("non_finite_number", "number too large for a double (it would become infinite)")
    return value


# The number hooks run for every number; a whole-text regex deciding whether they are needed measured
# slower than the hooks themselves on realistic mandates.
_DECODER = json.JSONDecoder(
    object_pairs_hook=_object, parse_constant=_constant, parse_int=_int, parse_float=_float
)


class _FactRecorder:
    """One thread's decoders whose hooks also record the encoder-ready facts of the document being parsed.

    Two decoders: the second also checks object keys for characters above U+FFFF, and is used only when
    the text can hold one.  ``floats_ready``, ``wide_floats``, ``keys_ready`` and ``dot_zero_literals``
    are reset before every parse.
    """

    __slots__ = (
        "astral_decoder",
        "busy",
        "decoder",
        "dot_zero_literals",
        "floats_ready",
        "keys_ready",
        "wide_floats",
    )

    def __init__(self) -> None:
        self.busy = False
        self.floats_ready = True
        self.keys_ready = True
        self.wide_floats = False
        self.dot_zero_literals = 0

        def record_float(text: str) -> float:
            value = float(text)
            if value.is_integer():
                if not -1e16 < value < 1e16:
                    self.wide_floats = True  # 1e16 and up: orjson-ready at best
                elif value == 0.0 and text[0] == "-":
                    self.floats_ready = False  # -0.0 prints as "-0.0"
                elif text[-2:] == ".0":
                    self.dot_zero_literals += 1
            elif not (1e-4 <= value < 1e16 or -1e16 < value <= -1e-4):
                if math.isinf(value):
                    raise _Reject(
                        "non_finite_number", "number too large for a double (it would become infinite)"
                    )
                self.wide_floats = True
            return value

        def record_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
            obj = _object(pairs)
            if len(obj) > 1 and _ASTRAL.search("".join(obj)) is not None:
                self.keys_ready = False
            return obj

        self.decoder = json.JSONDecoder(
            object_pairs_hook=_object, parse_constant=_constant, parse_int=_int, parse_float=record_float
        )
        self.astral_decoder = json.JSONDecoder(
            object_pairs_hook=record_object,
            parse_constant=_constant,
            parse_int=_int,
            parse_float=record_float,
        )


_THREAD = threading.local()


def _recorder() -> _FactRecorder:
    recorder: _FactRecorder | None = getattr(_THREAD, "recorder", None)
    if recorder is None:
        recorder = _THREAD.recorder = _FactRecorder()
    return recorder


def parse_strict(raw: bytes | bytearray | memoryview | str, *, max_bytes: int, max_depth: int) -> Any:
    """Decode ``raw`` (UTF-8 bytes or text) into Python JSON values, refusing every ambiguity."""
    if type(raw) is bytes and len(raw) <= max_bytes:
        value = _parsed_plainly(raw, max_depth)
        if value is not _DECLINED:
            return value
    text = _decode(raw, max_bytes)
    return _parse(text, max_depth, _DECODER)


_DECLINED: Final = object()
# Every digit becomes "0" and "{" becomes "[": one pass, then C-speed searches and counts.
_PLAIN_VIEW: Final = bytes.maketrans(b"0123456789{", b"0000000000[")
_SIXTEEN_DIGITS: Final = b"0" * 16


def _parsed_plainly(data: bytes, max_depth: int) -> Any:
    """The value of a plain document parsed by orjson, or ``_DECLINED``: then the hooked parser decides.

    Why: the hooked parser calls back into Python for every object and number; on a JWT payload that
    is most of its time.  A *plain* document -- no backslash at all, nesting bounded by its bracket
    count, no run of 16 digits -- has none of the ambiguities the hooks exist for, or orjson refuses
    it too (and the hooked parser then names the problem), so orjson's value is the hooked parser's:

    * no escapes: no lone surrogate can be written (orjson also refuses UTF-8-encoded surrogates and
      any invalid UTF-8, a byte order mark, NaN, Infinity, and a number that overflows a double);
    * fewer than 16 digits in a row: every integer is below 10^16, and one of 16 digits or more is
      the only kind that can lie outside +-(2^53-1) (orjson would have made a big one a float);
    * at most ``max_depth`` brackets: the value cannot nest deeper;
    * duplicate keys: orjson keeps the last silently, so its value is written back and the colons
      counted.  Outside strings each colon of the text ends a key; inside strings a colon is itself
      (nothing is escaped), and orjson writes one colon per key and every string's colons as they
      are.  A dropped member takes its key's colon with it, so the counts are equal exactly when no
      key was dropped.

    Whether the two parsers agree is tested by construction (tests/unit/test_jcs_plain_parse.py) and
    fuzzed (row ``jcs``).
    """
    if _ORJSON is None or b"\\" in data:
        return _DECLINED
    view = data.translate(_PLAIN_VIEW)
    if view.count(b"[") > max_depth or _SIXTEEN_DIGITS in view:
        return _DECLINED
    loads, dumps = _ORJSON
    try:
        value = loads(data)
        written = dumps(value)
    except (ValueError, TypeError):
        # Refused by orjson (the hooked parser then says why, with a position), or nested past what
        # its writer follows (255 levels): either way the hooked parser decides.
        return _DECLINED
    if written.count(b":") != data.count(b":"):
        return _DECLINED
    return value


def parse_strict_with_facts(
    raw: bytes | bytearray | memoryview | str, *, max_bytes: int, max_depth: int
) -> tuple[Any, Readiness]:
    """:func:`parse_strict`, and whether the document is encoder-ready (see the module docstring)."""
    text, utf8 = _decode_with_utf8(raw, max_bytes)
    recorder = _recorder()
    if recorder.busy:  # re-entered on this thread (a signal handler parsing): never share one's facts
        recorder = _FactRecorder()
    recorder.floats_ready = recorder.keys_ready = True
    recorder.wide_floats = False
    recorder.dot_zero_literals = 0
    recorder.busy = True
    try:
        return _parse_recording(text, utf8, max_depth, recorder)
    finally:
        recorder.busy = False


def _parse_recording(
    text: str, utf8: bytes, max_depth: int, recorder: _FactRecorder
) -> tuple[Any, Readiness]:
    # Only a character above U+FFFF, written literally or as a surrogate-pair escape, can make key order
    # by code point (the encoders') differ from order by UTF-16 code unit (RFC 8785's).  In UTF-8 only
    # those characters start with a byte F0-F4 (one memchr each); the escape search is the one parsing
    # runs anyway for lone surrogates.
    escapes = "\\u" in text
    may_be_astral = _has_astral_utf8(utf8) or (escapes and _SURROGATE_ESCAPE.search(text) is not None)
    value = _parse(text, max_depth, recorder.astral_decoder if may_be_astral else recorder.decoder)
    if not (
        recorder.floats_ready
        and recorder.keys_ready
        and (type(value) is dict or type(value) is list)
        and (
            max_depth <= MAX_CANONICAL_DEPTH
            or text.count("[") + text.count("{") <= MAX_CANONICAL_DEPTH
            or not _deeper_than(value, MAX_CANONICAL_DEPTH)
        )
    ):
        return value, None
    if recorder.wide_floats:
        # Orjson-ready values have their integral floats patched rather than ".0" cut from the text,
        # so what strings hold does not matter to them.
        return value, "orjson" if DEFAULT_ENCODER == "orjson" else None
    dot_zeros = recorder.dot_zero_literals
    if (escapes and _DOT_ZERO_ESCAPE.search(text) is not None) or (
        # Every ".0" in the text is counted (C speed) before the exact count runs: equal means none is
        # anything but the end of a "4.0"-style literal.
        text.count(".0") != dot_zeros and len(_DOT_ZERO_END.findall(text)) != dot_zeros
    ):
        return value, None
    return value, "encoders"


def _has_astral_utf8(data: bytes) -> bool:
    return not data.isascii() and (
        b"\xf0" in data or b"\xf1" in data or b"\xf2" in data or b"\xf3" in data or b"\xf4" in data
    )


def _parse(text: str, max_depth: int, decoder: json.JSONDecoder) -> Any:
    # Parse first, then check the depth.  The C scanner guards its own recursion (a document nested
    # past the interpreter's recursion limit raises RecursionError, mapped to too_deep below), and the
    # size cap has already bounded the work, so nothing needs measuring before the parse.  Counting
    # opening brackets (also inside strings) bounds the depth from above and decides, at C speed,
    # whether the parsed value needs measuring at all.
    may_be_deep = text.count("[") + text.count("{") > max_depth
    try:
        value = decoder.decode(text)
    except _Reject as exc:
        _raise_too_deep_first(text, max_depth, may_be_deep)
        _raise(exc.code, exc.detail, text, locate(text, exc.code, max_depth=max_depth))
    except json.JSONDecodeError as exc:
        _raise_too_deep_first(text, max_depth, may_be_deep)
        _raise("malformed_json", f"malformed JSON: {exc.msg}", text, exc.pos)
    except RecursionError:
        _raise_too_deep_first(text, max_depth, may_be_deep)
        _raise("too_deep", "nesting deeper than the parser can follow", text, None, limit=max_depth)
    if may_be_deep and _deeper_than(value, max_depth):
        _raise_too_deep_first(text, max_depth, may_be_deep)
        _raise("too_deep", f"nesting deeper than {max_depth} levels", text, None, limit=max_depth)
    if _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(value):
        _raise(
            "lone_surrogate",
            "string with an unpaired UTF-16 surrogate escape",
            text,
            locate(text, "lone_surrogate"),
        )
    return value


def _raise_too_deep_first(text: str, max_depth: int, may_be_deep: bool) -> None:
    """Raise ``too_deep`` when ``text`` nests deeper than ``max_depth`` before any other problem.

    Called on every rejection path, so a document that is both too deep and wrong in another way is
    reported as too deep, whatever the scanner tripped over first (error path only: it re-tokenizes).
    """
    if not may_be_deep:
        return
    offset = locate(text, "too_deep", max_depth=max_depth)
    if offset is not None:
        _raise("too_deep", f"nesting deeper than {max_depth} levels", text, offset, limit=max_depth)


def _deeper_than(value: Any, max_depth: int) -> bool:
    """True when parsed JSON nests arrays/objects deeper than ``max_depth`` (top-level container = 1).

    Level by level over the containers only; scalars are skipped by a type test, so the cost is one
    comprehension step per value, far below re-scanning the text for brackets outside strings.
    """
    level = [value] if type(value) is dict or type(value) is list else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            return True
        below: list[Any] = []
        for container in level:
            items = container.values() if type(container) is dict else container
            below += [item for item in items if type(item) is dict or type(item) is list]
        level = below
    return False


def _decode(raw: bytes | bytearray | memoryview | str, max_bytes: int) -> str:
    """Size cap first (before any work), then exact UTF-8 (RFC 8259 §8.1) without a byte order mark."""
    return _decode_with_utf8(raw, max_bytes)[0]


def _decode_with_utf8(raw: bytes | bytearray | memoryview | str, max_bytes: int) -> tuple[str, bytes]:
    """:func:`_decode`, and the UTF-8 bytes it checked (the input, or the encoding the size cap needed)."""
    if isinstance(raw, str):
        # A str's UTF-8 length is at least its length: the cheap test runs before any encoding.
        if len(raw) > max_bytes:
            _too_large(max_bytes)
        try:
            utf8 = raw.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInput(
                f"text contains an unpaired surrogate code point at character {exc.start}; it is not Unicode",
                code="bad_encoding",
                offset=exc.start,
            ) from None
        if len(utf8) > max_bytes:
            _too_large(max_bytes)
        if raw.startswith(_BOM):
            _bad_bom()
        return raw, utf8
    if not isinstance(raw, bytes | bytearray | memoryview):
        raise TypeError(f"loads_strict takes bytes or str, not {type(raw).__name__}")
    if len(raw) > max_bytes or (isinstance(raw, memoryview) and raw.nbytes > max_bytes):
        _too_large(max_bytes)
    data = bytes(raw)
    if data.startswith(b"\xef\xbb\xbf"):
        _bad_bom()
    if b"\x00" in data[:4]:
        raise InvalidInput(
            "JSON text must be UTF-8 (this looks like UTF-16 or UTF-32)", code="bad_encoding", offset=0
        )
    try:
        return data.decode("utf-8"), data
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"invalid UTF-8 at byte offset {exc.start}", code="bad_encoding", offset=exc.start
        ) from None


def _too_large(max_bytes: int) -> NoReturn:
    raise InvalidInput(f"JSON document larger than {max_bytes} bytes", code="too_large", limit=max_bytes)


def _bad_bom() -> NoReturn:
    raise InvalidInput(
        "JSON text starts with a byte order mark (RFC 8259 §8.1 forbids it)", code="bad_encoding", offset=0
    )


def _has_lone_surrogate(value: Any) -> bool:
    """True when a key or string anywhere in ``value`` holds an unpaired surrogate."""
    text = json.dumps(value, ensure_ascii=False, check_circular=False)
    return _LONE_SURROGATE.search(text) is not None


def _raise(code: str, detail: str, text: str, offset: int | None, **fields: Any) -> NoReturn:
    """Raise InvalidInput saying what was wrong and where (a byte offset), never echoing the input."""
    if offset is None:
        raise InvalidInput(detail, code=code, **fields) from None
    byte_offset = len(text[:offset].encode("utf-8", "surrogatepass"))
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    raise InvalidInput(
        f"{detail} at byte offset {byte_offset} (line {line}, column {column})",
        code=code,
        offset=byte_offset,
        line=line,
        column=column,
        **fields,
    ) from None


def locate(text: str, code: str, *, max_depth: int = 0) -> int | None:
    """Character offset of the first token in ``text`` that causes rejection ``code`` (error path only).

    Walks the tokens of ``text`` once, keeping a stack of open containers and the keys each object
    has seen so far.  Returns ``None`` when the text stops being JSON before such a token appears
    (the caller then lets the parser report the syntax error).
    """
    stack: list[tuple[bool, set[str]]] = []  # (is_object, keys seen)
    expect_key = False
    pos, end = 0, len(text)
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.lastgroup is None:
            return None
        kind, start, pos = m.lastgroup, m.start(m.lastgroup), m.end()
        lexeme = m.group(kind)
        if kind == "open":
            if code == "too_deep" and len(stack) + 1 > max_depth:
                return start
            stack.append((lexeme == "{", set()))
            expect_key = lexeme == "{"
        elif kind == "close":
            if not stack:
                return None
            stack.pop()
            expect_key = False
        elif kind == "comma":
            expect_key = bool(stack) and stack[-1][0]
        elif kind == "colon":
            expect_key = False
        elif kind == "string":
            if code == "too_deep":
                # Only brackets count for depth: a string's content (even a bad escape the scanner
                # refused) is skipped, so the depth verdict does not depend on what a string holds.
                expect_key = False
                continue
            decoded = _string_value(lexeme)
            if decoded is None:
                # An escape JSON does not have (``\\x``, a short ``\\u12``): the text stops being JSON
                # here, before any token of the kind asked for.
                return None
            if code == "lone_surrogate" and _LONE_SURROGATE.search(decoded):
                return start
            if expect_key and stack:
                keys = stack[-1][1]
                if code == "duplicate_key" and decoded in keys:
                    return start
                keys.add(decoded)
            expect_key = False
        elif kind == "constant":
            if code == "non_finite_number":
                return start
        elif kind == "number":
            if code == "non_finite_number" and math.isinf(float(lexeme)):
                return start
            if (
                code == "integer_out_of_range"
                and not any(c in lexeme for c in ".eE")
                and (len(lexeme.lstrip("-")) > 16 or abs(int(lexeme)) > MAX_SAFE_INTEGER)
            ):
                return start
    return None


def _string_value(lexeme: str) -> str | None:
    """The text a string token stands for, or ``None`` when it holds an escape JSON does not have.

    The tokenizer's string pattern accepts a backslash before any character, so the token can be
    one the scanner refused; on the error path that must end the walk, never raise (a raw
    ``JSONDecodeError`` escaping here would leave :func:`parse_strict` through a door other than
    :class:`InvalidInput`).
    """
    if "\\" not in lexeme:
        return lexeme[1:-1]
    try:
        decoded = json.loads(lexeme)
    except json.JSONDecodeError:
        return None
    return decoded if isinstance(decoded, str) else None
