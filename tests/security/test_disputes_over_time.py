"""Disputes judged as of the day of the purchase, for AP2 v0.1 chains: the credential's status list
recorded at the purchase, and the trust root's key validity windows.

Every case is a genuine chain with exactly one thing about the past changed; the verdict, the check
that decides it and the sentence an analyst reads (with the dates) are pinned, through the API
(``inspect_chain``, ``verify_chain``, ``inspect_bundle``) and the CLI (``dispute verify``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mudrika.crypto.jose import sign_jwt
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.statuslist import (
    STATUS_LIST_TYP,
    StatusList,
    StatusType,
    sign_status_list_token,
    status_claim,
)
from mudrika.errors import UntrustedKeyError, VerificationError
from mudrika.payments.bundle import build_bundle, inspect_bundle
from mudrika.payments.chain import inspect_chain, verify_cart, verify_chain
from mudrika.payments.credential_status import RecordedStatusList
from mudrika.payments.report import VerificationReport
from mudrika.stores.replay import MemoryReplayStore
from tests._support.cli import run_cli
from tests._support.evidence import evidence_builder

BUILDER = evidence_builder()
PURCHASE: int = BUILDER.EVIDENCE_TIME
DAY = 86_400
URI = "https://wallet-issuer.example/statuslists/7"
IDX = 1234
OTHER_ISSUER_KEY = KeyPair.generate("ed25519")


def _chain(*, status: bool = True) -> Any:
    claims = {"status": status_claim(IDX, URI)} if status else None
    return BUILDER.build_chain(credential_claims=claims)


CHAIN = _chain()


def _status_token(
    value: int = StatusType.VALID,
    *,
    iat: int = PURCHASE - 3600,
    uri: str = URI,
    key: KeyPair | None = None,
    kid: str = BUILDER.ISSUER_KID,
    size: int = 4096,
    lifetime: int = 2 * DAY,
) -> str:
    statuses = StatusList(size, 2)
    if size > IDX:
        statuses.set(IDX, value)
    return sign_status_list_token(
        statuses, key=key or CHAIN.issuer_key, uri=uri, iat=iat, exp=iat + lifetime, kid=kid
    )


def _recorded(token: str) -> RecordedStatusList:
    return RecordedStatusList(uri=URI, token=token, at="2025-10-01T12:21:08Z", via=f"https GET {URI}")


def _inspect(
    chain: Any = CHAIN,
    *,
    recorded: tuple[str, ...] = (),
    later: tuple[str, ...] = (),
    **root_changes: Any,
) -> VerificationReport:
    return inspect_chain(
        chain.intent,
        chain.cart,
        chain.payment,
        **chain.expectations(**root_changes),
        replay_store=MemoryReplayStore(),
        status_lists=[_recorded(token) for token in recorded],
        later_status_lists=later,
    )


def _check(report: VerificationReport, check_id: str) -> Any:
    [check] = [check for check in report.checks if check.id == check_id]
    return check


# -- the credential's status -------------------------------------------------------------------------


def test_valid_at_the_purchase_is_ok_and_says_so() -> None:
    report = _inspect(recorded=(_status_token(),))
    assert report.verdict == "OK", [c.id for c in report.failures]
    check = _check(report, "issuer.credential.status")
    assert check.passed
    assert "valid at the purchase" in (check.detail or "")
    assert "1 hour before the purchase" in (check.detail or "")


def test_revoked_before_the_purchase_fails_with_the_lists_date() -> None:
    report = _inspect(
        recorded=(_status_token(StatusType.INVALID, iat=PURCHASE - 3 * DAY + 60, lifetime=7 * DAY),),
        status={"max_age_seconds": 7 * DAY},
    )
    assert report.verdict == "FAILED"
    check = _check(report, "issuer.credential.status")
    assert (check.status, check.code) == ("failed", "credential_revoked")
    assert "revoked (INVALID) at the purchase" in (check.detail or "")
    assert "2 days before the purchase" in (check.detail or "")
    assert "2025-09-28" in (check.detail or "")
    # The replay claim never ran: a refused chain consumes nothing.
    assert _check(report, "replay.kb_nonce").status == "skipped"


def test_suspended_at_the_purchase_fails() -> None:
    report = _inspect(recorded=(_status_token(StatusType.SUSPENDED),))
    assert _check(report, "issuer.credential.status").code == "credential_suspended"
    assert report.verdict == "FAILED"


def test_revoked_after_the_purchase_stays_ok_with_a_note() -> None:
    later = _status_token(StatusType.INVALID, iat=PURCHASE + 10 * DAY)
    report = _inspect(recorded=(_status_token(),), later=(later,))
    assert report.verdict == "OK"
    [note] = [s for s in report.statements if s.startswith("Revoked after the purchase")]
    assert "10 days after the purchase" in note
    assert "does not change the verdict" in note


@pytest.mark.parametrize(
    ("rule", "verdict"), [(None, "FAILED"), ("failed", "FAILED"), ("unanchored", "UNANCHORED")]
)
def test_no_list_recorded_follows_the_trust_roots_rule(rule: str | None, verdict: str) -> None:
    changes: dict[str, Any] = {} if rule is None else {"status": {"when_absent": rule}}
    report = _inspect(**changes)
    assert report.verdict == verdict
    check = _check(report, "issuer.credential.status")
    assert check.code == "status_not_recorded" or check.passed
    if verdict == "UNANCHORED":
        assert any("no list was recorded" in reason for reason in report.unanchored_because)


def test_a_list_older_than_the_roots_max_age_fails() -> None:
    old = _status_token(iat=PURCHASE - 2 * DAY, lifetime=7 * DAY)
    assert _check(_inspect(recorded=(old,)), "issuer.credential.status").code == "status_list_too_old"
    assert _inspect(recorded=(old,), status={"max_age_seconds": 3 * DAY}).verdict == "OK"


def _wrong_bits_token() -> str:
    claims = {
        "sub": URI,
        "iat": PURCHASE - 60,
        "status_list": {"bits": 3, "lst": StatusList(4096, 4).to_json()["lst"]},
    }
    return sign_jwt(claims, CHAIN.issuer_key, kid=BUILDER.ISSUER_KID, typ=STATUS_LIST_TYP)


@pytest.mark.parametrize(
    ("token", "code"),
    [
        (lambda: _status_token(key=OTHER_ISSUER_KEY), "bad_signature"),
        (lambda: _status_token(key=OTHER_ISSUER_KEY, kid="someone-else"), "key_not_pinned"),
        (
            lambda: _status_token(uri="https://wallet-issuer.example/statuslists/8"),
            "status_list_uri_mismatch",
        ),
        (lambda: _status_token(size=1024), "status_index_out_of_range"),
        (_wrong_bits_token, "bad_bits"),
        (lambda: _status_token(iat=PURCHASE + 60), "iat_in_future"),
    ],
    ids=[
        "another-issuers-key",
        "unpinned-kid",
        "sub-mismatch",
        "index-out-of-range",
        "wrong-bits",
        "issued-after",
    ],
)
def test_a_recorded_list_that_does_not_count_is_refused(token: Callable[[], str], code: str) -> None:
    report = _inspect(recorded=(token(),))
    assert report.verdict == "FAILED"
    check = _check(report, "issuer.credential.status")
    assert check.code == code, check


def test_a_credential_without_a_status_claim_has_no_status_check() -> None:
    report = _inspect(_chain(status=False))
    assert report.verdict == "OK"
    assert not [c for c in report.checks if c.id == "issuer.credential.status"]


def test_online_verify_needs_the_recorded_list() -> None:
    expectations = CHAIN.expectations()
    with pytest.raises(VerificationError) as refused:
        verify_chain(
            CHAIN.intent, CHAIN.cart, CHAIN.payment, replay_store=MemoryReplayStore(), **expectations
        )
    assert refused.value.code == "status_not_recorded"
    verified = verify_chain(
        CHAIN.intent,
        CHAIN.cart,
        CHAIN.payment,
        replay_store=MemoryReplayStore(),
        status_lists=[_recorded(_status_token())],
        **expectations,
    )
    assert verified.issuer == BUILDER.ISSUER


# -- key validity windows ------------------------------------------------------------------------------


def _merchant_window(**window: str) -> dict[str, Any]:
    document = CHAIN.trust_root_document()
    merchants = document["merchants"]
    merchants[BUILDER.MERCHANT_DID] = {
        **merchants[BUILDER.MERCHANT_DID],
        "key_windows": {BUILDER.MERCHANT_KID: window},
    }
    return {"merchants": merchants}


def _issuer_window(**window: str) -> dict[str, Any]:
    document = CHAIN.trust_root_document()
    issuers = document["issuers"]
    issuers[BUILDER.ISSUER] = {**issuers[BUILDER.ISSUER], "key_windows": {BUILDER.ISSUER_KID: window}}
    return {"issuers": issuers}


VALID = (_status_token(),)


def test_a_merchant_key_compromised_before_the_purchase_fails_despite_a_back_dated_iat() -> None:
    # The cart JWT says it was signed 4 minutes before the purchase; the key was reported stolen
    # 1 minute before.  The cart's own iat is the thief's word; the user's key-binding JWT over the
    # cart (2 s before the purchase) dates it after the compromise.
    chain = BUILDER.build_chain(
        credential_claims={"status": status_claim(IDX, URI)},
        merchant_claims={"iat": PURCHASE - 240, "exp": PURCHASE + 600},
    )
    compromised = _merchant_window(revoked_at="2025-10-01T12:20:10Z", reason="compromised")
    report = _inspect(chain, recorded=VALID, **compromised)
    assert report.verdict == "FAILED"
    check = _check(report, "merchant.key.window")
    assert (check.status, check.code) == ("failed", "key_compromised")
    assert "reported compromised" in (check.detail or "")
    assert "key-binding" in (check.detail or "")


def test_a_merchant_key_compromised_after_the_purchase_stands() -> None:
    window = _merchant_window(revoked_at="2025-10-05T00:00:00Z", reason="compromised")
    report = _inspect(recorded=VALID, **window)
    assert report.verdict == "OK", [c.id for c in report.failures]
    assert _check(report, "merchant.key.window").passed


def test_a_key_superseded_after_the_purchase_stands_and_one_superseded_before_fails() -> None:
    after = _inspect(recorded=VALID, **_issuer_window(revoked_at="2025-10-02T00:00:00Z", reason="superseded"))
    assert after.verdict == "OK"
    assert _check(after, "issuer.key.window").passed
    # The credential was issued 30 days before the purchase: a supersession 40 days before fails it.
    before = _inspect(
        recorded=VALID, **_issuer_window(revoked_at="2025-08-22T00:00:00Z", reason="superseded")
    )
    assert _check(before, "issuer.key.window").code == "key_superseded"
    assert before.verdict == "FAILED"


def test_an_issuer_key_compromised_after_issuance_cannot_be_cleared_in_v01() -> None:
    """Nothing signed after the credential by a key the issuer does not vouch for covers it."""
    report = _inspect(
        recorded=VALID, **_issuer_window(revoked_at="2025-10-05T00:00:00Z", reason="compromised")
    )
    check = _check(report, "issuer.key.window")
    assert check.code == "signing_time_unproven"
    assert "does not count" in (check.detail or "")
    assert report.verdict == "FAILED"


def test_a_status_list_signed_after_the_issuer_key_expired_does_not_count() -> None:
    # The credential was issued 30 days before the purchase, inside the key's window; the list
    # recorded at the purchase was issued an hour before it, after the window closed.
    report = _inspect(recorded=VALID, **_issuer_window(valid_until="2025-10-01T10:00:00Z"))
    assert _check(report, "issuer.key.window").passed
    status = _check(report, "issuer.credential.status")
    assert (status.status, status.code) == ("failed", "key_expired")
    assert report.verdict == "FAILED"
    # A list issued before the window closed counts.
    earlier = _status_token(iat=PURCHASE - 3 * 3600)
    assert _inspect(recorded=(earlier,), **_issuer_window(valid_until="2025-10-01T10:00:00Z")).verdict == "OK"


def test_no_window_no_check() -> None:
    report = _inspect(recorded=VALID)
    assert not [c for c in report.checks if c.id.endswith(".key.window")]


def test_verify_chain_raises_the_window_refusal() -> None:
    window = _merchant_window(valid_until="2025-09-30T00:00:00Z")
    with pytest.raises(UntrustedKeyError) as refused:
        verify_chain(
            CHAIN.intent,
            CHAIN.cart,
            CHAIN.payment,
            replay_store=MemoryReplayStore(),
            status_lists=[_recorded(_status_token())],
            **CHAIN.expectations(**window),
        )
    assert refused.value.code == "key_expired"


def _verify_cart_alone(**root_changes: Any) -> Any:
    expectations = CHAIN.expectations(**root_changes)
    return verify_cart(
        CHAIN.cart,
        trust_root=expectations["trust_root"],
        keys=expectations["keys"],
        audience=CHAIN.merchant_audience,
        now=CHAIN.now,
        replay_store=MemoryReplayStore(),
    )


@pytest.mark.parametrize(
    ("window", "code"),
    [
        ({"valid_until": "2025-09-30T00:00:00Z"}, "key_expired"),
        ({"revoked_at": "2025-09-30T00:00:00Z", "reason": "superseded"}, "key_superseded"),
        # Alone, the cart is dated by its own iat only: a compromise is never cleared, before or after.
        ({"revoked_at": "2025-09-30T00:00:00Z", "reason": "compromised"}, "signing_time_unproven"),
        ({"revoked_at": "2025-10-05T00:00:00Z", "reason": "compromised"}, "signing_time_unproven"),
    ],
    ids=["expired", "superseded", "compromised-before", "compromised-after"],
)
def test_verify_cart_alone_judges_the_merchant_key_window(window: dict[str, str], code: str) -> None:
    """``verify_cart`` (a cart received on its own, before any payment) once accepted a cart signed
    by a merchant key the trust root pinned as expired or compromised: it judged no window."""
    with pytest.raises(UntrustedKeyError) as refused:
        _verify_cart_alone(**_merchant_window(**window))
    assert refused.value.code == code
    assert refused.value.fields.get("check") == "merchant.key.window"


def test_verify_cart_alone_accepts_a_cart_inside_the_window() -> None:
    window = _merchant_window(
        valid_from="2025-09-01T00:00:00Z", revoked_at="2025-10-02T00:00:00Z", reason="superseded"
    )
    assert _verify_cart_alone(**window).kid == BUILDER.MERCHANT_KID


# -- bundles and the CLI -------------------------------------------------------------------------------


def _bundle(recorded: tuple[str, ...]) -> Any:
    return build_bundle(
        CHAIN.intent,
        CHAIN.cart,
        CHAIN.payment,
        evidence_time=CHAIN.now,
        merchant_audience=CHAIN.merchant_audience,
        kb_audience=CHAIN.kb_audience,
        kb_nonce=CHAIN.nonce,
        did_documents=CHAIN.did_documents,
        jwks=CHAIN.jwks,
        status_lists=[_recorded(token) for token in recorded],
    )


def test_the_bundle_carries_the_recorded_list_and_round_trips() -> None:
    bundle = _bundle((_status_token(StatusType.INVALID),))
    again = type(bundle).model_validate_json(bundle.to_json())
    assert again == bundle
    report = inspect_bundle(bundle, trust_root=CHAIN.trust_root(), kb_nonce=CHAIN.nonce)
    assert _check(report, "issuer.credential.status").code == "credential_revoked"
    later = _status_token(StatusType.INVALID, iat=PURCHASE + DAY)
    ok = inspect_bundle(
        _bundle(VALID), trust_root=CHAIN.trust_root(), kb_nonce=CHAIN.nonce, later_status_lists=[later]
    )
    assert ok.verdict == "OK"
    assert any(s.startswith("Revoked after the purchase") for s in ok.statements)


@pytest.mark.parametrize(
    ("recorded", "later", "exit_code", "phrase"),
    [
        (VALID, (), 0, "The credential was valid at the purchase"),
        ((_status_token(StatusType.INVALID),), (), 1, "revoked (INVALID) at the purchase"),
        (
            VALID,
            (_status_token(StatusType.INVALID, iat=PURCHASE + 3 * DAY),),
            0,
            "Revoked after the purchase",
        ),
        ((), (), 1, "no list was recorded"),
    ],
    ids=["valid", "revoked-before", "revoked-after", "absent"],
)
def test_dispute_verify_shows_the_status_in_words(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    recorded: tuple[str, ...],
    later: tuple[str, ...],
    exit_code: int,
    phrase: str,
) -> None:
    bundle = tmp_path / "bundle.json"
    bundle.write_text(_bundle(recorded).to_json())
    root = tmp_path / "root.json"
    root.write_text(json.dumps(CHAIN.trust_root_document()))
    args = ["dispute", "verify", str(bundle), "--trust-root", str(root), "--kb-nonce", CHAIN.nonce]
    for index, token in enumerate(later):
        path = tmp_path / f"later-{index}.jwt"
        path.write_text(token)
        args += ["--later-status", str(path)]
    code, _, err = run_cli(capsys, *args)
    assert code == exit_code, err
    assert phrase in err


def test_every_as_of_purchase_failure_reads_as_a_sentence() -> None:
    reports = [
        _inspect(recorded=(_status_token(StatusType.INVALID),)),
        _inspect(recorded=VALID, **_merchant_window(valid_until="2025-09-30T00:00:00Z")),
        _inspect(recorded=VALID, **_issuer_window(revoked_at="2025-10-05T00:00:00Z", reason="compromised")),
        _inspect(recorded=VALID, **_issuer_window(valid_until="2025-10-01T10:00:00Z")),
    ]
    for report in reports:
        for failure in report.to_dict()["failures"]:
            assert "did not hold" not in failure["meaning"], failure


def test_dispute_bundle_records_the_status_list_and_dispute_verify_judges_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {}
    for name, mandate in (("intent", CHAIN.intent), ("cart", CHAIN.cart), ("payment", CHAIN.payment)):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(mandate.plain()))
    token = tmp_path / "status.jwt"
    token.write_text(_status_token(StatusType.SUSPENDED))
    issuer_jwks = tmp_path / "issuer-jwks.json"
    issuer_jwks.write_text(json.dumps(CHAIN.jwks[BUILDER.ISSUER]))
    merchant_doc = tmp_path / "merchant-did.json"
    merchant_doc.write_text(json.dumps(CHAIN.did_documents[BUILDER.MERCHANT_DID]))
    bundle = tmp_path / "bundle.json"
    code, _, err = run_cli(
        capsys,
        "dispute", "bundle",
        "--intent", str(files["intent"]), "--cart", str(files["cart"]), "--payment", str(files["payment"]),
        "--merchant-aud", CHAIN.merchant_audience, "--kb-aud", CHAIN.kb_audience, "--kb-nonce", CHAIN.nonce,
        "--did-document", str(merchant_doc), "--jwks", f"{BUILDER.ISSUER}={issuer_jwks}",
        "--status-list", f"{URI}={token}", "--via", f"{URI}=https GET from the issuer",
        "--fetched-at", "2025-10-01T12:21:08Z", "--evidence-time", "2025-10-01T12:21:10Z",
        "--out", str(bundle),
    )  # fmt: skip
    assert code == 0, err
    [recorded] = json.loads(bundle.read_text())["status_lists"]
    assert recorded == {
        "uri": URI,
        "token": token.read_text(),
        "at": "2025-10-01T12:21:08Z",
        "via": "https GET from the issuer",
    }
    root = tmp_path / "root.json"
    root.write_text(json.dumps(CHAIN.trust_root_document()))
    code, _, err = run_cli(
        capsys, "dispute", "verify", str(bundle), "--trust-root", str(root), "--kb-nonce", CHAIN.nonce
    )
    assert code == 1
    assert "suspended at the purchase" in err


def test_dispute_verify_refuses_a_cart_signed_after_the_merchant_key_was_compromised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the CLI, a root written with ``trust-root revoke-key``: the window check in words."""
    bundle = tmp_path / "bundle.json"
    bundle.write_text(_bundle(VALID).to_json())
    root = tmp_path / "root.json"
    root.write_text(json.dumps(CHAIN.trust_root_document()))
    code, _, err = run_cli(
        capsys,
        "trust-root", "revoke-key", str(root), "--owner", BUILDER.MERCHANT_DID, "--kid", BUILDER.MERCHANT_KID,
        "--at", "2025-10-01T12:00:00Z", "--reason", "compromised",
    )  # fmt: skip
    assert code == 0, err
    code, _, err = run_cli(
        capsys, "dispute", "verify", str(bundle), "--trust-root", str(root), "--kb-nonce", CHAIN.nonce
    )
    assert code == 1
    assert "merchant.key.window" in err
    assert "reported compromised on 2025-10-01" in err
