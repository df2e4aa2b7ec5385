"""RFC 8785 serialisation of Python JSON values: a compiled encoder, reached four ways, and a general path.

Why: the obvious recursive serialiser (the general path below) takes many times as long as the
compiled encoders (bench/bench_jcs.py, docs/performance.md), and a mandate hash is computed on every
request.  A compiled encoder with sorted keys, compact separators and literal UTF-8 already produces
RFC 8785 bytes *except* in three places.  Two compiled encoders are wired in
(docs/adr/0004-orjson-behind-the-jcs-pre-pass.md): ``orjson`` (``OPT_SORT_KEYS | OPT_STRICT_INTEGER``,
bytes out) when it is installed, else ``json``'s C encoder (``sort_keys=True, separators=(",", ":"),
ensure_ascii=False``); both are held byte-equal to the general path and to ``rfc8785`` by
tests/unit/test_jcs_properties.py and tests/unit/test_jcs_ready.py.  The three places:

1. numbers (§3.2.2.3): both encoders print a finite non-integral float like ECMAScript inside
   1e-4 <= |x| < 1e16 (``repr`` switches to exponent form below 1e-4 where ECMAScript waits until
   1e-7; orjson's exponent layout differs between its versions; every double >= 2^52 is integral),
   and print an integral float as its integer's digits plus ``.0`` (``12.0``), which ECMAScript
   writes without the ``.0``;
2. strings (§3.2.2.2): both encoders escape exactly ``"``, ``\\`` and U+0000-U+001F, with the short
   forms ``\\b \\t \\n \\f \\r`` and lowercase ``\\u00xx`` for the rest, and write everything else
   literally -- the rule of §3.2.2.2 (checked for every code point in tests/unit/test_jcs.py);
3. key order (§3.2.3): both encoders order keys by code point (orjson: by UTF-8 bytes, the same
   order), RFC 8785 by UTF-16 code unit.  The two orders differ only when a key holds a character above
   U+FFFF, so an object with such a key and a sibling key goes to the general path.

The four ways in:

* **ready values** (:class:`~mudrika.crypto.frozenjson.EncoderReadyDict`/``EncoderReadyList``, made by
  :func:`mudrika.crypto.jcs.loads_received`): the strict parser saw every number, key and string of
  the document and vouched that none of the three places is hit except integral floats, so the value
  goes to the encoder untouched and only the ``.0`` of integral floats is removed from the bytes (see
  "Ready values" below).  No Python walk over the value at all;
* **orjson-ready values** (:class:`~mudrika.crypto.frozenjson.OrjsonReadyDict`/``OrjsonReadyList``,
  also made by ``loads_received``, for documents holding floats outside the shortest-form range):
  the same, for orjson alone, after a shallow copy of each container holding a float orjson misprints
  (which the freeze recorded) swaps that float for the right text (see "Orjson-ready values");
* **the value walk** (:func:`_prepare_values`) for anything else -- values built by code, plain values
  from ``loads_strict``: it copies a container only where something below it changes: integral floats
  up to 2^53 become the equal ``int``; with orjson, a float outside the shortest-form range becomes an
  ``orjson.Fragment`` holding its ECMAScript text (a numbers-only array becomes one Fragment for the
  whole array), and a ready part becomes the Fragment of its ready text.  Without orjson such a float
  sends the value to the general path;
* **the general path** for everything unusual (subclasses, tuples, non-string keys, unsupported types
  -- orjson would happily write a ``datetime``, ``UUID`` or ``Enum`` --, out-of-range integers,
  non-finite floats, deep nesting or reference cycles, astral keys beside other keys): it validates
  exactly and names the offending location in its error.  An encoder that still refuses a value (a
  lone surrogate, orjson's own nesting limit of 255) sends it there too.
"""

from __future__ import annotations

import hashlib
import json
import re
from bisect import bisect_right
from collections.abc import Callable
from functools import partial
from itertools import chain
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, Final, Literal

from mudrika.crypto.frozenjson import (
    EncoderReadyDict,
    EncoderReadyList,
    FrozenJSONDict,
    FrozenJSONList,
    OrjsonReadyDict,
    OrjsonReadyList,
)
from mudrika.crypto.jcs._number import es_number_from_shortest, es_number_to_string
from mudrika.errors import InvalidInput

__all__ = [
    "DEFAULT_ENCODER",
    "ENCODERS",
    "MAX_CANONICAL_DEPTH",
    "MAX_SAFE_INTEGER",
    "Encoder",
    "freeze_orjson_ready",
    "misprinted_by_orjson",
    "serialize",
    "serialize_sha256",
    "serialize_with",
    "short_text",
]

MAX_SAFE_INTEGER = 2**53 - 1
"""I-JSON (RFC 7493 §2.2) range: integers beyond +-(2^53-1) cannot be exchanged without rounding."""

MAX_CANONICAL_DEPTH = 512
"""Nesting limit for canonicalisation; also how a reference cycle is caught (it nests forever)."""

