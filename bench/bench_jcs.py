"""Benchmark: the AP2 mandate hash (RFC 8785 + SHA-256) and strict parsing of a ~2 KB CartContents.

Run: .venv/bin/python bench/bench_jcs.py [--repetitions N] [--number N]

Like for like: every hashing row does the same work end to end -- serialise the parsed cart to UTF-8
bytes and SHA-256 them -- so the rows differ only in the serialiser:

* ours: :func:`mudrika.crypto.jcs.canonical_sha256` (strict pre-pass, then orjson; RFC 8785 bytes);
* the reference: PyPI ``rfc8785.dumps`` + SHA-256 (target: ours >= 8x faster);
* the floor: ``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` + UTF-8 +
  SHA-256 -- the same separators and escaping RFC 8785 uses and the least a sorted-JSON hash costs
  with the standard library; it is *not* canonical (this cart's ``4.0`` stays ``4.0``), so its bytes
  are not compared (target: ours >= 1.2x its speed);
* informative: our ``json``-encoder fallback (used when orjson is missing) and the pure-Python general
  path, each + SHA-256.

Before timing, every path's bytes are checked to equal rfc8785's.  ``loads_strict`` is compared with
plain ``json.loads`` on the same bytes.  Method: bench/_timing.py (interleaved batches, median and
min–max, ratios per repetition).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rfc8785

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _timing import fmt, measure, ratio, verdict  # noqa: E402
from mudrika.crypto.jcs import canonical_sha256, loads_strict  # noqa: E402
from mudrika.crypto.jcs._serialize import DEFAULT_ENCODER, ENCODERS, serialize_with  # noqa: E402

DATA = ROOT / "bench" / "data" / "cart_contents_2kb.json"


def _floor(cart: Any) -> bytes:
    text = json.dumps(cart, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).digest()


def _with(encoder: Any) -> Callable[[Any], bytes]:
    def digest(cart: Any) -> bytes:
        return hashlib.sha256(serialize_with(encoder, cart)).digest()

    return digest


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=9)
    parser.add_argument("--number", type=int, default=1000)
    args = parser.parse_args()

    raw = DATA.read_bytes()
    cart = loads_strict(raw)
    expected = rfc8785.dumps(cart)
    for encoder in (*ENCODERS, None):
        if serialize_with(encoder, cart) != expected:
            raise SystemExit(f"canonical bytes of path {encoder} differ from rfc8785: refusing to benchmark")
    digest = hashlib.sha256(expected).digest()
    if canonical_sha256(cart) != digest:
        raise SystemExit("hashes differ: refusing to benchmark")

    functions: dict[str, Callable[[], object]] = {
        "ours": lambda: canonical_sha256(cart),
        "rfc8785": lambda: hashlib.sha256(rfc8785.dumps(cart)).digest(),
        "floor": lambda: _floor(cart),
        "json fallback": lambda: _with("json")(cart),
        "general": lambda: _with(None)(cart),
    }
    numbers = {name: args.number // (10 if name in ("rfc8785", "general") else 1) for name in functions}
    hashed = measure(functions, repetitions=args.repetitions, number=numbers)
    parsed = measure(
        {"ours": lambda: loads_strict(raw), "json.loads": lambda: json.loads(raw)},
        repetitions=args.repetitions,
        number=args.number,
    )

    vs_reference = ratio(hashed["rfc8785"], hashed["ours"])
    vs_floor = ratio(hashed["floor"], hashed["ours"])
    print("## RFC 8785 mandate hash and strict parsing (bench/bench_jcs.py)\n")
    print(
        f"Input: {DATA.relative_to(ROOT)} ({len(raw)} bytes on disk, {len(expected)} bytes canonical). "
        f"Every row serialises the parsed cart and SHA-256es the bytes; all paths produce rfc8785's bytes "
        f"(checked before timing). Median (min–max) of {args.repetitions} interleaved repetitions; "
        f"ours uses the `{DEFAULT_ENCODER}` encoder.\n"
    )
    print("| serialise + SHA-256 | µs/op | ours is × faster | target | verdict |")
    print("|---|---:|---:|---|---|")
    print(f"| mudrika `canonical_sha256` | {fmt(hashed['ours'])} | | | |")
    print(
        f"| `rfc8785.dumps` + SHA-256 (reference) | {fmt(hashed['rfc8785'])} | {fmt(vs_reference, 2)} "
        f"| ≥ 8× | {verdict(vs_reference, 8.0)} |"
    )
    print(
        '| floor: `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)` + SHA-256 '
        f"| {fmt(hashed['floor'])} | {fmt(vs_floor, 2)} | ≥ 1.2× | {verdict(vs_floor, 1.2)} |"
    )
    for name, label in (
        ("json fallback", "mudrika with the `json` encoder (fallback without orjson)"),
        ("general", "mudrika general path alone (pure Python)"),
    ):
        print(
            f"| {label} | {fmt(hashed[name])} | {fmt(ratio(hashed[name], hashed['ours']), 2)} "
            "| (informative) | |"
        )
    print()
    vs_loads = ratio(parsed["ours"], parsed["json.loads"])
    print("| parse the same bytes | µs/op | time ÷ `json.loads` time |")
    print("|---|---:|---:|")
    print(f"| mudrika `loads_strict` | {fmt(parsed['ours'])} | {fmt(vs_loads, 2)} |")
    print(f"| `json.loads` | {fmt(parsed['json.loads'])} | 1.00 |")


if __name__ == "__main__":
    main()
