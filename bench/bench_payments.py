"""Benchmark: AP2 v0.1 mandate verification against the raw ES256 signature floor.

Run: .venv/bin/python bench/bench_payments.py [--rounds N] [--number N]

Two comparisons (ES256 / P-256 keys everywhere, the AP2 v0.1 default):

1. ``merchant_authorization`` — :func:`mudrika.payments.chain.verify_cart` (JWS parse, key lookup,
   alg allow-list, signature, every claim, cart_hash over the raw contents, cart total, jti claimed in a
   fresh MemoryReplayStore) vs the floor: one ``cryptography`` ECDSA-P256 verify of the same signing
   input with a pre-encoded DER signature.  Target: ours >= 0.8x the floor's speed.
2. Full chain — :func:`mudrika.payments.chain.verify_chain` on already-received mandates (62 named
   checks, 4 JWS, SD-JWT disclosures, 4 mandate hashes, replay claims) vs the sum of the four raw
   verifies (intent JWS, merchant JWT, SD-JWT issuer JWT, KB-JWT).  Target: >= 0.7x.  Parsing the
   three mandates from bytes (strict JSON + pydantic) is reported on its own line.

Keys come from an offline snapshot (:meth:`KeyMaterial.offline_snapshot`), as in dispute mode.
Method: batches of ``number`` calls timed with ``time.perf_counter``, ours and the floor interleaved
in every round, best batch of ``rounds`` reported.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _timing import best_us  # noqa: E402
from mudrika.crypto._b64 import b64url_decode  # noqa: E402
from mudrika.crypto.jose import verify_compact  # noqa: E402
from mudrika.crypto.keys import KeyPair  # noqa: E402
from mudrika.payments.chain import verify_cart, verify_chain  # noqa: E402
from mudrika.payments.chain._cart import check_cart  # noqa: E402
from mudrika.payments.chain._common import Recorder  # noqa: E402
from mudrika.payments.chain._hashes import cart_hashes, chain_hashes  # noqa: E402
from mudrika.payments.models import receive_cart, receive_intent, receive_payment  # noqa: E402
from mudrika.payments.profile import DEFAULT_ALGORITHMS  # noqa: E402
from mudrika.stores.replay import MemoryReplayStore  # noqa: E402


def _load_builder() -> object:
    path = ROOT / "fixtures" / "evidence" / "make_bundle.py"
    spec = importlib.util.spec_from_file_location("mudrika_evidence_builder", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def floor_for(token: str, key: KeyPair) -> Callable[[], None]:
    """A raw ECDSA-P256 verify of ``token``'s signing input (the cheapest possible check)."""
    header, payload, signature = token.split(".")
    raw = b64url_decode(signature)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    data = f"{header}.{payload}".encode("ascii")
    public = key.public_key.to_cryptography()
    assert isinstance(public, ec.EllipticCurvePublicKey)
    algorithm = ec.ECDSA(hashes.SHA256())
    public.verify(der, data, algorithm)
    return lambda: public.verify(der, data, algorithm)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=200)
    args = parser.parse_args()

    builder = _load_builder()
    chain = builder.build_chain(key_type="p256")  # type: ignore[attr-defined]
    expectations = chain.expectations()
    keys = expectations["keys"]
    cart = chain.cart
    intent_token = chain.intent.model.user_authorization
    cart_token = cart.model.merchant_authorization
    presentation = chain.payment.model.user_authorization
    issuer_jwt = presentation.split("~")[0]
    kb_jwt = presentation.split("~")[-1]

    def ours_cart() -> object:
        return verify_cart(
            cart,
            keys=keys,
            audience=chain.merchant_audience,
            algorithms=DEFAULT_ALGORITHMS,
            now=chain.now,
            replay_store=MemoryReplayStore(max_entries=8),
        )

    def ours_chain() -> object:
        return verify_chain(
            chain.intent,
            chain.cart,
            chain.payment,
            replay_store=MemoryReplayStore(max_entries=8),
            **expectations,
        )

    intent_bytes, cart_bytes, payment_bytes = (
        m.wire_bytes() for m in (chain.intent, chain.cart, chain.payment)
    )

    def parse_three() -> object:
        return receive_intent(intent_bytes), receive_cart(cart_bytes), receive_payment(payment_bytes)

    floors = {
        "intent": floor_for(intent_token, chain.user_key),
        "merchant": floor_for(cart_token, chain.merchant_key),
        "issuer": floor_for(issuer_jwt, chain.issuer_key),
        "kb": floor_for(kb_jwt, chain.user_key),
    }

    def floor_chain() -> None:
        for verify in floors.values():
            verify()

    merchant_key = keys.assertion_key(builder.MERCHANT_KID, owner=builder.MERCHANT_DID)  # type: ignore[attr-defined]
    trusted = merchant_key.trusted(DEFAULT_ALGORITHMS)
    contents_hash = cart_hashes(cart)[0]

    def cart_stage_prehashed() -> object:
        return check_cart(
            Recorder(),
            cart,
            keys=keys,
            audience=chain.merchant_audience,
            algorithms=DEFAULT_ALGORITHMS,
            now=chain.now,
            leeway=0.0,
            contents_hash=contents_hash,
        )

    ours_cart()
    ours_chain()
    cart_us = best_us(
        {
            "ours": ours_cart,
            "floor": floors["merchant"],
            "jose": lambda: verify_compact(cart_token, key=trusted),
            "stage": cart_stage_prehashed,
            "hash": lambda: cart_hashes(cart),
            "hashes": lambda: chain_hashes(chain.intent, chain.cart, chain.payment),
        },
        args.rounds,
        args.number,
    )
    chain_us = best_us({"ours": ours_chain, "floor": floor_chain}, args.rounds, max(args.number // 4, 10))
    parse_us = best_us({"parse": parse_three}, args.rounds, max(args.number // 4, 10))

    print("## AP2 v0.1 mandate verification (ES256)\n")
    print(f"Python {sys.version.split()[0]}, best of {args.rounds} rounds; keys from an offline snapshot.\n")
    print("| operation | ours µs/op | floor µs/op | speed ÷ floor speed | target |")
    print("|---|---:|---:|---:|---:|")
    ratio_cart = cart_us["floor"] / cart_us["ours"]
    ratio_chain = chain_us["floor"] / chain_us["ours"]
    print(
        f"| merchant_authorization (verify_cart) vs 1 raw ES256 verify | {cart_us['ours']:.1f} | "
        f"{cart_us['floor']:.1f} | {ratio_cart:.2f}x | >= 0.8x |"
    )
    print(
        f"| full chain (verify_chain, 62 checks) vs 4 raw ES256 verifies | {chain_us['ours']:.1f} | "
        f"{chain_us['floor']:.1f} | {ratio_chain:.2f}x | >= 0.7x |"
    )
    print(
        f"| receiving the 3 mandates from bytes (strict JSON + schema), not in the chain row | "
        f"{parse_us['parse']:.1f} | | | |"
    )
    print("\nWhere the merchant_authorization time goes (µs/op):\n")
    print("| part | µs/op | speed ÷ floor speed |")
    print("|---|---:|---:|")
    floor = cart_us["floor"]
    for label, key in (
        ("raw ES256 verify (floor)", "floor"),
        ("jose.verify_compact alone (strict JWS parse + alg/key checks + signature)", "jose"),
        ("cart stage with H(CartContents) given (JWS, 15 named checks, expiry, total)", "stage"),
        ("H(CartContents) and H(CartMandate) over the raw cart (RFC 8785 + SHA-256)", "hash"),
        ("verify_cart (all of the above + replay claim)", "ours"),
    ):
        print(f"| {label} | {cart_us[key]:.1f} | {floor / cart_us[key]:.2f}x |")
    print(
        f"| the four chain hashes (intent, cart contents, cart, payment contents) | {cart_us['hashes']:.1f} | |"
    )


if __name__ == "__main__":
    main()
