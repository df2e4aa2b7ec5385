"""What a dispute analyst reads after an AP2 v0.2 tamper: the values that differ, the date first,
beside the time the agent's verified key-binding signature closed the mandate.

Each test reproduces a tamper whose report, before, named only the broken binding (the merchant's
signature, the transaction id, the payee check) and showed no values-that-differ section, although
both values are readable in the bundle: a checkout total raised after the merchant signed, a
checkout date changed, a payee changed, a pre-set date changed, a receipt naming another token.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from mudrika.crypto.b64url import b64url_decode, b64url_encode
from mudrika.payments.report import VerificationReport, render_html, render_text
from mudrika.payments.v02 import V02Evidence, append_hop, receipt_reference, sd_digest, sign_receipt
from tests._support.ap2_v02 import CHECKOUT_NONCE, MERCHANT_DID, MERCHANT_KID, Transaction, build, inspect

FORGED_DATE = "2025-01-02T03:04:05Z"
FORGED_SECONDS = int(datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp())
OTHER_PAYEE = {"id": "did:web:elsewhere.example", "name": "Elsewhere Ltd"}


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _changed_after_the_merchant_signed(
    transaction: Transaction, change: dict[str, Any] | Callable[[dict[str, Any]], None]
) -> V02Evidence:
    """The merchant's checkout JWT with its payload edited (the merchant's signature kept), closed
    over by the agent with a matching ``checkout_hash``; the payment chain as the agent signed it."""
    header, payload, signature = transaction.checkout_jwt.split(".")
    claims = json.loads(b64url_decode(payload))
    if callable(change):
        change(claims)
    else:
        claims.update(change)
    forged = ".".join([header, b64url_encode(json.dumps(claims).encode()), signature])
    closed = {**transaction.closed_checkout, "checkout_jwt": forged, "checkout_hash": sd_digest(forged)}
    chain = append_hop(
        transaction.checkout_root,
        closed,
        holder_key=transaction.keys.agent,
        audience=MERCHANT_DID,
        nonce=CHECKOUT_NONCE,
        now=transaction.now,
    )
    return V02Evidence(checkout_chain=chain, payment_chain=transaction.payment_chain)


def _raise_total(claims: dict[str, Any]) -> None:
    for entry in claims["totals"]:
        if entry["type"] == "total":
            entry["amount"] = 209000


def _section(report: VerificationReport) -> list[str]:
    """The text report's values-that-differ section, heading first."""
    lines = render_text(report, title="t").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("VALUES THAT DIFFER"))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" "))
    return lines[start:end]


def _comparison(report: VerificationReport, name: str) -> Any:
    return next(comparison for comparison in report.comparisons if comparison.name == name)


def test_a_checkout_total_raised_after_the_merchant_signed_shows_both_amounts() -> None:
    transaction = build()
    report = inspect(transaction, _changed_after_the_merchant_signed(transaction, _raise_total))
    failed = {check.id for check in report.failures}
    assert {"v02.checkout.merchant_signature", "v02.payment.transaction_id"} <= failed
    total = _comparison(report, "total")
    assert (total.left_value, total.right_value) == ("USD 2,090.00", "USD 209.00")
    assert "merchant" in total.left
    assert "agent" in total.right
    section = "\n".join(_section(report))
    assert "USD 2,090.00" in section
    assert "USD 209.00" in section
    html = render_html(report)
    assert "Values that differ" in html
    assert "USD 2,090.00" in html
    assert "USD 209.00" in html
    assert report.to_dict()["comparisons"][0]["values"]["checkout total (merchant)"] == "USD 2,090.00"


def test_a_checkout_total_raised_without_its_lines_shows_what_the_lines_add_up_to() -> None:
    transaction = build()
    report = inspect(
        transaction,
        _changed_after_the_merchant_signed(
            transaction,
            {
                "totals": [
                    {"type": "subtotal", "amount": 209000},
                    {"type": "total", "amount": 209000},
                ]
            },
        ),
    )
    items = _comparison(report, "items")
    assert items.left_value.startswith("USD 209.00 (1 x Gold sneaker; 2 x Socks)")
    assert items.right_value == "USD 2,090.00"


