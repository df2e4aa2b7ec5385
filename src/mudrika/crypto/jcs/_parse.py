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
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any, NoReturn

from mudrika.crypto.jcs._serialize import MAX_SAFE_INTEGER, short_text
from mudrika.errors import InvalidInput

__all__ = ["parse_strict"]

_BOM = "\ufeff"
# \uD800-\uDFFF escapes: only text containing one can decode to a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
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


def parse_strict(raw: bytes | bytearray | memoryview | str, *, max_bytes: int, max_depth: int) -> Any:
    """Decode ``raw`` (UTF-8 bytes or text) into Python JSON values, refusing every ambiguity."""
    text = _decode(raw, max_bytes)
    # Parse first, then check the depth.  The C scanner guards its own recursion (a document nested
    # past the interpreter's recursion limit raises RecursionError, mapped to too_deep below), and the
    # size cap has already bounded the work, so nothing needs measuring before the parse.  Counting
    # opening brackets (also inside strings) bounds the depth from above and decides, at C speed,
    # whether the parsed value needs measuring at all.
    may_be_deep = text.count("[") + text.count("{") > max_depth
    try:
        value = _DECODER.decode(text)
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
    if isinstance(raw, str):
        # A str's UTF-8 length is at least its length: the cheap test runs before any encoding.
        if len(raw) > max_bytes:
            _too_large(max_bytes)
        try:
            size = len(raw.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise InvalidInput(
                f"text contains an unpaired surrogate code point at character {exc.start}; it is not Unicode",
                code="bad_encoding",
                offset=exc.start,
            ) from None
        if size > max_bytes:
            _too_large(max_bytes)
        if raw.startswith(_BOM):
            _bad_bom()
        return raw
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
        return data.decode("utf-8")
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
