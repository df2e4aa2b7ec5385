"""Our RFC 8785 bytes against npm ``canonicalize`` (JSON.parse + ECMAScript's own number formatting).

Node is the natural oracle for §3.2.2.3: RFC 8785 defines number text as ECMAScript's
``Number.prototype.toString``, which node runs natively.  The whole corpus goes to node in one call.

Where npm ``canonicalize`` behaves differently from RFC 8785 + I-JSON, the difference is asserted here
explicitly (see ``test_documented_differences``): it is a plain serialiser over ``JSON.parse``, so it
inherits JSON.parse's leniency (duplicate keys: last wins; integers beyond 2^53 silently rounded) and
JSON.stringify's escaping of lone surrogates.  ``-0`` is *not* a difference: ``JSON.stringify(-0)`` is
``"0"``, as RFC 8785 requires.
"""

from __future__ import annotations

import json
import math
import random
import struct
import subprocess
from typing import Any

import pytest

from mudrika.crypto.jcs import canonicalize, loads_strict
from mudrika.errors import InvalidInput
from tests._support.paths import NODE_DIR, node_peer, vectors

pytestmark = pytest.mark.interop

_NODE_SCRIPT = r"""
const canonicalize = require(require("path").join(process.argv[1], "canonicalize"));
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const results = JSON.parse(input).map((text) => {
    try {
      return { hex: Buffer.from(canonicalize(JSON.parse(text)), "utf8").toString("hex") };
    } catch (e) {
      return { error: String(e.message) };
    }
  });
  process.stdout.write(JSON.stringify(results));
});
"""

_KEY_CHARS = 'aAzZ09_-é€\ufb33\ue000\uffff\U0001f600\U0001f602\U00010000\U0010fffd\x00\x1f\x7f\n\t"\\/\u2028ß'


def _node_canonicalize(texts: list[str]) -> list[dict[str, str]]:
    modules = node_peer()
    proc = subprocess.run(
        ["node", "-e", _NODE_SCRIPT, str(modules)],
        input=json.dumps(texts).encode(),
        capture_output=True,
        cwd=NODE_DIR,
        timeout=120,
        check=True,
    )
    results: list[dict[str, str]] = json.loads(proc.stdout)
    assert len(results) == len(texts)
    return results


def _random_number(rng: random.Random) -> float | int:
    kind = rng.randrange(5)
    if kind == 0:  # any finite double, from its bits
        while True:
            (x,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
            if math.isfinite(x):
                return float(x)
    if kind == 1:  # decimal-looking values across magnitudes
        return rng.randint(-(10**6), 10**6) * 10.0 ** rng.randint(-30, 30)
    if kind == 2:  # integers within the I-JSON range
        return rng.randint(-(2**53 - 1), 2**53 - 1)
    if kind == 3:  # near the exponent-form thresholds 1e21 and 1e-7
        return rng.choice([1e21, 1e-7, 1e-6]) * rng.uniform(0.5, 2.0)
    return rng.choice([0.0, -0.0, 0.1 + 0.2, 29.99, 5e-324, 2.0**53, 1e16, 4.0, -24.74])


def _random_key(rng: random.Random) -> str:
    return "".join(rng.choice(_KEY_CHARS) for _ in range(rng.randint(0, 4)))


def _random_value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.45:
        scalar = rng.randrange(3)
        if scalar == 0:
            return _random_number(rng)
        if scalar == 1:
            return _random_key(rng) * 2
        return rng.choice([True, False, None])
    if roll < 0.7:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_random_key(rng): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 6))}


def _corpus() -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted(vectors("jcs", "input").glob("*.json"))]
    rng = random.Random(8785)
    for i in range(400):
        doc = {_random_key(rng): _random_value(rng, 0) for _ in range(rng.randint(1, 8))}
        texts.append(json.dumps(doc, ensure_ascii=bool(i % 2)))
    texts.append(json.dumps([_random_number(rng) for _ in range(2000)]))
    texts.append('{"__proto__": 1, "toJSON": "not a function", "b": [-0, -0.0, 1e21, 1e-7]}')
    return texts


def test_corpus_matches_npm_canonicalize() -> None:
    texts = _corpus()
    results = _node_canonicalize(texts)
    mismatches = []
    for text, result in zip(texts, results, strict=True):
        assert "hex" in result, result
        ours = canonicalize(loads_strict(text.encode()))
        if ours != bytes.fromhex(result["hex"]):
            mismatches.append(text[:200])
    assert mismatches == []
    assert len(texts) > 400


def test_appendix_b_style_numbers_match_ecmascript() -> None:
    rng = random.Random(12)
    numbers = [_random_number(rng) for _ in range(3000)]
    numbers += [float(2**e) for e in range(-1074, 1024, 7)] + [10.0**e for e in range(-323, 309)]
    text = json.dumps(numbers)
    (result,) = _node_canonicalize([text])
    assert canonicalize(loads_strict(text.encode())) == bytes.fromhex(result["hex"])


def _node_text(result: dict[str, str]) -> str:
    return bytes.fromhex(result["hex"]).decode("utf-8")


def test_documented_differences() -> None:
    cases = ["-0", "[-0.0]", "[9007199254740993]", '{"a": 1, "a": 2}', '["\\ud800"]', "[1e400]"]
    node = _node_canonicalize(cases)

    # -0: no difference, both print "0" (RFC 8785 §3.2.2.3).
    assert _node_text(node[0]) == "0" == canonicalize(loads_strict(b"-0")).decode()
    assert _node_text(node[1]) == "[0]" == canonicalize(loads_strict(b"[-0.0]")).decode()

    # Integers beyond 2^53-1: node silently rounds; we refuse (I-JSON, RFC 7493 §2.2).
    assert _node_text(node[2]) == "[9007199254740992]"
    with pytest.raises(InvalidInput) as exc:
        loads_strict(cases[2])
    assert exc.value.code == "integer_out_of_range"

    # Duplicate keys: node keeps the last; we refuse.
    assert _node_text(node[3]) == '{"a":2}'
    with pytest.raises(InvalidInput) as exc:
        loads_strict(cases[3])
    assert exc.value.code == "duplicate_key"

    # Lone surrogates: node escapes them (well-formed JSON.stringify); we refuse.
    assert _node_text(node[4]) == '["\\ud800"]'
    with pytest.raises(InvalidInput) as exc:
        loads_strict(cases[4])
    assert exc.value.code == "lone_surrogate"

    # Overflow to infinity: both refuse.
    assert "Infinity" in node[5]["error"]
    with pytest.raises(InvalidInput) as exc:
        loads_strict(cases[5])
    assert exc.value.code == "non_finite_number"
