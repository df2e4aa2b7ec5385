"""Status lookups in a cached 1,000,000-entry Token Status List, against a bare extraction and npm.

What is cached, as a relying party keeps it between checks: the Status List Token was verified once
(signature, ``typ``, ``sub``, time claims) and its ``lst`` decoded into a :class:`StatusList`; what is
timed is only the lookup of one status by index — :meth:`VerifiedStatusList.status_of` (the §8.3
step 6 call a check makes, with its index range check) and the underlying :meth:`StatusList.get`.
The headline is *cold*: every lookup of a batch is a distinct random index (a permutation sample of
the list), so no index is read twice in a batch and the byte array (250 KB at 2 bits) is read all
over.  The floor is the bare Python byte/bit extraction ``(data[i >> 2] >> ((i & 3) << 1)) & 3``
over the same indices, in the same loop; the named anchor is npm ``@sd-jwt/jwt-status-list``
(``StatusList.decompressStatusList`` once, then ``getStatus`` over the same indices, timed inside
node) when node and the package are installed.  Target: at least 1,000,000 lookups/s for
``status_of`` (≤ 1 µs per lookup, the Python loop that calls it included).

Run: .venv/bin/python bench/bench_statuslist.py
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "src"))
sys.path.insert(0, str(REPO_ROOT / "bench"))

from _timing import Spread, fmt, measure, ratio, verdict  # noqa: E402
from mudrika.crypto.jose import TrustedKey  # noqa: E402
from mudrika.crypto.keys import KeyPair, KeyType  # noqa: E402
from mudrika.crypto.statuslist import (  # noqa: E402
    StatusList,
    sign_status_list_token,
    verify_status_list_token,
)

SIZE = 1_000_000
BITS = 2
REVOKED_SHARE = 0.01
LOOKUPS = 200_000
REPEATS = 7
TARGET_PER_SECOND = 1_000_000
URI = "https://issuer.example/statuslists/1"
NODE_LIBRARY = (
    REPO_ROOT / "tests" / "node" / "node_modules" / "@sd-jwt" / "jwt-status-list" / "dist" / "index.js"
)


def _list(rng: random.Random) -> StatusList:
    """1,000,000 entries of 2 bits, 1 % of them INVALID (1) or SUSPENDED (2): what an issuer publishes."""
    status_list = StatusList(SIZE, BITS)
    for index in rng.sample(range(SIZE), int(SIZE * REVOKED_SHARE)):
        status_list.set(index, rng.choice((1, 2)))
    return status_list


def _node_anchor(lst: str, indices: list[int], expected_sum: int) -> Spread | None:
    """ns per lookup of @sd-jwt/jwt-status-list's getStatus, one sample per repetition; None without node."""
    node = shutil.which("node")
    if node is None or not NODE_LIBRARY.exists():
        return None
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "input.json"
        data.write_text(
            json.dumps(
                {
                    "lst": lst,
                    "bits": BITS,
                    "indices": indices,
                    "repetitions": REPEATS,
                    "expected_sum": expected_sum,
                }
            ),
            encoding="utf-8",
        )
        proc = subprocess.run(
            [node, str(REPO_ROOT / "bench" / "statuslist_node.mjs"), str(NODE_LIBRARY), str(data)],
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
    return Spread.of([ns / 1000 for ns in json.loads(proc.stdout)["ns_per_lookup"]])


def main() -> None:
    rng = random.Random(20_250_101)
    issuer = KeyPair.generate(KeyType.ED25519)
    now = int(time.time())
    token = sign_status_list_token(_list(rng), key=issuer, uri=URI, iat=now - 60, ttl=3600)
    # Cached: verified once, the list decoded once.
    verified = verify_status_list_token(
        token, key=TrustedKey.for_key(issuer.public_key), uri=URI, issuer=None, now=now, max_age=None
    )
    status_list = verified.status_list
    data = status_list.to_bytes()
    cold = rng.sample(range(SIZE), LOOKUPS)
    hot = [cold[0]] * LOOKUPS
    expected = sum(status_list.get(index) for index in cold)
    # The floor reads the very bytes the list holds (checked to agree before timing).
    assert sum((data[i >> 2] >> ((i & 3) << 1)) & 3 for i in cold) == expected

    def status_of(indices: list[int]) -> None:
        lookup = verified.status_of
        for index in indices:
            lookup(index)

    def get(indices: list[int]) -> None:
        lookup = status_list.get
        for index in indices:
            lookup(index)

    def floor(indices: list[int]) -> None:
        for i in indices:
            (data[i >> 2] >> ((i & 3) << 1)) & 3

    per_batch = measure(
        {
            "status_of": lambda: status_of(cold),
            "get": lambda: get(cold),
            "floor": lambda: floor(cold),
            "status_of hot": lambda: status_of(hot),
        },
        repetitions=REPEATS,
        number=1,
    )
    per_lookup = {name: _scale(spread, 1 / LOOKUPS) for name, spread in per_batch.items()}
    rate = _scale(per_lookup["status_of"], 1.0, invert=True)
    node = _node_anchor(status_list.encode(), cold, expected)

    print("## Token Status List lookups (bench/bench_statuslist.py)\n")
    print(
        f"A Status List Token of {SIZE:,} entries × {BITS} bits ({REVOKED_SHARE:.0%} INVALID/SUSPENDED), "
        "**cached**: verified once and its `lst` decoded once into a `StatusList` (the token is "
        f"{len(token):,} bytes, the list {len(data):,} bytes). Timed: one status by index. *Cold* = "
        f"{LOOKUPS:,} distinct random indices per batch; *hot* = one index {LOOKUPS:,} times. Median "
        f"(min–max) of {REPEATS} interleaved batches, per lookup, the Python loop that calls it included. "
        "*floor* = the bare byte/bit extraction `(data[i >> 2] >> ((i & 3) << 1)) & 3` in the same loop; "
        "*npm* = `@sd-jwt/jwt-status-list` `getStatus` over the same indices after one "
        f"`decompressStatusList`, timed inside node. Target: ≥ {TARGET_PER_SECOND:,} `status_of` lookups/s.\n"
    )
    print("| lookup | µs per lookup | lookups/s | × floor time | target | verdict |")
    print("|---|---:|---:|---:|---|---|")
    floor_time = per_lookup["floor"]
    rows = [
        ("`VerifiedStatusList.status_of`, cold", "status_of", True),
        ("`StatusList.get`, cold", "get", False),
        ("`VerifiedStatusList.status_of`, hot", "status_of hot", False),
        ("floor: bare extraction, cold", "floor", False),
    ]
    for label, name, headline in rows:
        spread = per_lookup[name]
        lookups_per_second = _scale(spread, 1.0, invert=True)
        slower = ratio(spread, floor_time)
        target = f"≥ {TARGET_PER_SECOND:,}/s" if headline else ""
        result = verdict(rate, TARGET_PER_SECOND) if headline else ""
        print(
            f"| {label} | {fmt(spread, 3)} | {fmt(lookups_per_second, 0)} | {fmt(slower, 2)} | {target} | {result} |"
        )
    if node is None:
        print(
            "| npm `@sd-jwt/jwt-status-list` `getStatus`, cold | not run (node or the package missing) | | | | |"
        )
    else:
        print(
            f"| npm `@sd-jwt/jwt-status-list` `getStatus`, cold | {fmt(node, 3)} | "
            f"{fmt(_scale(node, 1.0, invert=True), 0)} | {fmt(ratio(node, floor_time), 2)} |  |  |"
        )


def _scale(spread: Spread, factor: float, *, invert: bool = False) -> Spread:
    """The same samples times ``factor`` (µs per batch → per lookup), or lookups/s from µs per lookup."""
    values = [1e6 / value if invert else value * factor for value in spread.samples]
    return Spread.of(values)


if __name__ == "__main__":
    main()
