"""Disputes judged as of the day of the purchase, for AP2 v0.2 transactions: the open mandates'
status lists recorded at the purchase and the trust root's key windows for the root issuer, the
merchant's checkout JWT and the receipts — through ``inspect_v02``, ``verify_v02``, a v0.2 bundle and
``dispute verify``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mudrika.crypto.statuslist import StatusList, StatusReference, StatusType, sign_status_list_token
from mudrika.errors import UntrustedKeyError, VerificationError
from mudrika.payments.credential_status import RecordedStatusList
from mudrika.payments.report import VerificationReport
from mudrika.payments.trustroot import TrustRoot, parse_trust_root
from mudrika.payments.v02 import inspect_v02, verify_v02
from mudrika.payments.v02.bundle import inspect_v02_bundle, v02_bundle_from_value
from mudrika.stores.replay import MemoryReplayStore
from tests._support import ap2_v02
from tests._support.cli import run_cli

URI = "https://agent-provider.example/statuslists/3"
IDX = 77
DAY = 86_400
AT = ap2_v02.FIXTURE_TIME
TX = ap2_v02.build(now=AT, root_status=StatusReference(IDX, URI))


def _status_token(value: int = StatusType.VALID, *, iat: int = AT - 600) -> str:
    statuses = StatusList(1024, 2)
    statuses.set(IDX, value)
    return sign_status_list_token(
        statuses, key=TX.keys.issuer, uri=URI, iat=iat, exp=iat + DAY, kid=ap2_v02.AGENT_PROVIDER_KID
    )


def _record(token: str) -> RecordedStatusList:
    return RecordedStatusList(uri=URI, token=token, at="2026-05-01T11:59:59Z", via=f"https GET {URI}")


VALID = (_record(_status_token()),)


def _root(**changes: Any) -> TrustRoot:
    """The transaction's root document with ``changes`` to its issuer or merchant entries."""
    document = json.loads(TX.trust_root.to_json())
    for section, owner, members in changes.get("entries", ()):
        document[section][owner].update(members)
    document.update(changes.get("policy", {}))
    return parse_trust_root(document)


def _inspect(
    *,
    recorded: tuple[RecordedStatusList, ...] = VALID,
    later: tuple[str, ...] = (),
    root: TrustRoot | None = None,
) -> VerificationReport:
    arguments = {**TX.verifier_arguments(), "trust_root": root or TX.trust_root}
    return inspect_v02(
        TX.evidence(), **arguments, replay_store=None, status_lists=recorded, later_status_lists=later
    )


def _window(section: str, owner: str, kid: str, **window: str) -> dict[str, Any]:
    return {"entries": [(section, owner, {"key_windows": {kid: window}})]}


