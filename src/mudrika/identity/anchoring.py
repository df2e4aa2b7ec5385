"""The one anchoring rule: when does a verifier's pinned material vouch for the key a signature names?

Why one function: a verdict is only as strong as the weakest place that looks a key up.  An earlier
release looked a ``kid`` up in "everything the verifier knows" (every pinned DID document, and every
did:key / did:jwk computed on the spot) without asking whether the kid's DID *is* the party whose
signature was expected, so an attacker's ``did:key`` counted as a pinned issuer's key and one pinned
party's key counted as another's.  Every consumer that turns a kid into a key for a verdict (AP2
issuers, merchants and receipt signers in both profiles; Agent Card, artifact and push signers)
now calls :func:`anchor_key`, and ``tests/unit/test_import_rules.py`` refuses any other module that
asks a DID document or resolver for a key.

The rule (``docs/payments.md``, "Anchoring"), checked in this order:

1. **The kid names the owner.**  For a DID owner the kid must be an *absolute* DID URL
   (``did:…#fragment``: no relative ``#frag``, no path, no query) whose DID is the owner, compared as
   exact strings.  For an owner pinned by a JWK Set (an ``https`` issuer) the kid is a plain key id,
   never a DID URL.
2. **The owner's pinned material lists that key** under the verification relationship the role
   needs (``assertionMethod`` for what a party signs: mandates, receipts, cards).  A key present only
   under ``authentication`` may log in, not sign.
3. **An allowed algorithm fits the key**: the verifier's set for this role, the key type's, and the
   pin's own ``alg`` when it has one.

A self-certifying identifier (``did:key``, ``did:jwk``) proves only that someone holds that key: its
document is computed from the identifier, so it anchors only when the verifier pinned *that very
identifier* as the owner (rule 1 then makes the kid's DID equal to it).

Time is a separate question with its own one function.  Disputes are judged months after the
signature, and meanwhile keys are rotated (superseded) or reported compromised.  The pins may carry
a :class:`KeyValidity` per kid; :func:`anchor_key` hands it on in :attr:`AnchoredKey.validity`, and
:func:`judge_signing_time` alone decides whether a signature falls inside it (``docs/disputes-over-time.md``,
"Key validity windows").
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final, Literal, Protocol

from mudrika.crypto.jose import TrustedKey
from mudrika.crypto.keys import PublicKey
from mudrika.errors import InvalidInput, UntrustedKeyError
from mudrika.identity.did import parse_did_url
from mudrika.identity.document import DIDDocument, SigningPurpose
from mudrika.identity.resolution import ResolutionResult


class DocumentSource(Protocol):
    """What the live form needs of a resolver: the DID's resolution result, sync and async
    (:class:`~mudrika.identity.resolver.DIDResolver` is one)."""

    def resolve(self, did: str) -> ResolutionResult: ...

    async def aresolve(self, did: str) -> ResolutionResult: ...


__all__ = [
    "AnchoredKey",
    "Attestation",
    "DocumentSource",
    "KeyValidity",
    "OwnerPins",
    "PinnedKey",
    "RevocationReason",
    "TimeCode",
    "TimeJudgement",
    "Windowed",
    "anchor_key",
    "anchor_resolved",
    "aresolve_anchored",
    "judge_signing_time",
    "kid_of_owner",
    "resolve_anchored",
]

_MAX_SHOWN: Final = 200

#: Why a key stopped being valid: replaced in the ordinary course (``superseded``: its holder is
#: still trusted for what it signed before), or stolen (``compromised``: anyone may hold it since).
RevocationReason = Literal["superseded", "compromised"]

#: Why :func:`judge_signing_time` refused a signature.
TimeCode = Literal[
    "key_compromised", "key_superseded", "key_expired", "key_not_yet_valid", "signing_time_unproven"
]


def _require_utc(value: datetime | None, what: str) -> None:
    """Windows are compared across parties and months: a naive or non-UTC time would silently
    shift every comparison by an offset nobody wrote down."""
    if value is not None and (value.tzinfo is None or value.utcoffset() != timedelta(0)):
        raise InvalidInput(f"{what} must be an aware UTC datetime", code="naive_time")


@dataclass(frozen=True, slots=True)
class KeyValidity:
    """When a pinned key may have signed: valid on ``[valid_from, end)``, where ``end`` is the
    earlier of ``valid_until`` and ``revoked_at``; every bound optional, all aware UTC.

    ``reason`` is given exactly when ``revoked_at`` is, because the two reasons are judged
    differently (:func:`judge_signing_time`): a superseded key's holder is still believed about
    when it signed, a compromised key's is not.
    """

    valid_from: datetime | None = None
    valid_until: datetime | None = None
    revoked_at: datetime | None = None
    reason: RevocationReason | None = None

    def __post_init__(self) -> None:
        _require_utc(self.valid_from, "valid_from")
        _require_utc(self.valid_until, "valid_until")
        _require_utc(self.revoked_at, "revoked_at")
        if (self.revoked_at is None) != (self.reason is None):
            raise InvalidInput("a revocation needs both revoked_at and reason", code="bad_window")
        if self.reason is not None and self.reason not in ("superseded", "compromised"):
            raise InvalidInput("reason is superseded or compromised", code="bad_window")
        if (
            self.valid_from is not None
            and self.valid_until is not None
            and self.valid_from >= self.valid_until
        ):
            raise InvalidInput("valid_from must be before valid_until", code="bad_window")

    @property
    def superseded_at(self) -> datetime | None:
        """When the key was replaced in the ordinary course (``None`` unless the reason is that)."""
        return self.revoked_at if self.reason == "superseded" else None

    @property
    def bounded(self) -> bool:
        """Whether the window limits anything (a window holding only a note does not)."""
        return any(bound is not None for bound in (self.valid_from, self.valid_until, self.revoked_at))

    def describe(self) -> str:
        """The window in words, for listings: "compromised since 2026-10-01", "valid from … until …"."""
        parts: list[str] = []
        if self.revoked_at is not None:
            parts.append(f"{self.reason} since {_day(self.revoked_at)}")
        if self.valid_from is not None:
            parts.append(f"valid from {_day(self.valid_from)}")
        if self.valid_until is not None:
            parts.append(f"valid until {_day(self.valid_until)} (exclusive)")
        return ", ".join(parts) if parts else "no window"


@dataclass(frozen=True, slots=True)
class PinnedKey:
    """One key of a pinned JWK Set, with the algorithms its own ``alg`` member allows (``None``: any
    its type allows)."""

    key: PublicKey
    algorithms: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class OwnerPins:
    """What a verifier pinned for one owner: a JWK Set (by kid) or a DID document, never both.

    ``keys`` are indexed by the kid as it must appear in a signature: the absolute DID URL for a DID
    owner, the plain kid for an ``https`` owner.  ``document`` is a DID-document snapshot, or the
    document a did:key / did:jwk identifier computes to (pinned by that identifier).
    """

    owner: str
    keys: Mapping[str, PinnedKey] = field(default_factory=dict)
    document: DIDDocument | None = None
    source: str | None = None
    validity: Mapping[str, KeyValidity] = field(default_factory=dict)
    """Validity windows by kid (indexed like ``keys``; for a document, by absolute method id)."""

    def __post_init__(self) -> None:
        if self.keys and self.document is not None:
            raise InvalidInput("pin a JWK Set or a DID document, not both", code="bad_pins")
        if self.document is not None and self.document.id != self.owner:
            raise InvalidInput("the pinned DID document's id is not its owner", code="bad_pins")
        unpinned = [kid for kid in self.validity if kid not in self.kids]
        if unpinned:
            # A window for a key that is not pinned would be silently inert: a typo in the kid of a
            # compromised key must not leave that key trusted.
            raise InvalidInput(
                "a validity window names a key these pins do not hold",
                code="bad_pins",
                kid=unpinned[0][:_MAX_SHOWN],
            )

    @property
    def kids(self) -> tuple[str, ...]:
        """Every kid these pins hold, as a signature must name it (for a document: every method)."""
        if self.document is not None:
            return tuple(self.document.all_methods)
        return tuple(self.keys)

    @property
    def is_did(self) -> bool:
        return self.owner.startswith("did:")


@dataclass(frozen=True, slots=True)
class AnchoredKey:
    """A key the verifier's pins vouch for, for one role: the key, its absolute kid, its owner, the
    algorithms it may verify for that role, and where the pin came from."""

    key: PublicKey
    kid: str
    owner: str
    algorithms: frozenset[str]
    source: str | None = None
    validity: KeyValidity | None = None
    """The window the pins give this key (``None``: none pinned); judged by :func:`judge_signing_time`."""

    @property
    def trusted(self) -> TrustedKey:
        """The key as :func:`~mudrika.crypto.jose.verify_compact` takes it."""
        return TrustedKey(key=self.key, algorithms=self.algorithms, kid=None, owner=self.owner)


def kid_of_owner(kid: object, owner: str) -> str:
    """Rule 1: ``kid`` names a key *of* ``owner``; returns the kid as the pins index it.

    ``UntrustedKeyError`` codes: ``no_kid`` (absent or empty), ``kid_not_did_url`` (a DID owner's kid
    that is not an absolute DID URL naming one verification method: relative, with a path or query,
    or no fragment), ``kid_not_owned`` (a DID URL of another DID, including another DID on the same
    host and any difference in case), ``kid_is_did_url`` (a DID URL for an owner pinned by JWK Set).
    """
    if not isinstance(kid, str) or not kid:
        raise UntrustedKeyError("the signature names no key (kid)", code="no_kid")
    shown = {"kid": kid[:_MAX_SHOWN], "owner": owner[:_MAX_SHOWN]}
    if not owner.startswith("did:"):
        if kid.startswith("did:"):
            raise UntrustedKeyError(
                "a DID URL cannot name a key of an owner pinned by its JWK Set",
                code="kid_is_did_url",
                **shown,
            )
        return kid
    if not kid.startswith("did:"):
        raise UntrustedKeyError(
            "the kid must be an absolute DID URL of the signer", code="kid_not_did_url", **shown
        )
    try:
        url = parse_did_url(kid)
    except InvalidInput as exc:
        raise UntrustedKeyError(
            "the kid is not a valid DID URL", code="kid_not_did_url", reason=exc.code, **shown
        ) from None
    if url.path or url.query is not None or not url.fragment:
        raise UntrustedKeyError(
            "the kid must name one verification method (did:…#fragment, no path or query)",
            code="kid_not_did_url",
            **shown,
        )
    if url.did_str != owner:
        raise UntrustedKeyError(
            "the kid names a key of another identifier than the expected signer",
            code="kid_not_owned",
            **shown,
        )
    return kid


def anchor_key(
    pins: OwnerPins, kid: object, *, relationship: SigningPurpose, algorithms: frozenset[str]
) -> AnchoredKey:
    """The key ``kid`` as ``pins`` vouch for it in ``relationship``, allowed ``algorithms``; or raise.

    Raises :class:`~mudrika.errors.UntrustedKeyError`: the codes of :func:`kid_of_owner`;
    ``key_not_pinned`` (the owner's JWK Set has no such kid), ``unknown_key`` /
    ``not_authorised_for_purpose`` / ``key_type_mismatch`` (from the pinned DID document);
    ``alg_not_allowed`` (no algorithm of ``algorithms`` fits the key and its pin).
    """
    absolute = kid_of_owner(kid, pins.owner)
    narrowed: frozenset[str] | None = None
    if pins.document is not None:
        key = pins.document.key_for(absolute, relationship)
    else:
        pinned = pins.keys.get(absolute)
        if pinned is None:
            raise UntrustedKeyError(
                "the pinned key set of this party has no key with this kid",
                code="key_not_pinned",
                kid=absolute[:_MAX_SHOWN],
                owner=pins.owner[:_MAX_SHOWN],
            )
        key, narrowed = pinned.key, pinned.algorithms
    allowed = algorithms & key.algorithms
    if narrowed is not None:
        allowed &= narrowed
    if not allowed:
        raise UntrustedKeyError(
            "no allowed algorithm fits the pinned key",
            code="alg_not_allowed",
            kid=absolute[:_MAX_SHOWN],
            allowed=sorted(algorithms),
        )
    return AnchoredKey(
        key=key,
        kid=absolute,
        owner=pins.owner,
        algorithms=allowed,
        source=pins.source,
        validity=pins.validity.get(absolute),
    )


@dataclass(frozen=True, slots=True)
class Attestation:
    """A time *not controlled by the judged key* that the signature is known to predate.

    ``by`` says whose statement it is, in words for the report: e.g. "the merchant's signed purchase
    time", or "the user's key-binding iat over this signature".  It must come from a signature by
    another key (or the analyst's own record): a time signed with the judged key itself is only that
    key's holder's claim, which is what a thief of the key controls.
    """

    at: datetime
    by: str

    def __post_init__(self) -> None:
        _require_utc(self.at, "the attested time")
        if not self.by:
            raise InvalidInput("an attestation names who attests the time", code="bad_attestation")


@dataclass(frozen=True, slots=True)
class TimeJudgement:
    """What :func:`judge_signing_time` decided, with the time it rested on and why.

    ``code`` is ``None`` exactly when ``holds``.  ``time`` is the signing time the verdict used (the
    upper bound when the key holds, the offending time when it does not, ``None`` when no usable
    time exists); ``basis`` says where it came from ("attested by …", "claimed by the signer", "no
    window pinned", "no signing time known").  ``explanation`` is one plain sentence with dates.
    """

    holds: bool
    code: TimeCode | None
    time: datetime | None
    basis: str
    window: KeyValidity | None
    explanation: str


_CLAIMED: Final = "claimed by the signer"
_UNKNOWN: Final = "no signing time known"


class Windowed(Protocol):
    """Anything that carries a pinned key's window: an :class:`AnchoredKey`, or a verifier's own
    record of a key it anchored through this module (only the window is read)."""

    @property
    def validity(self) -> KeyValidity | None: ...


def judge_signing_time(
    key: Windowed, *, signer_claimed: datetime | None, attested: Attestation | None
) -> TimeJudgement:
    """Whether ``key`` was valid when it made the signature being judged, by its pinned window.

    Two kinds of time may be known.  ``signer_claimed`` is what the signature itself says (its
    ``iat``): written by whoever holds the key.  ``attested`` is a time the signature is known to
    *predate*, vouched for by something the key does not control (a counterparty's signed ``iat``
    over this signature, the merchant's signed purchase time).  The signing time's upper bound is
    ``attested.at`` when given, else the claim.  The window is half-open, ``[valid_from, end)``,
    ``end`` the earlier of ``valid_until`` and ``revoked_at``; every comparison below is strict at
    the end and inclusive at the start, so a signature exactly at ``revoked_at`` is refused.

    The rules, checked in this order (the first failure decides):

    * **No window pinned** (or one that bounds nothing): holds, basis "no window pinned".
    * **Compromised** (``revoked_at`` with reason ``compromised``): holds only when an *attested*
      time exists and is strictly before ``revoked_at``; else ``key_compromised`` (attested at or
      after it) or ``signing_time_unproven`` (no attested time).  The signer's own claim never
      counts here: the attacker who holds the stolen key writes whatever ``iat`` suits them, so a
      back-dated claim proves nothing, whatever it says.
    * **Superseded or expired** (``revoked_at`` with reason ``superseded``, or ``valid_until``):
      holds when the upper bound is strictly before the end; either kind of time is accepted,
      because a superseded key's holder is still trusted, and the basis is named in the judgement.
      No time at all is ``signing_time_unproven``; else ``key_superseded`` / ``key_expired``
      (whichever end came first).
    * **Not yet valid** (``valid_from``): fails ``key_not_yet_valid`` when the claimed time or the
      attested one is before it (with neither, ``signing_time_unproven``).  This is an honesty
      check, not a defence against an attacker: a thief can always claim a time inside the window;
      what it catches is a key used before the party said it would be, or a signature provably made
      before the key's start.

    A bounded window therefore never holds without some known signing time (fail closed), and when
    it holds, :attr:`TimeJudgement.time` lies inside ``[valid_from, end)``.
    """
    _require_utc(signer_claimed, "signer_claimed")
    window = key.validity
    if window is None or not window.bounded:
        return TimeJudgement(
            holds=True,
            code=None,
            time=None,
            basis="no window pinned",
            window=window,
            explanation="no validity window is pinned for this key",
        )
    attested_time = (attested.at, f"attested by {attested.by}") if attested is not None else None
    claimed_time = (signer_claimed, _CLAIMED) if signer_claimed is not None else None
    upper = attested_time or claimed_time

    def judged(code: TimeCode | None, time: tuple[datetime, str] | None, explanation: str) -> TimeJudgement:
        return TimeJudgement(
            holds=code is None,
            code=code,
            time=time[0] if time is not None else None,
            basis=time[1] if time is not None else _UNKNOWN,
            window=window,
            explanation=explanation,
        )

    if window.reason == "compromised" and window.revoked_at is not None:
        revoked = window.revoked_at
        if attested_time is None:
            told = (
                f"; the signer's own claim ({_day(claimed_time[0])}) does not count, since whoever holds a "
                "stolen key can write any time"
                if claimed_time is not None
                else ""
            )
            return judged(
                "signing_time_unproven",
                None,
                f"the key was reported compromised on {_day(revoked)} and no time outside the signer's "
                f"control shows that this signature predates it{told}",
            )
        if attested_time[0] >= revoked:
            return judged(
                "key_compromised",
                attested_time,
                f"the key was reported compromised on {_day(revoked)}, {_before(revoked, attested_time[0])} "
                f"{_phrase(*attested_time)}: the signature may have been made with the stolen key",
            )
    # Against an end that is not a compromise the signer is still believed: the earliest known time
    # decides (its own claim, or an attested bound when that is earlier), so a cart signed before a
    # rotation stands even when the payment that covers it came after.
    # A compromised key's holder is not believed at all: past the rule above, only the attested time.
    earliest = upper
    if window.reason != "compromised" and attested_time is not None and claimed_time is not None:
        earliest = min(attested_time, claimed_time, key=lambda pair: pair[0])
    ends: list[tuple[datetime, TimeCode]] = []
    if window.superseded_at is not None:
        ends.append((window.superseded_at, "key_superseded"))
    if window.valid_until is not None:
        ends.append((window.valid_until, "key_expired"))
    if ends:
        end, code = min(ends, key=lambda pair: pair[0])  # a tie names the revocation (listed first)
        what = "revoked (superseded)" if code == "key_superseded" else "valid until"
        if earliest is None:
            return judged(
                "signing_time_unproven",
                None,
                f"the key's window ends on {_day(end)} ({what}) and no signing time is known, neither "
                "claimed by the signer nor attested",
            )
        if earliest[0] >= end:
            ended = (
                f"the key was revoked (superseded) on {_day(end)}"
                if code == "key_superseded"
                else f"the key's pinned validity ended on {_day(end)}"
            )
            return judged(code, earliest, f"{ended}, {_before(end, earliest[0])} {_phrase(*earliest)}")
    if window.valid_from is not None:
        start = window.valid_from
        known = [time for time in (claimed_time, attested_time) if time is not None]
        if not known:
            return judged(
                "signing_time_unproven",
                None,
                f"the key is valid only from {_day(start)} and no signing time is known, neither claimed "
                "by the signer nor attested",
            )
        for time, basis in known:
            if time < start:
                return judged(
                    "key_not_yet_valid",
                    (time, basis),
                    f"the key became valid only on {_day(start)}, {_span(start - time)} after "
                    f"{_phrase(time, basis)}",
                )
    if earliest is None:  # not reached: every bounded window above needed a time; fail closed anyway
        return judged("signing_time_unproven", None, "no signing time is known")
    return judged(
        None, earliest, f"{_phrase(*earliest)}, falls inside the key's pinned window ({window.describe()})"
    )


def _day(moment: datetime) -> str:
    """A date for a sentence: the day alone at midnight UTC, else the full instant."""
    if moment.hour == moment.minute == moment.second == moment.microsecond == 0:
        return moment.date().isoformat()
    return moment.isoformat(sep=" ").replace("+00:00", "Z")


#: The units a distance in time is said in, largest first, in microseconds.
_UNITS: Final = (
    ("day", 86_400_000_000),
    ("hour", 3_600_000_000),
    ("minute", 60_000_000),
    ("second", 1_000_000),
)


def _span(delta: timedelta) -> str:
    """A positive duration in its largest whole unit ("3 days", "1 microsecond")."""
    total = delta // timedelta(microseconds=1)
    for unit, size in _UNITS:
        if total >= size:
            count = total // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{total} microsecond{'s' if total != 1 else ''}"


def _before(earlier: datetime, later: datetime) -> str:
    return "at the same instant as" if earlier == later else f"{_span(later - earlier)} before"


def _phrase(moment: datetime, basis: str) -> str:
    """Which signing time a sentence speaks of, with its date and where it came from."""
    if basis == _CLAIMED:
        return f"the signing time the signer claims, {_day(moment)}"
    by = basis.removeprefix("attested by ")
    return f"{_day(moment)}, a time attested by {by} that this signature predates"


def _signer_of(kid: object, trusted_owners: Collection[str] | None) -> str:
    """The DID a live-resolved kid belongs to, refused early when the verifier does not trust it
    (before anything is fetched: an untrusted signer must not make the verifier dial out)."""
    if not isinstance(kid, str) or not kid.startswith("did:"):
        raise UntrustedKeyError("the kid must be an absolute DID URL of the signer", code="kid_not_did_url")
    try:
        owner = parse_did_url(kid).did_str
    except InvalidInput as exc:
        raise UntrustedKeyError(
            "the kid is not a valid DID URL", code="kid_not_did_url", reason=exc.code, kid=kid[:_MAX_SHOWN]
        ) from None
    if trusted_owners is not None and owner not in trusted_owners:
        raise UntrustedKeyError("signed by a DID this verifier does not trust", code="untrusted_did")
    return owner


def anchor_resolved(
    resolved: ResolutionResult, kid: object, *, relationship: SigningPurpose, algorithms: frozenset[str]
) -> AnchoredKey:
    """:func:`anchor_key` against a document a resolver returned for the kid's DID (a deactivated DID
    anchors nothing)."""
    if resolved.deactivated:
        raise UntrustedKeyError(
            "the DID is deactivated", code="deactivated", did=resolved.document.id[:_MAX_SHOWN]
        )
    pins = OwnerPins(owner=resolved.document.id, document=resolved.document)
    return anchor_key(pins, kid, relationship=relationship, algorithms=algorithms)


def resolve_anchored(
    resolver: DocumentSource,
    kid: object,
    *,
    trusted_owners: Collection[str] | None,
    relationship: SigningPurpose,
    algorithms: frozenset[str],
) -> AnchoredKey:
    """The live form: resolve the kid's DID with ``resolver`` and apply the rule to its document.

    ``trusted_owners`` is the verifier's list of DIDs (``None`` where the signer's DID *is* the
    identity being authenticated, as in a DID-signed request whose policy then judges that DID).
    """
    owner = _signer_of(kid, trusted_owners)
    return anchor_resolved(resolver.resolve(owner), kid, relationship=relationship, algorithms=algorithms)


async def aresolve_anchored(
    resolver: DocumentSource,
    kid: object,
    *,
    trusted_owners: Collection[str] | None,
    relationship: SigningPurpose,
    algorithms: frozenset[str],
) -> AnchoredKey:
    """:func:`resolve_anchored` without blocking the event loop (did:web is fetched asynchronously)."""
    owner = _signer_of(kid, trusted_owners)
    resolved = await resolver.aresolve(owner)
    return anchor_resolved(resolved, kid, relationship=relationship, algorithms=algorithms)
