"""Structured-but-wrong inputs for the parser fuzz test, and the guard every fuzzed call runs under.

Why structured: random bytes die in the first check of every parser (not UTF-8, not three dots).
The interesting bugs sit behind inputs that are *almost* right, so each row's inputs mix
(a) mutations of its valid seeds (truncations, flipped and inserted bytes, spliced "hostile" tokens:
bad escapes, lone surrogates, huge numbers, deep nesting), (b) inputs built from the row's grammar
(JSON-ish trees, compact JWS and SD-JWT made of base64url pieces, RFC 8941 members, DID syntax),
and (c) plain random bytes.

Why a guard: a parser that hangs or balloons on one input is a denial of service even when it
raises the right error.  The guard is a hang and blow-up *detector* with generous limits, never a
performance assertion: a call fails only past :data:`HANG_SECONDS`, or when its peak allocation is
far beyond anything proportionate to its input.
"""

from __future__ import annotations

import base64
import faulthandler
import json
import signal
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import Any, Final

from hypothesis import strategies as st

from fuzz.targets import SEPARATOR, Target

__all__ = ["HANG_SECONDS", "Hang", "guarded_call", "inputs_for", "memory_cap"]

HANG_SECONDS: Final = 5.0
"""A single parse running (on the CPU) longer than this on any machine is a hang, not slowness."""
_STARVED_SECONDS: Final = 60.0
"""Wall-clock limit for a call that gets too little CPU to reach :data:`HANG_SECONDS` of its own."""
_LAST_RESORT_SECONDS: Final = 120
"""If a hang sits in C code where no signal handler runs, dump every thread's stack and exit."""
_BASE_MEMORY: Final = 48 * 1024 * 1024
_MEMORY_PER_INPUT_BYTE: Final = 512


class Hang(BaseException):
    """Raised into a call that ran past :data:`HANG_SECONDS` (a BaseException, so that no parser's
    ``except Exception`` can swallow it and pass the hang off as an accepted error)."""


def memory_cap(size: int) -> int:
    """The peak allocation one call may reach for an input of ``size`` bytes (generous on purpose:
    verifying a bundle builds models, reports and HTML; only a blow-up should trip it)."""
    return _BASE_MEMORY + _MEMORY_PER_INPUT_BYTE * size


@contextmanager
def _watchdog(what: str, limit: float) -> Iterator[None]:
    """Fail the call once it has *run* ``limit`` seconds (SIGALRM, main thread on POSIX).

    Why CPU time decides: on a loaded shared machine a call can wait seconds for a core without
    being slow itself, so at each alarm a call that has used less than ``limit`` seconds of CPU
    is given more time, up to :data:`_STARVED_SECONDS` of wall clock (a call blocked on I/O uses no
    CPU and is still a hang).  The alarm may land where an exception is ignored (a garbage
    collector callback), so the verdict is also recorded and re-raised when the call returns.  As a
    last resort for a hang inside C code, faulthandler ends the process with every stack printed.
    """
    use_alarm = hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    verdict: list[str] = []
    previous: Any = None
    cpu_start, wall_start = time.process_time(), time.monotonic()
    if use_alarm:

        def interrupt(signum: int, frame: FrameType | None) -> None:
            cpu, wall = time.process_time() - cpu_start, time.monotonic() - wall_start
            if cpu < limit and wall < _STARVED_SECONDS:
                signal.setitimer(signal.ITIMER_REAL, limit)
                return
            verdict.append(f"{what}: no answer after {wall:.0f} s ({cpu:.0f} s of CPU)")
            raise Hang(verdict[0])

        previous = signal.signal(signal.SIGALRM, interrupt)
        signal.setitimer(signal.ITIMER_REAL, limit)
    faulthandler.dump_traceback_later(_LAST_RESORT_SECONDS, exit=True, file=2)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    if verdict:
        raise Hang(verdict[0])


