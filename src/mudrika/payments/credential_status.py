"""The credential's revocation status as of the purchase, judged from the list the merchant recorded.

Why a judgement of its own: a dispute is opened months after the purchase.  By then the issuer's
*current* status list says what the issuer thinks today, which is not the question.  The question
is whether the credential the user paid with had been revoked or suspended **when it was used**.
The only honest evidence of that is the status list token the merchant fetched and checked at the
purchase (draft-ietf-oauth-status-list-20 §8.4, "Historical Resolution"), recorded in the evidence
bundle with when and from where it came, like the keys are.  This module judges that record:

* the recorded token verifies under the **credential issuer's key as the verifier anchors it** (a
  resolver the caller builds on its trust root), its ``sub`` is the ``uri`` the credential names,
  and it was current at the purchase (issued before it, not expired at it, and no older than the
  verifier's ``max_age``);
* the key was inside the window the trust root pins for it when the list was issued, judged by
  :func:`mudrika.identity.anchoring.judge_signing_time` like every other signature: a list signed
  after its key expired or was superseded does not count, nor one signed by a key later reported
  compromised (nothing the key does not control dates the list, so its own ``iat`` cannot clear it);
* the value at the credential's index decides: ``VALID`` holds; ``INVALID`` (revoked),
  ``SUSPENDED`` and any application-specific value fail, with the list's date in words;
* no recorded list for a credential that names one: the verifier's rule (``when_absent``) decides,
  fail (the secure default) or *unproven*, which a report shows as UNANCHORED;
* a later list the analyst supplies (fetched today, say) is verified the same way as of its own
  issue time and shown as a note: "revoked after the purchase" never changes the verdict, because a
  list cannot say *when* a credential was revoked, only that a later list says so.

A credential without a ``status`` claim is not judged here: there is nothing to look up.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from mudrika.crypto.jcs import loads_strict
from mudrika.crypto.jose import KeyResolver, TrustedKey, verify_compact
from mudrika.crypto.statuslist import (
    DEFAULT_MAX_TOKEN_BYTES,
    MAX_URI_CHARS,
    STATUS_LIST_TYP,
    StatusReference,
    StatusType,
    VerifiedStatusList,
    read_status_reference,
    verify_status_list_token,
)
from mudrika.errors import InvalidInput, MudrikaError, SignatureError, UntrustedKeyError, VerificationError
from mudrika.identity.anchoring import KeyValidity, judge_signing_time
from mudrika.payments._load import AwareTimestamp
from mudrika.payments._time import Time, epoch, iso

__all__ = [
    "DEFAULT_STATUS_MAX_AGE",
    "LaterStatus",
    "PinnedStatusKey",
    "RecordedStatusList",
    "StatusJudgement",
    "StatusSigner",
    "WhenAbsent",
    "judge_credential_status",
    "record_status_list",
]

#: The oldest a recorded list may be at the purchase when the verifier sets nothing (one day).
DEFAULT_STATUS_MAX_AGE: Final = 86_400.0

#: What a credential naming a status list, with no list recorded for it, is worth.
WhenAbsent = Literal["failed", "unanchored"]


class PinnedStatusKey(NamedTuple):
    """The credential issuer's key for a status list token, as the verifier's trust root anchors it:
    the key to verify with, and the window the root pins for it (``None``: no window pinned)."""

    trusted: TrustedKey
    validity: KeyValidity | None


#: The credential issuer's key for a status list token header, as the verifier anchors it.
IssuerKeyResolver = Callable[[Mapping[str, Any]], PinnedStatusKey]

_WORDS: Final = {
    StatusType.VALID: "valid",
    StatusType.INVALID: "revoked (INVALID)",
    StatusType.SUSPENDED: "suspended",
}


class RecordedStatusList(BaseModel):
    """A status list token as the merchant fetched it at the purchase: the token, its URI, when
    (``at``, RFC 3339 with offset) and how (``via``) it was obtained, as an evidence bundle carries
    it.  All of it is evidence: only the token's signature under the anchored issuer key counts."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, hide_input_in_errors=True)

    uri: str = Field(min_length=1, max_length=MAX_URI_CHARS)
    token: str = Field(min_length=1, max_length=DEFAULT_MAX_TOKEN_BYTES, repr=False)
    at: AwareTimestamp
    via: str = Field(min_length=1, max_length=2048)


@dataclass(frozen=True, slots=True)
class LaterStatus:
    """What a list supplied after the purchase says, shown beside the verdict, never part of it."""

    issued_at: float | None
    value: int | None
    sentence: str


@dataclass(frozen=True, slots=True)
class StatusSigner:
    """The key a recorded list was checked with, for the report's key records: the ``kid`` its header
    named, the anchored key's RFC 7638 thumbprint (``None`` when no pinned key answered), and whether
    the list's signature verified under that anchored key (``True``), the key lookup or the signature
    failed (``False``: the list is not the issuer's), or neither was reached (``None``)."""

    kid: str
    thumbprint: str | None
    anchored: bool | None


