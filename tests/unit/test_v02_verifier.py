"""The v0.2 verifier end to end: report shape, verdicts, delegation depth, disclosure choices."""

from __future__ import annotations

import json

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.errors import InvalidInput, ReplayError, SignatureError
from mudrika.payments.v02 import (
    HopExpectation,
    V02Evidence,
    append_hop,
    issue_open_mandate,
    present_root,
    verify_v02,
)
from mudrika.stores.replay import MemoryReplayStore
from tests._support.ap2_v02 import (
    AGENT_PROVIDER,
    MERCHANT_DID,
    Keys,
    build,
    inspect,
)
from tests._support.ap2_v02 import (
    AGENT_PROVIDER_KID as KID,
)


def test_a_valid_transaction_is_ok_and_says_what_it_rests_on() -> None:
    transaction = build()
    report = inspect(transaction)
    assert report.verdict == "OK", report.first_failure
    assert report.trust_root == transaction.trust_root.fingerprint
    roles = [key.role for key in report.keys]
    assert roles.count("issuer") == 2
    assert "merchant" in roles
    assert all(key.anchored for key in report.keys)
    issuer = next(key for key in report.keys if key.role == "issuer")
    assert issuer.thumbprint == transaction.keys.issuer.public_key.thumbprint()
    assert issuer.provenance.startswith("trust root: issuers[")
    agent = next(key for key in report.keys if key.role.startswith("agent"))
    assert agent.thumbprint == transaction.keys.agent.public_key.thumbprint()
    assert report.expectations["checkout.hop1.aud"] == {"value": MERCHANT_DID, "source": "verifier"}
    assert "payment-nonce" not in json.dumps(report.to_dict())  # nonces are shown as labels only
    assert report.hashes["checkout_jwt"] == report.hashes["checkout_jwt"].strip()
    assert set(report.hashes) == {
        "open_checkout",
        "closed_checkout",
        "checkout_jwt",
        "open_payment",
        "closed_payment",
    }
    assert any("USD 209.00" in statement for statement in report.statements)
    document = json.loads(report.to_json())
    assert document["verdict"] == "OK"
    assert document["counts"]["failed"] == 0


def test_dispute_analysis_consumes_nothing_and_verify_consumes_once() -> None:
    transaction = build()
    assert not [check for check in inspect(transaction).checks if check.id.startswith("v02.single_use")]
    store = MemoryReplayStore()
    arguments = transaction.verifier_arguments()
    verified = verify_v02(transaction.evidence(), replay_store=store, **arguments)
    assert verified.checkout.total.amount == 20900
    assert verified.payment_mandate is not None
    assert verified.payment_mandate.transaction_id == verified.checkout_mandate.checkout_hash
    assert verified.report.by_id("v02.single_use.payment").passed
    with pytest.raises(ReplayError) as caught:
        verify_v02(transaction.evidence(), replay_store=store, **arguments)
    assert caught.value.fields["check"] == "v02.single_use.checkout"
    with pytest.raises(InvalidInput):
        verify_v02(transaction.evidence(), replay_store=None, **arguments)  # type: ignore[arg-type]


def test_checkout_alone_is_what_a_merchant_verifies() -> None:
    transaction = build()
    report = inspect(transaction, transaction.evidence(payment=False), payment_hops=())
    assert report.ok
    assert not [check for check in report.checks if check.id.startswith("v02.payment")]


def test_an_expectation_read_from_the_evidence_leaves_the_verdict_unanchored() -> None:
    transaction = build()
    hops = (HopExpectation(MERCHANT_DID, "checkout-nonce-7f3a", source="evidence"),)
    report = inspect(transaction, checkout_hops=hops)
    assert report.checks_passed
    assert report.verdict == "UNANCHORED"
    assert report.unanchored_because


def test_a_failed_root_hides_no_check_that_does_not_rest_on_its_signature() -> None:
    transaction = build()
    stranger = Keys(issuer=KeyPair.generate(KeyType.P256))
    forged = build(keys=stranger)  # same issuer name and kid, other keys (merchant's too)
    report = inspect(transaction, V02Evidence(checkout_chain=forged.checkout_chain), payment_hops=())
    assert report.verdict == "FAILED"
    failed = report.by_id("v02.checkout.hop0.signature")
    assert failed.failed
    assert failed.error == "signature"
    # The hop is still checked under the cnf key the (unverified) root names, and says so.
    hop = report.by_id("v02.checkout.hop1.signature")
    assert hop.passed
    for name in ("hop1.binding", "hop1.aud", "hop1.nonce", "hop1.vct", "checkout_hash", "hop0.time"):
        assert report.by_id(f"v02.checkout.{name}").passed, name
    assert "no verified signature covers it" in (report.by_id("v02.checkout.checkout_hash").detail or "")
    agent = next(key for key in report.keys if key.role == "agent (cnf, hop 1)")
    assert agent.anchoring == "unanchored"
    assert agent.thumbprint == stranger.agent.public_key.thumbprint()
    # The stranger's merchant key is not the pinned one: evaluated, and failed.
    assert report.by_id("v02.checkout.merchant_signature").failed
    assert not report.skipped
    assert report.anchored is False
    assert "Anchored in your trust root: no" in report.summary()
    with pytest.raises(SignatureError):
        report.raise_for_failure()


