"""Edges of ``mudrika.payments.credential_status`` that its first mutation run found untested.

Each test pins one observable promise the broader suite left open: the exact words of a date at
and around the purchase, which key record a refusal carries (and whether it says the list was
anchored), how a later list with an unusable ``iat`` or payload is shown, the limits of the
evidence record, and the documented one-day default freshness bound.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import ValidationError

from mudrika.crypto.jose import TrustedKey, sign_compact
from mudrika.crypto.keys import KeyPair
from mudrika.crypto.statuslist import (
    STATUS_LIST_TYP,
    StatusList,
    StatusReference,
    StatusType,
    sign_status_list_token,
    status_claim,
)
from mudrika.errors import InvalidInput, UntrustedKeyError
from mudrika.payments.credential_status import (
    DEFAULT_STATUS_MAX_AGE,
    LaterStatus,
    PinnedStatusKey,
    RecordedStatusList,
    StatusJudgement,
    StatusSigner,
    _Witness,
    judge_credential_status,
)
from tests._support.status_case import DAY, IDX, ISSUER, KID, PURCHASE, URI

ISSUER_KEY = KeyPair.generate("p256")
THUMBPRINT = ISSUER_KEY.public_key.thumbprint()
PINNED = PinnedStatusKey(TrustedKey.for_key(ISSUER_KEY.public_key, kid=KID), None)


def _pinned_kid_only(header: Mapping[str, Any]) -> PinnedStatusKey:
    """The verifier's anchoring of the issuer: one pinned kid, refused otherwise."""
    if header.get("kid") != KID:
        raise UntrustedKeyError("kid not pinned for the issuer", code="kid_not_owned")
    return PINNED


def _any_header(header: Mapping[str, Any]) -> PinnedStatusKey:
    """A verifier that pins one key for the issuer whatever the header names (or omits)."""
    return PINNED


def _token(
    value: int = StatusType.VALID,
    *,
    iat: int = PURCHASE - 3 * DAY,
    exp: int | None = None,
    kid: str | None = KID,
) -> str:
    statuses = StatusList(100, 2)
    statuses.set(IDX, value)
    return sign_status_list_token(statuses, key=ISSUER_KEY, uri=URI, iat=iat, exp=exp, kid=kid)


def _raw_later(payload: object) -> str:
    """A list token signed by the pinned key whose payload the status list format would never emit."""
    return sign_compact(json.dumps(payload).encode(), ISSUER_KEY, kid=KID, typ=STATUS_LIST_TYP)


def _recorded(token: str) -> RecordedStatusList:
    return RecordedStatusList(uri=URI, token=token, at="2026-01-01T00:00:00Z", via=f"GET {URI}")


def _judge(
    recorded_token: str | None,
    *,
    later: tuple[str, ...] = (),
    key: Any = _pinned_kid_only,
    max_age: float = 7 * DAY,
) -> StatusJudgement:
    judgement = judge_credential_status(
        {"iss": ISSUER, "status": status_claim(IDX, URI)},
        [] if recorded_token is None else [_recorded(recorded_token)],
        key=key,
        issuer=ISSUER,
        purchase_time=PURCHASE,
        max_age=max_age,
        when_absent="failed",
        later=later,
    )
    assert judgement is not None
    return judgement


def _note(later: str, at_purchase: int = StatusType.VALID) -> LaterStatus:
    [note] = _judge(_token(at_purchase), later=(later,)).later
    return note


# -- dates in words at and around the purchase --------------------------------------------------------


def test_a_list_issued_at_the_very_moment_of_the_purchase_says_so() -> None:
    judgement = _judge(_token(iat=PURCHASE))
    assert judgement.holds is True
    assert judgement.sentence == (
        "the credential was valid at the purchase: the issuer's list issued 2026-01-01 00:00:00 UTC, "
        f"at the moment of the purchase, lists entry {IDX} as valid"
    )


def test_one_second_either_side_of_the_purchase_is_before_or_after() -> None:
    assert "1 second before the purchase" in _judge(_token(iat=PURCHASE - 1)).sentence
    assert "1 second after the purchase" in _note(_token(iat=PURCHASE + 1)).sentence


# -- later lists: which sentence, and which do not count ---------------------------------------------