def guarded_call(target: Target, data: bytes, *, hang_seconds: float = HANG_SECONDS) -> None:
    """Run one input through ``target`` and fail unless it returns or raises an accepted error, in
    time and within :func:`memory_cap` of its size."""
    started_tracing = not tracemalloc.is_tracing()
    if started_tracing:
        tracemalloc.start(1)
    tracemalloc.reset_peak()
    try:
        with _watchdog(f"{target.name} on {len(data)} bytes", hang_seconds), suppress(*target.accepted):
            target.call(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if started_tracing:
            tracemalloc.stop()
    cap = memory_cap(len(data))
    assert peak <= cap, f"{target.name}: peak allocation {peak} bytes for {len(data)} input bytes (cap {cap})"


# -- inputs -------------------------------------------------------------------------------------------------

#: Fragments that break parsers: bad and lone escapes, raw surrogates, numbers past every limit,
#: separators of every grammar here, percent and base64 oddities, control characters.
HOSTILE: Final[tuple[bytes, ...]] = (
    b'"\\x"',
    b'"\\u12"',
    b'"\\ud800"',
    b'"\\udc00\\ud800"',
    b"\xed\xa0\x80",
    b"\xc0\xaf",
    b"\xef\xbb\xbf",
    b"\x00",
    b"1e400",
    b"-1e-400",
    b"9007199254740993",
    b"1" * 400,
    b"0." + b"0" * 300 + b"1",
    b"NaN",
    b"-Infinity",
    b'{"a":1,"a":2}',
    b"[" * 100,
    b"{" * 70,
    b"]" * 10,
    b'"' * 3,
    b"\\",
    b"~",
    b"~~",
    b".",
    b"..",
    b"=",
    b"==",
    b"+/",
    b"-_",
    b":",
    b";",
    b",",
    b"%",
    b"%zz",
    b"%00",
    b"#",
    b"?",
    b"did:",
    b"did:key:z",
    b"\r\n",
    b"\t",
    b" ",
    b"?1",
    b"(",
    b")",
    b'"alg":"none"',
    b'"crit":["x"]',
    b'"jwk":{}',
    b'"kid":"did:key:z6Mk#z6Mk"',
    b'"_sd":["x"]',
    b'"...":"x"',
    b"true",
    b"null",
    SEPARATOR,
)

_JSON_SCALARS: Final = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(
        ["did:key:z6Mk", "EdDSA", "ES256", "none", "sha-256", "", "\u2028", "dc+sd-jwt", "kb+jwt"]
    ),
)
_KEYS: Final = st.one_of(
    st.text(max_size=10),
    st.sampled_from(
        ["alg", "typ", "kid", "crit", "jwk", "iss", "aud", "exp", "iat", "nbf", "cnf", "_sd", "_sd_alg",
         "...", "format", "id", "type", "bundle", "parts", "signatures", "metadata", "sd_hash", "nonce",
         "verificationMethod", "publicKeyJwk", "publicKeyMultibase", "kty", "crv", "x", "y", "htm", "htu"]
    ),
)  # fmt: skip
_JSON_TREES: Final = st.recursive(
    _JSON_SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(_KEYS, children, max_size=5)),
    max_leaves=25,
)


