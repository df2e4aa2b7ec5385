"""Benchmark: RFC 8785 canonicalisation and strict parsing of a realistic ~2 KB AP2 v0.1 CartContents.

Run: .venv/bin/python bench/bench_jcs.py [--rounds N]

Anchors: PyPI ``rfc8785`` (the reference Python implementation; target: ours >= 4x faster) and
``json.dumps(obj, sort_keys=True)`` (not canonical, but the floor for "sorted JSON text"; target: ours
>= 0.6x its speed).  ``loads_strict`` is compared with plain ``json.loads`` on the same bytes.

Method: each function runs in batches of ``number`` calls timed with ``time.perf_counter``; batches of
all functions are interleaved for ``rounds`` rounds and the best batch is reported (the least disturbed
by other processes).  Before timing, every canonical output is checked byte-for-byte against rfc8785.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import rfc8785

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _timing import best_us  # noqa: E402
from mudrika.crypto.jcs import canonicalize, loads_strict, mandate_hash  # noqa: E402

DATA = ROOT / "bench" / "data" / "cart_contents_2kb.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--number", type=int, default=400)
    args = parser.parse_args()

    raw = DATA.read_bytes()
    cart = loads_strict(raw)
    canonical = canonicalize(cart)
    if canonical != rfc8785.dumps(cart):
        raise SystemExit("canonical bytes differ from rfc8785: refusing to benchmark")

    dump = best_us(
        {
            "mudrika canonicalize": lambda: canonicalize(cart),
            "rfc8785.dumps": lambda: rfc8785.dumps(cart),
            "json.dumps(sort_keys=True)": lambda: json.dumps(cart, sort_keys=True),
            "mudrika mandate_hash": lambda: mandate_hash(cart),
        },
        args.rounds,
        args.number,
    )
    load = best_us(
        {"mudrika loads_strict": lambda: loads_strict(raw), "json.loads": lambda: json.loads(raw)},
        args.rounds,
        args.number,
    )

    ours = dump["mudrika canonicalize"]
    print(f"Input: {DATA.relative_to(ROOT)} ({len(raw)} bytes on disk, {len(canonical)} bytes canonical)")
    print(f"Python {sys.version.split()[0]}, best of {args.rounds} rounds x {args.number} calls\n")
    print("| operation | µs/op | time ÷ mudrika canonicalize time |")
    print("|---|---:|---:|")
    for name, us in dump.items():
        print(f"| {name} | {us:.1f} | {us / ours:.2f} |")
    print()
    print(f"speed-up over rfc8785: {dump['rfc8785.dumps'] / ours:.2f}x (target >= 4x)")
    print(
        f"speed relative to json.dumps(sort_keys=True): {dump['json.dumps(sort_keys=True)'] / ours:.2f}x "
        "(target >= 0.6x)"
    )
    print()
    print("| parse | µs/op | ratio to json.loads |")
    print("|---|---:|---:|")
    for name, us in load.items():
        print(f"| {name} | {us:.1f} | {us / load['json.loads']:.2f} |")


if __name__ == "__main__":
    main()