def _iso(seconds: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- status -------------------------------------------------------------------------------------------


def test_both_open_mandates_valid_at_the_purchase() -> None:
    report = _inspect()
    assert report.verdict == "OK", [c.id for c in report.failures]
    assert report.by_id("v02.checkout.status").passed
    assert report.by_id("v02.payment.status").passed
    assert any(s.startswith("The credential was valid at the purchase") for s in report.statements)


def test_revoked_before_the_purchase_fails_both_chains() -> None:
    report = _inspect(recorded=(_record(_status_token(StatusType.INVALID)),))
    ap2_v02.refused(report, "v02.checkout.status", "credential_revoked")
    ap2_v02.refused(report, "v02.payment.status", "credential_revoked")
    assert "10 minutes before the purchase" in (report.by_id("v02.checkout.status").detail or "")


def test_revoked_after_the_purchase_is_a_note() -> None:
    report = _inspect(later=(_status_token(StatusType.INVALID, iat=AT + 3 * DAY),))
    assert report.verdict == "OK"
    assert any(s.startswith("Revoked after the purchase") for s in report.statements)


@pytest.mark.parametrize(("rule", "verdict"), [("failed", "FAILED"), ("unanchored", "UNANCHORED")])
def test_no_recorded_list_follows_the_root(rule: str, verdict: str) -> None:
    report = _inspect(recorded=(), root=_root(policy={"status": {"when_absent": rule}}))
    assert report.verdict == verdict


def test_a_list_signed_by_the_merchant_is_refused() -> None:
    statuses = StatusList(1024, 2)
    forged = sign_status_list_token(
        statuses, key=TX.keys.merchant, uri=URI, iat=AT - 60, kid=ap2_v02.AGENT_PROVIDER_KID
    )
    report = _inspect(recorded=(_record(forged),))
    ap2_v02.refused(report, "v02.checkout.status", "bad_signature")


def test_verify_v02_needs_the_list_and_accepts_it() -> None:
    arguments = {**TX.verifier_arguments(), "replay_store": MemoryReplayStore()}
    with pytest.raises(VerificationError) as refused:
        verify_v02(TX.evidence(), **arguments)
    assert refused.value.code == "status_not_recorded"
    verified = verify_v02(
        TX.evidence(), **{**arguments, "replay_store": MemoryReplayStore()}, status_lists=VALID
    )
    assert verified.report.verdict == "OK"


# -- key windows ----------------------------------------------------------------------------------------


def test_a_root_key_compromised_before_the_receipt_fails_despite_its_earlier_iat() -> None:
    # The root mandates say they were signed a minute before the purchase; the issuer reported its
    # key stolen 30 s before.  The receipts (signed by the merchant at the purchase) date the chains.
    window = _window(
        "issuers",
        ap2_v02.AGENT_PROVIDER,
        ap2_v02.AGENT_PROVIDER_KID,
        revoked_at=_iso(AT - 30),
        reason="compromised",
    )
    report = _inspect(root=_root(**window))
    ap2_v02.refused(report, "v02.checkout.root_key_window", "key_compromised")
    assert "receipt" in (report.by_id("v02.checkout.root_key_window").detail or "")


def test_a_root_key_compromised_after_the_receipt_stands_but_not_the_status_list_it_signed() -> None:
    window = _window(
        "issuers",
        ap2_v02.AGENT_PROVIDER,
        ap2_v02.AGENT_PROVIDER_KID,
        revoked_at=_iso(AT + DAY),
        reason="compromised",
    )
    report = _inspect(root=_root(**window))
    # The receipts date the root mandates before the compromise: they stand.
    assert report.by_id("v02.checkout.root_key_window").passed
    assert report.by_id("v02.payment.root_key_window").passed
    # The same key signed the status lists, which nothing but their own iat dates: a thief holding
    # the key could have written them, so they do not count, and the verdict fails on them alone.
    assert sorted(c.id for c in report.failures) == ["v02.checkout.status", "v02.payment.status"]
    for kind in ("checkout", "payment"):
        ap2_v02.refused(report, f"v02.{kind}.status", "signing_time_unproven")
        assert "outside the window" in (report.by_id(f"v02.{kind}.status").got or "") + (
            report.by_id(f"v02.{kind}.status").detail or ""
        )


def test_a_merchant_key_superseded_after_stands_and_before_fails() -> None:
    after = _inspect(
        root=_root(
            **_window(
                "merchants",
                ap2_v02.MERCHANT_DID,
                ap2_v02.MERCHANT_KID,
                revoked_at=_iso(AT + 60),
                reason="superseded",
            )
        )
    )
    assert after.verdict == "OK", [c.id for c in after.failures]
    assert after.by_id("v02.checkout.merchant_key_window").passed
    before = _inspect(
        root=_root(
            **_window(
                "merchants",
                ap2_v02.MERCHANT_DID,
                ap2_v02.MERCHANT_KID,
                revoked_at=_iso(AT - DAY),
                reason="superseded",
            )
        )
    )
    ap2_v02.refused(before, "v02.checkout.merchant_key_window", "key_superseded")
    ap2_v02.refused(before, "v02.receipt.payment.key_window", "key_superseded")


def test_verify_v02_raises_the_window_refusal() -> None:
    window = _window(
        "issuers", ap2_v02.AGENT_PROVIDER, ap2_v02.AGENT_PROVIDER_KID, valid_until=_iso(AT - DAY)
    )
    arguments = {
        **TX.verifier_arguments(),
        "trust_root": _root(**window),
        "replay_store": MemoryReplayStore(),
    }
    with pytest.raises(UntrustedKeyError) as refused:
        verify_v02(TX.evidence(), **arguments, status_lists=VALID)
    assert refused.value.code == "key_expired"


# -- bundle and CLI -------------------------------------------------------------------------------------


def _bundle_document(recorded: tuple[RecordedStatusList, ...]) -> dict[str, Any]:
    document = ap2_v02.bundle_document(TX)
    document["evidence_time"] = _iso(AT)
    if recorded:
        document["status_lists"] = [entry.model_dump(mode="json") for entry in recorded]
    return document


def test_the_v02_bundle_carries_the_recorded_lists() -> None:
    bundle = v02_bundle_from_value(_bundle_document((_record(_status_token(StatusType.SUSPENDED)),)))
    assert v02_bundle_from_value(json.loads(bundle.to_json())) == bundle
    report = inspect_v02_bundle(bundle, trust_root=TX.trust_root)
    ap2_v02.refused(report, "v02.checkout.status", "credential_suspended")


@pytest.mark.parametrize(
    ("recorded", "later", "exit_code", "phrase"),
    [
        (VALID, (), 0, "The credential was valid at the purchase"),
        ((_record(_status_token(StatusType.INVALID)),), (), 1, "revoked (INVALID) at the purchase"),
        (VALID, (_status_token(StatusType.INVALID, iat=AT + DAY),), 0, "Revoked after the purchase"),
    ],
    ids=["valid", "revoked-before", "revoked-after"],
)
def test_dispute_verify_of_a_v02_bundle_shows_the_status(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    recorded: tuple[RecordedStatusList, ...],
    later: tuple[str, ...],
    exit_code: int,
    phrase: str,
) -> None:
    bundle = tmp_path / "bundle.json"
    bundle.write_text(json.dumps(_bundle_document(recorded)))
    root = tmp_path / "root.json"
    root.write_text(TX.trust_root.to_json())
    hops = {
        "checkout_hops": [{"aud": ap2_v02.MERCHANT_DID, "nonce": ap2_v02.CHECKOUT_NONCE}],
        "payment_hops": [{"aud": ap2_v02.CP_AUDIENCE, "nonce": ap2_v02.PAYMENT_NONCE}],
    }
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"bundle": str(bundle), **hops}) + "\n")
    args = ["dispute", "verify", "--cases", str(cases), "--trust-root", str(root)]
    for index, token in enumerate(later):
        path = tmp_path / f"later-{index}.jwt"
        path.write_text(token)
        args += ["--later-status", str(path)]
    code, _, err = run_cli(capsys, *args)
    assert code == exit_code, err
    assert phrase in err


def test_every_as_of_purchase_failure_reads_as_a_sentence() -> None:
    reports = [
        _inspect(recorded=(_record(_status_token(StatusType.INVALID)),)),
        _inspect(
            root=_root(
                **_window("merchants", ap2_v02.MERCHANT_DID, ap2_v02.MERCHANT_KID, valid_until=_iso(AT - DAY))
            )
        ),
        _inspect(
            root=_root(
                **_window(
                    "issuers",
                    ap2_v02.AGENT_PROVIDER,
                    ap2_v02.AGENT_PROVIDER_KID,
                    revoked_at=_iso(AT - 30),
                    reason="compromised",
                )
            )
        ),
    ]
    for report in reports:
        failures = report.to_dict()["failures"]
        assert failures
        for failure in failures:
            assert "did not hold" not in failure["meaning"], failure