# repr() writes a non-integral float like ECMAScript inside [1e-4, 1e16): below 1e-4 repr uses exponent
# form where ECMAScript waits until 1e-7.  The upper bound also rejects inf and (by comparison) NaN.
_MIN_REPR_SAFE = 1e-4
_MAX_REPR_SAFE = 1e16
_MAX_EXACT_INTEGRAL = float(
    MAX_SAFE_INTEGER
)  # integral floats up to here become the equal int (the I-JSON range)
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

Encoder = Literal["orjson", "json"]
"""The compiled encoders the fast path can hand a prepared value to."""

_ENCODER = json.JSONEncoder(
    skipkeys=False,
    ensure_ascii=False,  # §3.2.2.2: non-ASCII characters are written as UTF-8, not escaped
    check_circular=False,  # _prepare bounds the depth, so a cycle never reaches the encoder
    allow_nan=False,
    sort_keys=True,
    separators=(",", ":"),  # §3.2.1: no whitespace between tokens
)


def _no_default(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not a JSON type")


def _encode_with_json_encoder(value: Any) -> bytes:
    return _ENCODER.encode(value).encode("utf-8")


def _make_json_encode() -> Callable[[Any], bytes]:
    """The same settings as ``_ENCODER``, built once: ``JSONEncoder.encode`` rebuilds it per call."""
    if c_make_encoder is None:  # an interpreter without the _json accelerator
        return _encode_with_json_encoder
    encoder = c_make_encoder(None, _no_default, encode_basestring, None, ":", ",", True, False, False)

    def encode(value: Any) -> bytes:
        # UnicodeEncodeError here (a lone surrogate) sends the value to the general path.
        return "".join(encoder(value, 0)).encode("utf-8")

    return encode


def _make_orjson_encode() -> Callable[[Any], bytes] | None:
    """orjson's ``dumps`` with sorted keys and the I-JSON integer range, or None when not installed."""
    try:
        import orjson
    except ImportError:
        return None
    # No ``default``: anything orjson cannot write raises orjson.JSONEncodeError (a TypeError).
    return partial(orjson.dumps, option=orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER)


_ENCODERS: dict[Encoder, Callable[[Any], bytes]] = {"json": _make_json_encode()}
_orjson_encode = _make_orjson_encode()
if _orjson_encode is not None:
    _ENCODERS["orjson"] = _orjson_encode

ENCODERS: Final[tuple[Encoder, ...]] = tuple(sorted(_ENCODERS))
"""The compiled encoders available in this interpreter (``json`` always; ``orjson`` when installed)."""

DEFAULT_ENCODER: Final[Encoder] = "orjson" if "orjson" in _ENCODERS else "json"
"""The encoder :func:`serialize` uses: orjson when installed (faster; see docs/performance.md), else ``json``'s."""


def _has_astral(out: bytes) -> bool:
    """True when UTF-8 ``out`` holds a character above U+FFFF (memchr per lead byte: cheaper than a regex
    over the same bytes, which showed up in the encoder's profile).

    In valid UTF-8 the bytes F0-F4 only start the 4-byte sequences of characters above U+FFFF.
    """
    return not out.isascii() and (
        b"\xf0" in out or b"\xf1" in out or b"\xf2" in out or b"\xf3" in out or b"\xf4" in out
    )


class _UseGeneralPath(Exception):
    """Raised by the pre-pass when the value needs the exact (slower) serialiser."""


# ------------------------------------------------------------------------------------ ready values
#
# An EncoderReadyDict/EncoderReadyList comes from a document the strict parser vouched for
# (mudrika.crypto.jcs._parse, "Encoder-ready facts"): every float is non-integral inside
# [1e-4, 1e16) or integral below 1e16 (and not -0.0), no object has an astral key beside another key,
# no string holds ".0" before "," "]" or "}", and the nesting is within MAX_CANONICAL_DEPTH.  Then:
#   * strings, key order, ints, literals: the encoder is right (1.-3. in the module docstring);
#   * non-integral floats: both encoders print them like ECMAScript in that range (1.);
#   * integral floats below 1e16: both print the integer's digits and ".0" (``4.0``, ``-25.0``,
#     ``1000000000000000.0``), which ECMAScript writes without the ".0";
# so the encoder's output with every ".0" before "," "]" or "}" removed is the RFC 8785 text: no
# string holds that sequence, no other number ends in ".0" (a non-integral float's shortest digits
# never end in 0), and -0.0, whose "-0" would be wrong, is not in the document.  Removing them is one
# C-speed pass over the bytes, and only when the output holds ".0" at all.

_DOT_ZERO_BEFORE_DELIMITER = re.compile(rb"\.0(?=[,\]}])")
_READY: Final = (EncoderReadyDict, EncoderReadyList)


def _integral_dot_zero_removed(out: bytes) -> bytes:
    return _DOT_ZERO_BEFORE_DELIMITER.sub(b"", out) if b".0" in out else out


# ------------------------------------------------------------------------------ orjson-ready values
#
# An OrjsonReadyDict/OrjsonReadyList comes from a document the strict parser vouched for as for ready
# values above, except that it may also hold floats outside the shortest-form range ("wide" floats:
# non-integral below 1e-4, integral from 1e16).  orjson writes most of them as ECMAScript does
# ("1e-7", "0.00001", "1.5e+300") but not all: the version installed here is asked once per process
# (:func:`_orjson_misprint_bands`), for every decimal exponent a double can have outside the range,
# and the exponents where its text differs from ECMAScript's become magnitude bands (with orjson 3.13:
# [1e-6, 1e-5), written "1e-6" where ECMAScript writes "0.000001", and [1e16, 1e21), written "1e+16"
# for "10000000000000000").  The freeze (:func:`freeze_orjson_ready`) records, per container, which
# members orjson misprints -- a float in a band, an integral float (orjson's "4.0") -- or are a
# container with patches (``patches``); encoding such a container encodes a shallow copy with each
# banded float replaced by an orjson.Fragment of its ECMAScript text and each integral float by its
# int (or, past 2^53, its digits as a Fragment).  Nothing is cut from or searched in the output, so no
# string can be mistaken for a number, and strings need none of the conditions ready values need.
#
# The probe rests on what the ready path already assumes -- orjson's digits are the shortest ones --
# and on a formatter laying those digits out by their count, the exponent and the sign alone; it
# tries one, two, sixteen and seventeen digits at every exponent, both signs.  A json-encoder path
# never trusts these values (repr writes "1e-05"): it walks them, which sends them to the general path.

_PROBE_DIGITS: Final = ("1", "1.2", "1.234567890123456", "1.2345678901234567")
# A fact about the encoder, not a cache: the band edges (low, high, low, high, ...), ascending.
_ORJSON_FACTS: dict[str, tuple[float, ...]] = {}


def _orjson_misprint_edges() -> tuple[float, ...]:
    """The edges of the magnitude bands outside [1e-4, 1e16) where orjson's text is not ECMAScript's:
    a magnitude m is in a band when ``bisect_right(edges, m)`` is odd (bands are [low, high)).

    Asked of the installed orjson once per process: it describes the encoder, not any input.
    """
    edges = _ORJSON_FACTS.get("misprint_edges")
    if edges is None:
        edges = _ORJSON_FACTS["misprint_edges"] = tuple(chain.from_iterable(_probe_orjson()))
    return edges


def _probe_orjson() -> tuple[tuple[float, float], ...]:
    encode = _ENCODERS["orjson"]
    probes: list[tuple[int, float]] = [(-324, 5e-324)]  # the only double with exponent -324
    for exponent in chain(range(-323, -4), range(16, 309)):
        probes += ((exponent, float(f"{digits}e{exponent}")) for digits in _PROBE_DIGITS)
    magnitudes = [x for _, x in probes]
    texts = encode(magnitudes + [-x for x in magnitudes])[1:-1].split(b",")
    misprinted = set()
    for index, (exponent, x) in enumerate(probes):
        expected = es_number_to_string(x).encode()
        if texts[index] != expected or texts[index + len(probes)] != b"-" + expected:
            misprinted.add(exponent)
    bands: list[tuple[float, float]] = []
    for exponent in sorted(misprinted):
        low, high = _decade(exponent), _decade(exponent + 1)
        if bands and bands[-1][1] == low:
            bands[-1] = (bands[-1][0], high)
        else:
            bands.append((low, high))
    return tuple(bands)


def _decade(exponent: int) -> float:
    """The least double whose shortest digits have decimal ``exponent`` (d.ddd x 10^exponent).

    Shortest digits keep the order of the doubles, and ``float("1eN")`` reads back as "1eN" (N within
    the double range), so x >= _decade(N) exactly when x's exponent is N or more.
    """
    return 5e-324 if exponent <= -324 else float(f"1e{exponent}")


def misprinted_by_orjson(x: float) -> bool:
    """Whether orjson writes the finite float ``x`` differently from RFC 8785: an integral float below
    1e16 (orjson's ``4.0``), or a float in a band the probe found."""
    return _misprinted(x, _orjson_misprint_edges())


def _misprinted(x: float, edges: tuple[float, ...]) -> bool:
    """:func:`misprinted_by_orjson` with the band edges in hand (the freeze asks it of every float)."""
    magnitude = x if x >= 0.0 else -x
    if 1e-4 <= magnitude < 1e16 or magnitude == 0.0:
        return x.is_integer()
    return bisect_right(edges, magnitude) % 2 == 1


def freeze_orjson_ready(value: Any, *, max_depth: int) -> Any:
    """:func:`~mudrika.crypto.frozenjson.freeze` into ``OrjsonReadyDict``/``OrjsonReadyList``, each
    with its ``patches``: for :func:`mudrika.crypto.jcs.loads_received`, on a value its strict parser
    has just found orjson-ready.  One pass copies and notes what needs a patch; only a float costs a
    call (:func:`_misprinted`, the one statement of the rule).
    """
    try:
        return _freeze_patched(value, 1, max_depth, _orjson_misprint_edges())
    except RecursionError:
        raise InvalidInput(
            "JSON nested deeper than can be copied", code="too_deep", limit=max_depth
        ) from None


def _freeze_patched(value: Any, depth: int, max_depth: int, edges: tuple[float, ...]) -> Any:
    if depth > max_depth:
        raise InvalidInput(f"JSON nested deeper than {max_depth} levels", code="too_deep", limit=max_depth)
    is_object = isinstance(value, dict)
    members: list[Any] = []
    patches: list[Any] = []
    for key, item in value.items() if is_object else enumerate(value):
        t = type(item)
        if t is float:
            if _misprinted(item, edges):
                patches.append(key)
        elif t is dict or t is list:
            child = _freeze_patched(item, depth + 1, max_depth, edges)
            if child.patches:
                patches.append(key)
            members.append(child)
            continue
        members.append(item)
    frozen = OrjsonReadyDict(zip(value, members, strict=True)) if is_object else OrjsonReadyList(members)
    frozen.patches = tuple(patches)
    return frozen


def _patched(value: OrjsonReadyDict | OrjsonReadyList) -> Any:
    """``value``, or a shallow copy of it with every member its ``patches`` name made right for orjson.

    The banded floats of one container are formatted by one orjson call (shortest digits, as ever);
    only their layout is redone in Python.
    """
    if not value.patches:
        return value
    copy: Any = dict(value) if type(value) is OrjsonReadyDict else list(value)
    float_keys = []
    for key in value.patches:
        x = value[key]  # type: ignore[index]
        t = type(x)
        if t is OrjsonReadyDict or t is OrjsonReadyList:
            copy[key] = _patched(x)
        elif -9007199254740991.0 <= x <= 9007199254740991.0 and x.is_integer():
            copy[key] = int(x)  # §3.2.2.3 prints such a double as exactly this integer's digits
        else:
            float_keys.append(key)
    if float_keys:
        texts = _ENCODERS["orjson"]([value[key] for key in float_keys]).decode()[1:-1].split(",")  # type: ignore[index]
        for key, text in zip(float_keys, texts, strict=True):
            copy[key] = _fragment(es_number_from_shortest(text).encode())
    return copy


# ------------------------------------------------------------------------- floats outside [1e-4, 1e16)
#
# The walk below replaces such a float with an orjson.Fragment (text orjson inserts verbatim) holding
# its ECMAScript form, instead of sending the document to the general path.  Formatting the double is
# the expensive part (``repr`` of a 17-digit double costs more than rfc8785's whole per-number work),
# so orjson formats it (shortest round-trip digits, the same digits ``repr`` and ECMAScript choose) and
# Python only checks the layout: _ES_NUMBER accepts exactly the layouts ECMAScript's Number::toString
# produces -- plain digits while the decimal exponent n (x = 0.d1d2... * 10^n) is in -5..21, exponent
# form "d[.ddd]e+21" and up or "e-7" and down, no trailing zeros, no "-0" -- and a token it refuses is
# rewritten by es_number_to_string.  That check does not depend on how an orjson version lays numbers
# out; it depends only on orjson's digits being the shortest ones, as the fast path always has.
# A flat array holding only numbers and booleans is written by one orjson call and its tokens checked
# run by run over that text (no string can be confused with a number there).

_ES_EXPONENT = rb"e(?:\+(?:[1-9][0-9][0-9]|2[1-9]|[3-9][0-9])|-(?:[1-9][0-9]{1,2}+|[7-9]))"  # e+21.., e-7..
_ES_FRACTION = rb"\.[0-9]*+(?<=[1-9])"  # a fraction that does not end in 0
_ES_NUMBER_TEXT = b"".join(
    [
        rb"(?:0|-?+(?:",
        rb"0\.0{0,5}+[1-9][0-9]*+(?<=[1-9])",  # -6 < n <= 0: "0." and at most five zeros
        rb"|[1-9](?:",
        _ES_FRACTION + rb"(?:" + _ES_EXPONENT + rb")?+",  # d.ddd, or d.ddd in exponent form
        rb"|" + _ES_EXPONENT,  # one digit in exponent form
        rb"|[0-9]{1,20}+(?:" + _ES_FRACTION + rb")?+",  # up to 21 integer digits, then a fraction
        rb")?+))",
    ]
)
_ES_NUMBER = re.compile(_ES_NUMBER_TEXT)
# The longest prefix of a flat array's text made of "[" or "," and a token in ECMAScript layout (or a
# literal): one C-level match per run of good tokens, a Python step only per token outside the layout.
_ES_TOKEN_RUN = re.compile(rb"(?:[\[,](?:" + _ES_NUMBER_TEXT + rb"|true|false)(?=[,\]]))*")


def _make_fragment() -> Callable[[bytes], Any] | None:
    try:
        from orjson import Fragment
    except ImportError:  # no orjson, or one older than Fragment
        return None
    return Fragment


def _no_fragment(contents: bytes) -> Any:
    raise _UseGeneralPath  # unreachable: the walk only makes Fragments when _FRAGMENTS is True


_found_fragment = _make_fragment()
_FRAGMENTS: Final = _found_fragment is not None
_fragment: Callable[[bytes], Any] = _no_fragment if _found_fragment is None else _found_fragment


def _float_fragment(x: float) -> Any:
    """``x`` (a finite float orjson may misprint) as a Fragment holding its ECMAScript text."""
    if not -1.7976931348623157e308 <= x <= 1.7976931348623157e308:  # NaN and the infinities
        raise _UseGeneralPath
    token = _ENCODERS["orjson"](x)
    if _ES_NUMBER.fullmatch(token) is None:
        token = es_number_to_string(x).encode()
    return _fragment(token)


def _numbers_only_text(arr: list[Any]) -> bytes | None:
    """The RFC 8785 text of ``arr`` when it holds only finite numbers and booleans, else None.

    No ``"`` in orjson's text means no string and no key; no ``{`` or second ``[`` no object or array;
    no ``null`` no None and no NaN or infinity (orjson writes those as null).  What remains is numbers
    and literals between commas, checked run by run (_ES_TOKEN_RUN); each token outside the layout is
    rewritten from its value (orjson's text reads back as exactly the double it printed).
    """
    out = _ENCODERS["orjson"](arr)
    if b'"' in out or b"{" in out or b"[" in out[1:] or b"null" in out:
        return None
    pieces: list[bytes] = []
    done = 0
    last = len(out) - 1  # the closing "]"
    while True:
        run = _ES_TOKEN_RUN.match(out, done)  # matches at least the empty string
        bad = done if run is None else run.end()  # the "," or "[" before a token in another layout
        if bad >= last:
            break
        comma, bracket = out.find(b",", bad + 1), out.find(b"]", bad + 1)
        end = bracket if comma == -1 else min(comma, bracket)
        pieces += (out[done : bad + 1], es_number_to_string(float(out[bad + 1 : end])).encode())
        done = end
    if not pieces:
        return out
    pieces.append(out[done:])
    return b"".join(pieces)


# -------------------------------------------------------------------------------------------- paths


def _via_json(value: Any) -> bytes:
    if type(value) in _READY:  # never an orjson-ready value: the walk sends those to the general path
        return _integral_dot_zero_removed(_ENCODERS["json"](value))
    return _ENCODERS["json"](_prepare(value))


def _via_orjson(value: Any) -> bytes:
    """Ready values straight to orjson; others through the value walk, without its key checks.

    orjson itself refuses non-string keys (``json`` would stringify them), so only the UTF-16 order
    check (3. in the module docstring) remains, and it matters only when some key holds a character
    above U+FFFF: output without such a character (almost always, and tested at C speed) needs no key
    check at all; otherwise the full pre-pass decides.
    """
    t = type(value)
    if t is EncoderReadyDict or t is EncoderReadyList:
        return _integral_dot_zero_removed(_ENCODERS["orjson"](value))
    if t is OrjsonReadyDict or t is OrjsonReadyList:
        return _ENCODERS["orjson"](_patched(value))
    prepared = _prepare_values(value, _FRAGMENTS)
    out = prepared if type(prepared) is bytes else _ENCODERS["orjson"](prepared)
    if _has_astral(out):
        _check_keys(value)  # raises _UseGeneralPath when an object with an astral key has siblings
    return out


_PATHS: dict[Encoder, Callable[[Any], bytes]] = {"json": _via_json, "orjson": _via_orjson}
_fast = _PATHS[DEFAULT_ENCODER]


def serialize(value: Any) -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of ``value`` or raise ``InvalidInput``."""
    try:
        return _fast(value)
    except (_UseGeneralPath, TypeError, ValueError):
        pass  # the general path validates exactly and reports the offending location
    return _general(value)


def serialize_sha256(value: Any) -> bytes:
    """SHA-256 of :func:`serialize` ``(value)``, without holding a second copy of the text for ready values.

    A ready value's text is orjson's with the ``.0`` of integral floats removed.  A short text is hashed
    piece by piece between those ``.0`` (one C-level split; the pieces add under 4 KB); a long one chunk
    by chunk, each cut after a comma and fixed by one C-level substitution (a chunk is an eighth of the
    text, or 4 KB), so at most one chunk is ever held twice.  Either
    way the peak memory of a mandate hash stays near the encoder's own (bench/bench_jcs.py measures
    both).  Everything else hashes serialize's bytes (an orjson-ready value's text needs no fixing,
    so there is nothing to save for it).
    """
    t = type(value)
    if _fast is _via_orjson and (t is EncoderReadyDict or t is EncoderReadyList):
        try:
            out = _ENCODERS["orjson"](value)
        except TypeError:  # nesting past orjson's limit: the general path decides
            return hashlib.sha256(serialize(value)).digest()
        if b".0" not in out:
            return hashlib.sha256(out).digest()
        digest = hashlib.sha256()
        if len(out) < _SHORT_TEXT:
            for piece in _DOT_ZERO_BEFORE_DELIMITER.split(out):
                digest.update(piece)
        else:
            view = memoryview(out)
            chunk = max(_SHORT_TEXT, len(out) >> 3)
            done = 0
            while done < len(out):
                # A ".0" to remove ends before its delimiter, so no match straddles a cut after a comma.
                cut = out.find(b",", done + chunk) + 1 or len(out)
                digest.update(_DOT_ZERO_BEFORE_DELIMITER.sub(b"", view[done:cut]))
                done = cut
        return digest.digest()
    return hashlib.sha256(serialize(value)).digest()


_SHORT_TEXT = 4096


def serialize_with(encoder: Encoder | None, value: Any) -> bytes:
    """:func:`serialize` with a chosen compiled encoder, or with none (``None``: the general path only).

    For tests and benchmarks that hold the paths equal; production code calls :func:`serialize`.
    """
    if encoder is None:
        return _general(value)
    if encoder not in _ENCODERS:
        raise ValueError(f"encoder {encoder!r} is not available here")
    try:
        return _PATHS[encoder](value)
    except (_UseGeneralPath, TypeError, ValueError):
        pass
    return _general(value)


# --------------------------------------------------------------------------------------- fast path
#
# Two walks, for values that are not ready (built by code, from loads_strict, or ready parts inside
# containers built by code).  :func:`_prepare_values` raises _UseGeneralPath for any value the encoders
# would get wrong and copies a container only when something below it changed (an integral float
# swapped for its int; with ``fragments`` -- the orjson path -- also a float outside the shortest-form
# range swapped for a Fragment, a numbers-only array for the Fragment of its whole text, and a ready
# container for the Fragment of its ready text): the caller's value is never modified, and a document
# without such floats is never copied at all.  On the ``json`` path (no Fragments) such a float still
# sends the value to the general path, and a ready container is walked like any frozen one.
# The walk is the whole cost of this path, so it checks nothing else (a reference cycle ends it with
# RecursionError), tests the commonest types first and writes the float tests with literals rather than
# the named constants above:
#   (1e-4 <= x < 1e16 or -1e16 < x <= -1e-4)   is   _MIN_REPR_SAFE <= abs(x) < _MAX_REPR_SAFE
#   -9007199254740991.0 <= x <= 9007199254740991.0   is   abs(x) <= _MAX_EXACT_INTEGRAL (2^53 - 1)
#   -9007199254740991 <= x <= 9007199254740991       is   abs(x) <= MAX_SAFE_INTEGER (2^53 - 1)
# :func:`_check_keys` visits the containers only: nesting within MAX_CANONICAL_DEPTH, string keys, and
# the UTF-16 key order (3. in the module docstring).  The json path needs both walks; the orjson path
# needs the second only when its output holds a character above U+FFFF (see :func:`_via_orjson`).


def _prepare(value: Any) -> Any:
    """``value`` itself, or a copy with integral floats as ints, when json's C encoder gets it right."""
    prepared = _prepare_values(value, False)
    _check_keys(value)
    return prepared


