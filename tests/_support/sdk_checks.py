"""A v0.2 chain verifier that makes exactly the checks the official AP2 v0.2 SDK makes, and no more.

Why this exists: the gap tests must show an attack that the SDK's own verifier *accepts*, but the SDK
(``code/sdk/python`` of google-agentic-commerce/AP2) is on no registry the test command reaches (PyPI
``ap2`` is an unrelated v0.1 repackaging).  This module restates, from the SDK's documented behaviour,
what its verification path checks, on top of the same libraries the SDK is built on (PyPI ``sd-jwt``
``SDJWTVerifier`` for every signature and disclosure, ``jwcrypto`` keys):

* ``sdjwt.chain.verify_chain`` -- tokens split on ``~~``; the root verified with the caller's key
  (a ``kid`` lookup, or ``x5c`` whose certificates are only checked against each other: the SDK
  checks them against trusted roots only when a caller gives some, which no gap test does, so that
  branch is not restated); each hop verified with the previous hop's ``cnf.jwk``;
  ``exp`` refused once past (with 300 s of skew) and ``iat`` only when in the future; the caller's
  ``aud``/``nonce`` compared on the **last** hop only, and only when the caller gives them;
* ``sdjwt.kb_sd_jwt.verify`` -- a known KB ``typ``; exactly one of ``sd_hash``/``issuer_jwt_hash``
  matching the previous token; terminal hops without ``cnf``, intermediate hops with it;
* ``CheckoutMandateChain.verify`` -- the checkout is read from ``checkout_jwt``'s payload without
  verifying its signature; ``checkout_hash`` is compared only with an optional expected value;
* ``PaymentMandateChain.verify`` -- ``transaction_id`` and the ``payment.reference`` constraint are
  compared only with the optional expected values.

The SDK's evaluation of the other constraints is not restated: every attack in the gap tests is built
from a transaction whose constraints hold, so they could not change the outcome.  Nothing here is
remembered between calls, as in the SDK (which has no replay store).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from jwcrypto.jwk import JWK  # type: ignore[import-untyped]
from sd_jwt.verifier import SDJWTVerifier

from mudrika.payments.v02 import V02Evidence

CLOCK_SKEW = 300
KB_TYPES = ("kb+sd-jwt", "kb-sd-jwt", "kb+sd-jwt+kb", "kb-sd-jwt+kb")
TERMINAL_TYPES = ("kb+sd-jwt", "kb-sd-jwt")


class SdkRefusal(Exception):
    """What the SDK would raise or report as a violation."""


@dataclass(frozen=True)
class SdkExpectations:
    """The SDK's optional verifier arguments; ``None`` is what a caller that omits them passes."""

    checkout_aud: str | None = None
    checkout_nonce: str | None = None
    payment_aud: str | None = None
    payment_nonce: str | None = None
    expected_checkout_hash: str | None = None
    expected_transaction_id: str | None = None
    expected_open_checkout_hash: str | None = None


