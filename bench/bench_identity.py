"""Identity benchmarks: did:key resolution ours vs didkit (like for like), cache hits/s, provisioning.

Run: ``.venv/bin/python bench/bench_identity.py``.  Prints markdown tables on stdout.

Like for like (bench/_timing.py: interleaved repetitions, median and min–max, ratios per repetition):

* **uncached vs uncached**: ``await DIDResolver(cache_size=0).aresolve(did)`` (parse the DID, decode
  and check the key, build the document; the Ed25519 X25519 ``keyAgreement`` key is checked but only
  derived when read) against ``await didkit.resolve_did(did, "{}")``, both awaited call after call on
  one event loop.  didkit's answer is a JSON string nobody has parsed yet, so the anchor is favoured.
  Targets: ours >= 3x didkit's speed for Ed25519, >= 2x for P-256.
* **cached vs cached**: both behind the *same* cache -- a warm ``DIDResolver`` with our did:key driver
  against a warm ``DIDResolver`` whose only driver is didkit -- so the row measures the cache, and
  says so (informative).
* **resolver cache hits per second** (target >= 1,000,000/s).
* **provisioning** one agent per key type (informative).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _timing import Spread, fmt, measure, measure_async, ratio, verdict  # noqa: E402
from mudrika.crypto.keys import KeyPair, KeyType  # noqa: E402
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


def resolution_table() -> None:
    print("## did:key resolution (bench/bench_identity.py)\n")
    if not _didkit_available():
        print("didkit is not installed (wheels exist for Python 3.10–3.12 only): no anchor, no rows.\n")
        return
    import didkit

    print(
        f"Median (min–max) of {REPETITIONS} interleaved repetitions; ratio = didkit time ÷ ours "
        "(> 1: ours faster), formed per repetition.\n"
    )
    print("| case | ours µs/op | didkit µs/op | ratio | target | verdict |")
    print("|---|---:|---:|---:|---|---|")
    for kind, goal, label in (("ed25519", 3.0, "Ed25519"), ("p256", 2.0, "P-256")):
        did = did_key.create(KeyPair.generate(kind).public_key)
        uncached = DIDResolver(cache_size=0)

        async def ours(resolver: DIDResolver = uncached, name: str = did) -> object:
            return await resolver.aresolve(name)

        async def theirs(name: str = did) -> object:
            return await didkit.resolve_did(name, "{}")

        spread = measure_async({"ours": ours, "didkit": theirs}, repetitions=REPETITIONS, number=2000)
        speed = ratio(spread["didkit"], spread["ours"])
        print(
            f"| {label}, uncached vs uncached (both awaited) | {fmt(spread['ours'])} | "
            f"{fmt(spread['didkit'])} | {fmt(speed, 2)} | ≥ {goal:g}× | {verdict(speed, goal)} |"
        )
        sync = measure(
            {
                "sync": lambda r=uncached, d=did: r.resolve(d),
                "with agreement": lambda r=uncached, d=did: r.resolve(d).document.authorised("keyAgreement"),
            },
            repetitions=REPETITIONS,
            number=2000,
        )
        print(
            f"| {label}, uncached, ours synchronous `resolve` (no event loop) | {fmt(sync['sync'])} | "
            f"{fmt(spread['didkit'])} | {spread['didkit'].median / sync['sync'].median:.2f} "
            "(medians) | (informative) | |"
        )
        if kind == "ed25519":
            print(
                f"| {label}, uncached, and `keyAgreement` read (X25519 derived) | "
                f"{fmt(sync['with agreement'])} | {fmt(spread['didkit'])} | "
                f"{spread['didkit'].median / sync['with agreement'].median:.2f} (medians) | (informative) | |"
            )
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
            f"| {label}, cached vs cached (the same `DIDResolver` cache in front of each) | "
            f"{fmt(cached['ours'], 3)} | {fmt(cached['didkit'], 3)} | {fmt(same, 2)} | (informative: "
            "measures the cache) | |"
        )
    print()


def cache_rate() -> None:
    resolver = DIDResolver()
    did = did_key.create(KeyPair.generate("ed25519").public_key)
    resolver.resolve(did)
    per_call = measure({"hit": lambda: resolver.resolve(did)}, repetitions=REPETITIONS, number=500_000)["hit"]
    rate = Spread.of([1e6 / us for us in per_call.samples])
    print("| resolver cache hits | per second | target | verdict |")
    print("|---|---:|---|---|")
    print(
        f"| `DIDResolver.resolve` of a cached did:key | {fmt(rate, 0)} | ≥ 1,000,000/s | "
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
