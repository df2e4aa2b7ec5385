"""What a dispute analyst reads after a tamper: the differing values, only verified facts, an honest
timeline, neutral wording for their own mistakes, and money written as money.

Each test reproduces one friction a new analyst met (a changed purchase date reported as a bare
hash failure while the verdict paragraph stated the forged date as fact; a green "signature
verified" on a payment changed after signing; a FAILED summary ending on a stage that never ran; a
mistyped ``--kb-nonce`` read as an accusation; ``USD 1384.9``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from mudrika.crypto.b64url import b64url_decode
from mudrika.payments import _values
from mudrika.payments.chain import inspect_chain, render_html
from mudrika.payments.report import ANCHORED_SENTENCE, VerificationReport, render_text
from mudrika.payments.v02 import HopExpectation
from mudrika.stores.replay import MemoryReplayStore
from tests._support.ap2_v02 import MERCHANT_DID, build
from tests._support.ap2_v02 import inspect as inspect_v02
from tests._support.evidence import evidence_builder

FORGED_DATE = "2025-01-02T03:04:05Z"


def _chain() -> Any:
    return evidence_builder().build_chain()


def _inspect(chain: Any, payment: Any = None, **overrides: Any) -> VerificationReport:
    kwargs = {**chain.expectations(), "replay_store": MemoryReplayStore(), **overrides}
    return inspect_chain(
        chain.intent, chain.cart, payment if payment is not None else chain.payment, **kwargs
    )


def _payment_with(chain: Any, **contents: Any) -> str:
    """The received payment with its contents edited after the user signed them."""
    raw = chain.payment.plain()
    raw["payment_mandate_contents"].update(contents)
    return json.dumps(raw)


def _user_signed_at(chain: Any) -> str:
    """The ``iat`` of the user's key-binding JWT, as ISO 8601 UTC (what the report must show)."""
    kb_jwt = chain.payment.plain()["user_authorization"].split("~")[-1]
    iat = json.loads(b64url_decode(kb_jwt.split(".")[1]))["iat"]
    return datetime.fromtimestamp(iat, UTC).isoformat().replace("+00:00", "Z")


def _cart_signer(chain: Any) -> str:
    """The ``iss`` of the merchant's cart JWT: the DID whose signature the cart carries."""
    jws = chain.cart.plain()["merchant_authorization"]
    issuer: str = json.loads(b64url_decode(jws.split(".")[1]))["iss"]
    return issuer


def _date_forged() -> tuple[Any, VerificationReport]:
    chain = _chain()
    return chain, _inspect(chain, _payment_with(chain, timestamp=FORGED_DATE))


# -- 1. the values that differ, the date first, beside the time the user signed ---------------------


def test_a_changed_purchase_date_is_shown_first_beside_the_time_the_user_signed() -> None:
    chain, report = _date_forged()
    assert [check.id for check in report.failures] == ["user.kb.transaction_data"]
    first = report.comparisons[0]
    assert first.name == "payment date"
    assert first.left_value == FORGED_DATE
    assert first.right_value == _user_signed_at(chain)
    assert "user signed" in first.right
    lines = render_text(report, title="t").splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("VALUES THAT DIFFER"))
    assert lines[heading + 1].startswith("  payment date:")
    assert FORGED_DATE in lines[heading + 2]
    assert _user_signed_at(chain) in lines[heading + 3]
    assert report.to_dict()["comparisons"][0]["name"] == "payment date"


def test_a_date_changed_with_the_amount_still_comes_first() -> None:
    chain = _chain()
    raw = chain.payment.plain()
    contents = raw["payment_mandate_contents"]
    contents["timestamp"] = FORGED_DATE
    contents["payment_details_total"]["amount"]["value"] = 1384.90
    report = _inspect(chain, json.dumps(raw))
    assert [comparison.name for comparison in report.comparisons] == ["payment date", "total"]


def test_an_untouched_payment_date_is_not_reported_as_differing() -> None:
    chain = _chain()
    raw = chain.payment.plain()
    raw["payment_mandate_contents"]["payment_details_total"]["amount"]["value"] = 1384.90
    report = _inspect(chain, json.dumps(raw))
    assert [comparison.name for comparison in report.comparisons] == ["total"]


