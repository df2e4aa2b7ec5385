"""The credential's status as of the purchase (``mudrika.payments.credential_status``).

Every outcome the dispute verifier can show is pinned here by its code and by the date sentence an
analyst reads: valid, revoked, suspended, an application value, no list recorded (under both of
the trust root's rules), a list that does not count (another signer, another list, out of range,
too old, issued after or expired before the purchase), and a later list shown as a note that never
changes the judgement.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from mudrika.crypto.jose import TrustedKey
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.statuslist import (
    StatusList,
    StatusType,
    sign_status_list_token,
    status_claim,
    verify_status_list_token,
)
from mudrika.errors import UntrustedKeyError
from mudrika.identity.anchoring import KeyValidity
from mudrika.payments.credential_status import (
    PinnedStatusKey,
    RecordedStatusList,
    StatusJudgement,
    WhenAbsent,
    judge_credential_status,
    record_status_list,
    span,
)
from tests._support.status_case import DAY, IDX, ISSUER, KID, PURCHASE, URI

ISSUER_KEY = KeyPair.generate("p256")
OTHER_KEY = KeyPair.generate("p256")


def _resolver(header: Mapping[str, Any], validity: KeyValidity | None = None) -> PinnedStatusKey:
    """The verifier's anchoring of the issuer: one pinned kid (with ``validity``), refused otherwise."""
    if header.get("kid") != KID:
        raise UntrustedKeyError("kid not pinned for the issuer", code="kid_not_owned")
    return PinnedStatusKey(TrustedKey.for_key(ISSUER_KEY.public_key, kid=KID), validity)


def _token(
    value: int = StatusType.VALID,
    *,
    iat: int = PURCHASE - 3 * DAY,
    exp: int | None = PURCHASE + DAY,
    uri: str = URI,
    key: KeyPair = ISSUER_KEY,
    size: int = 100,
    bits: int = 2,
) -> str:
    statuses = StatusList(size, bits)
    if size > IDX:
        statuses.set(IDX, value)
    return sign_status_list_token(statuses, key=key, uri=uri, iat=iat, exp=exp, kid=KID)


def _recorded(token: str, uri: str = URI) -> RecordedStatusList:
    return RecordedStatusList(uri=uri, token=token, at="2026-01-01T00:00:00Z", via=f"GET {uri}")


def _judge(
    recorded: list[RecordedStatusList],
    *,
    when_absent: WhenAbsent = "failed",
    later: tuple[str, ...] = (),
    claims: Mapping[str, Any] | None = None,
    max_age: float = 7 * DAY,
    validity: KeyValidity | None = None,
) -> StatusJudgement:
    judgement = judge_credential_status(
        claims if claims is not None else {"iss": ISSUER, "status": status_claim(IDX, URI)},
        recorded,
        key=functools.partial(_resolver, validity=validity),
        issuer=ISSUER,
        purchase_time=PURCHASE,
        max_age=max_age,
        when_absent=when_absent,
        later=later,
    )
    assert judgement is not None
    return judgement


def test_a_credential_without_a_status_claim_is_not_judged() -> None:
    assert (
        judge_credential_status(
            {"iss": ISSUER},
            [],
            key=_resolver,
            issuer=ISSUER,
            purchase_time=PURCHASE,
            max_age=DAY,
            when_absent="failed",
        )
        is None
    )


def test_valid_at_the_purchase_holds_and_dates_the_list() -> None:
    judgement = _judge([_recorded(_token())])
    assert (judgement.holds, judgement.code, judgement.value) == (True, None, StatusType.VALID)
    assert judgement.list_issued_at == PURCHASE - 3 * DAY
    assert "3 days before the purchase" in judgement.sentence
    assert "2025-12-29 00:00:00 UTC" in judgement.sentence


@pytest.mark.parametrize(
    ("value", "code", "words"),
    [
        (StatusType.INVALID, "credential_revoked", "revoked (INVALID)"),
        (StatusType.SUSPENDED, "credential_suspended", "suspended"),
        (3, "credential_status_unrecognised", "application-specific value 3"),
    ],
)
def test_revoked_suspended_or_unknown_at_the_purchase_fails(value: int, code: str, words: str) -> None:
    judgement = _judge([_recorded(_token(value))])
    assert (judgement.holds, judgement.code, judgement.value) == (False, code, value)
    assert words in judgement.sentence
    assert "3 days before the purchase" in judgement.sentence


