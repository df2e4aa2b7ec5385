"""A report never contradicts itself about anchoring, whatever was tampered with.

The red team found a v0.2 report whose JSON said ``"anchored": true`` while its summary said
"Anchored in your trust root: no" and its verdict was FAILED.  Anchoring now has one source
(``report.anchoring_of`` over the key records), and this test holds every rendering to it, over every
case of both tamper matrices (``test_mandate_tamper_matrix.mutations`` for AP2 v0.1,
``test_v02_tamper_matrix.mutations`` for v0.2 — exhaustive, not sampled), the untampered chains,
expectations taken from the evidence, a trust root that does not know the issuer, and a v0.2 root
without ``iss`` judged with and without the verifier's ``root_issuer``:

* verdict OK ⇒ JSON ``anchored`` is ``true``; ``anchored`` false or not evaluated ⇒ verdict ≠ OK;
* the summary has exactly one anchoring sentence, and it says ``yes`` / ``no`` / ``not evaluated``
  exactly as JSON ``anchored`` is ``true`` / ``false`` / ``null``; the text report carries the same
  summary; the HTML anchoring line and its ``data-anchoring`` say the same;
* ``anchored`` is ``true`` only when every key record is anchored, ``false`` whenever one is not;
* verdict FAILED exactly when a check failed or did not run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, Final

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.payments.chain import inspect_chain, printable, render_html, render_text
from mudrika.payments.report import VerificationReport
from mudrika.payments.trustroot import TrustRoot, parse_trust_root
from mudrika.payments.v02 import HopExpectation
from mudrika.stores.replay import MemoryReplayStore
from tests._support.ap2_v02 import (
    AGENT_PROVIDER,
    CHECKOUT_NONCE,
    MERCHANT_DID,
    Transaction,
    build,
    inspect,
)
from tests._support.evidence import evidence_builder
from tests.security import test_mandate_tamper_matrix as v01_matrix
from tests.security import test_v02_tamper_matrix as v02_matrix

pytestmark = pytest.mark.security

_SENTENCE: Final = re.compile(r"Anchored in your trust root: (yes|no|not evaluated)(?=[ .(])")
_HTML_LINE: Final = re.compile(
    r'<p class="anchoring" id="anchoring" data-anchoring="([a-z ]+)"><strong>'
    r"Anchored in your trust root: (yes|no|not evaluated)[ .(]"
)
_ANSWER: Final = {True: "yes", False: "no", None: "not evaluated"}
_ANCHORING: Final = {True: "anchored", False: "unanchored", None: "not evaluated"}


def assert_consistent(report: VerificationReport, label: str) -> None:
    """Every rendering of ``report`` says the same about anchoring, and the verdict agrees."""
    data = report.to_dict(verbose=False)
    anchored, verdict = data["anchored"], data["verdict"]
    assert anchored in (True, False, None), label
    assert data["anchoring"] == _ANCHORING[anchored], label
    if verdict == "OK":
        assert anchored is True, label
    if anchored is not True:
        assert verdict != "OK", label
    assert (verdict == "FAILED") == (data["counts"]["failed"] + data["counts"]["skipped"] > 0), label
    key_states = [key["anchored"] for key in data["keys"]]
    if anchored is True:
        assert key_states, label
        assert all(state is True for state in key_states), label
    if False in key_states:
        assert anchored is False, label
    said = _SENTENCE.findall(data["summary"])
    assert said == [_ANSWER[anchored]], (label, data["summary"])
    assert printable(report.summary(), limit=4000) in render_text(report, title=label).splitlines(), label
    html = _HTML_LINE.search(render_html(report, title=label))
    assert html is not None, label
    assert html.groups() == (_ANCHORING[anchored], _ANSWER[anchored]), label


# -- AP2 v0.1 ----------------------------------------------------------------------------------------


def v01_cases() -> Iterator[tuple[str, VerificationReport]]:
    chain = evidence_builder().build_chain(key_type="p256")
    expectations = chain.expectations()
    intent, cart, payment = chain.intent.plain(), chain.cart.plain(), chain.payment.plain()

    def run(m_intent: Any, m_cart: Any, m_payment: Any, **changes: Any) -> VerificationReport:
        arguments = {**expectations, **changes}
        return inspect_chain(m_intent, m_cart, m_payment, replay_store=MemoryReplayStore(), **arguments)

    yield "v0.1 untampered", run(intent, cart, payment)
    yield "v0.1 nonce from the evidence", run(intent, cart, payment, asserted_by_evidence=("kb_nonce",))
    for label, m_intent, m_cart, m_payment in v01_matrix.mutations(intent, cart, payment):
        yield f"v0.1 {label}", run(m_intent, m_cart, m_payment)


def test_v01_reports_never_contradict_themselves() -> None:
    count = 0
    verdicts: set[str] = set()
    answers: set[object] = set()
    for label, report in v01_cases():
        assert_consistent(report, label)
        verdicts.add(report.verdict)
        answers.add(report.anchored)
        count += 1
    assert count > 100
    # The matrix reaches every verdict but OK-with-tampering, and every anchoring answer.
    assert verdicts == {"OK", "FAILED", "UNANCHORED"}
    assert answers == {True, False, None}


# -- AP2 v0.2 ----------------------------------------------------------------------------------------


def _stranger_root(transaction: Transaction) -> TrustRoot:
    """The transaction's trust root with the issuer's key replaced by one that signed nothing here."""
    document = transaction.trust_root.model_dump(mode="json", exclude_none=True)
    other = KeyPair.generate(KeyType.P256).public_key.to_jwk()
    entry = document["issuers"][AGENT_PROVIDER]
    entry["jwks"]["keys"] = [{**other, "kid": key["kid"]} for key in entry["jwks"]["keys"]]
    return parse_trust_root(document)


def v02_cases() -> Iterator[tuple[str, VerificationReport]]:
    transaction = build()
    yield "v0.2 untampered", inspect(transaction)
    yield (
        "v0.2 nonce from the evidence",
        inspect(
            transaction, checkout_hops=(HopExpectation(MERCHANT_DID, CHECKOUT_NONCE, source="evidence"),)
        ),
    )
    yield "v0.2 issuer key unknown to the root", inspect(transaction, trust_root=_stranger_root(transaction))
    yield (
        "v0.2 root_issuer that did not sign",
        inspect(transaction, trust_root=_stranger_root(transaction), root_issuer=AGENT_PROVIDER),
    )
    yield "v0.2 checkout only", inspect(transaction, transaction.evidence(payment=False), payment_hops=())
    yield (
        "v0.2 unreadable payment chain",
        inspect(transaction, replace(transaction.evidence(), payment_chain="not a chain")),
    )
    for label, evidence in v02_matrix.mutations(transaction):
        yield f"v0.2 {label}", inspect(transaction, evidence)


def test_v02_reports_never_contradict_themselves() -> None:
    count = 0
    answers: set[object] = set()
    for label, report in v02_cases():
        assert_consistent(report, label)
        answers.add(report.anchored)
        count += 1
    assert count > 150
    assert {True, False} <= answers


def test_a_v02_root_whose_signature_failed_is_never_read_as_anchored() -> None:
    """The red team's case: the issuer's key is pinned (under a stand-in), the root does not verify
    under it.  Before, JSON said anchored while the summary said no."""
    transaction = build()
    report = inspect(transaction, trust_root=_stranger_root(transaction))
    assert report.by_id("v02.checkout.hop0.signature").failed
    assert report.to_dict()["anchored"] is False
    assert report.verdict == "FAILED"
    assert "Anchored in your trust root: no" in report.summary()
    assert_consistent(report, "stranger root")
