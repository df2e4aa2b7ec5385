"""The AP2 specification's own v0.2 example chains, judged by the verifier.

Source: ``docs/ap2/checkout_mandate.md`` and ``docs/ap2/payment_mandate.md`` of
google-agentic-commerce/AP2 at ``e1ea56db72a6385bce3e5c1112b3a56ce60acb43``, transcribed into
``fixtures/ap2-docs/`` (its README names the sections).  Their issuer's key is not published, so the
trust root here pins a **stand-in** P-256 key under the examples' header kid
(``agent-provider-key-1``) for an issuer the analyst names (``root_issuer``: the roots carry no
``iss``).  The report must then refuse exactly what cannot hold, and evaluate -- and pass --
everything else:

* ``v02.checkout.hop0.signature`` and ``v02.payment.hop0.signature`` fail: the stand-in did not sign
  the roots.  So the report is never OK and never anchored.
* ``v02.checkout.merchant_signature`` fails too, and that is a correct refusal, not a leniency the
  profile lacks: the checkout JWT is signed by ``merchant-key-1`` of a merchant whose id is
  ``merchant_1`` -- not a DID, so no trust root can pin it (merchants are pinned by DID), and its key
  is unpublished as well.  A checkout nobody can attribute to a pinned merchant must not verify.
* Everything else passes: the ``example+sd-jwt`` root ``typ`` (the profile accepts what the SDK and
  the spec write), the hop signatures under the ``cnf`` keys the roots name (reported unanchored),
  ``sd_hash``, ``aud``, ``nonce``, every ``vct``, ``checkout_hash``, ``transaction_id``, payee,
  amount, the pre-set values, the required constraints and every constraint.

Expectations come from the example tokens' own values: checkout hop ``aud`` ``merchant`` and
``nonce`` ``b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4``; payment hop ``aud`` ``credential-provider`` and
``nonce`` ``a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3``; evaluated at 1777342400, after both hops' ``iat``
(1777342376 and 1777342370, within the default 300 s key-binding age) and before the roots' ``exp``
(1777345957).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.payments.chain import render_html
from mudrika.payments.report import VerificationReport
from mudrika.payments.trustroot import TrustRoot, parse_trust_root
from mudrika.payments.v02 import HopExpectation, V02Evidence, inspect_v02

pytestmark = pytest.mark.security

DOCS: Final = Path(__file__).resolve().parents[2] / "fixtures" / "ap2-docs"
ISSUER: Final = "https://agent-provider.example"
"""The issuer the analyst names for the examples' roots (they carry no ``iss``)."""
KID: Final = "agent-provider-key-1"
NOW: Final = 1777342400
CHECKOUT_HOP: Final = HopExpectation("merchant", "b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4", source="analyst")
PAYMENT_HOP: Final = HopExpectation(
    "credential-provider", "a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3", source="analyst"
)

#: The only checks that may fail, and why (module docstring).
EXPECTED_FAILURES: Final = {
    "v02.checkout.hop0.signature": "bad_signature",
    "v02.payment.hop0.signature": "bad_signature",
    "v02.checkout.merchant_signature": "untrusted_merchant",
}


def stand_in_root() -> TrustRoot:
    stand_in = KeyPair.generate(KeyType.P256).public_key.to_jwk()
    return parse_trust_root(
        {
            "format": "mudrika.trust-root/v1",
            "issuers": {
                ISSUER: {
                    "jwks": {"keys": [{**stand_in, "kid": KID}]},
                    "vct": ["mandate.checkout.open.1", "mandate.payment.open.1"],
                    "source": "a stand-in: the AP2 examples' issuer key is unpublished",
                }
            },
            "algorithms": ["ES256"],
        }
    )


def judged(trust_root: TrustRoot, *, root_issuer: str | None = ISSUER) -> VerificationReport:
    evidence = V02Evidence(
        checkout_chain=(DOCS / "checkout-chain.txt").read_text(encoding="ascii"),
        payment_chain=(DOCS / "payment-chain.txt").read_text(encoding="ascii"),
    )
    return inspect_v02(
        evidence,
        trust_root=trust_root,
        checkout_hops=[CHECKOUT_HOP],
        payment_hops=[PAYMENT_HOP],
        now=NOW,
        usage=None,
        replay_store=None,
        root_issuer=root_issuer,
    )


