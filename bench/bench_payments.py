"""Benchmark: AP2 v0.1 chains, AP2 v0.2 transactions and SD-JWT+KB against their floors, cold and warm.

Run: .venv/bin/python bench/bench_payments.py [--repetitions N] [--number N]

Why these floors: a bare signature check is not a verifier.  Every correct verifier must, at least,
strictly parse what it reads, verify every signature and compute every hash its profile binds.  The
floors below do exactly that with the fastest correct components available here (``loads_strict``,
the strict parser: orjson cannot refuse duplicate keys; ``mandate_hash``, the fastest byte-identical
RFC 8785 hash measured in bench_jcs; ``cryptography`` for ECDSA), and nothing else -- no report, no
named checks, no key resolution, no replay store.  The keys a floor verifies with are the parsed keys
the verifier's trust root pins (built before the clock starts, as a trust root is).

1. ``merchant_authorization``: split the compact JWS, base64url-decode and strictly parse header and
   payload, check ``alg``, ES256-verify, compute H(CartContents) and compare with ``cart_hash``,
   compare iss/sub/aud/iat/exp (and the 15-minute lifetime).  Ours: the public
   :func:`mudrika.payments.chain.verify_cart` on the already-received cart, claiming its ``jti`` in
   the verifier's one long-lived replay store (the claim is timed).  Target: >= 0.8x the floor.
   Beside it, informative, the *complete floor* (:func:`complete_cart`): the floor plus every other
   check ``verify_cart`` makes, straight-line, naming none of them -- how fast any verification that
   makes those checks could be, so that the gap between ours and the floor splits into what the
   checks cost and what ours' structure costs.
2. Full v0.1 chain: the intent JWS (+ H(intent without user_authorization)), the merchant JWT
   (+ cart_hash), the SD-JWT issuer JWT, each Disclosure (decode, parse, digest found in ``_sd``),
   the holder key from ``cnf.jwk``, the KB-JWT (+ ``sd_hash`` and the three ``transaction_data``
   hashes: H(CartMandate), H(PaymentMandateContents), H(IntentMandate)): 4 ES256 verifies.  The
   intent's signer is the holder, so the floor verifies the intent with that key, built once (it
   neither decodes the intent's did:key nor checks ``sub``, the expiries or the totals, all of which
   ours does).  Ours: the public :func:`mudrika.payments.chain.verify_chain` on already-received
   mandates.  Target: >= 0.7x.
3. AP2 v0.2 transaction (checkout chain, payment chain, both receipts): each open mandate's issuer
   JWT and Disclosures, the agent's key from ``cnf.jwk`` (built once: both mandates bind the same
   JWK), each hop's KB-SD-JWT (signature, Disclosures, ``sd_hash`` over the token before it, ``aud``,
   ``nonce``), the merchant's ``checkout_jwt`` (+ ``checkout_hash``), ``transaction_id``, the
   payment's ``conditional_transaction_id`` and both receipts (signature + ``reference``): 7 ES256
   verifies and 8 hashes over presented text.  Ours: the public :func:`mudrika.payments.v02.verify_v02`.
   No target in the issue; the ratio is stated.
4. SD-JWT+KB (RFC 9901) with 1, 10 and 100 disclosed claims: split, the issuer JWT (strict parse,
   ``alg``, ES256), ``_sd_alg``, each Disclosure (decode, strict parse, shape, digest found once in
   ``_sd``, claim inserted), ``iss``/``iat``/``exp``, the holder key from ``cnf.jwk``, the KB-JWT
   (strict parse, ``typ``, ES256, ``aud``, ``nonce``, ``iat`` window, ``sd_hash``).  Ours:
   :func:`mudrika.crypto.sdjwt.verify`.  Target: ours takes <= 1.3x the floor's time at 100.

Cold and warm.  The headline rows are **cold**: every timed call verifies a chain (transaction,
presentation) never verified before in the process -- its own user, merchant and issuer keys, its own
merchant DID, cart, nonce, time texts and trust root, all generated before the clock starts -- so
none of mudrika's caches can answer (the holder-key, did:key, thumbprint, DID-parse, trusted-key,
root-key, cross-check and time-text caches, listed with their hits under the table).  What distinct
chains cannot make distinct -- the JOSE header table, keyed by header text, which an issuer's JWS
and every key-binding JWT share across users -- is emptied before each cold call (ours and the floor
alike, a dictionary ``clear``).  The v0.2 rows also clear every cache before each call (its fixture
names one merchant DID).  Left alone: ``identity.document._LAYOUTS`` and
``identity.resolution._RESOLUTION_METADATA``, keyed by a model class and a driver name, not input.  *Warm* rows verify one chain
again and again, so every cache hits; they are labelled so.  Receiving the three mandates from bytes
is reported on its own line (in no row).  Method: bench/_timing.py (interleaved, median and min–max,
ratios per repetition).  Each row states its throughput on one core beside the most the OpenSSL of
this machine allows for its signature verifies (bench/_ceiling.py).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import itertools
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.append(str(ROOT))  # tests._support: the v0.2 transaction builder

from cryptography.hazmat.primitives import hashes  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature  # noqa: E402
from tests._support import ap2_v02  # noqa: E402

from _ceiling import per_core_cell  # noqa: E402
from _timing import Spread, fmt, measure, ratio, verdict  # noqa: E402
from mudrika.crypto import sdjwt  # noqa: E402
from mudrika.crypto.b64url import b64url_decode, b64url_encode  # noqa: E402
from mudrika.crypto.jcs import loads_strict, mandate_hash  # noqa: E402
from mudrika.crypto.jose import FORBIDDEN_HEADERS, TrustedKey  # noqa: E402
from mudrika.crypto.keys import KeyPair, KeyType  # noqa: E402
from mudrika.payments.chain import _keys as chain_keys  # noqa: E402
from mudrika.payments.chain import _trust as chain_trust  # noqa: E402
from mudrika.payments.chain import merchant_jti_key, verify_cart, verify_chain  # noqa: E402
from mudrika.payments.models import receive_cart, receive_intent, receive_payment  # noqa: E402
from mudrika.payments.v02 import verify_v02  # noqa: E402
from mudrika.stores.replay import MemoryReplayStore  # noqa: E402

_ES256 = ec.ECDSA(hashes.SHA256())
_SIGNATURE_MEMBERS = ("user_authorization", "userAuthorization")
_SD_SIZES = (1, 10, 100)
_SD_TARGET_SIZE = 100


# -- mudrika's caches: found, counted and cleared --------------------------------------------------------


def _lru_caches() -> dict[str, Any]:
    """Every ``functools.lru_cache`` at module level in a loaded mudrika module, by qualified name."""
    found: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("mudrika") or module is None:
            continue
        for attribute, value in vars(module).items():
            if isinstance(value, functools._lru_cache_wrapper) and value.__module__ == name:
                found[f"{name}.{attribute}"] = value
    return found


#: Memos keyed by constants (the check-id prefixes of a stage, an allow-list's text), not by input.
_CONSTANT_MEMOS = frozenset(
    {
        "mudrika.payments.chain._common._time_ids",
        "mudrika.payments.chain._jws._phase_ids",
        "mudrika.payments.chain._jws._listed",
    }
)

#: The module-level dictionaries the chain verifier remembers answers in (per trust-root object).
_DICT_CACHES: tuple[dict[Any, Any], ...] = (
    chain_keys._ROOT_KEYS,
    chain_keys._CROSS_CHECKED,
    chain_trust._TRUST_OF_ROOT,
)
#: Module-level tables keyed by token text whose keys recur across distinct chains (an issuer's JWS
#: header and every key-binding JWT's header are the same bytes for every user): emptied before
#: each cold call, ours and the floor alike (by name, so that a table a later version drops is skipped).
_PER_CALL_TABLES: tuple[tuple[str, str], ...] = (("mudrika.crypto.jose", "_CHECKED_HEADERS"),)


def _per_call_tables() -> list[dict[Any, Any]]:
    found = [getattr(sys.modules.get(module), name, None) for module, name in _PER_CALL_TABLES]
    return [table for table in found if isinstance(table, dict)]


def _clear_caches(caches: Iterable[Any] | None = None) -> None:
    """Empty every cache (``caches``: the lru caches, when already found -- finding them walks
    every loaded module, which a timed call must not pay for)."""
    for cache in caches if caches is not None else _lru_caches().values():
        cache.cache_clear()
    for table in (*_DICT_CACHES, *_per_call_tables()):
        table.clear()


def _hits() -> dict[str, int]:
    return {name: cache.cache_info().hits for name, cache in _lru_caches().items()}


# -- the v0.1 floor --------------------------------------------------------------------------------------


def es256_jws(token: str, public: ec.EllipticCurvePublicKey) -> tuple[dict[str, Any], dict[str, Any]]:
    """Floor for one compact JWS: strict parse of header and payload, alg check, ES256 verify."""
    header_b64, payload_b64, signature_b64 = token.split(".")
    header = loads_strict(b64url_decode(header_b64))
    payload = loads_strict(b64url_decode(payload_b64))
    if header.get("alg") != "ES256":
        raise ValueError("alg")
    signature = b64url_decode(signature_b64)
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    public.verify(der, f"{header_b64}.{payload_b64}".encode("ascii"), _ES256)
    return header, payload


def _digest(text: str) -> str:
    return b64url_encode(hashlib.sha256(text.encode("ascii")).digest())


def _holder(jwk: Mapping[str, Any]) -> ec.EllipticCurvePublicKey:
    """The holder key from ``cnf.jwk`` (building it validates the point)."""
    if jwk.get("kty") != "EC" or jwk.get("crv") != "P-256":
        raise ValueError("cnf")
    return ec.EllipticCurvePublicNumbers(
        int.from_bytes(b64url_decode(jwk["x"]), "big"),
        int.from_bytes(b64url_decode(jwk["y"]), "big"),
        ec.SECP256R1(),
    ).public_key()


def _disclose(payload: dict[str, Any], disclosures: list[str]) -> dict[str, Any]:
    """Minimal §7.1 processing: each Disclosure decoded and parsed, its digest found exactly once (in
    an ``_sd`` array or an array element ``{"...": digest}``), its claim or element put where that
    digest sits (disclosed values processed too)."""
    by_digest: dict[str, list[Any]] = {}
    for disclosure in disclosures:
        content = loads_strict(b64url_decode(disclosure))
        if not isinstance(content, list) or len(content) not in (2, 3) or not isinstance(content[0], str):
            raise ValueError("disclosure")
        by_digest[_digest(disclosure)] = content
    used: list[str] = []

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {name: walk(value) for name, value in node.items() if name not in ("_sd", "_sd_alg")}
            for digest in node.get("_sd", ()):
                content = by_digest.get(digest)
                if content is not None and len(content) == 3:
                    used.append(digest)
                    out[content[1]] = walk(content[2])
            return out
        if isinstance(node, list):
            out_list = []
            for item in node:
                if isinstance(item, dict) and "..." in item:
                    content = by_digest.get(item["..."])
                    if content is not None and len(content) == 2:
                        used.append(item["..."])
                        out_list.append(walk(content[1]))
                    continue
                out_list.append(walk(item))
            return out_list
        return node

    processed = walk(payload)
    if len(used) != len(by_digest) or len(set(used)) != len(used):
        raise ValueError("unreferenced or repeated disclosure")
    processed_payload: dict[str, Any] = processed
    return processed_payload


@dataclass(frozen=True)
class _Pin:
    """A pinned key as a minimal verifier keeps it: the parsed key and its window as Unix times
    (``compromised``: a cart alone cannot prove it was signed before the key was stolen)."""

    public: ec.EllipticCurvePublicKey
    valid_from: float
    end: float
    compromised: bool


def _pins(trust_root: Any, did: str, kids: Iterable[str]) -> dict[str, _Pin]:
    pins = {}
    for kid in kids:
        anchored = trust_root.anchor("merchant", did, kid, algorithms=trust_root.algorithm_set)
        public = anchored.key.to_cryptography()
        assert isinstance(public, ec.EllipticCurvePublicKey)
        window = anchored.validity
        ends = [] if window is None else [t.timestamp() for t in (window.valid_until, window.revoked_at) if t]
        pins[kid] = _Pin(
            public,
            window.valid_from.timestamp() if window is not None and window.valid_from else -math.inf,
            min(ends, default=math.inf),
            window is not None and window.reason == "compromised",
        )
    return pins


@dataclass
class _Case:
    """One chain, the arguments that verify it, and the keys the floor verifies with."""

    chain: Any
    expectations: dict[str, Any]
    merchant_public: ec.EllipticCurvePublicKey
    user_public: ec.EllipticCurvePublicKey
    issuer_public: ec.EllipticCurvePublicKey
    merchant_did: str
    merchant_pins: dict[str, _Pin]
    """What the trust root pins for the merchant, by kid (built before timing, for the complete floor)."""


def _public(key_pair: Any) -> ec.EllipticCurvePublicKey:
    public = key_pair.public_key.to_cryptography()
    assert isinstance(public, ec.EllipticCurvePublicKey)
    return public


def _load_module(name: str, path: Path) -> Any:
    """A script loaded by path under ``name`` (the evidence builder is a fixture script, not a package)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _load_builder() -> Any:
    return _load_module("mudrika_evidence_builder", ROOT / "fixtures" / "evidence" / "make_bundle.py")


