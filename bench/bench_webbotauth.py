"""Web Bot Auth verification with a cached directory against its floor.

One GET signed by :class:`WebBotAuthSigner` (Ed25519, covering ``@method @authority @path @query`` and
``"signature-agent";key="sig1"``, 64-byte nonce) is verified end to end by
``WebSignatureVerifier.verify``: RFC 8941 parsing of ``Signature-Input``, ``Signature`` and
``Signature-Agent``, the profile checks, the key from the agent's directory (a warm
:class:`DirectoryCache` entry, and :class:`StaticDirectories`), the signature base, the signature and
the nonce claim (in-memory replay store).  The floor is what cannot be avoided: building the signature
base from the request (``MessageView`` + ``signature_base`` over an already-parsed ``Signature-Input``,
taking its received canonical member text as the ``@signature-params`` value exactly as the verifier
does) plus one bare ``cryptography`` Ed25519 verify.  The target is a throughput of at least 0.8x the floor's
(floor time ÷ verify time ≥ 0.8).

Run: .venv/bin/python bench/bench_webbotauth.py
"""

from __future__ import annotations

import base64
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import ed25519

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "src"))
sys.path.insert(0, str(REPO_ROOT / "bench"))

from _timing import Spread, fmt, ratio, verdict  # noqa: E402
from mudrika.crypto.keys import KeyPair, KeyType  # noqa: E402
from mudrika.net.egress import EgressPolicy  # noqa: E402
from mudrika.stores.replay import MemoryReplayStore  # noqa: E402
from mudrika.trust.httpsig import (  # noqa: E402
    REGISTERED_ALGORITHMS,
    AgentKeys,
    DirectoryCache,
    KeyDirectory,
    MessageView,
    StaticDirectories,
    WebBotAuthSigner,
    WebSignatureVerifier,
    agent_ref,
    signature_base,
)
from mudrika.trust.httpsig._sf import InnerList, parse_dictionary_members  # noqa: E402

REPEATS = 7
N = 2000
AGENT = "https://crawler.example"
URL = "https://shop.example/products/42?colour=green"
TARGET = 0.8


def per_op_us(cases: dict[str, tuple[Callable[[], None], Callable[[], None] | None]]) -> dict[str, Spread]:
    """µs per request of each case, interleaved in each of REPEATS repetitions; median and min–max."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(REPEATS):
        for name, (run, setup) in cases.items():
            if setup is not None:
                setup()
            gc.collect()
            start = time.perf_counter()
            run()
            samples[name].append((time.perf_counter() - start) / N * 1e6)
    return {name: Spread.of(values) for name, values in samples.items()}


def main() -> None:
    key = KeyPair.generate(KeyType.ED25519)
    signer = WebBotAuthSigner(key, signature_agent=AGENT, expires_in=300)
    requests = [signer.sign("GET", URL, {}).headers for _ in range(N)]

    # Floor: the signature base from the request, then one Ed25519 verify.
    # The member text goes with it: the verifier takes the received text as the @signature-params
    # value when the parser proved it canonical, so the floor does not serialise it again either.
    parsed = []
    for headers in requests:
        members, texts, canonical = parse_dictionary_members(
            headers["Signature-Input"], field="signature-input"
        )
        inner = members["sig1"]
        assert isinstance(inner, InnerList)
        assert canonical
        signature = base64.b64decode(headers["Signature"].split(":")[1])
        parsed.append((headers, inner, texts["sig1"], signature))
    crypto_key = key.to_cryptography().public_key()
    assert isinstance(crypto_key, ed25519.Ed25519PublicKey)

    def floor() -> None:
        for headers, inner, text, signature in parsed:
            view = MessageView.request("GET", URL, headers)
            crypto_key.verify(
                signature, signature_base(view, inner, component_parameters=True, params_text=text)
            )

    # The warm cache: one directory entry, fresh for the whole run (no fetch is timed).
    ref = agent_ref(AGENT)
    cache = DirectoryCache(allow=[AGENT], egress=EgressPolicy(), require_signatures=False)
    jwks = KeyDirectory.from_jwks({"keys": [key.public_key.to_jwk()]}, ref=ref, fresh_until=float("inf"))
    cache._store(ref, jwks)  # what a first fetch leaves behind; the bench times only warm lookups
    static = StaticDirectories({AGENT: {"keys": [key.public_key.to_jwk()]}})
    state: dict[str, WebSignatureVerifier] = {}

    def fresh(agents: AgentKeys) -> Callable[[], None]:
        def setup() -> None:
            state["v"] = WebSignatureVerifier(
                agents=agents,
                tap_registry=None,
                tap_keys=None,
                replay_store=MemoryReplayStore(max_entries=N),
                origins=["https://shop.example"],
                algorithms=REGISTERED_ALGORITHMS,
                max_age=300,
            )

        return setup

    def ours() -> None:
        verify = state["v"].verify
        for headers in requests:
            verify("GET", URL, headers, b"")

    def sign_only() -> None:
        for _ in range(N):
            signer.sign("GET", URL, {})

    t = per_op_us(
        {
            "floor": (floor, None),
            "cache": (ours, fresh(cache)),
            "static": (ours, fresh(static)),
            "sign": (sign_only, None),
        }
    )
    assert cache.fetches == 0
    share_cache = ratio(t["floor"], t["cache"])
    share_static = ratio(t["floor"], t["static"])
    print("## Web Bot Auth verification (bench/bench_webbotauth.py)\n")
    print(
        f"One GET signed by `WebBotAuthSigner` (Ed25519, `@method @authority @path @query` + the "
        f'`"signature-agent";key="sig1"` member, 64-byte nonce); median (min–max) of {REPEATS} interleaved runs '
        f"of {N} requests. *floor* = `MessageView` + `signature_base` over the parsed `Signature-Input` (its "
        "received canonical member text as the `@signature-params` value, as the verifier does) + one "
        "bare `cryptography` Ed25519 verify; *verify* = `WebSignatureVerifier.verify` end to end (RFC 8941 "
        "parsing of three fields, profile checks, key by (agent URL, thumbprint) from a warm `DirectoryCache` "
        "or `StaticDirectories`, signature base, signature, nonce claim in `MemoryReplayStore`). Share = floor "
        f"time ÷ verify time per repetition (target ≥ {TARGET}).\n"
    )
    print("| keys from | floor µs/op | verify µs/op | sign µs/op | share of floor | target | verdict |")
    print("|---|---:|---:|---:|---:|---|---|")
    for label, share, key in (
        ("`DirectoryCache` (warm)", share_cache, "cache"),
        ("`StaticDirectories`", share_static, "static"),
    ):
        print(
            f"| {label} | {fmt(t['floor'])} | {fmt(t[key])} | {fmt(t['sign'])} | {fmt(share, 2)} "
            f"| ≥ {TARGET}× | {verdict(share, TARGET)} |"
        )


if __name__ == "__main__":
    main()
