"""The AP2 v0.1 chain verifier: round trips, the report, the state machine, and every link check."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import pytest

from mudrika.errors import (
    BindingError,
    ExpiredError,
    InvalidInput,
    PolicyDenied,
    ReplayError,
    UntrustedKeyError,
    VerificationError,
)
from mudrika.identity.resolver import DIDResolver
from mudrika.payments.chain import MEANINGS, KeyMaterial, inspect_chain, render_html, verify_chain
from mudrika.payments.chain._hashes import cart_hashes
from mudrika.payments.models import cart_contents_hash, cart_mandate_hash, receive_cart
from mudrika.payments.report import Check, KeyEvidence, VerificationReport
from mudrika.payments.trustroot import UnsafeNoTrustRoot
from mudrika.stores.replay import MemoryReplayStore
from tests._support.evidence import evidence_builder
from tests._support.paths import REPO_ROOT


def _chain(**kwargs: Any) -> Any:
    return evidence_builder().build_chain(**kwargs)


def _inspect(chain: Any, **overrides: Any) -> VerificationReport:
    kwargs = {**chain.expectations(), "replay_store": MemoryReplayStore(), **overrides}
    return inspect_chain(chain.intent, chain.cart, chain.payment, **kwargs)


def _failed(report: VerificationReport) -> list[str]:
    return [check.id for check in report.failures]


@pytest.mark.parametrize("key_type", ["ed25519", "p256"])
def test_round_trip_every_check_passes(key_type: str) -> None:
    chain = _chain(key_type=key_type, seeded=False)
    report = _inspect(chain)
    assert report.ok, _failed(report)
    assert all(check.passed for check in report.checks)
    assert report.verdict == "OK"
    assert len(report.checks) == 77
    assert len({check.id for check in report.checks}) == 77
    verified = verify_chain(
        chain.intent, chain.cart, chain.payment, replay_store=MemoryReplayStore(), **chain.expectations()
    )
    assert verified.merchant_did == "did:web:stride-athletics.example"
    assert verified.issuer == "https://wallet-issuer.example"
    assert verified.user_did == chain.user_did
    assert verified.user_key == chain.user_key.public_key
    assert verified.intent_bound
    assert verified.kb_claims["nonce"] == chain.nonce
    assert verified.credential["email"] == "a.sharma@example.com"
    assert "given_name" not in verified.credential  # not disclosed
    assert verified.report.ok


def test_raw_bytes_are_accepted_and_parsed_strictly() -> None:
    chain = _chain()
    report = _inspect(chain)
    from_bytes = inspect_chain(
        chain.intent.wire_bytes(),
        chain.cart.wire_bytes(),
        json.dumps(chain.payment.plain()),
        replay_store=MemoryReplayStore(),
        **chain.expectations(),
    )
    assert from_bytes.ok
    assert from_bytes.hashes == report.hashes
    duplicate = b'{"contents": {}, "contents": {}}'
    bad = inspect_chain(
        chain.intent, duplicate, chain.payment, replay_store=MemoryReplayStore(), **chain.expectations()
    )
    assert _failed(bad) == ["input.cart"]
    assert bad.by_id("input.cart").code == "duplicate_key"
    assert all(check.skipped for check in bad.checks[3:])
    with pytest.raises(InvalidInput):
        verify_chain(
            chain.intent, duplicate, chain.payment, replay_store=MemoryReplayStore(), **chain.expectations()
        )


def test_replayed_jti_and_nonce_fail_with_the_same_store() -> None:
    chain = _chain()
    store = MemoryReplayStore()
    assert _inspect(chain, replay_store=store).ok
    again = _inspect(chain, replay_store=store)
    assert _failed(again) == ["replay.merchant_jti", "replay.kb_nonce"]
    with pytest.raises(ReplayError):
        verify_chain(chain.intent, chain.cart, chain.payment, replay_store=store, **chain.expectations())


def test_a_failed_chain_burns_no_single_use_value() -> None:
    chain = _chain()
    store = MemoryReplayStore()
    refused = _inspect(chain, replay_store=store, merchant_audience="https://someone-else.example")
    assert not refused.ok
    assert refused.by_id("replay.merchant_jti").skipped
    assert _inspect(chain, replay_store=store).ok


def test_later_stages_are_skipped_never_passed() -> None:
    chain = _chain()
    issuers = {"https://not-the-issuer.example": {"jwks": chain.jwks["https://wallet-issuer.example"]}}
    report = _inspect(chain, trust_root=chain.trust_root(issuers=issuers))
    assert _failed(report) == ["issuer.trusted"]
    after = list(report.checks[report.checks.index(report.by_id("issuer.trusted")) + 1 :])
    assert after
    assert all(check.skipped for check in after)
    assert all(check.detail and check.detail.startswith("not run:") for check in after)
    assert not report.ok


def test_report_is_json_and_html_safe() -> None:
    chain = _chain()
    report = _inspect(chain, merchant_audience="<script>alert(1)</script>")
    data = json.loads(report.to_json())
    assert data["format"] == "mudrika.report/v2"
    assert data["verdict"] == "FAILED"
    assert data["ok"] is False
    # The cart stage failed, so no later party's key was evaluated: anchoring is neither yes nor no.
    assert data["anchored"] is None
    assert data["anchoring"] == "not evaluated"
    assert "Anchored in your trust root: not evaluated" in data["summary"]
    assert [(key["role"], key["anchoring"]) for key in data["keys"]] == [
        ("user (intent)", "not evaluated"),
        ("merchant", "not evaluated"),
        ("issuer", "not evaluated"),
        ("user (cnf)", "not evaluated"),
    ]
    assert data["keys"][0]["thumbprint"] == chain.user_key.public_key.thumbprint()
    assert data["expectations"]["kb_nonce"]["value"].startswith("sha256:")  # never the nonce itself
    assert data["counts"]["failed"] == 1
    assert {"id", "status", "passed", "party", "expected", "got", "key", "detail", "error", "code"} <= set(
        data["checks"][0]
    )
    html = render_html(report)
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "default-src 'none'" in html


def test_raise_for_failure_maps_error_kinds() -> None:
    pinned = KeyEvidence("merchant", "did:web:m.example", "did:web:m.example#k", "t", "trust-root", True)
    ok = VerificationReport(
        checks=(Check.make("a", "passed", "user"),),
        evaluated_at="x",
        mode="offline",
        keys=(pinned,),
        meanings=MEANINGS,
    )
    ok.raise_for_failure()
    unanchored = VerificationReport(
        checks=ok.checks,
        evaluated_at="x",
        mode="offline",
        keys=(pinned._replace(anchored=False),),
        meanings=MEANINGS,
    )
    assert unanchored.verdict == "UNANCHORED"
    with pytest.raises(UntrustedKeyError) as unanchored_info:
        unanchored.raise_for_failure()
    assert unanchored_info.value.code == "unanchored"
    empty = VerificationReport(checks=(), evaluated_at="x", mode="offline", meanings=MEANINGS)
    assert not empty.ok
    with pytest.raises(VerificationError):
        empty.raise_for_failure()
    failed = VerificationReport(
        checks=(Check.make("merchant.jwt.exp", "failed", "merchant", error="expired", code="expired"),),
        evaluated_at="x",
        mode="offline",
        meanings=MEANINGS,
    )
    with pytest.raises(ExpiredError) as info:
        failed.raise_for_failure()
    assert info.value.fields["check"] == "merchant.jwt.exp"
    with pytest.raises(ValueError, match="error kind"):
        Check.make("a", "failed", "user")


def test_every_check_id_is_documented() -> None:
    docs = (REPO_ROOT / "docs" / "payments.md").read_text(encoding="utf-8")
    section = docs[docs.index("## Checks") :]
    documented = set(re.findall(r"`([a-z_]+(?:\.[a-z_]+)+)`", section))
    report = _inspect(_chain())
    missing = {check.id for check in report.checks} - documented
    assert not missing, f"undocumented check ids: {sorted(missing)}"


def test_cart_hash_shortcut_equals_the_model_helpers() -> None:
    chain = _chain()
    assert cart_hashes(chain.cart) == (cart_contents_hash(chain.cart), cart_mandate_hash(chain.cart))
    camel = receive_cart({"contents": chain.cart.plain()["contents"], "merchantAuthorization": "a.b.c"})
    assert cart_hashes(camel) == (cart_contents_hash(camel), cart_mandate_hash(camel))
    extra = receive_cart({**chain.cart.plain(), "note": "x"})
    assert cart_hashes(extra) == (cart_contents_hash(extra), cart_mandate_hash(extra))


def test_policy_expectations_are_validated() -> None:
    chain = _chain()
    bad: dict[str, Any]
    for bad in (
        {"trust_root": object()},
        {"trust_root": None},
        {"kb_nonce": ""},
        {"merchant_audience": ""},
        {"asserted_by_evidence": ["algorithms"]},
        {"asserted_by_evidence": "kb_nonce"},
        {"max_bytes": 0},
        {"now": datetime(2025, 10, 1)},
        {"keys": object()},
    ):
        with pytest.raises(InvalidInput):
            _inspect(chain, **bad)
    # Without a trust root nothing can be verified, only inspected (UNANCHORED).
    expectations = {
        **chain.expectations(),
        "trust_root": UnsafeNoTrustRoot(["https://wallet-issuer.example"]),
    }
    with pytest.raises(InvalidInput):
        verify_chain(
            chain.intent, chain.cart, chain.payment, replay_store=MemoryReplayStore(), **expectations
        )
    assert _inspect(chain, trust_root=expectations["trust_root"]).verdict == "UNANCHORED"


def test_online_resolver_key_source() -> None:
    """did:key and the JWKS need no network: the online KeyMaterial works on them alike."""
    chain = _chain()
    snapshot = KeyMaterial.offline_snapshot(chain.did_documents, jwks=chain.jwks)
    online = KeyMaterial(DIDResolver(), jwks=chain.jwks)
    assert not online.offline
    assert snapshot.offline
    user = online.assertion_key(chain.user_kid, owner=chain.user_did)
    assert user.key == chain.user_key.public_key
    assert user.source == "did"


# ----------------------------------------------------------------------------------------- links


def _drop_item(contents: dict[str, Any]) -> None:
    details = contents["payment_request"]["details"]
    details["display_items"].pop()


LinkCase = tuple[str, dict[str, Any], str, type[VerificationError]]

LINK_CASES: list[LinkCase] = [
    (
        "total_is_not_the_sum_of_items",
        {"edit_cart": _drop_item},
        "cart.total",
        BindingError,
    ),
    (
        "payment_total_differs",
        {"edit_payment": lambda p: p["payment_details_total"]["amount"].update(value=138.48)},
        "chain.total",
        BindingError,
    ),
    (
        "payment_currency_differs",
        {"edit_payment": lambda p: p["payment_details_total"]["amount"].update(currency="EUR")},
        "chain.total",
        BindingError,
    ),
    (
        "payment_details_id_differs",
        {"edit_payment": lambda p: p.update(payment_details_id="order_other")},
        "chain.payment_details_id",
        BindingError,
    ),
    (
        "request_id_differs",
        {"edit_payment": lambda p: p["payment_response"].update(request_id="order_other")},
        "chain.request_id",
        BindingError,
    ),
    (
        "method_not_accepted",
        {"edit_payment": lambda p: p["payment_response"].update(method_name="CRYPTO")},
        "chain.method",
        PolicyDenied,
    ),
    (
        "merchant_agent_is_someone_else",
        {"edit_payment": lambda p: p.update(merchant_agent="Other Shop")},
        "chain.merchant_agent",
        BindingError,
    ),
    (
        "paid_after_cart_expiry",
        {"edit_payment": lambda p: p.update(timestamp="2025-10-01T12:30:01Z")},
        "chain.timestamp.cart",
        ExpiredError,
    ),
    (
        "paid_after_intent_expiry",
        {
            "edit_intent": lambda i: i.update(intent_expiry="2025-10-01T12:25:00Z"),
            "edit_payment": lambda p: p.update(timestamp="2025-10-01T12:29:00Z"),
        },
        "chain.timestamp.intent",
        ExpiredError,
    ),
    (
        "merchant_not_in_intent",
        {"edit_intent": lambda i: i.update(merchants=["Another Shop"])},
        "intent.merchants",
        PolicyDenied,
    ),
    (
        "sku_not_in_intent",
        {"edit_intent": lambda i: i.update(skus=["TR-GTX-42"])},
        "intent.skus",
        PolicyDenied,
    ),
    (
        "item_without_sku",
        {"edit_cart": lambda c: c["payment_request"]["details"]["display_items"][0].pop("sku")},
        "intent.skus",
        PolicyDenied,
    ),
    (
        "item_not_refundable",
        {"edit_cart": lambda c: c["payment_request"]["details"]["display_items"][1].update(refund_period=0)},
        "intent.refundability",
        PolicyDenied,
    ),
    (
        "cart_waives_confirmation",
        {"edit_cart": lambda c: c.update(user_cart_confirmation_required=False)},
        "intent.cart_confirmation",
        PolicyDenied,
    ),
    (
        "unknown_intent_constraint",
        {"edit_intent": lambda i: i.update(max_amount={"currency": "USD", "value": 10})},
        "intent.constraints",
        PolicyDenied,
    ),
    (
        "unsigned_intent_without_confirmation",
        {"sign_the_intent": False, "edit_intent": lambda i: i.update(user_cart_confirmation_required=False)},
        "intent.authorization",
        PolicyDenied,
    ),
]


@pytest.mark.parametrize(("name", "build", "check_id", "error"), LINK_CASES, ids=[c[0] for c in LINK_CASES])
def test_link_checks(name: str, build: dict[str, Any], check_id: str, error: type[VerificationError]) -> None:
    chain = _chain(**build)
    report = _inspect(chain)
    assert check_id in _failed(report), (name, _failed(report))
    assert not any(check.id.startswith("replay.") and check.passed for check in report.checks)
    with pytest.raises(error) as info:
        verify_chain(
            chain.intent, chain.cart, chain.payment, replay_store=MemoryReplayStore(), **chain.expectations()
        )
    assert info.value.fields["check"] == _failed(report)[0]


def test_unsigned_intent_with_confirmation_passes() -> None:
    chain = _chain(sign_the_intent=False)
    report = _inspect(chain)
    assert report.ok, _failed(report)
    ids = {check.id for check in report.checks}
    assert "intent.jws.signature" not in ids
    assert report.by_id("intent.signer_is_holder").passed


def test_merchant_listed_by_did_matches_cryptographically() -> None:
    chain = _chain(edit_intent=lambda i: i.update(merchants=["did:web:stride-athletics.example"]))
    report = _inspect(chain)
    assert report.ok
    assert "matched by DID" in (report.by_id("intent.merchants").got or "")


def test_intent_signed_by_another_user_is_refused() -> None:
    chain = _chain()
    other = _chain(seeded=False)
    report = inspect_chain(
        other.intent, chain.cart, chain.payment, replay_store=MemoryReplayStore(), **chain.expectations()
    )
    # The key-binding JWT covers the intent the user gave: another one is caught there first ...
    assert _failed(report) == ["user.kb.intent_binding"]
    # ... and in a legacy chain the trust root accepts, by the intent's signer.
    legacy = _chain(bind_intent=False)
    report = inspect_chain(
        other.intent,
        legacy.cart,
        legacy.payment,
        replay_store=MemoryReplayStore(),
        **legacy.expectations(accept_legacy_unbound_intent=True),
    )
    assert _failed(report) == ["intent.signer_is_holder"]


def test_no_restrictions_in_the_intent() -> None:
    def open_intent(intent: dict[str, Any]) -> None:
        for name in ("merchants", "skus"):
            intent.pop(name)
        intent["requires_refundability"] = False

    report = _inspect(_chain(edit_intent=open_intent))
    assert report.ok
    assert report.by_id("intent.merchants").expected == "any merchant (no restriction)"


def test_dispute_time_matters() -> None:
    chain = _chain()
    later = _inspect(chain, now=chain.now + 3600)
    assert "merchant.jwt.exp" in _failed(later) or "cart.expiry" in _failed(later)
    much_later = _inspect(chain, now=chain.now + 86400)
    assert _failed(much_later) == ["intent.expiry"]


def test_after_a_failed_hash_the_differing_values_are_shown_as_unsigned_evidence() -> None:
    chain = _chain()
    # The amount is raised after the user signed: edit the received raw JSON, not the signed input.
    raw = chain.payment.plain()
    raw["payment_mandate_contents"]["payment_details_total"]["amount"]["value"] = 1384.90
    raw["payment_mandate_contents"]["merchant_agent"] = "Another Shop"
    kwargs = {**chain.expectations(), "replay_store": MemoryReplayStore()}
    report = inspect_chain(chain.intent, chain.cart, json.dumps(raw), **kwargs)
    assert _failed(report) == ["user.kb.transaction_data"]
    assert report.by_id("chain.total").skipped
    assert report.by_id("user.kb.transaction_data").detail == "differs: H(PaymentMandateContents)"
    compared = {comparison.name: comparison for comparison in report.comparisons}
    assert set(compared) == {"total", "merchant"}
    assert (compared["total"].left_value, compared["total"].right_value) == ("USD 138.49", "USD 1,384.90")
    assert compared["merchant"].right_value == "Another Shop"
    data = report.to_dict(verbose=False)
    assert data["failures"][0]["meaning"] == "the payment contents changed after the user signed them"
    assert data["failures"][0]["signed_value"] != data["failures"][0]["recomputed_value"]
    assert data["facts"]["paid_total"] == "USD 1,384.90"
    assert data["facts"]["cart_total"] == "USD 138.49"
    assert "evidence from unsigned data" in report.summary()
    assert [check["status"] for check in data["checks"]].count("passed") == 0
    # A chain that links up has nothing to compare: the link checks themselves said it.
    assert _inspect(chain).comparisons == ()


def _camel_case_chain(*, both_spellings: bool = False) -> Any:
    """The fixture chain with the cart and payment sent in camelCase (``merchantAuthorization``,
    ``paymentMandateContents``, ``userAuthorization``), the payment signed over that cart as received."""
    from mudrika.payments.models import receive_payment
    from mudrika.payments.signing import sign_payment

    builder = evidence_builder()
    chain = _chain(seeded=False)
    cart_raw = chain.cart.plain()
    camel_cart: dict[str, Any] = {
        "contents": cart_raw["contents"],
        "merchantAuthorization": cart_raw["merchant_authorization"],
    }
    if both_spellings:
        camel_cart["merchant_authorization"] = cart_raw["merchant_authorization"]
    chain.cart = receive_cart(camel_cart)
    contents = chain.payment.plain()["payment_mandate_contents"]
    signed = sign_payment(
        contents,
        credential=chain.credential,
        user_key=chain.user_key,
        cart=chain.cart,
        intent=chain.intent,
        aud=builder.KB_AUDIENCE,
        nonce=builder.NONCE,
        now=chain.now - 2,
        disclose=["/email"],
    )
    chain.payment = receive_payment(
        {"paymentMandateContents": contents, "userAuthorization": signed.plain()["user_authorization"]}
    )
    return chain


def test_a_valid_camel_case_chain_verifies() -> None:
    """Both spellings are accepted on input (docs/payments.md "Names"): the signature found under
    ``merchantAuthorization`` / ``userAuthorization`` is a signed member, not an unsigned one."""
    chain = _camel_case_chain()
    report = _inspect(chain)
    assert report.verdict == "OK", _failed(report)


def test_a_member_in_both_spellings_is_refused() -> None:
    """A cart carrying both ``merchant_authorization`` and ``merchantAuthorization`` would hold one
    value the verifier never read: it is refused on receipt, before any check."""
    with pytest.raises(InvalidInput) as info:
        _camel_case_chain(both_spellings=True)
    assert "given twice" in info.value.message
