"""Checks judged as of the purchase, recorded the same way by both AP2 profiles.

Why in the kernel: the two questions a dispute asks about the past — *was this key still valid when
it signed?* (the trust root's key windows, :func:`~mudrika.identity.anchoring.judge_signing_time`) and
*had the credential been revoked by then?* (the status list the merchant recorded,
:func:`~mudrika.payments.credential_status.judge_credential_status`) — are answered by one function
each; a profile only says which key signed what, when each side says it signed, and who else's
signature dates it.  Turning an answer into a named check, with the dates in words and the right
error class, is the same for v0.1 and v0.2, so it is written once here.
"""

from __future__ import annotations

from datetime import UTC, datetime

from mudrika.identity.anchoring import Attestation, Windowed, judge_signing_time
from mudrika.payments.credential_status import StatusJudgement
from mudrika.payments.report._model import KeyEvidence, error_kind_of
from mudrika.payments.report._recorder import Recorder

__all__ = [
    "attestation",
    "record_credential_status",
    "record_signing_time",
    "status_key_evidence",
    "status_statements",
]


def _instant(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def attestation(seconds: float | None, by: str) -> Attestation | None:
    """A time the judged signature is known to predate, from a signature by another key (``by`` says
    whose, in words); ``None`` when that signature gave no time."""
    instant = _instant(seconds)
    return None if instant is None else Attestation(at=instant, by=by)


def record_signing_time(
    rec: Recorder,
    check_id: str,
    party: str,
    key: Windowed,
    *,
    key_id: str,
    signer_claimed: float | None,
    attested: Attestation | None,
) -> bool:
    """Judge ``key``'s pinned window for one signature and record it as ``check_id``; a key with no
    window pinned records nothing (there is nothing to judge) and holds."""
    if key.validity is None or not key.validity.bounded:
        return True
    judgement = judge_signing_time(key, signer_claimed=_instant(signer_claimed), attested=attested)
    expected = f"a signature inside the key's pinned window ({key.validity.describe()})"
    got = judgement.basis if judgement.time is None else f"{judgement.time.isoformat()} ({judgement.basis})"
    if judgement.holds:
        rec.passed(check_id, party, expected=expected, got=got, key=key_id, detail=judgement.explanation)
        return True
    rec.failed(
        check_id,
        party,
        error="untrusted_key",
        code=judgement.code or "signing_time_unproven",
        expected=expected,
        got=got,
        key=key_id,
        detail=judgement.explanation,
    )
    return False


def record_credential_status(
    rec: Recorder, check_id: str, party: str, judgement: StatusJudgement | None, *, key_id: str | None
) -> str | None:
    """Record a status judgement as ``check_id``.  Returns the reason the verdict can be no better
    than UNANCHORED (no list recorded, and the trust root counts that as unanchored), else ``None``.
    A credential naming no status list records nothing."""
    if judgement is None:
        return None
    expected = f"entry {judgement.reference.idx} of {judgement.reference.uri} valid at the purchase"
    if judgement.holds is False:
        error = judgement.error
        rec.failed(
            check_id,
            party,
            error=error_kind_of(error) if error is not None else "verification",
            code=judgement.code or "credential_status",
            expected=expected,
            got=judgement.sentence,
            key=key_id,
            detail=judgement.sentence,
        )
        return None
    rec.passed(
        check_id, party, expected=expected, got=judgement.sentence, key=key_id, detail=judgement.sentence
    )
    return judgement.sentence if judgement.holds is None else None


def status_statements(judgement: StatusJudgement | None) -> list[str]:
    """What the report says about the credential's status in words, whatever the verdict: the
    judgement when it held (a failure says it in its own check), then every later list's note."""
    if judgement is None:
        return []
    sentences = (
        [judgement.sentence[0].upper() + judgement.sentence[1:] + "."] if judgement.holds is not False else []
    )
    return sentences + [note.sentence + "." for note in judgement.later]


def status_key_evidence(judgement: StatusJudgement | None, *, owner: str, role: str) -> KeyEvidence | None:
    """The key record of the status list a verdict rests on: the issuer's key the recorded list was
    checked with, anchored only when the list verified under it (a list another key signed leaves
    the report unanchored as well as failed).  ``None`` when no list was checked."""
    signer = judgement.signer if judgement is not None else None
    if signer is None:
        return None
    provenance = "trust root" if signer.thumbprint is not None else "not in the trust root"
    note = {
        True: "the status list recorded at the purchase verified under this key",
        False: "the recorded status list was not signed by a key your trust root pins for the issuer",
        None: "the recorded status list was refused before its key was checked",
    }[signer.anchored]
    return KeyEvidence(role, owner, signer.kid, signer.thumbprint or "", provenance, signer.anchored, note)