@pytest.mark.parametrize("offset", [0, -1], ids=["at-the-purchase", "before-the-purchase"])
def test_a_later_list_issued_no_later_than_the_purchase_is_never_called_a_change(offset: int) -> None:
    """A supplied list issued at (or before) the purchase describes the purchase itself, not what
    happened after it: its revocation is reported plainly, never as "revoked after the purchase"."""
    note = _note(_token(StatusType.INVALID, iat=PURCHASE + offset))
    assert (note.issued_at, note.value) == (PURCHASE + offset, StatusType.INVALID)
    assert note.sentence.startswith("the issuer's list issued ")
    assert note.sentence.endswith("lists the credential as revoked (INVALID)")
    assert "after the purchase" not in note.sentence


def test_a_later_valid_list_is_reported_plainly() -> None:
    note = _note(_token(StatusType.VALID, iat=PURCHASE + 2 * DAY))
    assert (note.issued_at, note.value) == (PURCHASE + 2 * DAY, StatusType.VALID)
    assert note.sentence == (
        "the issuer's list issued 2026-01-03 00:00:00 UTC, 2 days after the purchase, "
        "lists the credential as valid"
    )


def test_revoked_after_the_purchase_is_said_only_when_the_purchase_list_said_valid() -> None:
    later = _token(StatusType.INVALID, iat=PURCHASE + DAY)
    assert _note(later, at_purchase=StatusType.VALID).sentence.startswith("Revoked after the purchase")
    note = _note(later, at_purchase=StatusType.SUSPENDED)
    assert note.value == StatusType.INVALID
    assert note.sentence == (
        "the issuer's list issued 2026-01-02 00:00:00 UTC, 1 day after the purchase, "
        "lists the credential as revoked (INVALID)"
    )


@pytest.mark.parametrize(
    "iat",
    ["2026-01-02", True, None, [PURCHASE], "Infinity"],
    ids=["string", "boolean", "null", "array", "string-infinity"],
)
def test_a_later_list_without_a_numeric_iat_does_not_count(iat: object) -> None:
    payload = {"sub": URI, "iat": iat, "status_list": StatusList(100, 2).to_json()}
    note = _note(_raw_later(payload))
    assert note == LaterStatus(
        None,
        None,
        "a later status list was supplied but does not count: the status list token has no numeric iat",
    )


def test_a_later_list_with_no_iat_at_all_does_not_count() -> None:
    note = _note(_raw_later({"sub": URI, "status_list": StatusList(100, 2).to_json()}))
    assert (note.issued_at, note.value) == (None, None)
    assert note.sentence.endswith("the status list token has no numeric iat")


def test_a_later_list_with_an_infinite_iat_does_not_count() -> None:
    """A number too large for a double is refused by the parser before ``iat`` is read."""
    token = sign_compact(
        b'{"sub":"' + URI.encode() + b'","iat":1e400}', ISSUER_KEY, kid=KID, typ=STATUS_LIST_TYP
    )
    note = _note(token)
    assert (note.issued_at, note.value) == (None, None)
    assert "infinite" in note.sentence


@pytest.mark.parametrize("payload", [[PURCHASE], "iat", PURCHASE], ids=["array", "string", "number"])
def test_a_later_list_whose_payload_is_not_an_object_does_not_count(payload: object) -> None:
    note = _note(_raw_later(payload))
    assert note == LaterStatus(
        None,
        None,
        "a later status list was supplied but does not count: the status list token has no numeric iat",
    )


def test_a_later_list_nested_beyond_the_parsers_depth_does_not_count() -> None:
    """Seventeen levels (the object and sixteen arrays) is one more than a status list token may
    nest: the refusal names the depth, whatever else the payload lacks."""
    deep: list[Any] = []
    for _ in range(15):
        deep = [deep]
    note = _note(_raw_later({"sub": URI, "deep": deep}))
    assert (note.issued_at, note.value) == (None, None)
    assert "nesting deeper than 16 levels" in note.sentence


# -- the key record of a judgement ---------------------------------------------------------------------


def test_the_key_record_keeps_at_most_200_characters_of_the_kid() -> None:
    long_kid = "k" * 300
    signer = _judge(_token(kid=long_kid)).signer
    assert signer == StatusSigner("k" * 200, None, False)


def test_an_unpinned_kid_is_recorded_with_no_thumbprint_and_not_anchored() -> None:
    judgement = _judge(_token(kid="someone-else"))
    assert judgement.code == "kid_not_owned"
    assert judgement.signer == StatusSigner("someone-else", None, False)