class _Witness:
    """Wraps the verifier's key resolver to remember what it answered, so a judgement can say which
    key a list was checked with and whether the signature got that far."""

    def __init__(self, key: IssuerKeyResolver) -> None:
        self._key = key
        self.kid: str | None = None
        self.answer: TrustedKey | None = None
        self.pinned: PinnedStatusKey | None = None

    def __call__(self, header: Mapping[str, Any]) -> TrustedKey:
        kid = header.get("kid")
        self.kid = kid[:200] if isinstance(kid, str) else None
        self.pinned = self._key(header)
        self.answer = self.pinned.trusted
        return self.answer

    def outside_window(self, issued_at: float) -> UntrustedKeyError | None:
        """Why the key that verified a list issued at ``issued_at`` does not vouch for it by its
        pinned window (:func:`~mudrika.identity.anchoring.judge_signing_time`), or None when it does.

        The list's ``iat`` is the signer's own claim and nothing the key does not control dates the
        list, so no attested time is given: a window closed by a compromise never holds here."""
        if self.pinned is None:
            return None
        judgement = judge_signing_time(
            self.pinned, signer_claimed=datetime.fromtimestamp(issued_at, UTC), attested=None
        )
        if judgement.holds:
            return None
        return UntrustedKeyError(
            f"it was signed outside the window your trust root pins for the issuer's key "
            f"{self.kid or ''}: {judgement.explanation}",
            code=judgement.code or "signing_time_unproven",
        )

    def signer(self, failure: MudrikaError | None) -> StatusSigner | None:
        if self.kid is None and self.answer is None:
            return None
        thumbprint = self.answer.key.thumbprint() if self.answer is not None else None
        if failure is None:
            anchored: bool | None = True
        elif isinstance(failure, SignatureError | UntrustedKeyError):
            anchored = False  # no pinned key, or the list was not signed by the one that answered
        else:
            # verify_status_list_token checks the signature before any claim: a later refusal means it held.
            anchored = True if self.answer is not None else None
        return StatusSigner(self.kid or "", thumbprint, anchored)


@dataclass(frozen=True, slots=True)
class StatusJudgement:
    """The credential's status at the purchase.

    ``holds``: ``True`` the recorded list says VALID; ``False`` the check failed (``code`` says
    why); ``None`` no list was recorded and the verifier's rule makes that *unproven* rather than
    failed.  ``sentence`` says it in words, with the list's date relative to the purchase.
    """

    holds: bool | None
    code: str | None
    sentence: str
    reference: StatusReference
    value: int | None = None
    list_issued_at: float | None = None
    recorded: RecordedStatusList | None = None
    later: tuple[LaterStatus, ...] = ()
    error: MudrikaError | None = None
    """The typed error a verifier raises for this judgement when it does not hold."""
    signer: StatusSigner | None = None
    """The key the recorded list was checked with (``None``: no list was checked)."""


def record_status_list(verified: VerifiedStatusList, *, at: Time, via: str) -> RecordedStatusList:
    """What a merchant puts into the evidence bundle for a status list it checked at the purchase:
    the very token that verified, its URI, when it was checked and how it was obtained (``via``,
    e.g. ``"https GET <uri>"``).  The dispute verifier judges this record, not the issuer's list of
    the day it runs."""
    return RecordedStatusList(uri=verified.uri, token=verified.token, at=iso(epoch(at)), via=via)


def span(seconds: float) -> str:
    """A distance in time in words, rounded down to the largest unit that fits ("3 days")."""
    seconds = abs(seconds)
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    count = int(seconds)
    return f"{count} second{'s' if count != 1 else ''}"