def _prepare_values(value: Any, fragments: bool) -> Any:
    """The value walk (see above) from the top: containers, or a scalar on its own."""
    t = type(value)
    copy: dict[Any, Any] | list[Any] | bytes | None
    try:
        if t is dict or t is FrozenJSONDict or t is EncoderReadyDict:
            copy = _prepare_dict(value, fragments)
        elif t is list or t is FrozenJSONList or t is EncoderReadyList:
            copy = _prepare_list(value, fragments)
        else:
            return _prepare_scalar(value)
    except RecursionError:
        raise _UseGeneralPath from None  # a reference cycle, or nesting no encoder would accept
    return value if copy is None else copy


def _prepare_scalar(value: Any) -> Any:
    t = type(value)
    if t is str or t is bool or value is None:
        return value
    if t is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return value
    elif t is float:
        if _MIN_REPR_SAFE <= abs(value) < _MAX_REPR_SAFE and not value.is_integer():
            return value
        if value.is_integer() and -_MAX_EXACT_INTEGRAL <= value <= _MAX_EXACT_INTEGRAL:
            return int(value)  # §3.2.2.3 prints such a double as exactly this integer's digits
    raise _UseGeneralPath


def _ready_or_walked(x: Any, fragments: bool) -> Any:
    """A ready container met inside a walked one: its ready text as a Fragment, or (json) walk it.

    An orjson-ready one becomes the Fragment of its patched text, or (json) the general path's work.
    """
    t = type(x)
    if t is OrjsonReadyDict or t is OrjsonReadyList:
        if fragments:
            return _fragment(_ENCODERS["orjson"](_patched(x)))
        raise _UseGeneralPath
    if fragments:
        return _fragment(_integral_dot_zero_removed(_ENCODERS["orjson"](x)))
    return _prepare_dict(x, False) if type(x) is EncoderReadyDict else _prepare_list(x, False)