@pytest.mark.parametrize(("rule", "holds"), [("failed", False), ("unanchored", None)])
def test_no_recorded_list_follows_the_trust_roots_rule(rule: WhenAbsent, holds: bool | None) -> None:
    judgement = _judge([], when_absent=rule)
    assert (judgement.holds, judgement.code) == (holds, "status_not_recorded")
    assert URI in judgement.sentence
    # A list recorded for another URI is not this credential's list.
    other = "https://issuer.example/statuslists/2"
    assert _judge([_recorded(_token(uri=other), uri=other)], when_absent=rule).code == "status_not_recorded"


@pytest.mark.parametrize(
    ("token", "code"),
    [
        (_token(key=OTHER_KEY), "bad_signature"),
        (_token(uri="https://issuer.example/statuslists/9"), "status_list_uri_mismatch"),
        (_token(size=16), "status_index_out_of_range"),
        (_token(iat=PURCHASE - 30 * DAY, exp=None), "status_list_too_old"),
        (_token(iat=PURCHASE + 1, exp=None), "iat_in_future"),
        (_token(iat=PURCHASE - 2 * DAY, exp=PURCHASE), "expired"),
    ],
    ids=["another-signer", "another-list", "index-out-of-range", "too-old", "issued-after", "expired-at"],
)
def test_a_recorded_list_that_does_not_count_fails_with_its_reason(token: str, code: str) -> None:
    judgement = _judge([_recorded(token)])
    assert (judgement.holds, judgement.code, judgement.value) == (False, code, None)
    assert judgement.sentence.startswith("the status list recorded at the purchase does not count")


def test_the_freshness_bound_is_the_verifiers_max_age_exactly() -> None:
    token = _token(iat=PURCHASE - 7 * DAY, exp=None)
    assert _judge([_recorded(token)], max_age=7 * DAY).holds is True
    assert _judge([_recorded(token)], max_age=7 * DAY - 1).code == "status_list_too_old"


def test_an_unreadable_status_claim_fails() -> None:
    judgement = _judge([], claims={"iss": ISSUER, "status": {"status_list": {"idx": -1, "uri": URI}}})
    assert judgement.holds is False
    assert judgement.code is not None


def test_a_later_revocation_is_a_note_never_the_verdict() -> None:
    later = _token(StatusType.INVALID, iat=PURCHASE + 5 * DAY, exp=PURCHASE + 6 * DAY)
    judgement = _judge([_recorded(_token())], later=(later,))
    assert judgement.holds is True
    [note] = judgement.later
    assert note.value == StatusType.INVALID
    assert note.sentence.startswith("Revoked after the purchase")
    assert "5 days after the purchase" in note.sentence
    assert "does not change the verdict" in note.sentence


def test_a_later_list_from_another_signer_is_shown_as_not_counting() -> None:
    forged = _token(StatusType.INVALID, iat=PURCHASE + DAY, exp=None, key=OTHER_KEY)
    [note] = _judge([_recorded(_token())], later=(forged,)).later
    assert (note.value, note.issued_at) == (None, None)
    assert "does not count" in note.sentence


def test_a_later_valid_list_after_a_revocation_changes_nothing() -> None:
    later = _token(StatusType.VALID, iat=PURCHASE + DAY, exp=None)
    judgement = _judge([_recorded(_token(StatusType.INVALID))], later=(later,))
    assert (judgement.holds, judgement.code) == (False, "credential_revoked")
    assert judgement.later[0].value == StatusType.VALID


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (0, "0 seconds"),
        (1, "1 second"),
        (59, "59 seconds"),
        (60, "1 minute"),
        (7_200, "2 hours"),
        (-3 * DAY, "3 days"),
    ],
)
def test_span_says_the_largest_unit_that_fits(seconds: float, words: str) -> None:
    assert span(seconds) == words


def test_what_the_merchant_records_is_what_the_dispute_judges() -> None:
    """The merchant verifies the list at the purchase and records the very token that verified;
    months later the record, not the issuer's list of the day, is judged the same way."""
    token = _token(StatusType.VALID)
    verified = verify_status_list_token(
        token,
        key=lambda header: _resolver(header).trusted,
        uri=URI,
        issuer=ISSUER,
        now=PURCHASE,
        max_age=7 * DAY,
    )
    record = record_status_list(verified, at=PURCHASE, via=f"https GET {URI}")
    assert (record.uri, record.token, record.at) == (URI, token, "2026-01-01T00:00:00Z")
    assert token not in repr(record)
    assert _judge([record]).holds is True