def _moment(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _relative(when: float, purchase: float) -> str:
    if when == purchase:
        return "at the moment of the purchase"
    side = "before" if when < purchase else "after"
    return f"{span(when - purchase)} {side} the purchase"


def _words(value: int) -> str:
    if value in _WORDS:
        return _WORDS[StatusType(value)]
    return f"marked with the application-specific value {value}"


def _failure_code(value: int) -> str:
    if value == StatusType.INVALID:
        return "credential_revoked"
    if value == StatusType.SUSPENDED:
        return "credential_suspended"
    return "credential_status_unrecognised"


def _verified(
    recorded_token: str | bytes,
    reference: StatusReference,
    *,
    key: KeyResolver,
    issuer: str,
    now: float,
    max_age: float | None,
) -> tuple[VerifiedStatusList, int]:
    verified = verify_status_list_token(
        recorded_token, key=key, uri=reference.uri, issuer=issuer, now=now, max_age=max_age
    )
    return verified, verified.status_of(reference.idx)


def _later_status(
    token: str | bytes,
    reference: StatusReference,
    *,
    key: IssuerKeyResolver,
    issuer: str,
    purchase_time: float,
    at_purchase: int | None,
) -> LaterStatus:
    """Judge one list supplied after the fact, as of its own issue time; a note, never a verdict."""
    witness = _Witness(key)
    try:
        issued_at = _claimed_iat(token, witness)
        verified, value = _verified(token, reference, key=witness, issuer=issuer, now=issued_at, max_age=None)
        refused = witness.outside_window(verified.issued_at)
        if refused is not None:
            raise refused
    except MudrikaError as exc:
        return LaterStatus(None, None, f"a later status list was supplied but does not count: {exc}")
    when = f"the issuer's list issued {_moment(verified.issued_at)}, {_relative(verified.issued_at, purchase_time)}"
    if verified.issued_at <= purchase_time:
        return LaterStatus(verified.issued_at, value, f"{when}, lists the credential as {_words(value)}")
    if value != StatusType.VALID and at_purchase == StatusType.VALID:
        sentence = (
            f"{_words(value).split(' (')[0].capitalize()} after the purchase: {when}, lists the "
            f"credential as {_words(value)}; the list current at the purchase said valid. A list "
            "cannot say when the change happened, so this does not change the verdict"
        )
    else:
        sentence = f"{when}, lists the credential as {_words(value)}"
    return LaterStatus(verified.issued_at, value, sentence)


def _claimed_iat(token: str | bytes, key: KeyResolver) -> float:
    """The ``iat`` of a later list, read from its verified payload: the moment that list describes,
    at which it is then judged in full."""
    claims = loads_strict(verify_compact(token, key=key, expected_typ=STATUS_LIST_TYP).payload, max_depth=16)
    iat = claims.get("iat") if isinstance(claims, dict) else None
    if isinstance(iat, bool) or not isinstance(iat, int | float) or not math.isfinite(iat):
        raise InvalidInput("the status list token has no numeric iat", code="malformed_claim", claim="iat")
    return float(iat)


def judge_credential_status(
    credential_claims: Mapping[str, Any],
    recorded: Sequence[RecordedStatusList],
    *,
    key: IssuerKeyResolver,
    issuer: str,
    purchase_time: float,
    max_age: float,
    when_absent: WhenAbsent,
    later: Sequence[str | bytes] = (),
) -> StatusJudgement | None:
    """The status of the credential whose (verified) claims are ``credential_claims`` at
    ``purchase_time``, from the list recorded for its ``uri``; ``None`` when it names no list.

    ``key`` anchors the list's signer as the credential issuer (the verifier's trust, never the
    token's); ``max_age`` is how old the recorded list may be at the purchase; ``when_absent`` is the
    verifier's rule for a credential whose list was not recorded.  Raises nothing for a failed
    check: every refusal is a judgement with ``holds=False`` and the error's code.
    """
    if "status" not in credential_claims:
        return None
    try:
        reference = read_status_reference(credential_claims)
    except MudrikaError as exc:
        unreadable = StatusReference(idx=0, uri="about:invalid")
        return StatusJudgement(
            False, exc.code, f"the credential's status claim cannot be read: {exc}", unreadable, error=exc
        )
    matching = [entry for entry in recorded if entry.uri == reference.uri]
    if not matching:
        if when_absent == "unanchored":
            return StatusJudgement(
                None,
                "status_not_recorded",
                f"the credential names the status list {reference.uri} but no list was recorded at the "
                "purchase: whether it had been revoked cannot be shown (your trust root counts this as "
                "unanchored)",
                reference,
            )
        return StatusJudgement(
            False,
            "status_not_recorded",
            f"the credential names the status list {reference.uri} but no list was recorded at the "
            "purchase: whether it had been revoked cannot be shown (your trust root counts this as a failure)",
            reference,
            error=VerificationError(
                "no status list was recorded at the purchase", code="status_not_recorded"
            ),
        )
    entry = matching[-1]
    witness = _Witness(key)
    refused: MudrikaError | None
    try:
        verified, value = _verified(
            entry.token, reference, key=witness, issuer=issuer, now=purchase_time, max_age=max_age
        )
        refused = witness.outside_window(verified.issued_at)
    except MudrikaError as exc:
        refused, signer = exc, witness.signer(exc)
    else:
        # Outside its window, the list still verified under the anchored key: the record says so.
        signer = witness.signer(None)
    if refused is not None:
        return StatusJudgement(
            False,
            refused.code,
            f"the status list recorded at the purchase does not count: {refused}",
            reference,
            recorded=entry,
            error=refused,
            signer=signer,
        )
    when = f"the issuer's list issued {_moment(verified.issued_at)}, {_relative(verified.issued_at, purchase_time)}"
    notes = tuple(
        _later_status(
            token, reference, key=key, issuer=issuer, purchase_time=purchase_time, at_purchase=value
        )
        for token in later
    )
    if value == StatusType.VALID:
        return StatusJudgement(
            True,
            None,
            f"the credential was valid at the purchase: {when}, lists entry {reference.idx} as valid",
            reference,
            value,
            verified.issued_at,
            entry,
            notes,
            signer=witness.signer(None),
        )
    return StatusJudgement(
        False,
        _failure_code(value),
        f"the credential was {_words(value)} at the purchase: {when}, lists entry {reference.idx} as "
        f"{_words(value)}",
        reference,
        value,
        verified.issued_at,
        entry,
        notes,
        VerificationError(f"the credential was {_words(value)} at the purchase", code=_failure_code(value)),
        witness.signer(None),
    )