def test_a_three_token_chain_delegates_to_a_second_agent() -> None:
    transaction = build()
    keys = transaction.keys
    second = KeyPair.generate(KeyType.P256)
    narrower = dict(transaction.open_checkout)
    narrower["cnf"] = {"jwk": second.public_key.to_jwk()}
    middle = append_hop(
        transaction.checkout_root,
        narrower,
        holder_key=keys.agent,
        audience="https://sub-agent.example",
        nonce="delegation-nonce",
        now=transaction.now,
    )
    chain = append_hop(
        middle,
        transaction.closed_checkout,
        holder_key=second,
        audience=MERCHANT_DID,
        nonce="checkout-nonce-7f3a",
        now=transaction.now,
    )
    hops = (HopExpectation("https://sub-agent.example", "delegation-nonce"), transaction.checkout_hops[0])
    report = inspect(transaction, V02Evidence(checkout_chain=chain), checkout_hops=hops, payment_hops=())
    assert report.ok, report.first_failure
    assert report.by_id("v02.checkout.hop1.typ").passed
    # Constraints of every open mandate in the chain are evaluated.
    assert report.by_id("v02.checkout.hop1.constraint0").passed
    wrong_middle = (
        HopExpectation("https://other-agent.example", "delegation-nonce"),
        transaction.checkout_hops[0],
    )
    failed = inspect(
        transaction, V02Evidence(checkout_chain=chain), checkout_hops=wrong_middle, payment_hops=()
    )
    assert failed.by_id("v02.checkout.hop1.aud").code == "wrong_aud"


def test_issuer_jwt_hash_binding_is_accepted() -> None:
    transaction = build()
    chain = append_hop(
        transaction.checkout_root,
        transaction.closed_checkout,
        holder_key=transaction.keys.agent,
        audience=MERCHANT_DID,
        nonce="checkout-nonce-7f3a",
        now=transaction.now,
        binding="issuer_jwt_hash",
    )
    report = inspect(transaction, V02Evidence(checkout_chain=chain), payment_hops=())
    assert report.ok, report.first_failure


def test_only_revealed_acceptable_items_count() -> None:
    transaction = build()
    root = issue_open_mandate(
        transaction.open_checkout,
        issuer=AGENT_PROVIDER,
        issuer_key=transaction.keys.issuer,
        kid=KID,
        now=transaction.now - 60,
    )
    paths = root.disclosable_paths
    items = [path for path in paths if "/acceptable_items/" in path]
    assert len(items) == 3

    def chain_revealing(reveal: list[str]) -> str:
        return append_hop(
            present_root(root, reveal=reveal),
            transaction.closed_checkout,
            holder_key=transaction.keys.agent,
            audience=MERCHANT_DID,
            nonce="checkout-nonce-7f3a",
            now=transaction.now,
        )

    everything_but_the_unbought_shoe = [
        path for path in paths if not path.endswith("/items/0/acceptable_items/1")
    ]
    report = inspect(
        transaction,
        V02Evidence(checkout_chain=chain_revealing(everything_but_the_unbought_shoe)),
        payment_hops=(),
    )
    assert report.ok, report.first_failure
    without_the_bought_shoe = [path for path in paths if not path.endswith("/items/0/acceptable_items/0")]
    report = inspect(
        transaction, V02Evidence(checkout_chain=chain_revealing(without_the_bought_shoe)), payment_hops=()
    )
    assert report.by_id("v02.checkout.hop0.constraint0").code == "line_items_unmet"


def test_a_hop_without_an_expectation_fails_and_extra_expectations_fail_too() -> None:
    transaction = build()
    report = inspect(transaction, checkout_hops=())
    assert report.by_id("v02.checkout.hop1.aud").code == "no_expectation"
    extra = (*transaction.checkout_hops, HopExpectation("x", "y"))
    assert inspect(transaction, checkout_hops=extra).by_id("v02.checkout.hops").code == "missing_hops"


def test_bad_arguments_are_invalid_input() -> None:
    transaction = build()
    with pytest.raises(InvalidInput):
        inspect(transaction, trust_root=None)
    with pytest.raises(InvalidInput):
        inspect(transaction, transaction.evidence(payment=False))  # payment hops without a payment chain
    with pytest.raises(InvalidInput):
        HopExpectation("", "n")