_SERIAL = itertools.count(1)
"""Numbers every generated chain in the process, so that no two chains share a time text."""


def _cases(builder: Any, count: int, label: str) -> list[_Case]:
    """``count`` distinct signed chains: their own seed keys, merchant DID, cart id, nonce, time
    texts (the expiries and the payment's timestamp, which verification parses) and trust root, so
    that no cache keyed by any of them can answer for another chain of any pool."""
    saved = builder.MERCHANT_DID, builder.MERCHANT_KID, builder.NONCE
    cases = []
    try:
        for index in range(count):
            serial = next(_SERIAL)
            builder.MERCHANT_DID = f"did:web:m{index}.{label}.example"
            builder.MERCHANT_KID = builder.MERCHANT_DID + "#cart-signing-1"
            builder.NONCE = f"kb-nonce-{label}-{index}"

            def edit_intent(raw: dict[str, Any], serial: int = serial) -> None:
                raw["intent_expiry"] = f"2025-10-01T18:00:00.{serial:06d}Z"

            def edit_cart(raw: dict[str, Any], serial: int = serial) -> None:
                raw["cart_expiry"] = f"2025-10-01T12:30:00.{serial:06d}Z"

            def edit_payment(raw: dict[str, Any], serial: int = serial) -> None:
                raw["timestamp"] = f"2025-10-01T12:21:07.{serial:06d}+00:00"

            chain = builder.build_chain(
                key_type="p256",
                seed_prefix=f"bench {label} {index}",
                edit_intent=edit_intent,
                edit_cart=edit_cart,
                edit_payment=edit_payment,
            )
            chain.nonce = builder.NONCE
            cases.append(
                _Case(
                    chain=chain,
                    expectations=chain.expectations(),
                    merchant_public=_public(chain.merchant_key),
                    user_public=_public(chain.user_key),
                    issuer_public=_public(chain.issuer_key),
                    merchant_did=builder.MERCHANT_DID,
                    merchant_pins=_pins(
                        chain.expectations()["trust_root"], builder.MERCHANT_DID, [builder.MERCHANT_KID]
                    ),
                )
            )
    finally:
        builder.MERCHANT_DID, builder.MERCHANT_KID, builder.NONCE = saved
    return cases


