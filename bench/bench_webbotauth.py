"""Web Bot Auth verification with a cached directory against its floor.

GETs signed by :class:`WebBotAuthSigner` (Ed25519, covering ``@method @authority @path @query`` and
``"signature-agent";key="sig1"``, 64-byte nonce), cold from distinct agents and warm from one, are
verified end to end by
``WebSignatureVerifier.verify``: RFC 8941 parsing of ``Signature-Input``, ``Signature`` and
``Signature-Agent``, the profile checks, the key from the agent's directory (a warm
:class:`DirectoryCache` entry, and :class:`StaticDirectories`), the signature base, the signature and
the nonce claim (in-memory replay store).  The floor is the work no verifier can skip: parsing the two
fields that carry the signature (``Signature-Input``, whose member lists the covered components and is
itself the ``@signature-params`` line, and ``Signature``, whose byte sequence is the signature), with the
strict RFC 8941 parser RFC 9421 §3.2 requires, building the signature base from the request
(``MessageView`` + ``signature_base``, taking the received canonical member text as the verifier does) and
one bare ``cryptography`` Ed25519 verify.  The target is a throughput of at least 0.8x the floor's
(floor time ÷ verify time ≥ 0.8).  A second, stricter floor that starts from an already-parsed
``Signature-Input`` (no verifier receives one) is printed beside it for information.

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

from _ceiling import per_core_cell  # noqa: E402
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
from mudrika.trust.httpsig._sf import InnerList, Item, parse_dictionary, parse_dictionary_members  # noqa: E402

REPEATS = 7
N = 1000  # distinct agents in the cold run; a DirectoryCache holds at most 1,024 directories
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
    # Cold: N requests from N distinct agents (each its own key, URL and directory), so nothing keyed
    # by the agent (the Signature-Agent member, the agent reference) can be remembered between them;
    # only the agents' directories are warm, as a server holds them.  Warm: N requests from one agent.
    keys = [KeyPair.generate(KeyType.ED25519) for _ in range(N)]
    agents = [f"https://crawler-{index}.example" for index in range(N)]
    signers = [
        WebBotAuthSigner(key, signature_agent=agent, expires_in=300)
        for key, agent in zip(keys, agents, strict=True)
    ]
    cold_requests = [signer.sign("GET", URL, {}).headers for signer in signers]
    warm_requests = [signers[0].sign("GET", URL, {}).headers for _ in range(N)]
    crypto_keys = []
    for key in keys:
        public = key.to_cryptography().public_key()
        assert isinstance(public, ed25519.Ed25519PublicKey)
        crypto_keys.append(public)

    # Floor: parse the two signature fields, build the signature base from the request, one Ed25519
    # verify.  The member text goes with it: the verifier takes the received text as the
    # @signature-params value when the parser proved it canonical, so the floor does not serialise it
    # again either.
    def floor() -> None:
        for headers, crypto_key in zip(cold_requests, crypto_keys, strict=True):
            members, texts, _ = parse_dictionary_members(headers["Signature-Input"], field="signature-input")
            value = parse_dictionary(headers["Signature"], field="signature")["sig1"]
            inner = members["sig1"]
            assert isinstance(inner, InnerList)
            assert isinstance(value, Item)
            assert isinstance(value.value, bytes)
            view = MessageView.request("GET", URL, headers)
            crypto_key.verify(
                value.value, signature_base(view, inner, component_parameters=True, params_text=texts["sig1"])
            )

    parsed = []
    for headers in cold_requests:
        members, texts, canonical = parse_dictionary_members(
            headers["Signature-Input"], field="signature-input"
        )
        inner = members["sig1"]
        assert isinstance(inner, InnerList)
        assert canonical
        signature = base64.b64decode(headers["Signature"].split(":")[1])
        parsed.append((headers, inner, texts["sig1"], signature))

    def preparsed_floor() -> None:
        for (headers, inner, text, signature), crypto_key in zip(parsed, crypto_keys, strict=True):
            view = MessageView.request("GET", URL, headers)
            crypto_key.verify(
                signature, signature_base(view, inner, component_parameters=True, params_text=text)
            )

    # Warm directories: every agent's entry stored, fresh for the whole run (no fetch is timed).
    cache = DirectoryCache(allow=agents, egress=EgressPolicy(), require_signatures=False)
    for key, agent in zip(keys, agents, strict=True):
        ref = agent_ref(agent)
        jwks = KeyDirectory.from_jwks({"keys": [key.public_key.to_jwk()]}, ref=ref, fresh_until=float("inf"))
        cache._store(ref, jwks)  # what a first fetch leaves behind; the bench times only lookups
    static = StaticDirectories(
        {agent: {"keys": [key.public_key.to_jwk()]} for key, agent in zip(keys, agents, strict=True)}
    )
    state: dict[str, WebSignatureVerifier] = {}

    def fresh(directories: AgentKeys) -> Callable[[], None]:
        def setup() -> None:
            state["v"] = WebSignatureVerifier(
                agents=directories,
                tap_registry=None,
                tap_keys=None,
                replay_store=MemoryReplayStore(max_entries=N),
                origins=["https://shop.example"],
                algorithms=REGISTERED_ALGORITHMS,
                max_age=300,
            )

        return setup

    def verify_all(requests: list[dict[str, str]]) -> Callable[[], None]:
        def run() -> None:
            verify = state["v"].verify
            for headers in requests:
                verify("GET", URL, headers, b"")

        return run

    def sign_only() -> None:
        for signer in signers:
            signer.sign("GET", URL, {})

    t = per_op_us(
        {
            "floor": (floor, None),
            "preparsed": (preparsed_floor, None),
            "cache": (verify_all(cold_requests), fresh(cache)),
            "static": (verify_all(cold_requests), fresh(static)),
            "warm": (verify_all(warm_requests), fresh(cache)),
            "sign": (sign_only, None),
        }
    )
    assert cache.fetches == 0
    shares = {name: ratio(t["floor"], t[name]) for name in ("cache", "static", "warm")}
    strict_cache = ratio(t["preparsed"], t["cache"])
    print("## Web Bot Auth verification (bench/bench_webbotauth.py)\n")
    print(
        f"GETs signed by `WebBotAuthSigner` (Ed25519, `@method @authority @path @query` + the "
        f'`"signature-agent";key="sig1"` member, 64-byte nonce); median (min–max) of {REPEATS} interleaved runs '
        f"of {N} requests. **Cold** (the headline): {N} requests from {N} distinct agents, each with its own "
        "key, URL and directory, so nothing of ours keyed by the agent (the `Signature-Agent` member, the "
        "agent reference) can be reused; the agents' directories are warm, as a server holds them (no fetch "
        "is timed), and the replay store is new for every run. **Warm**: the same number of requests from "
        "one agent, whose member and reference are remembered after the first. *floor* = the strict "
        "RFC 8941 parse of `Signature-Input` and `Signature` + `MessageView` + `signature_base` (the "
        "received canonical member text as the `@signature-params` value, as the verifier does) + one "
        "bare `cryptography` Ed25519 verify, on the cold requests; *verify* = "
        "`WebSignatureVerifier.verify` end to end (the same parses plus `Signature-Agent`, profile "
        "checks, key by (agent URL, thumbprint) from `DirectoryCache` or `StaticDirectories`, signature "
        "base, signature, nonce claim in `MemoryReplayStore`). Share = floor time ÷ verify time per "
        f"repetition (target ≥ {TARGET}). Earlier runs of this bench started the floor from an "
        "already-parsed `Signature-Input`, which no verifier receives; that stricter share follows the "
        "table, for information.\n"
    )
    print(
        "| requests, keys from | floor µs/op | verify µs/op | sign µs/op | verifies per core "
        "| share of floor | target | verdict |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for label, key in (
        ("cold, `DirectoryCache`", "cache"),
        ("cold, `StaticDirectories`", "static"),
        ("warm (one agent), `DirectoryCache`", "warm"),
    ):
        print(
            f"| {label} | {fmt(t['floor'])} | {fmt(t[key])} | {fmt(t['sign'])} "
            f"| {per_core_cell(t[key].median, {'EdDSA': 1})} | {fmt(shares[key], 2)} "
            f"| ≥ {TARGET}× | {verdict(shares[key], TARGET)} |"
        )
    print(
        f"\nFor information, against the stricter floor from a pre-parsed `Signature-Input` "
        f"({fmt(t['preparsed'])} µs/op): cold `DirectoryCache` share {fmt(strict_cache, 2)}.\n"
    )


if __name__ == "__main__":
    main()