def _prepare_dict(obj: dict[Any, Any], fragments: bool) -> dict[Any, Any] | None:
    """None when ``obj`` is fine as it is, else the copy with its floats (and ready parts) replaced."""
    copy = None
    for key, x in obj.items():
        t = type(x)
        if t is str:
            continue
        if t is dict or t is FrozenJSONDict:
            y: Any = _prepare_dict(x, fragments)
            if y is None:
                continue
        elif t is float:
            if (1e-4 <= x < 1e16 or -1e16 < x <= -1e-4) and not x.is_integer():
                continue
            if x.is_integer() and -9007199254740991.0 <= x <= 9007199254740991.0:
                y = int(x)
            elif fragments:
                y = _float_fragment(x)
            else:
                raise _UseGeneralPath
        elif t is list or t is FrozenJSONList:
            y = _prepare_list(x, fragments)
            if y is None:
                continue
            if type(y) is bytes:
                y = _fragment(y)
        elif t is int:
            if -9007199254740991 <= x <= 9007199254740991:
                continue
            raise _UseGeneralPath
        elif t is bool or x is None:
            continue
        elif t is EncoderReadyDict or t is EncoderReadyList or t is OrjsonReadyDict or t is OrjsonReadyList:
            y = _ready_or_walked(x, fragments)
            if y is None:
                continue
        else:
            raise _UseGeneralPath
        if copy is None:
            copy = dict(obj)
        copy[key] = y
    return copy