def test_every_refusal_carries_the_typed_error_a_verifier_raises() -> None:
    cases = [
        _judge([_recorded(_token(StatusType.INVALID))]),
        _judge([]),
        _judge([_recorded(_token(key=OTHER_KEY))]),
        _judge([], claims={"iss": ISSUER, "status": {"status_list": {"idx": -1, "uri": URI}}}),
    ]
    for judgement in cases:
        assert judgement.holds is False
        assert judgement.error is not None
        assert judgement.error.code == judgement.code
    assert _judge([_recorded(_token())]).error is None
    assert _judge([], when_absent="unanchored").error is None


def test_the_judgement_says_which_key_checked_the_list_and_whether_it_is_anchored() -> None:
    valid = _judge([_recorded(_token())]).signer
    assert valid is not None
    assert (valid.kid, valid.thumbprint, valid.anchored) == (KID, ISSUER_KEY.public_key.thumbprint(), True)
    forged = _judge([_recorded(_token(key=OTHER_KEY))]).signer
    assert forged is not None
    assert (forged.kid, forged.anchored) == (KID, False)  # the pinned kid, another key's signature
    other_list = _judge([_recorded(_token(uri="https://issuer.example/statuslists/9"))]).signer
    assert other_list is not None
    assert other_list.anchored is True  # the issuer's own list, for other credentials
    assert _judge([]).signer is None


# -- the key's pinned window, as of the list's issue time ------------------------------------------------


def _instant(offset: int) -> datetime:
    return datetime.fromtimestamp(PURCHASE + offset, UTC)


@pytest.mark.parametrize(
    ("validity", "code"),
    [
        # The list was issued 3 days before the purchase (its iat).
        (KeyValidity(valid_until=_instant(-4 * DAY)), "key_expired"),
        (KeyValidity(revoked_at=_instant(-4 * DAY), reason="superseded"), "key_superseded"),
        (KeyValidity(valid_from=_instant(-2 * DAY)), "key_not_yet_valid"),
        # Compromised, even after the purchase: only the list's own iat dates it, the thief's word.
        (KeyValidity(revoked_at=_instant(30 * DAY), reason="compromised"), "signing_time_unproven"),
        (KeyValidity(revoked_at=_instant(-4 * DAY), reason="compromised"), "signing_time_unproven"),
    ],
)
def test_a_list_signed_outside_its_keys_pinned_window_does_not_count(
    validity: KeyValidity, code: str
) -> None:
    judgement = _judge([_recorded(_token())], validity=validity)
    assert (judgement.holds, judgement.code) == (False, code)
    assert "outside the window your trust root pins" in judgement.sentence
    assert isinstance(judgement.error, UntrustedKeyError)
    assert judgement.error.code == code
    # The signature did verify under the anchored key: the key record says so.
    assert judgement.signer is not None
    assert judgement.signer.anchored is True


@pytest.mark.parametrize(
    "validity",
    [
        None,
        KeyValidity(),
        KeyValidity(valid_from=_instant(-3 * DAY), valid_until=_instant(-3 * DAY + 1)),
        KeyValidity(revoked_at=_instant(-3 * DAY + 1), reason="superseded"),
    ],
)
def test_a_list_signed_inside_its_keys_window_counts(validity: KeyValidity | None) -> None:
    judgement = _judge([_recorded(_token())], validity=validity)
    assert (judgement.holds, judgement.code) == (True, None)


def test_a_later_list_signed_after_its_key_expired_is_shown_as_not_counting() -> None:
    later = _token(StatusType.INVALID, iat=PURCHASE + 2 * DAY, exp=PURCHASE + 3 * DAY)
    judgement = _judge([_recorded(_token())], later=(later,), validity=KeyValidity(valid_until=_instant(DAY)))
    assert judgement.holds is True
    [note] = judgement.later
    assert (note.issued_at, note.value) == (None, None)
    assert "does not count" in note.sentence
    assert "outside the window" in note.sentence