def test_the_spec_examples_fail_only_where_no_trust_root_can_make_them_hold() -> None:
    report = judged(stand_in_root())
    assert {check.id: check.code for check in report.failures} == EXPECTED_FAILURES
    assert not report.skipped, [check.id for check in report.skipped]
    assert report.verdict == "FAILED"
    assert report.anchored is False
    assert "Anchored in your trust root: no" in report.summary()
    assert 'data-anchoring="unanchored"' in render_html(report)
    for chain in ("checkout", "payment"):
        for name in (
            "wire",
            "hop0.typ",
            "hop0.iss",
            "hop0.key",
            "hop0.sd_alg",
            "hop0.disclosures",
            "hop0.claims",
            "hop0.vct",
            "hop0.schema",
            "hop0.time",
            "hop0.cnf",
            "hop1.typ",
            "hop1.signature",
            "hop1.disclosures",
            "hop1.binding",
            "hop1.aud",
            "hop1.nonce",
            "hop1.iat",
            "hop1.vct",
            "hop1.schema",
            "hop1.cnf",
            "preset",
        ):
            assert report.by_id(f"v02.{chain}.{name}").passed, (chain, name)
    for check_id in (
        "v02.checkout.checkout_hash",
        "v02.checkout.line_items_required",
        "v02.checkout.hop0.constraint0",  # checkout.line_items
        "v02.checkout.hop0.constraint1",  # checkout.allowed_merchants
        "v02.payment.transaction_id",
        "v02.payment.payee",
        "v02.payment.amount",
        "v02.payment.reference_required",
        "v02.payment.hop0.constraint0",  # payment.amount_range
        "v02.payment.hop0.constraint1",  # payment.allowed_payees
        "v02.payment.hop0.constraint2",  # payment.reference
    ):
        check = report.by_id(check_id)
        assert check.passed, check
        # Passed, but on what tokens say that no verified signature covers: the report says so.
        assert check.detail is not None
        assert check.detail.startswith("evaluated on what the"), check


def test_the_examples_keys_are_reported_as_what_they_are() -> None:
    report = judged(stand_in_root())
    roots = [key for key in report.keys if key.role == "issuer"]
    assert len(roots) == 2
    for key in roots:
        # The stand-in is pinned (so anchored as a key); the root did not verify under it.
        assert key.anchoring == "anchored"
        assert key.kid == KID
        assert key.note is not None
        assert "root_issuer" in key.note
    agents = [key for key in report.keys if key.role.startswith("agent")]
    assert len(agents) == 2
    assert all(key.anchoring == "unanchored" for key in agents)
    assert all("did not verify" in key.provenance for key in agents)
    merchant = next(key for key in report.keys if key.role == "merchant")
    assert merchant.anchoring == "unanchored"
    assert any("supplied by the verifier" in statement for statement in report.statements)


def test_without_root_issuer_the_examples_name_no_issuer() -> None:
    """No ``iss`` and no ``root_issuer``: nobody says whose key to look for.  The key check fails
    with its own code; only the signature (which needs a key) is not run; the rest is evaluated."""
    report = judged(stand_in_root(), root_issuer=None)
    for chain in ("checkout", "payment"):
        assert report.by_id(f"v02.{chain}.hop0.iss").code == "root_iss_missing"
        assert report.by_id(f"v02.{chain}.hop0.key").code == "root_issuer_unknown"
        assert report.by_id(f"v02.{chain}.hop0.signature").skipped
        assert report.by_id(f"v02.{chain}.hop1.signature").passed
    assert {check.id for check in report.skipped} == {
        "v02.checkout.hop0.signature",
        "v02.payment.hop0.signature",
    }
    assert report.anchored is False
    assert report.verdict == "FAILED"