def floor_cart(case: _Case) -> None:
    cart = case.chain.cart
    expectations = case.expectations
    now = expectations["now"]
    at = now.timestamp() if isinstance(now, datetime) else float(now)
    _, claims = es256_jws(cart.model.merchant_authorization, case.merchant_public)
    if claims["cart_hash"] != mandate_hash(cart.raw["contents"]):
        raise ValueError("cart_hash")
    if not (
        claims["iss"] == case.merchant_did
        and claims["sub"] == cart.raw["contents"]["id"]
        and claims["aud"] == expectations["merchant_audience"]
        and claims["iat"] <= at < claims["exp"]
        and claims["exp"] - claims["iat"] <= 900
        and isinstance(claims["jti"], str)
    ):
        raise ValueError("claims")


#: The cart's members the merchant's signature covers, in either spelling the models accept.
_CART_COVERED = frozenset({"contents", "merchant_authorization", "merchantAuthorization"})


def complete_cart(case: _Case, store: MemoryReplayStore) -> None:
    """The floor, plus every other check ``verify_cart`` must make, written as a minimal verifier
    would: ``alg`` in the trust root's allow-list and no ``crit`` or key-selecting header, ``typ``,
    the kid looked up among the keys the root pins for the merchant (so the key is the pinned
    owner's), the key's window at ``iat``, ``nbf`` and the root's leeway, the ``jti``'s length, no
    unsigned cart member, the cart's own expiry, the total against the display items (currencies
    equal, exact decimal sum) and the ``jti`` claimed once in the same kind of replay store.  What
    it leaves out is what a verifier need not do to decide: naming each check for a report."""
    cart = case.chain.cart
    expectations = case.expectations
    now = expectations["now"]
    at = now.timestamp() if isinstance(now, datetime) else float(now)
    root = expectations["trust_root"]
    leeway = root.leeway_seconds
    token: str = cart.model.merchant_authorization
    header_b64, payload_b64, signature_b64 = token.split(".")
    header = loads_strict(b64url_decode(header_b64))
    claims = loads_strict(b64url_decode(payload_b64))
    if header.get("alg") != "ES256" or "ES256" not in root.algorithm_set:
        raise ValueError("alg")
    if "crit" in header or not FORBIDDEN_HEADERS.isdisjoint(header) or header.get("typ") != "JWT":
        raise ValueError("header")
    kid = header.get("kid")
    pin = case.merchant_pins.get(kid) if isinstance(kid, str) else None
    if pin is None:
        raise ValueError("kid not pinned")
    signature = b64url_decode(signature_b64)
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    pin.public.verify(der, f"{header_b64}.{payload_b64}".encode("ascii"), _ES256)
    contents = cart.raw["contents"]
    if claims["cart_hash"] != mandate_hash(contents):
        raise ValueError("cart_hash")
    iat, exp, nbf, jti = claims["iat"], claims["exp"], claims.get("nbf"), claims["jti"]
    did = kid.partition("#")[0]
    if not (
        claims["iss"] == did
        and claims["sub"] == contents["id"]
        and claims["aud"] == expectations["merchant_audience"]
        and iat <= at + leeway
        and (nbf is None or nbf <= at + leeway)
        and at < exp + leeway
        and 0 < exp - iat <= 900
        and isinstance(jti, str)
        and 0 < len(jti) <= 256
    ):
        raise ValueError("claims")
    if pin.compromised or not pin.valid_from <= iat < pin.end:
        raise ValueError("key window")
    if not cart.raw.keys() <= _CART_COVERED:
        raise ValueError("unsigned member")
    if not at < datetime.fromisoformat(contents["cart_expiry"]).timestamp() + leeway:
        raise ValueError("cart expired")
    details = cart.model.contents.payment_request.details
    total = details.total.amount
    if (
        any(item.amount.currency != total.currency for item in details.display_items)
        or sum((item.amount.value for item in details.display_items), Decimal(0)) != total.value
    ):
        raise ValueError("total")
    # The replay key as verify_cart derives it (its own function: the key format is part of the store).
    if not store.claim(merchant_jti_key(did, jti), exp):
        raise ValueError("replayed")


