"""A root mandate without ``iss``, as the AP2 SDK's ``MandateClient.create`` writes it.

The SDK's ``verify(token, issuer_public_key)`` takes the issuer's key from its caller; the
specification's example roots carry no ``iss``.  mudrika's rule (docs/ap2-v02.md, "A root without
iss"): the verifier's caller names the issuer it expects (``root_issuer``, an issuer of the analyst's
trust root); the root's key must anchor under *that* issuer by the one anchoring rule; the report
says the issuer was supplied by the verifier.  Never an issuer found by trying every pinned key.

The chains here are mudrika's own, with the root re-signed by the issuer's key without ``iss`` and
the closing hop re-made over it (checkout chain only: the payment chain's ``payment.reference``
commits to the original open checkout mandate).
"""

from __future__ import annotations

from typing import Any

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import InvalidInput
from mudrika.payments.report import VerificationReport
from mudrika.payments.trustroot import TrustRoot, parse_trust_root
from mudrika.payments.v02 import V02Evidence, append_hop
from tests._support.ap2_v02 import (
    AGENT_PROVIDER,
    CHECKOUT_NONCE,
    MERCHANT_DID,
    Transaction,
    build,
    inspect,
    resign,
)

pytestmark = pytest.mark.security


def without_iss(transaction: Transaction) -> V02Evidence:
    """The transaction's checkout chain with a root that carries no ``iss`` (validly signed)."""
    jwt, disclosures = transaction.checkout_root.split("~", 1)
    root = resign(jwt, transaction.keys.issuer, payload={"iss": None}) + "~" + disclosures
    chain = append_hop(
        root,
        transaction.closed_checkout,
        holder_key=transaction.keys.agent,
        audience=MERCHANT_DID,
        nonce=CHECKOUT_NONCE,
        now=transaction.now,
    )
    return V02Evidence(checkout_chain=chain)


def judged(transaction: Transaction, **changes: Any) -> VerificationReport:
    return inspect(transaction, without_iss(transaction), payment_hops=(), **changes)


def other_key_root(transaction: Transaction) -> TrustRoot:
    document = transaction.trust_root.model_dump(mode="json", exclude_none=True)
    entry = document["issuers"][AGENT_PROVIDER]
    other = KeyPair.generate(KeyType.P256).public_key.to_jwk()
    entry["jwks"]["keys"] = [{**other, "kid": key["kid"]} for key in entry["jwks"]["keys"]]
    return parse_trust_root(document)


def test_no_iss_and_no_expected_issuer_fails_the_key_check_and_evaluates_the_rest() -> None:
    transaction = build()
    report = judged(transaction)
    assert report.by_id("v02.checkout.hop0.iss").code == "root_iss_missing"
    assert report.by_id("v02.checkout.hop0.key").code == "root_issuer_unknown"
    # Only the root's signature, which needs a key, is not run; the hop verifies under its cnf key.
    assert [check.id for check in report.skipped] == ["v02.checkout.hop0.signature"]
    assert report.by_id("v02.checkout.hop1.signature").passed
    assert report.by_id("v02.checkout.checkout_hash").passed
    assert report.by_id("v02.checkout.merchant_signature").passed
    assert report.verdict == "FAILED"
    assert report.anchored is False


def test_no_iss_with_the_expected_issuer_whose_pinned_key_verifies_is_anchored() -> None:
    transaction = build()
    report = judged(transaction, root_issuer=AGENT_PROVIDER)
    assert report.verdict == "OK", report.failures
    assert report.anchored is True
    root = next(key for key in report.keys if key.role == "issuer")
    assert root.owner == AGENT_PROVIDER
    assert root.thumbprint == transaction.keys.issuer.public_key.thumbprint()
    assert root.note is not None
    assert "named by the verifier" in root.note
    assert any(
        "supplied by the verifier (root_issuer), not asserted by the token" in statement
        for statement in report.statements
    )


def test_no_iss_with_the_expected_issuer_but_another_key_fails() -> None:
    transaction = build()
    report = judged(transaction, root_issuer=AGENT_PROVIDER, trust_root=other_key_root(transaction))
    assert report.by_id("v02.checkout.hop0.key").passed  # the kid is pinned for that issuer ...
    assert report.by_id("v02.checkout.hop0.signature").code == "bad_signature"  # ... by another key
    assert report.verdict == "FAILED"
    assert report.anchored is False


def test_a_root_iss_that_contradicts_the_expected_issuer_fails() -> None:
    transaction = build()
    document = transaction.trust_root.model_dump(mode="json", exclude_none=True)
    document["issuers"]["https://other-provider.example"] = document["issuers"][AGENT_PROVIDER]
    root = parse_trust_root(document)
    report = inspect(
        transaction, transaction.evidence(), trust_root=root, root_issuer="https://other-provider.example"
    )
    check = report.by_id("v02.checkout.hop0.iss")
    assert check.code == "iss_not_expected"
    assert check.got == AGENT_PROVIDER
    assert report.verdict == "FAILED"


def test_the_expected_issuer_must_be_one_the_trust_root_lists() -> None:
    transaction = build()
    with pytest.raises(InvalidInput) as caught:
        judged(transaction, root_issuer="https://unlisted.example")
    assert caught.value.code == "bad_root_issuer"
