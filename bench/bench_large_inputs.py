"""Benchmark: receiving large carts from bytes, and how the cost grows with the number of items.

Run: .venv/bin/python bench/bench_large_inputs.py [--repetitions N]

A CartMandate built from bench/data/cart_contents_2kb.json with 10, 100 and 1,000 display items
(copies of the cart's items, the total adjusted to match) is received from its UTF-8 bytes:

* ours: :func:`mudrika.payments.models.receive_cart` -- strict parsing (duplicate keys, number range,
  depth, lone surrogates), the read-only copy every hash is computed over, and model validation;
* the anchor: ``json.loads`` + ``CartMandate.model_validate`` on the same bytes (no strictness, no
  read-only copy).  Target at 1,000 items: ours <= 3x the anchor's time.

The parse alone (``loads_strict`` vs ``json.loads``) is shown beside it, and µs per item shows whether
the cost grows linearly.  Method: bench/_timing.py (interleaved, median and min–max).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _timing import fmt, measure, ratio, verdict  # noqa: E402
from mudrika.crypto.jcs import loads_strict  # noqa: E402
from mudrika.payments.models import CartMandate, _instant_of_text, receive_cart  # noqa: E402

DATA = ROOT / "bench" / "data" / "cart_contents_2kb.json"
SIZES = (10, 100, 1000)


def cart_bytes(items: int) -> bytes:
    """A CartMandate with ``items`` display items whose amounts add up to the total."""
    contents: dict[str, Any] = json.loads(DATA.read_bytes())
    details = contents["payment_request"]["details"]
    originals = [item for item in details["display_items"] if item["amount"]["value"] > 0]
    chosen = []
    for index in range(items):
        item = copy.deepcopy(originals[index % len(originals)])
        item["label"] = f"{item['label']} #{index}"
        chosen.append(item)
    details["display_items"] = chosen
    total = sum(Decimal(str(item["amount"]["value"])) for item in chosen)
    details["total"]["amount"]["value"] = float(total)
    return json.dumps({"contents": contents, "merchant_authorization": None}, ensure_ascii=False).encode()


def _cold_receive(raw: bytes) -> object:
    """``receive_cart`` with its one cache (timestamp text to instant) emptied first: the bench feeds
    the same bytes again and again, which a server never sees, so nothing may be remembered."""
    _instant_of_text.cache_clear()
    return receive_cart(raw)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=7)
    args = parser.parse_args()

    print("## Large inputs: receiving a cart from bytes (bench/bench_large_inputs.py)\n")
    print(
        "`receive_cart(bytes)` (strict parse + read-only copy + validation) vs `json.loads` + "
        f"`CartMandate.model_validate` on the same bytes. Median (min–max) of {args.repetitions} "
        "interleaved repetitions. Cold: the one cache on this path (timestamp text to instant) is "
        "emptied before every `receive_cart`, since the same bytes are received again and again.\n"
    )
    print(
        "| items | bytes | ours µs | anchor µs | ours ÷ anchor (time) | ours µs/item "
        "| `loads_strict` µs | `json.loads` µs | parse ratio |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    at_largest = None
    for items in SIZES:
        raw = cart_bytes(items)
        received = receive_cart(raw)
        if len(received.model.contents.payment_request.details.display_items) != items:
            raise SystemExit("cart did not round-trip: refusing to benchmark")
        number = max(2, 2000 // items)
        functions: dict[str, Callable[[], object]] = {
            "ours": lambda raw=raw: _cold_receive(raw),
            "anchor": lambda raw=raw: CartMandate.model_validate(json.loads(raw)),
            "strict": lambda raw=raw: loads_strict(raw),
            "loads": lambda raw=raw: json.loads(raw),
        }
        spread = measure(functions, repetitions=args.repetitions, number=number)
        slower = ratio(spread["ours"], spread["anchor"])
        parse = ratio(spread["strict"], spread["loads"])
        per_item = spread["ours"].median / items
        print(
            f"| {items:,} | {len(raw):,} | {fmt(spread['ours'])} | {fmt(spread['anchor'])} | {fmt(slower, 2)} "
            f"| {per_item:.1f} | {fmt(spread['strict'])} | {fmt(spread['loads'])} | {fmt(parse, 2)} |"
        )
        at_largest = slower
    assert at_largest is not None
    print()
    print("| row | ours ÷ anchor (time) | target | verdict |")
    print("|---|---:|---|---|")
    print(
        f"| receive a {SIZES[-1]:,}-item cart from bytes vs `json.loads` + validation | {fmt(at_largest, 2)} "
        f"| ≤ 3× | {verdict(at_largest, 3.0, at_least=False)} |"
    )


if __name__ == "__main__":
    main()
