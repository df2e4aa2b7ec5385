"""Benchmark: the AP2 mandate hash (RFC 8785 + SHA-256) on four document shapes, and strict parsing.

Run: .venv/bin/python bench/bench_jcs.py [--repetitions N] [--scale X]

Shapes (generated here from seeded RNGs, nothing but the cart read from disk): the ~2 KB
CartContents of bench/data/cart_contents_2kb.json with its ids, labels and amounts varied; a ~100 KB
nested order document (objects five levels deep, strings with non-ASCII text, ints, prices, a few
integral floats); an array of ordinary floats (measurements with 1 to 6 decimals); and an array of
floats with wide exponents (mantissa times 10^-300 .. 10^300, the shape that used to send the whole
document to the pure-Python path).

Cold is the headline: every timed call hashes a document no call has touched before.  All inputs are
generated before timing, one distinct document per call (seed = call number), and each row consumes
its own list of them, so no row hashes a document another row has just pulled into the CPU cache.
The canonicaliser keeps no cache of its own (nothing to clear); what it can use is what the strict
parser recorded about the document, which is part of the received value, not a cache.

Rows, all serialise + SHA-256 of the same document:

* ours, received: ``canonical_sha256`` of ``loads_received(raw).frozen`` -- how mudrika holds a
  received AP2 object (``payments.models.receive``), read-only, encoder- or orjson-ready when the
  parser vouched for it (the headline; the parse itself is timed in the parse rows);
* ours, from ``loads_strict``: the same document as plain dict/list values, and ours, built by code:
  plain values made by Python code without any parse -- both through the value walk;
* the reference: PyPI ``rfc8785.dumps`` + SHA-256 (targets: ours >= 20x on the cart and the nested
  document, >= 5x on the wide-exponent array);
* the floor: ``orjson.dumps(OPT_SORT_KEYS | OPT_STRICT_INTEGER)`` + SHA-256 -- the compiled encoder
  alone, which is not RFC 8785 (``4.0`` stays ``4.0``, ``1e-05``-style numbers) and the least a
  sorted-JSON hash costs (target: ours >= 0.6x its speed, on every shape);
* informative: the floor's orjson call on the received copy itself (the read-only copy's containers sit
  apart from the strings and numbers they share with the parse, which costs cache misses cold), and
  the ``json``-encoder fallback (used when orjson is missing) on the received value.

Memory: tracemalloc's peak during one hash (median over 9 distinct documents) against the encoder's own
peak on the same document (target: ours <= 1.5x).  Before timing, every path's bytes are checked to
equal rfc8785's.  Method: bench/_timing.py (interleaved batches, median and min–max, ratios per
repetition).  Single-threaded throughout: µs/op is per core; no signature is verified, so no OpenSSL
ceiling applies.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import rfc8785

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _timing import fmt, measure, ratio, verdict  # noqa: E402
from mudrika.crypto.frozenjson import (  # noqa: E402
    EncoderReadyDict,
    EncoderReadyList,
    OrjsonReadyDict,
    OrjsonReadyList,
    freeze,
)
from mudrika.crypto.jcs import canonical_sha256, loads_received, loads_strict  # noqa: E402
from mudrika.crypto.jcs._serialize import serialize_with  # noqa: E402

CART = ROOT / "bench" / "data" / "cart_contents_2kb.json"
_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER

# --------------------------------------------------------------------------------- document shapes


def _cart(rng: random.Random) -> Any:
    """The bench cart with a fresh id, labels and amounts (one in five amounts integral, like 4.0)."""
    cart = json.loads(CART.read_bytes())
    cart["id"] = f"cart_{rng.getrandbits(64):016x}"

    def amounts(node: Any) -> None:
        if isinstance(node, dict):
            if "currency" in node and "value" in node:
                integral = rng.random() < 0.2
                node["value"] = float(rng.randint(1, 40)) if integral else round(rng.uniform(1, 400), 2)
            if "label" in node and isinstance(node["label"], str):
                node["label"] = f"{node['label']} #{rng.randint(1, 99_999)}"
            for child in node.values():
                amounts(child)
        elif isinstance(node, list):
            for child in node:
                amounts(child)

    amounts(cart)
    return cart


_WORDS = ["Grün", "naïve", "façade", "zwölf", "œuvre", "cart", "line", "item", "blue", "size", "—", "×3"]


def _nested(rng: random.Random) -> Any:
    """A ~100 KB order export: 165 orders, each with lines, addresses and tags, five levels deep."""

    def words(n: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(n))

    orders = []
    for number in range(165):
        lines = [
            {
                "sku": f"SKU-{rng.randint(0, 10**8):08d}",
                "quantity": rng.randint(1, 12),
                "unit_price": {"currency": "EUR", "value": round(rng.uniform(0.5, 900), 2)},
                "weight_kg": float(rng.randint(1, 9)) if rng.random() < 0.3 else round(rng.uniform(0.1, 30), 3),
                "attributes": {"colour": words(1), "size": rng.choice(["S", "M", "L", "XL"]), "gift": rng.random() < 0.1},
                "tags": [words(1) for _ in range(rng.randint(0, 3))],
            }
            for _ in range(rng.randint(1, 4))
        ]  # fmt: skip
        orders.append(
            {
                "id": f"order_{number:05d}_{rng.getrandbits(32):08x}",
                "created": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
                "customer": {"name": words(2), "address": {"city": words(1), "zip": f"{rng.randint(10000, 99999)}"}},
                "lines": lines,
                "note": words(rng.randint(3, 8)) if rng.random() < 0.5 else None,
                "paid": rng.random() < 0.8,
            }
        )  # fmt: skip
    return {"export": {"version": 3, "orders": orders, "count": len(orders)}}


def _ordinary_floats(rng: random.Random) -> Any:
    return [round(rng.gauss(100.0, 30.0), rng.randint(1, 6)) for _ in range(2000)]


def _wide_floats(rng: random.Random) -> Any:
    return [rng.uniform(1, 10) * 10.0 ** rng.randint(-300, 300) * rng.choice((1, -1)) for _ in range(2000)]


@dataclass(frozen=True)
class Shape:
    name: str
    make: Callable[[random.Random], Any]
    number: int  # calls per timed batch
    rfc_target: float | None  # the target against rfc8785, or None (informative there)


SHAPES = [
    Shape("cart 2 KB", _cart, 100, 20.0),
    Shape("nested 100 KB", _nested, 3, 20.0),
    Shape("ordinary floats ×2000", _ordinary_floats, 20, None),
    Shape("wide-exponent floats ×2000", _wide_floats, 6, 5.0),
]
FLOOR_TARGET = 0.6
MEMORY_TARGET = 1.5

# --------------------------------------------------------------------------------- measuring


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _consume(values: list[Any], work: Callable[[Any], object]) -> Callable[[], object]:
    """A zero-argument call that hands ``work`` the next unused value (cold: one new value per call)."""
    supply: Iterator[Any] = iter(values)
    return lambda: work(next(supply))


def _peak(work: Callable[[Any], object], value: Any) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    work(value)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def _hash_rows(shape: Shape, repetitions: int, scale: float) -> tuple[list[str], list[str]]:
    number = max(1, round(shape.number * scale))
    slow = max(1, number // 10) if shape.name.startswith("cart") else number
    calls = repetitions * number
    raws = [json.dumps(shape.make(random.Random(seed))).encode() for seed in range(calls)]

    received = [loads_received(raw).frozen for raw in raws]
    ready = sum(type(value) in (EncoderReadyDict, EncoderReadyList) for value in received)
    orjson_ready = sum(type(value) in (OrjsonReadyDict, OrjsonReadyList) for value in received)
    for value in received[:5]:  # every path gives rfc8785's bytes, before anything is timed
        expected = rfc8785.dumps(value)
        for encoder in ("orjson", "json", None):
            if serialize_with(encoder, value) != expected:
                raise SystemExit(f"{shape.name}: path {encoder} differs from rfc8785; refusing to benchmark")
    built = [shape.make(random.Random(seed)) for seed in range(calls)]
    if canonical_sha256(built[0]) != _digest(rfc8785.dumps(built[0])):
        raise SystemExit(f"{shape.name}: built value hashes differently; refusing to benchmark")

    def parsed(count: int) -> list[Any]:
        return [loads_strict(raw) for raw in raws[:count]]

    functions: dict[str, Callable[[], object]] = {
        "received": _consume(received, canonical_sha256),
        "loads_strict": _consume(parsed(calls), canonical_sha256),
        "built": _consume(built, canonical_sha256),
        "rfc8785": _consume(parsed(repetitions * slow), lambda v: _digest(rfc8785.dumps(v))),
        "floor": _consume(parsed(calls), lambda v: _digest(orjson.dumps(v, option=_SORTED))),
        "floor on received": _consume(
            [loads_received(raw).frozen for raw in raws], lambda v: _digest(orjson.dumps(v, option=_SORTED))
        ),
        "json fallback": _consume(
            [loads_received(raw).frozen for raw in raws], lambda v: _digest(serialize_with("json", v))
        ),
    }
    numbers = {name: slow if name == "rfc8785" else number for name in functions}
    timed = measure(functions, repetitions=repetitions, number=numbers)
    del functions, received, built

    vs_reference = ratio(timed["rfc8785"], timed["received"])
    vs_floor = ratio(timed["floor"], timed["received"])
    size = len(rfc8785.dumps(json.loads(raws[0])))
    label = (
        f"{shape.name} ({size:,} B canonical; of {calls} received copies {ready} encoder-ready, "
        f"{orjson_ready} orjson-ready)"
    )
    rows = [
        f"| **{label}**: mudrika `canonical_sha256`, received copy (cold, headline) | {fmt(timed['received'])} | | | |"
    ]
    rfc_target = f"≥ {shape.rfc_target:g}×" if shape.rfc_target else "(informative)"
    rfc_verdict = verdict(vs_reference, shape.rfc_target) if shape.rfc_target else ""
    rows.append(
        f"| {shape.name}: `rfc8785.dumps` + SHA-256 (reference) | {fmt(timed['rfc8785'])} "
        f"| {fmt(vs_reference, 2)} | {rfc_target} | {rfc_verdict} |"
    )
    rows.append(
        f"| {shape.name}: floor, orjson sorted keys + SHA-256 | {fmt(timed['floor'])} "
        f"| {fmt(vs_floor, 2)} | ≥ {FLOOR_TARGET}× | {verdict(vs_floor, FLOOR_TARGET)} |"
    )
    for name, text in (
        ("floor on received", "the floor's orjson + SHA-256 on the received copy itself (not canonical)"),
        ("loads_strict", "mudrika, plain value from `loads_strict` (cold)"),
        ("built", "mudrika, plain value built by code (cold)"),
        ("json fallback", "mudrika with the `json` encoder (no orjson), received copy (cold)"),
    ):
        rows.append(
            f"| {shape.name}: {text} | {fmt(timed[name])} | {fmt(ratio(timed['rfc8785'], timed[name]), 2)} × rfc8785, "
            f"{fmt(ratio(timed['floor'], timed[name]), 2)} × floor | (informative) | |"
        )

    # Peak memory of one hash, ours on the received copy against orjson's own on the same document.
    samples = [(loads_received(raw).frozen, loads_strict(raw)) for raw in raws[:9]]
    _peak(canonical_sha256, samples[0][0])  # first call outside: lazy imports and caches of Python itself
    ours = statistics.median(_peak(canonical_sha256, r) for r, _ in samples)
    theirs = statistics.median(
        _peak(lambda v: _digest(orjson.dumps(v, option=_SORTED)), p) for _, p in samples
    )
    memory_ratio = ours / theirs
    memory = [
        f"| {shape.name}: peak memory of one hash | {ours:,.0f} | {theirs:,.0f} | {memory_ratio:.2f} | ≤ {MEMORY_TARGET}× "
        f"| {'met' if memory_ratio <= MEMORY_TARGET else '**not met**'} |"
    ]
    return rows, memory


def _parse_rows(repetitions: int, scale: float) -> list[str]:
    """Strict parsing (cold: a distinct text per call) of every shape, and receive-and-hash with and
    without the readiness facts (what the received copy's fast hash costs at receipt)."""
    rows = []
    for shape in SHAPES:
        number = max(1, round(shape.number * scale))
        calls = repetitions * number
        raws = {
            name: [json.dumps(shape.make(random.Random(seed))).encode() for seed in range(calls)]
            for name in (
                "json.loads",
                "loads_strict",
                "loads_received",
                "freeze",
                "receive+hash",
                "without facts",
            )
        }
        parsed = measure(
            {
                "json.loads": _consume(raws["json.loads"], json.loads),
                "loads_strict": _consume(raws["loads_strict"], loads_strict),
                "loads_received": _consume(raws["loads_received"], loads_received),
                "freeze": _consume(raws["freeze"], lambda raw: freeze(loads_strict(raw), max_depth=64)),
                "receive+hash": _consume(
                    raws["receive+hash"], lambda raw: canonical_sha256(loads_received(raw).frozen)
                ),
                "without facts": _consume(
                    raws["without facts"],
                    lambda raw: canonical_sha256(freeze(loads_strict(raw), max_depth=64)),
                ),
            },
            repetitions=repetitions,
            number=number,
        )
        base = parsed["json.loads"]
        for name, text in (
            ("loads_strict", "mudrika `loads_strict`"),
            ("freeze", "`loads_strict` + `freeze` (the read-only copy, without readiness facts)"),
            ("loads_received", "mudrika `loads_received` (strict parse, facts, read-only copy)"),
            ("without facts", "parse, freeze and hash, without readiness facts (value walk)"),
            (
                "receive+hash",
                "parse, freeze and hash with `loads_received` (ready copy, when the facts allow)",
            ),
        ):
            rows.append(
                f"| {shape.name}: {text} | {fmt(parsed[name])} | {fmt(ratio(parsed[name], base), 2)} |"
            )
        rows.append(f"| {shape.name}: `json.loads` | {fmt(base)} | 1.00 |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=9)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every shape's calls per batch")
    args = parser.parse_args()

    hash_rows: list[str] = []
    memory_rows: list[str] = []
    for shape in SHAPES:
        rows, memory = _hash_rows(shape, args.repetitions, args.scale)
        hash_rows += rows
        memory_rows += memory
    parse_rows = _parse_rows(args.repetitions, args.scale)

    print("## RFC 8785 mandate hash and strict parsing (bench/bench_jcs.py)\n")
    print(
        "Every hashing row serialises one document to RFC 8785 bytes and SHA-256es them; every path's bytes "
        "equal rfc8785's (checked before timing). **Cold throughout**: each call gets a document no call has "
        "touched, generated before timing from its own seed (the shapes and the generator are described in "
        "bench/bench_jcs.py); the canonicaliser has no cache to clear. The headline row of each shape is the "
        "received copy (`loads_received(raw).frozen`, how `payments.receive` holds an AP2 object): when the "
        "strict parser found the document encoder-ready, it goes to orjson with no Python pre-pass. A "
        "document with floats outside the shortest-form range (the wide floats) is orjson-ready instead: "
        "the read-only copy names, per container, the floats orjson writes differently from RFC 8785 (its "
        "integral floats, and the magnitude bands a probe of the installed orjson found, once per process, "
        "before timing), and hashing encodes a shallow copy of such a container with those floats patched; "
        "nothing searches the output. Plain values (from `loads_strict`, or built by code) always take the "
        "value walk. The ratio column is ours × faster than the "
        f"anchor (median (min–max) of {args.repetitions} interleaved repetitions, per repetition). µs/op is "
        "single-threaded, i.e. per core; no signature is verified, so no OpenSSL ceiling applies.\n"
    )
    print("| row | µs/op | ours × faster | target | verdict |")
    print("|---|---:|---:|---|---|")
    print("\n".join(hash_rows))
    print()
    print(
        "Peak memory of one hash (tracemalloc, bytes, median of 9 distinct documents): ours on the received "
        "copy against orjson with sorted keys on the same document.\n"
    )
    print("| shape | ours peak (B) | encoder's own peak (B) | ratio | target | verdict |")
    print("|---|---:|---:|---:|---|---|")
    print("\n".join(memory_rows))
    print()
    print(
        "Strict parsing, cold (a distinct text per call). The readiness facts are recorded while parsing, so "
        "`loads_received` carries the cost the hash no longer pays; the last two rows of each shape are "
        "the whole receive-and-hash with and without them.\n"
    )
    print("| parse the same bytes | µs/op | time ÷ `json.loads` time |")
    print("|---|---:|---:|")
    print("\n".join(parse_rows))


if __name__ == "__main__":
    main()