def _prepare_list(arr: list[Any], fragments: bool) -> list[Any] | bytes | None:
    """The array counterpart of :func:`_prepare_dict` (kept apart: one call per container is the cost).

    Returns bytes instead of a copy when the array holds only numbers (and booleans, and arrays of
    them) and some float needed its ECMAScript form: then the whole array's canonical text is cheaper
    than a Fragment per float (see :func:`_numbers_only_text`).
    """
    copy = None
    whole_array_tried = not fragments
    for index, x in enumerate(arr):
        t = type(x)
        if t is str:
            continue
        if t is dict or t is FrozenJSONDict:
            y: Any = _prepare_dict(x, fragments)
            if y is None:
                continue
        elif t is float:
            if (1e-4 <= x < 1e16 or -1e16 < x <= -1e-4) and not x.is_integer():
                continue
            if x.is_integer() and -9007199254740991.0 <= x <= 9007199254740991.0:
                y = int(x)
            elif not whole_array_tried:
                whole_array_tried = True
                whole = _numbers_only_text(arr)
                if whole is not None:
                    return whole
                y = _float_fragment(x)
            elif fragments:
                y = _float_fragment(x)
            else:
                raise _UseGeneralPath
        elif t is list or t is FrozenJSONList:
            y = _prepare_list(x, fragments)
            if y is None:
                continue
            if type(y) is bytes:
                y = _fragment(y)
        elif t is int:
            if -9007199254740991 <= x <= 9007199254740991:
                continue
            raise _UseGeneralPath
        elif t is bool or x is None:
            continue
        elif t is EncoderReadyDict or t is EncoderReadyList or t is OrjsonReadyDict or t is OrjsonReadyList:
            y = _ready_or_walked(x, fragments)
            if y is None:
                continue
        else:
            raise _UseGeneralPath
        if copy is None:
            copy = list(arr)
        copy[index] = y
    return copy


