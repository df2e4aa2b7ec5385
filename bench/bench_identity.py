"""Identity benchmarks: did:key resolution ours vs didkit (like for like), cache hits/s, provisioning.

Run: ``.venv/bin/python bench/bench_identity.py``.  Prints markdown tables on stdout.

Like for like (bench/_timing.py: interleaved repetitions, median and min–max, ratios per repetition):

* **cold (the headline)**: distinct did:key DIDs (fresh Ed25519 and P-256 keys; ``DIDS_PER_BATCH`` per
  repetition, all generated before timing), each resolved once by each side:
  ``await DIDResolver(cache_size=0).aresolve(did)`` (parse the DID, decode and check the key --
  for P-256 that the compressed point is on the curve, by decompressing it --, build the document; the
  Ed25519 X25519 ``keyAgreement`` key is checked but only derived when read) against
  ``await didkit.resolve_did(did, "{}")`` on the same DIDs in the same order, both awaited call after
  call on one event loop.  Caches of ours: the resolver's result cache is off (``cache_size=0``); the
  DID-parse LRU is cleared before the run and never hit (every DID is parsed once); nothing else of
  ours is keyed by the DID or the key.  didkit's answer is a JSON string nobody has parsed yet, so
  the anchor is favoured.  Targets: ours >= 4x didkit's speed for Ed25519, >= 2.5x for P-256.
* **warm** rows, labelled so: both behind the *same* ``DIDResolver`` cache (a cache hit, measuring
  the cache), and resolver cache hits per second (target >= 1,000,000/s).
* **provisioning** one agent per key type (informative).

did:key resolution verifies no signature, so no OpenSSL verify ceiling applies; the P-256 row cites
what OpenSSL's point decompression (the on-curve check every correct resolver must make) costs alone.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import ec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _ceiling import per_core_cell  # noqa: E402
from _timing import Spread, fmt, measure, measure_async, ratio, verdict  # noqa: E402
from mudrika.crypto.keys import KeyPair, KeyType, PublicKey  # noqa: E402
from mudrika.identity.did import parse_cache_clear  # noqa: E402
from mudrika.identity.methods import key as did_key  # noqa: E402
from mudrika.identity.provision import provision  # noqa: E402
from mudrika.identity.resolver import DidkitDriver, DIDResolver  # noqa: E402

REPETITIONS = 7


def _didkit_available() -> bool:
    try:
        import didkit  # noqa: F401
    except ImportError:
        return False
    return True


DIDS_PER_BATCH = 5000


def distinct_dids(kind: str, count: int) -> list[str]:
    """``count`` did:key DIDs of new keys of ``kind`` (generated before any timing)."""
    return [did_key.create(KeyPair.generate(kind).public_key) for _ in range(count)]


def resolution_table() -> None:
    print("## did:key resolution (bench/bench_identity.py)\n")
    if not _didkit_available():
        print("didkit is not installed (wheels exist for Python 3.10–3.12 only): no anchor, no rows.\n")
        return
    import didkit

    print(
        f"Cold rows: {REPETITIONS} interleaved repetitions of {DIDS_PER_BATCH:,} distinct DIDs each (new keys, "
        "generated before timing; each DID resolved once by each side); our resolver's cache is off and "
        "the DID-parse LRU is never hit.  Median (min–max); ratio = didkit time ÷ ours (> 1: ours "
        "faster), formed per repetition; one thread, so per second is per core.  No signature is "
        "verified (no OpenSSL verify ceiling).\n"
    )
    print("| case | ours µs/op | didkit µs/op | ratio | ours per core | target | verdict |")
    print("|---|---:|---:|---:|---:|---|---|")
    for kind, goal, label in (("ed25519", 4.0, "Ed25519"), ("p256", 2.5, "P-256")):
        dids = distinct_dids(kind, REPETITIONS * DIDS_PER_BATCH + 1)  # + the warm-up call
        uncached = DIDResolver(cache_size=0)
        parse_cache_clear()
        ours_next = iter(dids).__next__
        didkit_next = iter(dids).__next__

        async def ours(resolver: DIDResolver = uncached, take: Callable[[], str] = ours_next) -> object:
            return await resolver.aresolve(take())

        async def theirs(take: Callable[[], str] = didkit_next) -> object:
            return await didkit.resolve_did(take(), "{}")

        spread = measure_async(
            {"ours": ours, "didkit": theirs}, repetitions=REPETITIONS, number=DIDS_PER_BATCH
        )
        speed = ratio(spread["didkit"], spread["ours"])
        print(
            f"| {label}, cold: distinct DIDs, both awaited | {fmt(spread['ours'])} | "
            f"{fmt(spread['didkit'])} | {fmt(speed, 2)} | {per_core_cell(spread['ours'].median)} | "
            f"≥ {goal:g}× | {verdict(speed, goal)} |"
        )
        # Synchronous rows: the same DIDs again, after clearing the DID-parse LRU (each is parsed once
        # more, so none is found there); the keyAgreement row gets DIDs of its own.
        parse_cache_clear()
        sync_next = iter(dids).__next__
        functions: dict[str, Callable[[], object]] = {
            "sync": lambda r=uncached, take=sync_next: r.resolve(take())
        }
        if kind == "ed25519":
            agreement_next = iter(distinct_dids(kind, REPETITIONS * DIDS_PER_BATCH)).__next__
            functions["with agreement"] = lambda r=uncached, take=agreement_next: r.resolve(
                take()
            ).document.authorised("keyAgreement")
        sync = measure(functions, repetitions=REPETITIONS, number=DIDS_PER_BATCH)
        print(
            f"| {label}, cold, ours synchronous `resolve` (no event loop) | {fmt(sync['sync'])} | "
            f"{fmt(spread['didkit'])} | {spread['didkit'].median / sync['sync'].median:.2f} "
            f"(medians) | {per_core_cell(sync['sync'].median)} | (informative) | |"
        )
        if kind == "ed25519":
            print(
                f"| {label}, cold, and `keyAgreement` read (X25519 derived) | "
                f"{fmt(sync['with agreement'])} | {fmt(spread['didkit'])} | "
                f"{spread['didkit'].median / sync['with agreement'].median:.2f} (medians) | "
                f"{per_core_cell(sync['with agreement'].median)} | (informative) | |"
            )
        else:
            points = [PublicKey.from_multikey(did.removeprefix("did:key:")).raw for did in dids]
            point_next = iter(points).__next__
            curve = ec.SECP256R1()
            check = measure(
                {
                    "point": lambda take=point_next, p256=curve: ec.EllipticCurvePublicKey.from_encoded_point(
                        p256, take()
                    )
                },
                repetitions=REPETITIONS,
                number=DIDS_PER_BATCH,
            )["point"]
            print(
                f"| {label}: the on-curve check alone (OpenSSL decompresses the point and loads the key) | "
                f"{fmt(check)} | | {100 * check.median / spread['ours'].median:.0f} % of ours (medians) | "
                f"{per_core_cell(check.median)} | (informative: part of ours) | |"
            )
        did = dids[-1]
        ours_cached = DIDResolver()
        didkit_cached = DIDResolver([DidkitDriver({"key"})])
        ours_cached.resolve(did)
        didkit_cached.resolve(did)
        cached = measure(
            {
                "ours": lambda r=ours_cached, d=did: r.resolve(d),
                "didkit": lambda r=didkit_cached, d=did: r.resolve(d),
            },
            repetitions=REPETITIONS,
            number=200_000,
        )
        same = ratio(cached["didkit"], cached["ours"])
        print(
            f"| {label}, warm: cached vs cached (the same `DIDResolver` cache in front of each) | "
            f"{fmt(cached['ours'], 3)} | {fmt(cached['didkit'], 3)} | {fmt(same, 2)} | "
            f"{per_core_cell(cached['ours'].median)} | (informative: measures the cache) | |"
        )
    print()


def cache_rate() -> None:
    resolver = DIDResolver()
    did = did_key.create(KeyPair.generate("ed25519").public_key)
    resolver.resolve(did)
    per_call = measure({"hit": lambda: resolver.resolve(did)}, repetitions=REPETITIONS, number=500_000)["hit"]
    rate = Spread.of([1e6 / us for us in per_call.samples])
    print("| resolver cache hits (warm) | per second per core | target | verdict |")
    print("|---|---:|---|---|")
    print(
        f"| `DIDResolver.resolve` of a cached did:key (warm: a cache hit) | {fmt(rate, 0)} | ≥ 1,000,000/s | "
        f"{verdict(rate, 1_000_000)} |\n"
    )


def provisioning() -> None:
    """Wall time of a full ``provision`` (key, encrypted PEM, DID, document, CSR, AgentIdentity, fsyncs)."""
    print("| provision one agent (did:bindu; RSA 2048-bit; PBES2 600,000 rounds) | ms | |")
    print("|---|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("ed25519", "p256", "secp256k1", "rsa"):
            samples: list[float] = []
            for index in range(5):
                start = time.perf_counter()
                provision(
                    name="bench-agent",
                    out_dir=Path(tmp) / f"{kind}-{index}",
                    password=b"bench-password",
                    key_type=KeyType(kind),
                    method="bindu",
                    author="bench",
                )
                samples.append((time.perf_counter() - start) * 1e3)
            print(f"| {kind} | {fmt(Spread.of(samples))} | (informative) |")


def main() -> None:
    resolution_table()
    cache_rate()
    provisioning()


if __name__ == "__main__":
    main()
