"""``judge_signing_time``: the one rule deciding whether a pinned key was valid when it signed.

Every rule of ``docs/disputes-over-time.md`` ("Key validity windows") × its boundaries: exactly at
the end (refused: the window is half-open), one microsecond before (accepted), attested versus
claimed times, and the attack the rule exists for — a signature by a stolen key, back-dated by the
thief, that only a time outside the thief's control can expose.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput, UntrustedKeyError
from mudrika.identity.anchoring import (
    AnchoredKey,
    Attestation,
    KeyValidity,
    OwnerPins,
    PinnedKey,
    RevocationReason,
    TimeCode,
    anchor_key,
    judge_signing_time,
    kid_of_owner,
)

KEY = KeyPair.generate("ed25519").public_key
T = datetime(2026, 10, 1, tzinfo=UTC)  # the end of a window (revocation or valid_until)
F = datetime(2026, 1, 1, tzinfo=UTC)  # the start of a window
US = timedelta(microseconds=1)
DAY = timedelta(days=1)
MERCHANT = "the merchant's signed purchase time"


def _key(validity: KeyValidity | None) -> AnchoredKey:
    return AnchoredKey(
        key=KEY,
        kid="issuer-1",
        owner="https://issuer.example",
        algorithms=frozenset({"EdDSA"}),
        validity=validity,
    )


COMPROMISED = KeyValidity(revoked_at=T, reason="compromised")
SUPERSEDED = KeyValidity(revoked_at=T, reason="superseded")
EXPIRES = KeyValidity(valid_until=T)
STARTS = KeyValidity(valid_from=F)


@dataclass(frozen=True)
class Case:
    name: str
    window: KeyValidity | None
    claimed: datetime | None
    attested: datetime | None
    code: TimeCode | None
    basis: str


CASES = [
    Case("no window", None, None, None, None, "no window pinned"),
    Case("a window that bounds nothing", KeyValidity(), T + DAY, None, None, "no window pinned"),
    # Compromised: only an attested time strictly before revoked_at counts.
    Case("compromised, attested 1 µs before", COMPROMISED, None, T - US, None, f"attested by {MERCHANT}"),
    Case(
        "compromised, attested exactly at", COMPROMISED, None, T, "key_compromised", f"attested by {MERCHANT}"
    ),
    Case(
        "compromised, attested after",
        COMPROMISED,
        None,
        T + DAY,
        "key_compromised",
        f"attested by {MERCHANT}",
    ),
    Case(
        "compromised, claimed before only",
        COMPROMISED,
        T - DAY,
        None,
        "signing_time_unproven",
        "no signing time known",
    ),
    Case("compromised, no time", COMPROMISED, None, None, "signing_time_unproven", "no signing time known"),
    Case(
        "compromised, back-dated claim exposed by a later attestation",
        COMPROMISED,
        T - 30 * DAY,
        T + 3 * DAY,
        "key_compromised",
        f"attested by {MERCHANT}",
    ),
    Case(
        "compromised, claim after but attested before",
        COMPROMISED,
        T + DAY,
        T - US,
        None,
        f"attested by {MERCHANT}",
    ),
    # Superseded: either kind of time, strictly before revoked_at.
    Case("superseded, claimed 1 µs before", SUPERSEDED, T - US, None, None, "claimed by the signer"),
    Case("superseded, claimed exactly at", SUPERSEDED, T, None, "key_superseded", "claimed by the signer"),
    Case("superseded, attested 1 µs before", SUPERSEDED, None, T - US, None, f"attested by {MERCHANT}"),
    Case("superseded, attested exactly at", SUPERSEDED, None, T, "key_superseded", f"attested by {MERCHANT}"),
    Case(
        "superseded, the holder's earlier claim stands though the covering signature came later",
        SUPERSEDED,
        T - DAY,
        T,
        None,
        "claimed by the signer",
    ),
    Case(
        "superseded, an attestation earlier than the claim is the time used",
        SUPERSEDED,
        T + DAY,
        T - US,
        None,
        f"attested by {MERCHANT}",
    ),
    Case("superseded, no time", SUPERSEDED, None, None, "signing_time_unproven", "no signing time known"),
    # valid_until: the same as superseded, under its own code.
    Case("expires, claimed 1 µs before", EXPIRES, T - US, None, None, "claimed by the signer"),
    Case("expires, claimed exactly at", EXPIRES, T, None, "key_expired", "claimed by the signer"),
    Case("expires, attested exactly at", EXPIRES, None, T, "key_expired", f"attested by {MERCHANT}"),
    Case("expires, no time", EXPIRES, None, None, "signing_time_unproven", "no signing time known"),
    # Two ends: the earlier decides; a tie names the revocation.
    Case(
        "expired before superseded",
        KeyValidity(valid_until=T, revoked_at=T + DAY, reason="superseded"),
        T,
        None,
        "key_expired",
        "claimed by the signer",
    ),
    Case(
        "superseded and expired at the same instant",
        KeyValidity(valid_until=T, revoked_at=T, reason="superseded"),
        T,
        None,
        "key_superseded",
        "claimed by the signer",
    ),
    Case(
        "compromised key that also expired earlier",
        KeyValidity(valid_until=T - DAY, revoked_at=T, reason="compromised"),
        None,
        T - DAY,
        "key_expired",
        f"attested by {MERCHANT}",
    ),
    # valid_from: inclusive start; the claim (or the attested time) before it fails.
    Case("starts, claimed exactly at", STARTS, F, None, None, "claimed by the signer"),
    Case("starts, claimed 1 µs before", STARTS, F - US, None, "key_not_yet_valid", "claimed by the signer"),
    Case(
        "starts, attested 1 µs before, no claim",
        STARTS,
        None,
        F - US,
        "key_not_yet_valid",
        f"attested by {MERCHANT}",
    ),
    Case("starts, attested exactly at, no claim", STARTS, None, F, None, f"attested by {MERCHANT}"),
    Case(
        "starts, claim inside but attested before the start",
        STARTS,
        F + DAY,
        F - US,
        "key_not_yet_valid",
        f"attested by {MERCHANT}",
    ),
    Case("starts, no time", STARTS, None, None, "signing_time_unproven", "no signing time known"),
    # A whole window [F, T).
    Case(
        "window, first instant",
        KeyValidity(valid_from=F, revoked_at=T, reason="superseded"),
        F,
        None,
        None,
        "claimed by the signer",
    ),
    Case(
        "window, last microsecond",
        KeyValidity(valid_from=F, revoked_at=T, reason="superseded"),
        T - US,
        None,
        None,
        "claimed by the signer",
    ),
    Case(
        "compromised window, attested inside, claim before the start",
        KeyValidity(valid_from=F, revoked_at=T, reason="compromised"),
        F - DAY,
        T - US,
        "key_not_yet_valid",
        "claimed by the signer",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_every_rule_at_its_boundaries(case: Case) -> None:
    attested = Attestation(at=case.attested, by=MERCHANT) if case.attested is not None else None
    judgement = judge_signing_time(_key(case.window), signer_claimed=case.claimed, attested=attested)
    assert (judgement.holds, judgement.code, judgement.basis) == (case.code is None, case.code, case.basis)
    assert judgement.window == case.window
    if case.code == "signing_time_unproven" or case.window is None or not case.window.bounded:
        assert judgement.time is None
    elif judgement.basis == "claimed by the signer":
        assert judgement.time == case.claimed
    else:
        assert judgement.time == case.attested


def test_the_sentences_give_dates_and_distances() -> None:
    stolen = judge_signing_time(
        _key(COMPROMISED), signer_claimed=T - 30 * DAY, attested=Attestation(at=T + 3 * DAY, by=MERCHANT)
    )
    assert stolen.explanation.startswith(
        "the key was reported compromised on 2026-10-01, 3 days before 2026-10-04"
    )
    assert MERCHANT in stolen.explanation
    unproven = judge_signing_time(_key(COMPROMISED), signer_claimed=T - DAY, attested=None)
    assert "the signer's own claim (2026-09-30) does not count" in unproven.explanation
    at_the_instant = judge_signing_time(_key(SUPERSEDED), signer_claimed=T, attested=None)
    assert at_the_instant.explanation == (
        "the key was revoked (superseded) on 2026-10-01, at the same instant as the signing time the signer "
        "claims, 2026-10-01"
    )
    late = judge_signing_time(_key(EXPIRES), signer_claimed=T + timedelta(hours=5, minutes=3), attested=None)
    assert late.explanation == (
        "the key's pinned validity ended on 2026-10-01, 5 hours before the signing time the signer claims, "
        "2026-10-01 05:03:00Z"
    )
    early = judge_signing_time(_key(STARTS), signer_claimed=F - US, attested=None)
    assert early.explanation.startswith("the key became valid only on 2026-01-01, 1 microsecond after")
    fine = judge_signing_time(
        _key(KeyValidity(valid_from=F, revoked_at=T, reason="superseded")),
        signer_claimed=F + DAY,
        attested=None,
    )
    assert fine.explanation == (
        "the signing time the signer claims, 2026-01-02, falls inside the key's pinned window "
        "(superseded since 2026-10-01, valid from 2026-01-01)"
    )


def test_times_must_be_aware_utc() -> None:
    paris = timezone(timedelta(hours=2))
    with pytest.raises(InvalidInput, match="aware UTC"):
        KeyValidity(valid_from=datetime(2026, 1, 1))
    with pytest.raises(InvalidInput, match="aware UTC"):
        KeyValidity(revoked_at=datetime(2026, 1, 1, tzinfo=paris), reason="superseded")
    with pytest.raises(InvalidInput, match="aware UTC"):
        Attestation(at=datetime(2026, 1, 1), by=MERCHANT)
    with pytest.raises(InvalidInput, match="names who attests"):
        Attestation(at=T, by="")
    with pytest.raises(InvalidInput, match="aware UTC"):
        judge_signing_time(_key(EXPIRES), signer_claimed=datetime(2026, 1, 1), attested=None)


def test_a_window_is_well_formed() -> None:
    with pytest.raises(InvalidInput, match="both revoked_at and reason"):
        KeyValidity(revoked_at=T)
    with pytest.raises(InvalidInput, match="both revoked_at and reason"):
        KeyValidity(reason="superseded")
    with pytest.raises(InvalidInput, match="superseded or compromised"):
        KeyValidity(revoked_at=T, reason="lost")  # type: ignore[arg-type]  # a value the type forbids
    with pytest.raises(InvalidInput, match="before valid_until"):
        KeyValidity(valid_from=T, valid_until=T)
    assert KeyValidity(valid_from=T - US, valid_until=T).valid_from == T - US
    assert KeyValidity().describe() == "no window"
    assert COMPROMISED.describe() == "compromised since 2026-10-01"


def test_anchor_key_hands_on_the_pinned_window() -> None:
    pins = OwnerPins(
        owner="https://issuer.example",
        keys={"issuer-1": PinnedKey(KEY), "issuer-2": PinnedKey(KEY)},
        validity={"issuer-1": COMPROMISED},
    )
    anchored = anchor_key(pins, "issuer-1", relationship="assertionMethod", algorithms=frozenset({"EdDSA"}))
    assert anchored.validity == COMPROMISED
    other = anchor_key(pins, "issuer-2", relationship="assertionMethod", algorithms=frozenset({"EdDSA"}))
    assert other.validity is None
    with pytest.raises(InvalidInput) as info:
        OwnerPins(
            owner="https://issuer.example", keys={"issuer-1": PinnedKey(KEY)}, validity={"issuer-9": EXPIRES}
        )
    assert info.value.code == "bad_pins"


# -- the property: for any window and times ------------------------------------------------------

_BASE = datetime(2026, 1, 1, tzinfo=UTC)
_instants = st.integers(min_value=0, max_value=10_000).map(lambda micros: _BASE + micros * US)


@st.composite
def _windows(draw: st.DrawFn) -> KeyValidity:
    valid_from = draw(st.none() | _instants)
    valid_until = draw(st.none() | _instants)
    if valid_from is not None and valid_until is not None and valid_from >= valid_until:
        valid_until = None
    reason: RevocationReason | None = draw(st.sampled_from([None, "superseded", "compromised"]))
    revoked_at = draw(_instants) if reason is not None else None
    return KeyValidity(valid_from=valid_from, valid_until=valid_until, revoked_at=revoked_at, reason=reason)


@settings(max_examples=400, deadline=None)
@given(window=_windows(), claimed=st.none() | _instants, attested=st.none() | _instants)
def test_holding_means_inside_the_window_and_a_stolen_key_needs_an_attested_time(
    window: KeyValidity, claimed: datetime | None, attested: datetime | None
) -> None:
    attestation = Attestation(at=attested, by=MERCHANT) if attested is not None else None
    judgement = judge_signing_time(_key(window), signer_claimed=claimed, attested=attestation)
    assert judgement.holds is (judgement.code is None)
    compromised_at = window.revoked_at if window.reason == "compromised" else None
    if compromised_at is not None and (attested is None or attested >= compromised_at):
        assert not judgement.holds
    if judgement.holds and window.bounded:
        used = judgement.time
        assert used is not None
        # A compromised key is dated by the attestation alone; otherwise the earliest known time.
        known = [time for time in (attested, claimed) if time is not None]
        assert used == (attested if window.reason == "compromised" else min(known))
        ends = [end for end in (window.valid_until, window.revoked_at) if end is not None]
        assert all(used < end for end in ends)
        if window.valid_from is not None:
            assert used >= window.valid_from
            assert claimed is None or claimed >= window.valid_from


# -- each refusal by its code and the name it gives (what a caller branches on and a user reads) ------


@pytest.mark.parametrize("name", ["valid_from", "valid_until", "revoked_at"])
@pytest.mark.parametrize(
    "moment", [datetime(2026, 1, 1), datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=-5)))]
)
def test_each_bound_must_be_aware_utc_and_is_named(name: str, moment: datetime) -> None:
    reason: dict[str, RevocationReason] = {"reason": "superseded"} if name == "revoked_at" else {}
    with pytest.raises(InvalidInput) as refused:
        KeyValidity(**{name: moment}, **reason)  # type: ignore[arg-type]
    assert refused.value.code == "naive_time"
    assert refused.value.message.startswith(f"{name} must be an aware UTC datetime")
    with pytest.raises(InvalidInput) as attested:
        Attestation(at=moment, by=MERCHANT)
    assert (attested.value.code, attested.value.message) == (
        "naive_time",
        "the attested time must be an aware UTC datetime",
    )


@pytest.mark.parametrize(
    "window",
    [
        {"revoked_at": T},
        {"reason": "superseded"},
        {"revoked_at": T, "reason": "lost"},
        {"valid_from": T, "valid_until": T},
        {"valid_from": T + US, "valid_until": T},
    ],
    ids=["revoked-without-reason", "reason-without-revocation", "unknown-reason", "empty", "reversed"],
)
def test_a_malformed_window_is_bad_window(window: dict[str, object]) -> None:
    with pytest.raises(InvalidInput) as refused:
        KeyValidity(**window)  # type: ignore[arg-type]
    assert refused.value.code == "bad_window"


def test_describe_names_every_bound_in_order() -> None:
    window = KeyValidity(valid_from=F, valid_until=T + DAY, revoked_at=T, reason="superseded")
    assert window.describe() == (
        "superseded since 2026-10-01, valid from 2026-01-01, valid until 2026-10-02 (exclusive)"
    )
    assert KeyValidity(valid_until=T).describe() == "valid until 2026-10-01 (exclusive)"


def test_a_window_for_an_unpinned_kid_is_refused_naming_the_kid_shortened() -> None:
    long_kid = "k" * 500
    with pytest.raises(InvalidInput) as refused:
        OwnerPins(
            owner="https://issuer.example", keys={"issuer-1": PinnedKey(KEY)}, validity={long_kid: EXPIRES}
        )
    assert refused.value.code == "bad_pins"
    assert refused.value.fields["kid"] == "k" * 200


def test_a_relative_kid_of_a_did_owner_is_told_to_be_absolute() -> None:
    with pytest.raises(UntrustedKeyError) as refused:
        kid_of_owner("#key-1", "did:web:shop.example")
    assert refused.value.code == "kid_not_did_url"
    assert refused.value.message == "the kid must be an absolute DID URL of the signer"
    assert "reason" not in refused.value.fields


def test_the_signers_claim_must_be_aware_utc_and_an_attestation_names_its_attester() -> None:
    with pytest.raises(InvalidInput) as naive:
        judge_signing_time(_key(EXPIRES), signer_claimed=datetime(2026, 1, 1), attested=None)
    assert naive.value.message.startswith("signer_claimed must be an aware UTC datetime")
    with pytest.raises(InvalidInput) as anonymous:
        Attestation(at=T, by="")
    assert anonymous.value.code == "bad_attestation"


def test_an_unproven_compromise_says_the_claim_does_not_count_only_when_there_is_one() -> None:
    with_claim = judge_signing_time(_key(COMPROMISED), signer_claimed=T - DAY, attested=None)
    assert with_claim.explanation.endswith(
        "; the signer's own claim (2026-09-30) does not count, since whoever holds a stolen key can "
        "write any time"
    )
    without = judge_signing_time(_key(COMPROMISED), signer_claimed=None, attested=None)
    assert without.explanation == (
        "the key was reported compromised on 2026-10-01 and no time outside the signer's control "
        "shows that this signature predates it"
    )


@pytest.mark.parametrize(
    ("window", "what"),
    [(SUPERSEDED, "revoked (superseded)"), (EXPIRES, "valid until")],
)
def test_an_unknown_signing_time_names_which_end(window: KeyValidity, what: str) -> None:
    judgement = judge_signing_time(_key(window), signer_claimed=None, attested=None)
    assert judgement.explanation == (
        f"the key's window ends on 2026-10-01 ({what}) and no signing time is known, neither claimed "
        "by the signer nor attested"
    )


def test_a_compromise_does_not_end_the_window_as_a_supersession() -> None:
    """Attested before the compromise, claimed after it: the compromise rule decides (holds on the
    attested time) and the claim is never read as a signing time past the revocation."""
    judgement = judge_signing_time(
        _key(COMPROMISED), signer_claimed=T + DAY, attested=Attestation(at=T - US, by=MERCHANT)
    )
    assert (judgement.holds, judgement.time) == (True, T - US)
    assert KeyValidity(revoked_at=T, reason="compromised").superseded_at is None
    assert SUPERSEDED.superseded_at == T


def test_a_start_only_window_without_any_time_is_unproven_in_words() -> None:
    judgement = judge_signing_time(_key(STARTS), signer_claimed=None, attested=None)
    assert (judgement.holds, judgement.code) == (False, "signing_time_unproven")
    assert judgement.explanation == (
        "the key is valid only from 2026-01-01 and no signing time is known, neither claimed by the "
        "signer nor attested"
    )


@pytest.mark.parametrize(
    ("after", "words"),
    [
        (DAY, "1 day"),
        (DAY - US, "23 hours"),
        (timedelta(hours=1), "1 hour"),
        (timedelta(minutes=2), "2 minutes"),
        (timedelta(seconds=1), "1 second"),
        (US, "1 microsecond"),
        (2 * US, "2 microseconds"),
    ],
)
def test_distances_are_said_in_their_largest_whole_unit(after: timedelta, words: str) -> None:
    judgement = judge_signing_time(_key(SUPERSEDED), signer_claimed=T + after, attested=None)
    assert judgement.code == "key_superseded"
    assert judgement.explanation.startswith(
        f"the key was revoked (superseded) on 2026-10-01, {words} before "
    )