def _check_keys(value: Any) -> None:
    """Raise _UseGeneralPath for nesting past MAX_CANONICAL_DEPTH, a non-string key (``json`` would
    quietly stringify it) or an object whose key order by code point may differ from UTF-16 order."""
    objects: list[dict[Any, Any]] = []
    _collect_objects(value, 1, objects)
    try:
        keys = "".join(chain.from_iterable(objects))
    except TypeError:
        raise _UseGeneralPath from None
    if not keys.isascii():
        for obj in objects:
            if len(obj) > 1 and _ASTRAL.search("".join(obj)) is not None:
                raise _UseGeneralPath  # §3.2.3


def _collect_objects(value: Any, depth: int, objects: list[dict[Any, Any]]) -> None:
    t = type(value)
    if t is dict or t is FrozenJSONDict or t is EncoderReadyDict or t is OrjsonReadyDict:
        if depth > MAX_CANONICAL_DEPTH:
            raise _UseGeneralPath
        objects.append(value)
        items = value.values()
    elif t is list or t is FrozenJSONList or t is EncoderReadyList or t is OrjsonReadyList:
        if depth > MAX_CANONICAL_DEPTH:
            raise _UseGeneralPath
        items = value
    else:
        return
    for item in items:
        if type(item) in _CONTAINERS:
            _collect_objects(item, depth + 1, objects)