def test_the_user_signed_time_is_not_shown_when_the_users_signature_did_not_verify() -> None:
    chain = _chain()
    raw = chain.payment.plain()
    raw["payment_mandate_contents"]["timestamp"] = FORGED_DATE
    parts = raw["user_authorization"].split("~")
    header, payload, signature = parts[-1].split(".")
    parts[-1] = ".".join([header, payload, signature[:-4] + ("AAAA" if signature[-4:] != "AAAA" else "BBBB")])
    raw["user_authorization"] = "~".join(parts)
    report = _inspect(chain, json.dumps(raw))
    assert report.by_id("user.kb.signature").failed
    assert all(comparison.name != "payment date" for comparison in report.comparisons)


def test_a_label_longer_than_the_column_never_touches_its_value() -> None:
    _, report = _date_forged()
    lines = render_text(report, title="t").splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("VALUES THAT DIFFER"))
    assert lines[heading + 2].startswith("     payment timestamp (presented): ")
    assert lines[heading + 3].startswith("     user signed at (iat, user's verified signature): ")
    value_column = {
        len(line) - len(line.split(": ", 1)[1].lstrip()) for line in lines[heading + 2 : heading + 4]
    }
    assert len(value_column) == 1  # both values start in one column


def test_a_payment_naming_another_merchant_did_is_shown_beside_the_cart_signer() -> None:
    chain = _chain()
    report = _inspect(chain, _payment_with(chain, merchant_agent="did:web:other-shop.example"))
    assert [check.id for check in report.failures] == ["user.kb.transaction_data"]
    (merchant,) = [comparison for comparison in report.comparisons if comparison.name == "merchant"]
    assert _cart_signer(chain) in merchant.left_value
    assert merchant.right_value == "did:web:other-shop.example"


def test_a_payment_naming_the_cart_signers_own_did_is_not_a_differing_merchant() -> None:
    chain = _chain()
    report = _inspect(chain, _payment_with(chain, merchant_agent=_cart_signer(chain)))
    assert report.failures
    assert all(comparison.name != "merchant" for comparison in report.comparisons)


# -- 2. the verdict paragraph states only facts that passed ------------------------------------------


def test_the_verdict_paragraph_never_states_a_forged_date_as_fact() -> None:
    _, report = _date_forged()
    summary = report.summary()
    stated = summary[: summary.index("claimed, not verified")]
    assert FORGED_DATE not in stated
    assert " paid " not in stated
    claimed = summary[summary.index("claimed, not verified") :]
    assert FORGED_DATE in claimed
    # What did verify (the merchant's signed cart) is still stated.
    assert "the merchant signed a cart" in summary
    assert "USD 138.49" in summary


def test_the_verdict_paragraph_of_a_changed_cart_states_the_cart_only_as_a_claim() -> None:
    chain = _chain()
    raw = chain.cart.plain()
    raw["contents"]["payment_request"]["details"]["total"]["amount"]["value"] = 13.85
    kwargs = {**chain.expectations(), "replay_store": MemoryReplayStore()}
    report = inspect_chain(chain.intent, json.dumps(raw), chain.payment, **kwargs)
    assert report.by_id("merchant.jwt.cart_hash").failed
    summary = report.summary()
    assert "the merchant signed a cart" not in summary
    assert "USD 13.85" in summary[summary.index("claimed, not verified") :]


def test_an_ok_verdict_still_states_who_paid_whom() -> None:
    chain = _chain()
    report = _inspect(chain)
    assert report.verdict == "OK"
    assert " paid " in report.summary()
    assert "claimed, not verified" not in report.summary()


# -- 3. the timeline never shows green for a party whose signed content changed -------------------


def _timeline(page: str) -> str:
    return page[
        page.index('<ol class="timeline">') : page.index("</ol>", page.index('<ol class="timeline">'))
    ]


def test_the_timeline_shows_a_payment_changed_after_signing_as_changed_not_green() -> None:
    _, report = _date_forged()
    timeline = _timeline(render_html(report))
    payment = timeline[timeline.index("<strong>payment</strong>") :]
    payment = payment[: payment.index("</li>")]
    assert 'class="passed"' not in payment
    assert "signature verified" not in payment
    assert "changed after it was signed" in payment
    assert 'class="failed"' in payment


def test_the_timeline_of_a_v02_report_draws_the_v02_stages() -> None:
    report = inspect_v02(build())
    assert report.verdict == "OK"
    timeline = _timeline(render_html(report))
    assert "IntentMandate" not in timeline
    assert "CartMandate" not in timeline
    assert "checkout" in timeline
    assert 'class="passed"' in timeline
    assert "not checked" not in timeline


# -- 4. a FAILED summary ends on the failure, not on a stage that never ran -------------------------