def _json_text(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


@st.composite
def _json_ish(draw: st.DrawFn) -> bytes:
    """JSON text from a random tree, sometimes wrapped deep, sometimes with a hostile splice."""
    text = _json_text(draw(_JSON_TREES))
    depth = draw(st.sampled_from([0, 0, 0, 7, 9, 63, 65, 300, 3000]))
    if depth:
        text = b"[" * depth + text + b"]" * draw(st.sampled_from([0, depth]))
    if draw(st.booleans()):
        text = _splice(draw, text)
    return text


def _splice(draw: st.DrawFn, data: bytes) -> bytes:
    at = draw(st.integers(0, len(data)))
    cut = draw(st.integers(0, min(8, len(data) - at)))
    return data[:at] + draw(st.sampled_from(HOSTILE)) + data[at + cut :]


@st.composite
def _mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed (mode byte kept) with a few edits: truncate, flip, insert, delete, duplicate, splice."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "duplicate", "splice"]))
        if len(data) < 2:
            kind = "insert"
        at = draw(st.integers(1, max(1, len(data) - 1)))
        if kind == "truncate":
            del data[at:]
        elif kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif kind == "duplicate":
            data[at:at] = data[at : at + draw(st.integers(1, 64))]
        else:
            data = bytearray(data[:1] + _splice(draw, bytes(data[1:])))
    return bytes(data)


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


_SEGMENT: Final = st.one_of(
    _json_ish().map(_b64),
    st.binary(max_size=40).map(_b64),
    st.sampled_from([b"", b"=", b"AA==", b"A", b"+/", b"!!", b"e30", b"W10", b"bnVsbA"]),
)


@st.composite
def _compact(draw: st.DrawFn) -> bytes:
    """``a.b.c`` from base64url pieces (of JSON, bytes or odd text), sometimes with the wrong count."""
    count = draw(st.sampled_from([3, 3, 3, 1, 2, 4, 5]))
    return b".".join(draw(st.lists(_SEGMENT, min_size=count, max_size=count)))


@st.composite
def _sd_jwt(draw: st.DrawFn) -> bytes:
    """``<jwt>~<disclosure>~...~<kb-jwt>``: disclosures are base64url JSON arrays, mostly."""
    disclosure = st.one_of(
        st.lists(_JSON_TREES, max_size=4).map(lambda items: _b64(_json_text(items))), _SEGMENT
    )
    pieces = [draw(_compact()), *draw(st.lists(disclosure, max_size=5))]
    return b"~".join(pieces) + b"~" + draw(st.one_of(st.just(b""), _compact()))


_SF_PIECES: Final = st.sampled_from(
    [b"sig1", b"=", b"(", b")", b'"@method"', b'"@target-uri"', b'"content-digest"', b";created=1800000000",
     b";keyid=\"did:key:z6Mk#z6Mk\"", b";alg=\"ed25519\"", b";nonce=\"n\"", b";expires=1800000300",
     b":dGVzdA==:", b":AAAA:", b"?1", b"?0", b"1.5", b"-0.001", b"999999999999999", b"1000000000000000",
     b"tok/en", b"*", b", ", b" ", b"\t", b"\"\\\"\"", b"\"\\x\"", b"@", b"%"]
)  # fmt: skip


@st.composite
def _structured_field(draw: st.DrawFn) -> bytes:
    return b"".join(draw(st.lists(_SF_PIECES, max_size=24)))


@st.composite
def _did_text(draw: st.DrawFn) -> bytes:
    method = draw(st.sampled_from([b"key", b"jwk", b"web", b"bindu", b"KEY", b"", b"x1", b"ke y"]))
    alphabet = st.sampled_from(list(b"abcxyzAZ0189.-_:%") + [ord(c) for c in "/?#=&"])
    ident = bytes(draw(st.lists(alphabet, max_size=60)))
    prefix = draw(st.sampled_from([b"z6Mk", b"z", b"e30", b"eyJ", b"example.com%3A8443", b""]))
    return b"did:" + method + b":" + prefix + ident


@st.composite
def _http(draw: st.DrawFn) -> bytes:
    """Header values and a body joined at SEPARATOR (raw mode) or a header name and value (mode 1)."""
    value = st.one_of(_structured_field(), st.binary(max_size=60))
    pieces = draw(st.lists(value, min_size=1, max_size=4))
    if draw(st.booleans()):
        name = draw(
            st.sampled_from([b"Signature-Input", b"Signature", b"Content-Digest", b"Host", b"Content-Type"])
        )
        pieces = [name, *pieces[:2]]
    return SEPARATOR.join(pieces)


@st.composite
def _lines(draw: st.DrawFn) -> bytes:
    return b"\n".join(draw(st.lists(_json_ish(), min_size=1, max_size=4)))


_GRAMMARS: Final = {
    "json": _json_ish(),
    "compact": _compact(),
    "sd_jwt": _sd_jwt(),
    "structured_field": _structured_field(),
    "did": _did_text(),
    "http": _http(),
    "lines": _lines(),
}


@st.composite
def _pieces(draw: st.DrawFn, grammar: st.SearchStrategy[bytes]) -> bytes:
    """One to three grammar pieces joined at SEPARATOR (the multi-piece modes read them so)."""
    return SEPARATOR.join(draw(st.lists(st.one_of(grammar, _json_ish()), min_size=1, max_size=3)))


def inputs_for(target: Target) -> st.SearchStrategy[bytes]:
    """Every kind of input for one row: mutated seeds, grammar-built inputs, random bytes."""
    mode = st.integers(0, 255).map(lambda m: bytes([m]))
    grammar = _GRAMMARS[target.grammar]
    built = st.tuples(mode, st.one_of(grammar, _pieces(grammar))).map(lambda pair: pair[0] + pair[1])
    return st.one_of(
        _mutated(target.seeds()),
        built,
        st.binary(max_size=512),
        st.sampled_from(target.seeds()),
    )
