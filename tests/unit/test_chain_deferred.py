"""The AP2 v0.1 verifier's pass path: deferred check texts, the report drawn on first use, and the
answers it remembers (trust-root keys, holder keys, allow-lists) staying per root and per key."""

from __future__ import annotations

from typing import Any

import pytest

from mudrika.errors import UntrustedKeyError, VerificationError
from mudrika.payments.chain import inspect_chain, verify_cart, verify_chain
from mudrika.payments.chain._keys import ResolvedKey
from mudrika.payments.chain._payment import _holder_key
from mudrika.payments.report import Check, Recorder, Texts
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import evidence_builder


class _Texts:
    """A texts function that counts its calls, to see when a check is formatted."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, expected: Any, got: Any) -> Texts:
        self.calls.append((expected, got))
        return f"expected {expected}", f"got {got}"


def test_deferred_texts_are_formatted_only_when_the_checks_are_read() -> None:
    texts = _Texts()
    rec = Recorder()
    rec.passed_later("x.one", "user", texts, 1, 2, key="kid-1")
    assert rec.check_later("x.two", "merchant", True, texts, 3, 4, error="binding", code="c") is True
    rec.passed("x.three", "user", expected="e", got="g")
    assert texts.calls == []
    assert len(rec) == 3
    assert rec.all_passed
    assert rec.all_passed_since(0)
    assert rec.checks == [
        Check("x.one", "passed", "user", "expected 1", "got 2", "kid-1"),
        Check("x.two", "passed", "merchant", "expected 3", "got 4"),
        Check("x.three", "passed", "user", "e", "g"),
    ]
    assert texts.calls == [(1, 2), (3, 4)]
    assert rec.checks[0].got == "got 2"
    assert len(texts.calls) == 2, "each deferred check is formatted once"


def test_a_failed_check_is_formatted_at_once_and_ends_the_stage() -> None:
    texts = _Texts()
    rec = Recorder()
    assert not rec.all_passed, "an empty recorder has not passed anything"
    rec.passed_later("a", "user", texts, "x", "x")
    start = len(rec)
    assert rec.check_later("b", "user", False, texts, "y", "z", error="binding", code="mismatch") is False
    assert texts.calls == [("y", "z")]
    rec.passed("c", "user")
    assert rec.all_passed_since(0) is False
    assert rec.all_passed_since(start) is False
    assert rec.all_passed_since(len(rec) - 1) is True
    assert rec.all_passed is False
    assert rec.checks[1] == Check(
        "b", "failed", "user", "expected y", "got z", None, None, "binding", "mismatch"
    )
    rec.skip((("d", "user"),), because="b failed")
    assert rec.all_passed_since(len(rec) - 1) is False


def test_a_validating_recorder_formats_and_validates_every_check_at_once() -> None:
    texts = _Texts()
    rec = Recorder(validate=True)
    rec.passed_later("a", "user", texts, "v" * 300, "w")
    rec.check_later("b", "user", True, texts, "v", "w", error="binding", code="c")
    assert len(texts.calls) == 2
    first, second = rec.checks
    assert first.expected is not None
    assert len(first.expected) == 200, "Check.make shortens long texts"
    assert second.error is None, "a passed check carries no error kind"


def test_the_report_of_a_verified_chain_is_drawn_once_and_equals_the_inspected_one() -> None:
    chain = evidence_builder().build_chain(key_type="p256")
    verified = verify_chain(
        chain.intent, chain.cart, chain.payment, replay_store=MemoryReplayStore(), **chain.expectations()
    )
    inspected = inspect_chain(
        chain.intent, chain.cart, chain.payment, replay_store=MemoryReplayStore(), **chain.expectations()
    )
    report = verified.report
    assert report is verified.report
    assert report.verdict == "OK"
    assert report.checks == inspected.checks
    assert report.to_json() == inspected.to_json()
    assert "report" not in repr(verified)


def test_a_refused_chain_still_raises_the_first_failed_checks_error() -> None:
    chain = evidence_builder().build_chain(merchant_claims={"aud": "https://someone-else.example"})
    with pytest.raises(VerificationError) as caught:
        verify_chain(
            chain.intent, chain.cart, chain.payment, replay_store=MemoryReplayStore(), **chain.expectations()
        )
    assert caught.value.fields["check"] == "merchant.jwt.aud"


def test_remembered_trust_root_keys_stay_with_their_root() -> None:
    builder = evidence_builder()
    genuine = builder.build_chain()
    other = builder.build_chain(seed_prefix="another merchant")

    def verify(chain: Any, root_of: Any) -> object:
        expectations = root_of.expectations()
        return verify_cart(
            chain.cart,
            trust_root=expectations["trust_root"],
            keys=chain.keys(),
            audience=chain.merchant_audience,
            now=chain.now,
            replay_store=MemoryReplayStore(),
        )

    # Each root answers with the key it pins under the same kid, however often it was asked before.
    for _ in range(2):
        verify(genuine, genuine)
        verify(other, other)
        with pytest.raises(UntrustedKeyError):
            verify(other, genuine)


def test_the_holder_key_is_the_same_whichever_way_it_is_remembered() -> None:
    jwk = evidence_builder().build_chain(key_type="p256").user_key.public_key.to_jwk()
    by_members = _holder_key({"cnf": {"jwk": dict(jwk)}})
    canonical = _holder_key({"cnf": {"jwk": {**jwk, "key_ops": ["verify"]}}})
    assert by_members[0].key == canonical[0].key
    assert by_members[1] == canonical[1]


def test_an_allow_list_that_leaves_nothing_trusts_no_key() -> None:
    key = evidence_builder().build_chain(key_type="p256").user_key.public_key
    resolved = ResolvedKey(key=key, kid="k", owner="o", source="pinned")
    assert resolved.trusted(frozenset({"EdDSA"})) is None
    trusted = resolved.trusted(frozenset({"ES256", "EdDSA"}))
    assert trusted is not None
    assert trusted.algorithms == frozenset({"ES256"})
    assert resolved.trusted(frozenset({"ES256", "EdDSA"})) is trusted