_CONTAINERS: Final = frozenset(
    {
        dict,
        list,
        FrozenJSONDict,
        FrozenJSONList,
        EncoderReadyDict,
        EncoderReadyList,
        OrjsonReadyDict,
        OrjsonReadyList,
    }
)


# ------------------------------------------------------------------------------------ general path
#
# A plain recursive serialiser that validates everything.  The JSONPath-like location of an error is
# built only while the error unwinds (each container adds its key or index), so valid input pays
# nothing for it.


class _Invalid(Exception):
    """An InvalidInput in the making: ``path`` collects keys/indexes innermost first."""

    def __init__(self, code: str, what: str, **fields: Any) -> None:
        super().__init__(code)
        self.code = code
        self.what = what
        self.fields = fields
        self.path: list[str | int] = []

    def to_invalid_input(self) -> InvalidInput:
        where = "$" + "".join(_path_step(step) for step in reversed(self.path))
        return InvalidInput(f"{self.what} at {where}", code=self.code, path=where, **self.fields)


def _path_step(step: str | int) -> str:
    if isinstance(step, int):
        return f"[{step}]"
    return f".{step}" if step.isidentifier() and len(step) <= 64 else f"[{short_text(step)}]"


def _general(value: Any) -> bytes:
    parts: list[str] = []
    try:
        _write(value, parts, 0)
    except _Invalid as exc:
        raise exc.to_invalid_input() from None
    return "".join(parts).encode("utf-8")