def floor_chain(case: _Case) -> None:
    chain = case.chain
    intent, cart, payment = chain.intent, chain.cart, chain.payment
    # Intent: the user's JWS over H(intent without user_authorization).
    unsigned = {k: v for k, v in intent.raw.items() if k not in _SIGNATURE_MEMBERS}
    _, intent_claims = es256_jws(intent.model.user_authorization, case.user_public)
    if intent_claims["intent_hash"] != mandate_hash(unsigned):
        raise ValueError("intent_hash")
    floor_cart(case)
    # Payment: issuer-signed SD-JWT, its Disclosures, the holder key, the KB-JWT and its hashes.
    presentation: str = payment.model.user_authorization
    issuer_jwt, *disclosures, kb_jwt = presentation.split("~")
    _, credential = es256_jws(issuer_jwt, case.issuer_public)
    digests = set(_sd_digests(credential))
    for disclosure in disclosures:
        if not isinstance(loads_strict(b64url_decode(disclosure)), list):
            raise ValueError("disclosure")
        if _digest(disclosure) not in digests:
            raise ValueError("disclosure digest")
    holder = _holder(credential["cnf"]["jwk"])
    _, kb = es256_jws(kb_jwt, holder)
    if kb["sd_hash"] != _digest(presentation[: len(presentation) - len(kb_jwt)]):
        raise ValueError("sd_hash")
    expected = [
        mandate_hash(cart.raw),
        mandate_hash(payment.raw["payment_mandate_contents"]),
        mandate_hash(intent.raw),
    ]
    if kb["transaction_data"] != expected:
        raise ValueError("transaction_data")