def test_a_checkout_date_changed_after_the_merchant_signed_comes_first_beside_the_agents_signed_time() -> (
    None
):
    now = int(time.time())
    transaction = build(now=now, checkout_hook=lambda checkout: checkout.update(iat=now - 30))
    report = inspect(
        transaction,
        _changed_after_the_merchant_signed(
            transaction,
            {
                "iat": FORGED_SECONDS,
                "totals": [
                    {"type": "subtotal", "amount": 20900},
                    {"type": "total", "amount": 209000},
                ],
            },
        ),
    )
    assert report.by_id("v02.checkout.merchant_signature").failed
    first = report.comparisons[0]
    assert first.name == "checkout date"
    assert first.left_value == FORGED_DATE
    assert first.right_value == _iso(transaction.now)
    assert "agent's verified signature" in first.right
    assert [comparison.name for comparison in report.comparisons][:2] == ["checkout date", "total"]
    section = _section(report)
    assert section[1].startswith("  checkout date:")
    assert FORGED_DATE in section[2]
    assert _iso(transaction.now) in section[3]
    assert FORGED_DATE in render_html(report)


def test_the_agents_signed_time_is_not_shown_when_its_signature_did_not_verify() -> None:
    transaction = build()
    evidence = _changed_after_the_merchant_signed(transaction, {"iat": FORGED_SECONDS})
    tokens = evidence.checkout_chain.split("~~")
    hop_jwt, rest = tokens[1].split("~", 1)
    header, payload, signature = hop_jwt.split(".")
    flipped = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
    tokens[1] = ".".join([header, payload, flipped]) + "~" + rest
    report = inspect(transaction, replace(evidence, checkout_chain="~~".join(tokens)))
    assert report.by_id("v02.checkout.hop1.signature").failed
    assert all(comparison.name != "checkout date" for comparison in report.comparisons)


def test_a_changed_payee_shows_the_checkouts_merchant_and_the_payee() -> None:
    transaction = build(closed_payment_hook=lambda payment: payment.update(payee=dict(OTHER_PAYEE)))
    report = inspect(transaction)
    assert report.by_id("v02.payment.payee").failed
    payee = _comparison(report, "payee")
    assert payee.left_value == f"{MERCHANT_DID} (Demo Merchant)"
    assert payee.right_value == "did:web:elsewhere.example (Elsewhere Ltd)"
    section = "\n".join(_section(report))
    assert MERCHANT_DID in section
    assert "did:web:elsewhere.example" in section
    assert "did:web:elsewhere.example" in render_html(report)


def test_a_pre_set_execution_date_changed_by_the_agent_is_shown_first() -> None:
    transaction = build(
        open_payment_hook=lambda mandate: mandate.update(execution_date="2026-06-01"),
        closed_payment_hook=lambda payment: payment.update(
            execution_date="2026-07-01", payment_amount={"amount": 20000, "currency": "USD"}
        ),
    )
    report = inspect(transaction)
    assert report.by_id("v02.payment.preset").failed
    names = [comparison.name for comparison in report.comparisons]
    assert names[0] == "payment execution date"
    first = report.comparisons[0]
    assert (first.left_value, first.right_value) == ("2026-06-01", "2026-07-01")
    assert _comparison(report, "total").right_value == "USD 200.00"


def test_a_receipt_naming_the_open_mandate_says_which_token_it_names() -> None:
    transaction = build()
    open_hash = inspect(transaction).hashes["open_checkout"]
    receipt = sign_receipt(
        {
            "status": "Success",
            "iss": MERCHANT_DID,
            "iat": transaction.now,
            "reference": open_hash,
            "order_id": "o-1",
        },
        kind="checkout",
        key=transaction.keys.merchant,
        kid=MERCHANT_KID,
    )
    report = inspect(transaction, replace(transaction.evidence(), checkout_receipt=receipt))
    assert report.by_id("v02.receipt.checkout.reference").failed
    reference = _comparison(report, "checkout receipt reference")
    assert "token 0 of the chain" in reference.meaning
    assert reference.left_value == open_hash
    assert reference.right_value == receipt_reference(transaction.checkout_chain)


def test_an_untouched_transaction_has_no_values_that_differ() -> None:
    report = inspect(build())
    assert report.verdict != "FAILED"
    assert report.comparisons == ()
    assert "VALUES THAT DIFFER" not in render_text(report, title="t")