def test_no_key_record_when_the_token_never_reached_a_key_lookup() -> None:
    judgement = _judge("not-a-jws")
    assert judgement.holds is False
    assert judgement.signer is None


def test_a_list_without_a_kid_verified_by_the_pinned_key_is_recorded_with_an_empty_kid() -> None:
    judgement = _judge(_token(kid=None), key=_any_header)
    assert judgement.holds is True
    assert judgement.signer == StatusSigner("", THUMBPRINT, True)


def test_a_resolver_failure_other_than_an_untrusted_key_leaves_anchoring_unknown() -> None:
    """The lookup refused with an error that says nothing about the signer: no key answered and no
    signature was checked, so whether the list is the issuer's is neither shown nor refuted."""

    def broken(header: Mapping[str, Any]) -> PinnedStatusKey:
        raise InvalidInput("the trust root cannot be read", code="trust_root_unreadable")

    judgement = _judge(_token(), key=broken)
    assert judgement.code == "trust_root_unreadable"
    assert judgement.signer == StatusSigner(KID, None, None)


def test_a_refusal_after_the_signature_held_is_recorded_as_anchored() -> None:
    judgement = _judge(_token(iat=PURCHASE - 30 * DAY))
    assert judgement.code == "status_list_too_old"
    assert judgement.signer == StatusSigner(KID, THUMBPRINT, True)


def test_no_resolved_key_means_no_window_to_be_outside_of() -> None:
    """The window is judged only for a key the resolver answered; before any answer there is none."""
    assert _Witness(_pinned_kid_only).outside_window(PURCHASE) is None


# -- the unreadable status claim -----------------------------------------------------------------------


def test_an_unreadable_status_claim_names_no_list() -> None:
    judgement = judge_credential_status(
        {"iss": ISSUER, "status": {"status_list": {"idx": -1, "uri": URI}}},
        [],
        key=_pinned_kid_only,
        issuer=ISSUER,
        purchase_time=PURCHASE,
        max_age=DAY,
        when_absent="unanchored",
    )
    assert judgement is not None
    assert judgement.holds is False
    assert judgement.reference == StatusReference(idx=0, uri="about:invalid")


# -- the evidence record and the default freshness bound ---------------------------------------------


def _record(**fields: Any) -> RecordedStatusList:
    values: dict[str, Any] = {"uri": URI, "token": "t", "at": "2026-01-01T00:00:00Z", "via": "GET"}
    values.update(fields)
    return RecordedStatusList(**values)


def test_the_record_accepts_one_character_fields_and_a_2048_character_via() -> None:
    record = _record(uri="u", token="t", via="v" * 2048)
    assert (record.uri, record.token, len(record.via)) == ("u", "t", 2048)
    assert _record(via="v").via == "v"


@pytest.mark.parametrize(
    "fields",
    [{"uri": ""}, {"token": ""}, {"via": ""}, {"via": "v" * 2049}],
    ids=["empty-uri", "empty-token", "empty-via", "via-too-long"],
)
def test_the_record_refuses_empty_or_oversized_fields(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        _record(**fields)


@pytest.mark.parametrize("field", ["uri", "token", "via"])
def test_the_record_is_strict_bytes_are_not_text(field: str) -> None:
    with pytest.raises(ValidationError):
        _record(**{field: b"bytes-are-not-text"})


def test_the_record_is_immutable_once_made() -> None:
    record = _record()
    with pytest.raises(ValidationError):
        record.via = "changed"


def test_a_refused_record_does_not_echo_its_input() -> None:
    """A record is evidence that may carry a token: a refusal names the field, never its value."""
    with pytest.raises(ValidationError) as refused:
        _record(token=b"token-that-should-stay-private")
    assert "token-that-should-stay-private" not in str(refused.value)


def test_the_default_freshness_bound_is_one_day() -> None:
    """The documented default: a list one day old at the purchase is current, a second more is not."""
    assert _judge(_token(iat=PURCHASE - DAY), max_age=DEFAULT_STATUS_MAX_AGE).holds is True
    too_old = _judge(_token(iat=PURCHASE - DAY - 1), max_age=DEFAULT_STATUS_MAX_AGE)
    assert too_old.code == "status_list_too_old"
