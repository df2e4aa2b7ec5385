"""DID-signed request verification (RFC 9421 profile) against the raw signature-verify floor.

For Ed25519 and ECDSA P-256, one typical A2A request (POST, ~200-byte JSON-RPC body, covering
``@method @target-uri content-digest content-type``) is verified end to end by
``HttpSignatureVerifier.verify``: header parsing (RFC 8941), the profile checks, the signature base,
the signature, the body digest and the nonce claim (in-memory replay store, static key lookup).  The
floor is the bare ``cryptography`` verify of the same signature over the same base; the ratio is the
cost of everything around it.  The ``http-message-signatures`` package verifying the same request
(with body digest, no replay claim) is shown beside it as an anchor.

Run: .venv/bin/python bench/bench_httpsig.py
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from http_message_signatures import HTTPMessageVerifier, MappingKeyResolver, algorithms

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "src"))
sys.path.insert(0, str(REPO_ROOT / "bench"))

from _ceiling import per_core_cell  # noqa: E402
from _timing import Spread, fmt, ratio  # noqa: E402
from mudrika.crypto.keys import KeyPair, KeyType  # noqa: E402
from mudrika.stores.replay import MemoryReplayStore  # noqa: E402
from mudrika.trust.httpsig import (  # noqa: E402
    REGISTERED_ALGORITHMS,
    HttpMessageSigner,
    HttpSignatureVerifier,
    StaticKeyLookup,
)

REPEATS = 5
N = 2000
URL = "https://agent.example/a2a"
BODY = (
    b'{"jsonrpc":"2.0","id":"7f3c","method":"message/send","params":{"message":{"role":"user",'
    b'"parts":[{"kind":"text","text":"Book the cheapest refundable flight to Lisbon on 3 May"}],'
    b'"messageId":"9b1d2c1e-5e0f-4c55-9a55-2b0f1a7c3e11"}}}'
)
COVERED = ("@method", "@target-uri", "content-digest", "content-type")


def per_op_us(
    cases: dict[str, tuple[Callable[[], None], int, Callable[[], None] | None]],
) -> dict[str, Spread]:
    """µs per operation of each case (``run`` doing ``n`` operations, ``setup`` untimed before each
    run), the cases interleaved in each of REPEATS repetitions; median and min–max."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(REPEATS):
        for name, (run, n, setup) in cases.items():
            if setup is not None:
                setup()
            gc.collect()
            start = time.perf_counter()
            run()
            samples[name].append((time.perf_counter() - start) / n * 1e6)
    return {name: Spread.of(values) for name, values in samples.items()}


def bench(key_type: KeyType, their_alg: type[algorithms.HTTPSignatureAlgorithm]) -> dict[str, Spread]:
    key = KeyPair.generate(key_type)
    multikey = key.public_key.to_multikey()
    keyid = f"did:key:{multikey}#{multikey}"
    signer = HttpMessageSigner(key, keyid, expires_in=300)
    headers = {"Content-Type": "application/json"}
    signed = [signer.sign("POST", URL, headers, BODY) for _ in range(N)]
    requests = [{**headers, **s.as_dict()} for s in signed]
    bases = [(s.signature_base, bytes.fromhex(_sig_hex(s.signature))) for s in signed]

    # Floor: the bare primitive on the same base and signature.
    crypto_key = key.to_cryptography().public_key()
    if isinstance(crypto_key, ed25519.Ed25519PublicKey):
        ed_key = crypto_key

        def floor() -> None:
            for base, sig in bases:
                ed_key.verify(sig, base)
    else:
        assert isinstance(crypto_key, ec.EllipticCurvePublicKey)
        ec_key = crypto_key
        der = [
            (base, encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big")))
            for base, sig in bases
        ]

        def floor() -> None:
            for base, sig in der:
                ec_key.verify(sig, base, ec.ECDSA(hashes.SHA256()))

    # mudrika: full verification, a fresh replay store per repeat so every nonce is claimable.
    keys = StaticKeyLookup({keyid: key.public_key})
    state: dict[str, HttpSignatureVerifier] = {}

    def fresh() -> None:
        state["v"] = HttpSignatureVerifier(
            keys=keys,
            replay_store=MemoryReplayStore(max_entries=N),
            origins=["https://agent.example"],
            algorithms=REGISTERED_ALGORITHMS,
        )

    def ours() -> None:
        verify = state["v"].verify
        for h in requests:
            verify("POST", URL, h, BODY)

    # Anchor: http-message-signatures on httpx.Request objects (signature + body digest).
    resolver = MappingKeyResolver(public_keys={keyid: crypto_key}, private_keys={})
    anchor_verifier = HTTPMessageVerifier(signature_algorithm=their_alg, key_resolver=resolver)
    messages = [httpx.Request("POST", URL, content=BODY, headers=h) for h in requests[: N // 4]]

    def anchor() -> None:
        for message in messages:
            anchor_verifier.verify(message, require_components=COVERED, body=BODY, expect_tag="mudrika-a2a")

    def sign_only() -> None:
        for _ in range(N):
            signer.sign("POST", URL, headers, BODY)

    return per_op_us(
        {
            "floor": (floor, N, None),
            "ours": (ours, N, fresh),
            "anchor": (anchor, len(messages), None),
            "sign": (sign_only, N, None),
        }
    )


def _sig_hex(signature_field: str) -> str:
    import base64

    return base64.b64decode(signature_field.split(":")[1]).hex()


def main() -> None:
    rows = []
    for label, key_type, their_alg in (
        ("Ed25519 (`ed25519`)", KeyType.ED25519, algorithms.ED25519),
        ("P-256 (`ecdsa-p256-sha256`)", KeyType.P256, algorithms.ECDSA_P256_SHA256),
    ):
        rows.append((label, bench(key_type, their_alg)))
    print("## DID-signed requests (RFC 9421 + RFC 9530)\n")
    print(
        f"One POST with a {len(BODY)}-byte JSON-RPC body, covering `{' '.join(COVERED)}`; median (min–max) "
        f"of {REPEATS} interleaved runs of {N} requests. *floor* = bare `cryptography` signature verify over "
        "the same signature base; *mudrika* = `HttpSignatureVerifier.verify` end to end (RFC 8941 parsing, "
        "profile checks, signature base, signature, body digest, nonce claim in `MemoryReplayStore`); "
        "*anchor* = `http-message-signatures` `HTTPMessageVerifier.verify` with body digest (no replay "
        "claim). Time ÷ floor time per repetition (1.00 = as fast as the bare signature check). Cold: "
        "every request carries its own nonce and signature, the key comes from a `StaticKeyLookup` (no "
        "resolution, no cache of ours in the path), and the replay store is new for every run.\n"
    )
    print(
        "| key | floor µs/op | mudrika verify µs/op | verifies per core | ÷ floor | anchor µs/op | ÷ floor "
        "| mudrika sign µs/op |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for (label, t), alg in zip(rows, ("EdDSA", "ES256"), strict=True):
        print(
            f"| {label} | {fmt(t['floor'])} | {fmt(t['ours'])} | {per_core_cell(t['ours'].median, {alg: 1})} "
            f"| {fmt(ratio(t['ours'], t['floor']), 2)} "
            f"| {fmt(t['anchor'])} | {fmt(ratio(t['anchor'], t['floor']), 2)} | {fmt(t['sign'])} |"
        )


if __name__ == "__main__":
    main()