def _write(value: Any, out: list[str], depth: int) -> None:
    """Append the canonical text of ``value`` to ``out`` (one Python frame per nesting level)."""
    # RFC 8785 §3.2.2.1: the literals.  bool is tested before int because it is an int subclass.
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise _Invalid("integer_out_of_range", "integer outside the I-JSON range +-(2^53-1)")
        out.append(int.__repr__(value))  # an int subclass (IntEnum) must not change the digits
    elif isinstance(value, float):
        try:
            out.append(es_number_to_string(float(value)))  # §3.2.2.3
        except ValueError:
            raise _Invalid("non_finite_number", "NaN or infinite number, which JSON cannot express") from None
    elif isinstance(value, dict):
        _check_depth(depth)
        out.append("{")
        for index, key in enumerate(_sorted_keys(value)):  # §3.2.3
            if index:
                out.append(",")
            try:
                out.append(_string(key))
                out.append(":")
                _write(value[key], out, depth + 1)
            except _Invalid as exc:
                exc.path.append(key)
                raise
        out.append("}")
    elif isinstance(value, list | tuple):
        _check_depth(depth)
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            try:
                _write(item, out, depth + 1)
            except _Invalid as exc:
                exc.path.append(index)
                raise
        out.append("]")
    else:
        name = type(value).__name__
        raise _Invalid("unsupported_type", f"value of type {name}, which is not a JSON type", type=name)


def _check_depth(depth: int) -> None:
    if depth >= MAX_CANONICAL_DEPTH:
        raise _Invalid(
            "too_deep",
            f"nesting deeper than {MAX_CANONICAL_DEPTH} levels (or a reference cycle)",
            limit=MAX_CANONICAL_DEPTH,
        )


def _sorted_keys(obj: dict[Any, Any]) -> list[str]:
    """The keys of ``obj`` in RFC 8785 §3.2.3 order, after checking that they are all strings."""
    for key in obj:
        if not isinstance(key, str):
            name = type(key).__name__
            raise _Invalid("non_string_key", f"object key of type {name}; JSON keys are strings", type=name)
    keys: list[str] = list(obj)
    if any(_ASTRAL.search(key) for key in keys):
        # §3.2.3: sort by UTF-16 code units.  Big-endian UTF-16 bytes compare in exactly that order;
        # surrogatepass lets a lone surrogate reach _string, which reports it.
        keys.sort(key=lambda k: k.encode("utf-16-be", "surrogatepass"))
    else:
        keys.sort()  # without astral characters, code point order is UTF-16 code unit order
    return keys


def _string(text: str) -> str:
    """§3.2.2.2 string serialisation (via json's C escaper, see the module docstring)."""
    if not text.isascii():
        lone = _LONE_SURROGATE.search(text)
        if lone is not None:
            raise _Invalid("lone_surrogate", f"string with the unpaired surrogate U+{ord(lone.group()):04X}")
    return encode_basestring(text)


def short_text(key: str) -> str:
    """A key quoted for an error message, cut short so a message never echoes large input."""
    shown = json.dumps(key[:40], ensure_ascii=True)
    return shown if len(key) <= 40 else shown[:-1] + '..."'
