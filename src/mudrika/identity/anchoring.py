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
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

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
    "DocumentSource",
    "OwnerPins",
    "PinnedKey",
    "anchor_key",
    "anchor_resolved",
    "aresolve_anchored",
    "kid_of_owner",
    "resolve_anchored",
]

_MAX_SHOWN: Final = 200


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

    def __post_init__(self) -> None:
        if self.keys and self.document is not None:
            raise InvalidInput("pin a JWK Set or a DID document, not both", code="bad_pins")
        if self.document is not None and self.document.id != self.owner:
            raise InvalidInput("the pinned DID document's id is not its owner", code="bad_pins")

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
    return AnchoredKey(key=key, kid=absolute, owner=pins.owner, algorithms=allowed, source=pins.source)


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