def _sd_digests(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        yield from value.get("_sd", ())
        for item in value.values():
            yield from _sd_digests(item)
    elif isinstance(value, list):
        for item in value:
            yield from _sd_digests(item)


# -- v0.2 ------------------------------------------------------------------------------------------------


@dataclass
class _Transaction:
    transaction: Any
    issuer_public: ec.EllipticCurvePublicKey
    merchant_public: ec.EllipticCurvePublicKey


def _transactions(count: int) -> list[_Transaction]:
    made = []
    for index in range(count):

        def name_checkout(checkout: dict[str, Any], index: int = index) -> None:
            checkout["id"] = f"chk_bench_{index}"

        transaction = ap2_v02.build(now=ap2_v02.FIXTURE_TIME, checkout_hook=name_checkout)
        made.append(
            _Transaction(transaction, _public(transaction.keys.issuer), _public(transaction.keys.merchant))
        )
    return made


def _hop_pair(
    chain: str, issuer_public: ec.EllipticCurvePublicKey, holder: ec.EllipticCurvePublicKey | None
) -> tuple[dict[str, Any], dict[str, Any], ec.EllipticCurvePublicKey, str, str]:
    """One delegation chain (root ~~ hop): both tokens, their Disclosures, the holder key, sd_hash.
    Returns the processed root and hop claims, the holder key and both tokens as presented."""
    root_text, hop_text = chain.split("~~")
    root_presented = root_text + "~"
    root_jwt, *root_disclosures = root_text.split("~")
    _, root_payload = es256_jws(root_jwt, issuer_public)
    root = _disclose(root_payload, root_disclosures)
    if holder is None:
        holder = _holder(root["delegate_payload"][0]["cnf"]["jwk"])
    hop_jwt, *hop_disclosures = hop_text.split("~")[:-1]
    hop_header, hop_payload = es256_jws(hop_jwt, holder)
    hop = _disclose(hop_payload, hop_disclosures)
    if hop_header.get("typ") != "kb+sd-jwt" or hop["sd_hash"] != _digest(root_presented):
        raise ValueError("hop")
    return root, hop, holder, root_presented, hop_text


def floor_v02(case: _Transaction) -> None:
    transaction = case.transaction
    checkout_root, checkout_hop, holder, checkout_root_presented, checkout_hop_presented = _hop_pair(
        transaction.checkout_chain, case.issuer_public, None
    )
    if checkout_hop["aud"] != ap2_v02.MERCHANT_DID or checkout_hop["nonce"] != ap2_v02.CHECKOUT_NONCE:
        raise ValueError("checkout hop")
    closed_checkout = checkout_hop["delegate_payload"][0]
    checkout_jwt = closed_checkout["checkout_jwt"]
    es256_jws(checkout_jwt, case.merchant_public)
    checkout_hash = _digest(checkout_jwt)
    if closed_checkout["checkout_hash"] != checkout_hash:
        raise ValueError("checkout_hash")
    payment_root, payment_hop, _, _, payment_hop_presented = _hop_pair(
        transaction.payment_chain,
        case.issuer_public,
        holder if payment_root_binds_same(transaction) else None,
    )
    if payment_hop["aud"] != ap2_v02.CP_AUDIENCE or payment_hop["nonce"] != ap2_v02.PAYMENT_NONCE:
        raise ValueError("payment hop")
    if payment_hop["delegate_payload"][0]["transaction_id"] != checkout_hash:
        raise ValueError("transaction_id")
    open_payment = payment_root["delegate_payload"][0]
    references = [c for c in open_payment["constraints"] if c.get("type") == "payment.reference"]
    if references[0]["conditional_transaction_id"] != _digest(checkout_root_presented):
        raise ValueError("conditional_transaction_id")
    for receipt, closing in (
        (transaction.checkout_receipt, checkout_hop_presented),
        (transaction.payment_receipt, payment_hop_presented),
    ):
        _, claims = es256_jws(receipt, case.merchant_public)
        if claims["reference"] != _digest(closing):
            raise ValueError("reference")
    if checkout_root["delegate_payload"][0]["cnf"] != open_payment["cnf"]:
        raise ValueError("agent")


def payment_root_binds_same(transaction: Any) -> bool:
    """Both open mandates bind the same agent JWK (the floor then builds that key once)."""
    return bool(transaction.open_checkout["cnf"] == transaction.open_payment["cnf"])


# -- SD-JWT ----------------------------------------------------------------------------------------------


@dataclass
class _Presentation:
    text: str
    issuer_key: TrustedKey
    issuer_public: ec.EllipticCurvePublicKey


_SD_ISSUER = "https://issuer.example"
_SD_AUDIENCE = "https://verifier.example"
_SD_NONCE = "sd-bench-nonce"
_SD_NOW = 2_000_000_000


def _presentations(size: int, count: int) -> list[_Presentation]:
    """``count`` distinct SD-JWT+KB presentations, each disclosing ``size`` claims (own keys, salts)."""
    made = []
    paths = [f"/claim_{index}" for index in range(size)]
    for _ in range(count):
        issuer = KeyPair.generate(KeyType.P256)
        holder = KeyPair.generate(KeyType.P256)
        claims = {
            "iss": _SD_ISSUER,
            "iat": _SD_NOW - 60,
            "exp": _SD_NOW + 3600,
            **{f"claim_{index}": f"value {index}" for index in range(size)},
        }
        issued = sdjwt.issue(
            claims, issuer_key=issuer, kid="k1", disclosable=paths, holder_key=holder.public_key
        )
        text = sdjwt.present(
            issued, disclose=paths, holder_key=holder, aud=_SD_AUDIENCE, nonce=_SD_NONCE, iat=_SD_NOW
        )
        key = TrustedKey(key=issuer.public_key, algorithms=frozenset({"ES256"}))
        made.append(_Presentation(text, key, _public(issuer)))
    return made


def ours_sdjwt(case: _Presentation) -> object:
    return sdjwt.verify(
        case.text,
        issuer_key=case.issuer_key,
        issuer=_SD_ISSUER,
        now=_SD_NOW,
        require_key_binding=True,
        expected_aud=_SD_AUDIENCE,
        expected_nonce=_SD_NONCE,
        kb_max_age=300,
    )


def floor_sdjwt(case: _Presentation) -> dict[str, Any]:
    text = case.text
    issuer_jwt, *disclosures, kb_jwt = text.split("~")
    header, payload = es256_jws(issuer_jwt, case.issuer_public)
    if header.get("typ") != "dc+sd-jwt" or payload.get("_sd_alg", "sha-256") != "sha-256":
        raise ValueError("issuer jwt")
    claims = _disclose(payload, disclosures)
    if not (claims["iss"] == _SD_ISSUER and claims["iat"] <= _SD_NOW < claims["exp"]):
        raise ValueError("validity")
    holder = _holder(payload["cnf"]["jwk"])
    kb_header, kb = es256_jws(kb_jwt, holder)
    if not (
        kb_header.get("typ") == "kb+jwt"
        and kb["aud"] == _SD_AUDIENCE
        and kb["nonce"] == _SD_NONCE
        and _SD_NOW - 300 <= kb["iat"] <= _SD_NOW
        and kb["sd_hash"] == _digest(text[: len(text) - len(kb_jwt)])
    ):
        raise ValueError("key binding")
    return claims


# -- the run ---------------------------------------------------------------------------------------------


def _consume(pool: list[Any], action: Callable[[Any], object]) -> Callable[[], object]:
    """A zero-argument call that hands ``action`` the next item of ``pool`` (each item once), after
    emptying the tables of :data:`_PER_CALL_TABLES` (a dictionary ``clear`` each)."""
    items = iter(pool)
    tables = _per_call_tables()

    def call() -> object:
        for table in tables:
            table.clear()
        return action(next(items))

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=9)
    parser.add_argument("--number", type=int, default=100, help="calls per batch of the cart rows")
    args = parser.parse_args()
    reps, cart_number = args.repetitions, args.number
    chain_number = max(cart_number // 4, 10)
    v02_number = max(cart_number // 10, 5)
    sd_number = {1: max(cart_number // 4, 10), 10: max(cart_number // 4, 10), 100: max(cart_number // 10, 5)}

    builder = _load_builder()
    # Each pool holds one item per timed call plus one for the check before timing; the floor reads
    # the same items as ours (it has no cache).
    # Two spare chains each: one checks every path before timing, one counts the cache hits a single
    # verification makes on its own.
    cart_cases = _cases(builder, reps * cart_number + 2, "cart")
    chain_cases = _cases(builder, reps * chain_number + 2, "chain")
    warm = _cases(builder, 1, "warm")[0]
    transactions = _transactions(reps * v02_number + 1)
    warm_transaction = _transactions(1)[0]
    presentations = {size: _presentations(size, reps * sd_number[size] + 1) for size in _SD_SIZES}
    store = MemoryReplayStore(max_entries=1 << 20)  # the verifier's one long-lived store
    complete_store = MemoryReplayStore(max_entries=1 << 20)  # the complete floor's own (same jtis)

    def ours_cart(case: _Case) -> object:
        expectations = case.expectations
        return verify_cart(
            case.chain.cart,
            trust_root=expectations["trust_root"],
            keys=expectations["keys"],
            audience=expectations["merchant_audience"],
            now=expectations["now"],
            replay_store=store,
        )

    def ours_chain(case: _Case) -> object:
        chain = case.chain
        return verify_chain(chain.intent, chain.cart, chain.payment, replay_store=store, **case.expectations)

    # The warm rows verify one chain again and again: each call needs a store that has not seen its
    # jti and nonce, built here, outside the timed batches.
    warm_stores = iter([MemoryReplayStore(max_entries=8) for _ in range(2 * reps * cart_number + 4)])

    def ours_cart_warm() -> object:
        expectations = warm.expectations
        return verify_cart(
            warm.chain.cart,
            trust_root=expectations["trust_root"],
            keys=expectations["keys"],
            audience=expectations["merchant_audience"],
            now=expectations["now"],
            replay_store=next(warm_stores),
        )

    def ours_chain_warm() -> object:
        chain = warm.chain
        return verify_chain(
            chain.intent, chain.cart, chain.payment, replay_store=next(warm_stores), **warm.expectations
        )

    caches: list[Any] = []  # found once every module is loaded (after the checks below)

    def ours_v02(case: _Transaction, *, cold: bool = True) -> object:
        if cold:
            _clear_caches(caches)
        transaction = case.transaction
        return verify_v02(
            transaction.evidence(),
            replay_store=MemoryReplayStore(max_entries=16),
            **transaction.verifier_arguments(),
        )

    intent_bytes, cart_bytes, payment_bytes = (
        m.wire_bytes() for m in (warm.chain.intent, warm.chain.cart, warm.chain.payment)
    )

    def receive_three() -> object:
        return receive_intent(intent_bytes), receive_cart(cart_bytes), receive_payment(payment_bytes)

    # Every path succeeds before anything is timed (on the one spare item of each pool).
    for check, item in (
        (ours_cart, cart_cases[-1]),
        (floor_cart, cart_cases[-1]),
        (ours_chain, chain_cases[-1]),
        (floor_chain, chain_cases[-1]),
        (ours_v02, transactions[-1]),
        (floor_v02, transactions[-1]),
        *((ours_sdjwt, presentations[size][-1]) for size in _SD_SIZES),
        *((floor_sdjwt, presentations[size][-1]) for size in _SD_SIZES),
    ):
        check(item)
    # The complete floor accepts the genuine cart once, then refuses it replayed, and refuses it when
    # the root pins no key under its kid (the checks it adds are really made).
    probe = MemoryReplayStore(max_entries=8)
    complete_cart(cart_cases[-1], probe)
    unpinned = replace(cart_cases[-1], merchant_pins={})
    for refused in (lambda: complete_cart(cart_cases[-1], probe), lambda: complete_cart(unpinned, probe)):
        try:
            refused()
        except ValueError:
            continue
        raise SystemExit("bench_payments: the complete floor accepted a cart it must refuse")
    for check_warm in (ours_cart_warm, ours_chain_warm, receive_three):
        check_warm()
    floor_chain(warm)
    ours_v02(warm_transaction, cold=False)

    caches.extend(_lru_caches().values())

    def hits_of_one(call: Callable[[_Case], object], case: _Case) -> int:
        _clear_caches()
        call(case)
        return sum(count for name, count in _hits().items() if name not in _CONSTANT_MEMOS)

    alone = {
        "cart": hits_of_one(ours_cart, cart_cases[-2]),
        "chain": hits_of_one(ours_chain, chain_cases[-2]),
    }
    _clear_caches()
    before = _hits()
    cold = measure(
        {
            "ours cart": _consume(cart_cases, ours_cart),
            "floor cart": _consume(cart_cases, floor_cart),
            "complete cart": _consume(cart_cases, lambda case: complete_cart(case, complete_store)),
            "ours chain": _consume(chain_cases, ours_chain),
            "floor chain": _consume(chain_cases, floor_chain),
        },
        repetitions=reps,
        number={
            "ours cart": cart_number,
            "floor cart": cart_number,
            "complete cart": cart_number,
            "ours chain": chain_number,
            "floor chain": chain_number,
        },
    )
    cold_hits = {name: hits - before.get(name, 0) for name, hits in _hits().items()}
    warm_spread = measure(
        {
            "ours cart": ours_cart_warm,
            "floor cart": lambda: floor_cart(warm),
            "ours chain": ours_chain_warm,
            "floor chain": lambda: floor_chain(warm),
            "receive": receive_three,
        },
        repetitions=reps,
        number={
            "ours cart": cart_number,
            "floor cart": cart_number,
            "ours chain": chain_number,
            "floor chain": chain_number,
            "receive": chain_number,
        },
    )
    v02 = measure(
        {
            "ours cold": _consume(transactions, ours_v02),
            "floor cold": _consume(transactions, floor_v02),
            "ours warm": lambda: ours_v02(warm_transaction, cold=False),
            "floor warm": lambda: floor_v02(warm_transaction),
        },
        repetitions=reps,
        number=v02_number,
    )
    sd_runs: dict[int, dict[str, Spread]] = {}
    for size in _SD_SIZES:
        sd_runs[size] = measure(
            {
                "ours": _consume(presentations[size], ours_sdjwt),
                "floor": _consume(presentations[size], floor_sdjwt),
            },
            repetitions=reps,
            number=sd_number[size],
        )

    def share(spreads: Mapping[str, Spread], ours: str, floor: str) -> Spread:
        return ratio(spreads[floor], spreads[ours])

    print("## AP2 v0.1 mandate verification against the correct floor (bench/bench_payments.py)\n")
    print(
        "ES256 / P-256 everywhere. Floor = strict parsing + every signature + every hash the profile "
        "binds, nothing else, with the keys the trust root pins already parsed (see the script's "
        "docstring). **Cold** (the headline): every call verifies a chain never verified before -- its "
        "own user, merchant and issuer keys, merchant DID, cart, nonce, time texts and trust root, "
        "generated before timing, and the JOSE header table emptied before it -- so no cache of ours "
        "can answer (accounted under the table); *warm*: one chain again and again, "
        "every cache hits. Ours claims the cart's jti (and the KB nonce) in the verifier's replay "
        f"store. Median (min–max) of {reps} interleaved repetitions; share = floor time ÷ ours "
        "(1.0 = as fast as the floor), formed per repetition; per core = ours on one core, beside "
        "the most this machine's OpenSSL allows for the row's ES256 verifies.\n"
    )
    print(
        "| operation | ours µs/op | ours per core (OpenSSL ceiling) | floor µs/op "
        "| ours speed ÷ floor speed | target | verdict |"
    )
    print("|---|---:|---:|---:|---:|---|---|")
    rows = (
        (
            "**cold**: `merchant_authorization`, `verify_cart` vs 1 ES256 JWS + H(CartContents) + claims",
            cold,
            "ours cart",
            "floor cart",
            1,
            0.8,
        ),
        (
            "**cold**: full chain, `verify_chain` vs 4 ES256 JWS + holder key + Disclosures + 5 mandate "
            "hashes + sd_hash",
            cold,
            "ours chain",
            "floor chain",
            4,
            0.7,
        ),
        (
            "*warm* (caches hit): `merchant_authorization`, one cart again",
            warm_spread,
            "ours cart",
            "floor cart",
            1,
            None,
        ),
        (
            "*warm* (caches hit): full chain, one chain again",
            warm_spread,
            "ours chain",
            "floor chain",
            4,
            None,
        ),
    )
    for label, spreads, ours, floor, verifies, target in rows:
        measured = share(spreads, ours, floor)
        print(
            f"| {label} | {fmt(spreads[ours])} | {per_core_cell(spreads[ours].median, {'ES256': verifies})} "
            f"| {fmt(spreads[floor])} | {fmt(measured, 2)} "
            + (f"| ≥ {target}× | {verdict(measured, target)} |" if target is not None else "| | |")
        )
    print(
        f"| receiving the 3 mandates from bytes (strict JSON + schema), in neither row "
        f"| {fmt(warm_spread['receive'])} | | | | | |"
    )
    complete_share = share(cold, "complete cart", "floor cart")
    ours_of_complete = share(cold, "ours cart", "complete cart")
    print(
        "\nWhat a verification must check beyond the floor (cold, the same carts, interleaved with the rows "
        "above; informative). The *complete floor* adds to the floor every other check `verify_cart` "
        "makes, written as a minimal verifier would (see `complete_cart` in the script): the algorithm "
        "allow-list and header rules, `typ`, the kid found among the keys the trust root pins for the "
        "merchant, the key's window at `iat`, `nbf` and the leeway, no unsigned cart member, the cart's "
        "own expiry, the total against the display items, the `jti` claimed once in a replay store. It "
        "names no check and builds no report. Its speed ÷ the floor's is the most any verification "
        "making these checks could reach against the issue's floor; ours ÷ it is what ours' own "
        "structure costs.\n"
    )
    print("| cold, `merchant_authorization` | µs/op | its speed ÷ the floor's | ours' speed ÷ its |")
    print("|---|---:|---:|---:|")
    print(
        f"| complete floor: the floor + every other check `verify_cart` makes | {fmt(cold['complete cart'])} "
        f"| {fmt(complete_share, 2)} | {fmt(ours_of_complete, 2)} |"
    )
    hit = {name.removeprefix("mudrika."): count for name, count in sorted(cold_hits.items()) if count}
    memo_hits = sum(count for name, count in cold_hits.items() if name in _CONSTANT_MEMOS)
    input_hits = sum(count for name, count in cold_hits.items() if name not in _CONSTANT_MEMOS)
    expected = reps * (cart_number * alone["cart"] + chain_number * alone["chain"])
    where = ", ".join(f"`{name}` {count:,}" for name, count in hit.items()) or "none"
    print(
        "\nCaches during the cold rows: every `functools.lru_cache` of a loaded mudrika module and the "
        "chain verifier's per-trust-root tables were emptied before them, and the JOSE header table "
        "(keyed by header text, the same for every key-binding JWT) before each call. Hits: "
        f"{where}. Of these, {memo_hits:,} are memos of constant check-id prefixes (keyed by no "
        f"input). One verification on emptied caches makes {alone['cart']} other hits (a cart) and "
        f"{alone['chain']} (a chain) on its own -- a value read twice within it (the same DID URL, "
        f"time text or key asked for by two checks) -- so the cold rows' calls account for "
        f"{expected:,}; measured {input_hits:,}: "
        + (
            "no verification was answered from another's."
            if input_hits == expected
            else "**the rest came from one verification to another** (the rows are not fully cold)."
        )
        + "\n"
    )

    print("## AP2 v0.2 transaction verification against its floor (bench/bench_payments.py)\n")
    print(
        "One transaction = the checkout chain (open checkout mandate + the agent's hop, with the "
        "merchant's checkout JWT), the payment chain (open payment mandate + hop) and both receipts; "
        "`verify_v02` with a replay store. Floor = 7 ES256 JWS (2 issuer JWTs, 2 hops, the checkout "
        "JWT, 2 receipts) + every Disclosure + the agent key from `cnf.jwk` (once) + `sd_hash` of "
        "each hop, `checkout_hash`, `transaction_id`, `conditional_transaction_id` and both receipt "
        "`reference`s (see the script's docstring). **Cold**: a new transaction (own keys, checkout "
        "id, trust root) per call and every cache of ours cleared before each call (the clearing is "
        "in ours' time); *warm*: one transaction again. No target in the issue: the share is stated. "
        f"Median (min–max) of {reps} interleaved repetitions.\n"
    )
    print(
        "| operation | ours µs/op | ours per core (OpenSSL ceiling) | floor µs/op | ours speed ÷ floor speed |"
    )
    print("|---|---:|---:|---:|---:|")
    for label, ours, floor in (
        ("**cold**: `verify_v02`, checkout + payment + 2 receipts", "ours cold", "floor cold"),
        ("*warm* (caches hit): one transaction again", "ours warm", "floor warm"),
    ):
        print(
            f"| {label} | {fmt(v02[ours])} | {per_core_cell(v02[ours].median, {'ES256': 7})} "
            f"| {fmt(v02[floor])} | {fmt(share(v02, ours, floor), 2)} |"
        )

    print("\n## SD-JWT+KB verification against its floor (bench/bench_payments.py)\n")
    print(
        "`mudrika.crypto.sdjwt.verify` (RFC 9901 §7.3, key binding required) on presentations "
        "disclosing every one of N flat claims, each call a presentation never verified before (own "
        "issuer and holder keys). Floor = split, the issuer JWT (strict parse, `typ`, ES256), "
        "`_sd_alg`, each Disclosure (decode, strict parse, shape, digest found once in `_sd`, claim "
        "inserted), `iss`/`iat`/`exp`, the holder key from `cnf.jwk`, the KB-JWT (strict parse, `typ`, "
        "ES256, `aud`, `nonce`, `iat`, `sd_hash`): 2 ES256 verifies. Overhead = ours time ÷ floor "
        f"time, per repetition (1.0 = the floor). Median (min–max) of {reps} interleaved repetitions.\n"
    )
    print(
        "| disclosures | ours µs/op | ours per core (OpenSSL ceiling) | floor µs/op "
        "| ours time ÷ floor time | target | verdict |"
    )
    print("|---|---:|---:|---:|---:|---|---|")
    for size in _SD_SIZES:
        spreads = sd_runs[size]
        overhead = ratio(spreads["ours"], spreads["floor"])
        tail = (
            f"| ≤ 1.3× | {verdict(overhead, 1.3, at_least=False)} |" if size == _SD_TARGET_SIZE else "| | |"
        )
        print(
            f"| {size} | {fmt(spreads['ours'])} | {per_core_cell(spreads['ours'].median, {'ES256': 2})} "
            f"| {fmt(spreads['floor'])} | {fmt(overhead, 2)} {tail}"
        )


if __name__ == "__main__":
    main()