def test_a_failed_summary_does_not_end_with_an_anchoring_note_about_a_stage_that_never_ran() -> None:
    _, report = _date_forged()
    assert report.anchoring == "not evaluated"
    summary = report.summary()
    assert summary.count(ANCHORED_SENTENCE) == 1
    last = summary[summary.rindex(". ") + 2 :]
    assert not last.startswith(ANCHORED_SENTENCE), last
    assert "did not admit a key" not in summary
    assert "was not evaluated" not in summary


# -- 5. a mismatch with the analyst's own record is worded neutrally --------------------------------


def test_a_mistyped_kb_nonce_reads_as_a_mismatch_with_what_the_analyst_supplied() -> None:
    chain = _chain()
    report = _inspect(chain, kb_nonce="a-nonce-typed-wrong")
    nonce = report.by_id("user.kb.nonce")
    assert nonce.failed
    meaning = report.meanings.meaning(nonce)
    assert "replayed" not in meaning
    assert "differs from the one you supplied (--kb-nonce)" in meaning
    assert "replayed" not in report.summary()


def test_a_v02_nonce_mismatch_is_worded_neutrally() -> None:
    transaction = build()
    typed_wrong = (HopExpectation(MERCHANT_DID, "typed-wrong"),)
    report = inspect_v02(transaction, checkout_hops=typed_wrong)
    failed = [check for check in report.failures if check.id.endswith(".nonce")]
    assert failed, [check.id for check in report.failures]
    meaning = report.meanings.meaning(failed[0])
    assert "replayed" not in meaning
    assert "differs from the one you supplied" in meaning


# -- 6. amounts print as currency amounts -----------------------------------------------------------


@pytest.mark.parametrize(
    ("currency", "value", "shown"),
    [
        ("USD", Decimal("1384.9"), "USD 1,384.90"),
        ("USD", Decimal("138.49"), "USD 138.49"),
        ("USD", Decimal("5"), "USD 5.00"),
        ("USD", Decimal("0.001"), "USD 0.001"),
        ("USD", Decimal("-12.5"), "USD -12.50"),
        ("JPY", Decimal("1500"), "JPY 1,500"),
        ("BHD", Decimal("1.5"), "BHD 1.500"),
        ("EUR", Decimal("1234567.891"), "EUR 1,234,567.891"),
    ],
)
def test_money_is_written_in_one_standard_form_exactly(currency: str, value: Decimal, shown: str) -> None:
    assert _values.format_money(currency, value) == shown


def test_every_amount_in_a_report_is_written_as_money() -> None:
    chain = _chain()
    raw = chain.payment.plain()
    raw["payment_mandate_contents"]["payment_details_total"]["amount"]["value"] = 1384.90
    report = _inspect(chain, json.dumps(raw))
    rendered = render_text(report, title="t") + render_html(report) + report.to_json()
    assert "1384.9" not in rendered
    assert "USD 1,384.90" in report.summary()
    assert report.facts["paid_total"] == "USD 1,384.90"
    total = next(c for c in report.comparisons if c.name == "total")
    assert (total.left_value, total.right_value) == ("USD 138.49", "USD 1,384.90")


def test_the_cart_total_check_writes_money() -> None:
    chain = _chain()
    raw = chain.cart.plain()
    raw["contents"]["payment_request"]["details"]["total"]["amount"]["value"] = 1384.9
    kwargs = {**chain.expectations(), "replay_store": MemoryReplayStore()}
    report = inspect_chain(chain.intent, json.dumps(raw), chain.payment, **kwargs)
    total = report.by_id("cart.total")
    assert total.expected == "USD 1,384.90"
    assert total.got is not None
    assert total.got.startswith("USD 138.49 ")


def test_a_v02_report_writes_its_amount_as_money() -> None:
    report = inspect_v02(build())
    assert any("USD 209.00" in statement for statement in report.statements), report.statements
    assert not any("minor units" in statement for statement in report.statements)


def test_a_not_anchored_reason_keeps_a_long_did_whole_in_the_text_report() -> None:
    """The text report promises DIDs stay whole (docs/payments.md); a reason naming a long did:web
    was cut at 200 characters with "…"."""
    _, report = _date_forged()
    long_did = "did:web:merchant.example:" + ":".join(f"tenant-{n:03d}" for n in range(30))
    reason = f"the merchant key {long_did}#key-1 is not anchored: {long_did} is not pinned in your trust root"
    text = render_text(replace(report, unanchored_because=(reason,)), title="t")
    assert f"  - {reason}" in text.splitlines()