def _b64_sha256(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


def _b64_json(part: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def split_chain(chain: str) -> list[str]:
    """``~~``-joined tokens, each in the form its successor's ``sd_hash`` covers (ending in ``~``)."""
    parts = chain.split("~~")
    return [part if part.endswith("~") else part + "~" for part in parts]


def _x5c_key(header: dict[str, Any]) -> JWK:
    certificates = [x509.load_der_x509_certificate(base64.b64decode(item)) for item in header["x5c"]]
    for subject, issuer in itertools.pairwise(certificates):
        public = issuer.public_key()
        assert isinstance(public, ec.EllipticCurvePublicKey)
        assert subject.signature_hash_algorithm is not None
        public.verify(
            subject.signature, subject.tbs_certificate_bytes, ec.ECDSA(subject.signature_hash_algorithm)
        )
    return JWK.from_pyca(certificates[0].public_key())


def _check_times(payload: dict[str, Any], now: int) -> None:
    exp, iat = payload.get("exp"), payload.get("iat")
    if exp is not None and now > exp + CLOCK_SKEW:
        raise SdkRefusal("expired")
    if iat is not None and iat > now + CLOCK_SKEW:
        raise SdkRefusal("iat in the future")


def _fixed_key(key: JWK) -> Any:
    """``sd_jwt.verify``'s key callback: the key the chain walk chose, whatever the token names."""
    return lambda _issuer, _header: key


def _delegate(payload: dict[str, Any]) -> dict[str, Any]:
    items = payload.get("delegate_payload")
    if not isinstance(items, list) or not items or not isinstance(items[0], dict):
        raise SdkRefusal("no delegate payload")
    return items[0]


def verify_chain_like_the_sdk(
    chain: str,
    *,
    root_key: JWK,
    now: int,
    expected_aud: str | None = None,
    expected_nonce: str | None = None,
) -> list[dict[str, Any]]:
    """``sdjwt.chain.verify_chain`` with ``kb_sd_jwt.verify`` per hop: the mandates, root first."""
    tokens = split_chain(chain)
    mandates: list[dict[str, Any]] = []
    key = root_key
    for index, token in enumerate(tokens):
        header = _b64_json(token.split(".", 1)[0])
        if index == 0 and "x5c" in header:
            key = _x5c_key(header)
        if index > 0 and header.get("typ") not in KB_TYPES:
            raise SdkRefusal("unexpected typ")
        payload = SDJWTVerifier(token, _fixed_key(key)).get_verified_payload()
        mandate = _delegate(payload)
        if index > 0:
            previous = tokens[index - 1]
            bindings = [claim for claim in ("sd_hash", "issuer_jwt_hash") if claim in payload]
            if len(bindings) != 1:
                raise SdkRefusal("exactly one of sd_hash / issuer_jwt_hash")
            bound = previous if bindings[0] == "sd_hash" else previous.split("~", 1)[0]
            if payload[bindings[0]] != _b64_sha256(bound):
                raise SdkRefusal("binding mismatch")
            if "iat" not in payload:
                raise SdkRefusal("iat missing")
            terminal = header["typ"] in TERMINAL_TYPES
            if terminal and index == len(tokens) - 1:
                for claim, expected in (("aud", expected_aud), ("nonce", expected_nonce)):
                    if expected is not None and payload.get(claim) != expected:
                        raise SdkRefusal(f"{claim} mismatch")
            if terminal == ("cnf" in mandate):
                raise SdkRefusal("cnf on a terminal hop, or missing on an intermediate one")
        _check_times(payload, now)
        _check_times(mandate, now)
        mandates.append(mandate)
        if "cnf" in mandate:
            key = JWK(**mandate["cnf"]["jwk"])
    return mandates


def _mandate_pair(
    chain: str, kind: str, expected: tuple[str | None, str | None], context: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``CheckoutMandateChain.parse`` / ``PaymentMandateChain.parse`` over ``verify_chain``: exactly
    an open and a closed mandate."""
    mandates = verify_chain_like_the_sdk(
        chain, expected_aud=expected[0], expected_nonce=expected[1], **context
    )
    if len(mandates) != 2:
        raise SdkRefusal(f"a {kind} mandate chain has exactly 2 payloads")
    return mandates[0], mandates[1]


def verify_like_the_sdk(
    evidence: V02Evidence,
    *,
    root_key: JWK,
    now: int,
    expectations: SdkExpectations | None = None,
) -> dict[str, Any]:
    """The SDK's checkout and payment verification: returns the closed mandates it accepts."""
    expect = expectations or SdkExpectations()
    context: dict[str, Any] = {"root_key": root_key, "now": now}
    _, closed_checkout = _mandate_pair(
        evidence.checkout_chain, "checkout", (expect.checkout_aud, expect.checkout_nonce), context
    )
    _b64_json(closed_checkout["checkout_jwt"].split(".")[1])  # read, never verified
    wanted_hash = expect.expected_checkout_hash
    if wanted_hash is not None and wanted_hash != closed_checkout["checkout_hash"]:
        raise SdkRefusal("checkout_hash mismatch")
    accepted = {"checkout": closed_checkout}
    if evidence.payment_chain is not None:
        open_payment, closed_payment = _mandate_pair(
            evidence.payment_chain, "payment", (expect.payment_aud, expect.payment_nonce), context
        )
        wanted = expect.expected_transaction_id
        if wanted is not None and wanted != closed_payment["transaction_id"]:
            raise SdkRefusal("transaction_id mismatch")
        for constraint in open_payment.get("constraints", []):
            reference = expect.expected_open_checkout_hash
            is_reference = constraint.get("type") == "payment.reference" and reference is not None
            if is_reference and constraint.get("conditional_transaction_id") != reference:
                raise SdkRefusal("payment.reference mismatch")
        accepted["payment"] = closed_payment
    return accepted
