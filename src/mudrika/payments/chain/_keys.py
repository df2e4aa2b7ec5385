"""Where the chain verifier gets verification keys: a DID resolver, JWKS snapshots, pinned keys.

Why one small interface (:class:`KeySource`): the same verifier runs online (a merchant or payment
processor, keys from :class:`~mudrika.identity.resolver.DIDResolver`) and offline (a dispute analyst,
keys only from an evidence bundle).  The verifier asks one question — "the key ``kid`` of party
``owner``, for making assertions" — and the source answers from what it was given, or refuses.

Rules every answer obeys:

* A key always belongs to an **owner** (the merchant's DID, the user's DID, the credential issuer's
  identifier).  A DID-URL ``kid`` must name a verification method of the owner's DID (a relative
  ``#frag`` is taken relative to the owner's DID), and the DID document must authorise it for
  ``assertionMethod`` (DID Core §5.3.2): a key only in ``authentication`` may log in, not sign carts.
* A **pinned** key is ``{"owner": ..., "jwk": {...}}`` under its kid; the owner must match.
* A **JWKS** snapshot is per owner (an issuer's URL); the kid is looked up in that set only.
* ``jku``/``x5u`` are never followed: keys come from this object, never from the token.
* :meth:`KeyMaterial.offline` builds a source that cannot open a connection
  (``DIDResolver.offline``: did:key / did:jwk computed locally, everything else from the snapshot).

Where a key came from is *evidence*, never trust.  Every :class:`ResolvedKey` says where it came
from (:data:`Provenance`) and whether the analyst's trust root anchors it.  :class:`Anchors` puts the
two together for the chain verifier: a party the trust root pins is answered from the trust root
only (and evidence that carries another key under the same kid is refused), anyone else from the
evidence, unanchored.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple, Protocol, runtime_checkable

from mudrika.crypto.jose import TrustedKey
from mudrika.crypto.keys import ALL_ALGORITHMS, PublicKey
from mudrika.errors import DocumentError, InvalidInput, UntrustedKeyError
from mudrika.identity import did as did_syntax
from mudrika.identity.anchoring import (
    KeyValidity,
    OwnerPins,
    PinnedKey,
    anchor_key,
    anchor_resolved,
    kid_of_owner,
)
from mudrika.identity.methods import key as did_key
from mudrika.identity.resolver import DIDResolver
from mudrika.payments.trustroot import TrustRoot

__all__ = [
    "PROVENANCE_CLASSES",
    "Anchors",
    "KeyMaterial",
    "KeySource",
    "Provenance",
    "ResolvedKey",
    "StageRules",
]

Provenance = Literal[
    "trust-root",
    "credential-cnf",
    "self-certifying",
    "did-document-snapshot",
    "jwks-snapshot",
    "pinned-in-evidence",
    "did-resolver",
]
#: Every provenance class, with the sentence a report shows for it (docs/payments.md "Trust model").
PROVENANCE_CLASSES: Final[dict[str, str]] = {
    "trust-root": "pinned in the analyst's trust root",
    "credential-cnf": "the holder key (cnf.jwk) certified by the credential issuer",
    "self-certifying": "computed from a did:key / did:jwk identifier (proves nothing about who holds it)",
    "did-document-snapshot": "a DID-document snapshot carried with the evidence",
    "jwks-snapshot": "a JWK Set snapshot carried with the evidence",
    "pinned-in-evidence": "a key the evidence itself pins",
    "did-resolver": "resolved live by the DID resolver (today's keys, not the analyst's)",
}
_SELF_CERTIFYING_METHODS: Final = ("did:key:", "did:jwk:")

_MAX_KEYS_PER_SET: Final = 64
_MAX_CACHE: Final = 1024


@functools.lru_cache(maxsize=1024)
def key_thumbprint(key: PublicKey) -> str:
    """RFC 7638 thumbprint, remembered: every report lists its keys' thumbprints, and the same
    merchant, issuer and user keys recur from chain to chain (keys are immutable and compare by
    their bytes, so a hit is the same key)."""
    return key.thumbprint()


@dataclass(frozen=True, slots=True)
class ResolvedKey:
    """A verification key, the kid it was found under, its owner, and any ``alg`` narrowing."""

    key: PublicKey
    kid: str
    owner: str
    source: str
    """``did`` (a DID document), ``jwks``, ``pinned``, ``trust-root`` or ``cnf``."""
    algorithms: frozenset[str] | None = None
    """Algorithms the published key itself allows (JWK ``alg``), ``None`` for "as its type allows"."""
    provenance: Provenance = "pinned-in-evidence"
    anchored: bool = False
    """True only when the analyst's trust root anchors this key (directly, or through a credential)."""
    note: str | None = None
    """When and how the key material was obtained, as its provider recorded it."""
    validity: KeyValidity | None = None
    """The window the trust root pins for this key (``None``: none, or not a trust-root key)."""

    @property
    def thumbprint(self) -> str:
        """RFC 7638 thumbprint of the key (SHA-256, base64url)."""
        return key_thumbprint(self.key)

    def trusted(self, policy: frozenset[str]) -> TrustedKey | None:
        """A :class:`TrustedKey` allowed ``policy`` ∩ key type (∩ JWK alg); ``None`` if that is empty."""
        return _trusted_key(self.key, self.algorithms, policy, self.owner)


@functools.lru_cache(maxsize=1024)
def _trusted_key(
    key: PublicKey, narrowed: frozenset[str] | None, policy: frozenset[str], owner: str
) -> TrustedKey | None:
    """The answer of :meth:`ResolvedKey.trusted`, remembered: every JWS of every chain asks it for
    the same few keys and policies, and a :class:`TrustedKey` re-validates its allow-list when built
    (all four arguments are immutable, and so is the answer)."""
    allowed = policy & key.algorithms
    if narrowed is not None:
        allowed &= narrowed
    if not allowed:
        return None
    return TrustedKey(key=key, algorithms=allowed, kid=None, owner=owner)


@runtime_checkable
class KeySource(Protocol):
    """Answers "which key is ``kid`` of ``owner``, for assertions?" — or raises."""

    @property
    def offline(self) -> bool:
        """True when this source can never touch the network."""

    def assertion_key(self, kid: str, *, owner: str) -> ResolvedKey:
        """The key, or raise ``UntrustedKeyError`` / ``InvalidInput`` / ``DocumentError`` (the owner's
        DID has no usable document) / ``ResolutionError`` (it could not be fetched)."""


def _jwk_key(jwk: Any, where: str) -> tuple[PublicKey, frozenset[str] | None]:
    if not isinstance(jwk, Mapping):
        raise InvalidInput(f"{where}: a key must be a JWK object", code="bad_jwk")
    trusted = TrustedKey.from_jwk(jwk, algorithms=ALL_ALGORITHMS)
    narrowed = trusted.algorithms if "alg" in jwk else None
    return trusted.key, narrowed


class KeyMaterial:
    """A :class:`KeySource` over a DID resolver plus JWKS snapshots and pinned keys.

    ``jwks`` maps an owner (an issuer identifier such as ``https://issuer.example``) to its JWK Set
    (``{"keys": [...]}``); ``pinned`` maps a kid to ``{"owner": ..., "jwk": {...}}``.  Both are
    validated when the object is built, so a broken snapshot fails before any verification.
    """

    __slots__ = ("_cache", "_documents", "_jwks", "_notes", "_offline", "_pinned", "_resolver")

    def __init__(
        self,
        resolver: DIDResolver | None,
        *,
        jwks: Mapping[str, Any] | None = None,
        pinned: Mapping[str, Any] | None = None,
        notes: Mapping[str, str] | None = None,
    ) -> None:
        self._resolver = resolver
        #: The raw DID-document snapshot, when this source was built by :meth:`offline_snapshot`
        #: (whose resolver computes did:key locally and answers everything else from it).
        self._documents: Mapping[str, Any] | None = None
        self._notes = dict(notes or {})
        self._offline = resolver is None or resolver.is_offline
        # Offline key material is a fixed snapshot, so an answer never changes: remember it.  Online
        # answers are left to the resolver's own TTL cache (keys rotate and DIDs get deactivated).
        self._cache: dict[tuple[str, str], ResolvedKey] = {}
        self._jwks: dict[str, OwnerPins] = {}
        for owner, key_set in (jwks or {}).items():
            keys = key_set.get("keys") if isinstance(key_set, Mapping) else None
            if not isinstance(owner, str) or not isinstance(keys, list) or len(keys) > _MAX_KEYS_PER_SET:
                raise InvalidInput("a JWKS snapshot must be {owner: {'keys': [...]}}", code="bad_jwks")
            by_kid: dict[str, PinnedKey] = {}
            for jwk in keys:
                kid = jwk.get("kid") if isinstance(jwk, Mapping) else None
                if not isinstance(kid, str) or not kid or kid in by_kid:
                    raise InvalidInput(
                        "every JWKS key needs a unique string 'kid'", code="bad_jwks", owner=owner[:200]
                    )
                by_kid[kid] = PinnedKey(*_jwk_key(jwk, "jwks"))
            self._jwks[owner] = OwnerPins(owner=owner, keys=by_kid)
        self._pinned: dict[str, tuple[str, PublicKey, frozenset[str] | None]] = {}
        for kid, entry in (pinned or {}).items():
            if (
                not isinstance(kid, str)
                or not kid
                or not isinstance(entry, Mapping)
                or not isinstance(entry.get("owner"), str)
            ):
                raise InvalidInput(
                    "a pinned key must be {kid: {'owner': ..., 'jwk': {...}}}", code="bad_pinned"
                )
            key, narrowed = _jwk_key(entry.get("jwk"), "pinned")
            self._pinned[kid] = (entry["owner"], key, narrowed)

    @classmethod
    def offline_snapshot(
        cls,
        did_documents: Mapping[str, Any],
        *,
        jwks: Mapping[str, Any] | None = None,
        pinned: Mapping[str, Any] | None = None,
        notes: Mapping[str, str] | None = None,
    ) -> KeyMaterial:
        """A source that never touches the network: DID documents from ``did_documents`` only.

        ``notes`` maps an owner to when and how its key material was fetched (shown in reports).
        """
        source = cls(DIDResolver.offline(did_documents), jwks=jwks, pinned=pinned, notes=notes)
        # A copy taken now, as the resolver takes its own: both answer from the same entries even
        # if the caller's mapping changes later.
        source._documents = dict(did_documents)
        return source

    def carries_document(self, did: str, document: Mapping[str, Any] | None) -> bool:
        """True when this offline snapshot answers for ``did`` from exactly ``document`` (the same
        raw JSON, no metadata envelope, no pinned key overriding it): then it can only name the keys
        ``document`` names.  False means "not known to be so", never "different"."""
        documents = self._documents
        return (
            document is not None
            and documents is not None
            and not self._pinned
            and documents.get(did) == document
        )

    @property
    def offline(self) -> bool:
        return self._offline

    def assertion_key(self, kid: str, *, owner: str) -> ResolvedKey:
        if self._offline:
            cached = self._cache.get((kid, owner))
            if cached is not None:
                return cached
            found = self._lookup(kid, owner)
            if len(self._cache) >= _MAX_CACHE:
                self._cache.clear()
            self._cache[(kid, owner)] = found
            return found
        return self._lookup(kid, owner)

    def _lookup(self, kid: str, owner: str) -> ResolvedKey:
        # The one anchoring rule decides which kids name a key of this owner, and in which
        # relationship, for evidence exactly as for the trust root (mudrika.identity.anchoring).
        absolute = kid_of_owner(kid, owner)
        pinned = self._pinned.get(absolute)
        if pinned is not None:
            return self._from_pinned(absolute, owner, pinned)
        if owner.startswith("did:"):
            if self._documents is not None and owner.startswith("did:key:"):
                computed = self._self_certified(absolute, owner)
                if computed is not None:
                    return computed
            if self._resolver is None:
                raise UntrustedKeyError("no DID resolver for this key", code="unknown_key", kid=kid[:200])
            # No document for the DID a kid names is a DocumentError (a deny), not an outage.
            anchored = anchor_resolved(
                self._resolver.resolve(owner),
                absolute,
                relationship="assertionMethod",
                algorithms=ALL_ALGORITHMS,
            )
            provenance: Provenance = (
                "self-certifying"
                if owner.startswith(_SELF_CERTIFYING_METHODS)
                else "did-document-snapshot"
                if self._offline
                else "did-resolver"
            )
            return ResolvedKey(
                key=anchored.key,
                kid=absolute,
                owner=owner,
                source="did",
                provenance=provenance,
                note=self._notes.get(owner),
            )
        pins = self._jwks.get(owner)
        if pins is None:
            raise UntrustedKeyError(
                "no key with this kid for this owner", code="unknown_key", kid=kid[:200], owner=owner[:200]
            )
        anchored = anchor_key(pins, absolute, relationship="assertionMethod", algorithms=ALL_ALGORITHMS)
        return ResolvedKey(
            key=anchored.key,
            kid=absolute,
            owner=owner,
            source="jwks",
            algorithms=pins.keys[absolute].algorithms,
            provenance="jwks-snapshot",
            note=self._notes.get(owner),
        )

    def self_certified_as(self, kid: str, owner: str, key: PublicKey) -> ResolvedKey | None:
        """:meth:`assertion_key` for ``owner``, the did:key that :func:`~mudrika.identity.methods.key.create`
        writes for ``key``, when this offline snapshot would answer from the did:key itself (no key
        of its own pinned under ``kid``); ``None`` otherwise (then :meth:`assertion_key` answers).

        Exact: that did:key is a valid DID whose one signing method is ``<did>#<multibase value>``
        and decodes to ``key`` (the encoding is canonical and :func:`decode` reads only it), so the
        answer is the one :meth:`_self_certified` computes by decoding, without the decoding.
        """
        if self._documents is None or kid in self._pinned or kid != f"{owner}#{owner[8:]}":
            return None
        try:
            did_key.check_agreement_form(key)  # the document's own check
        except InvalidInput:
            return None
        return self._self_certifying(key, kid, owner)

    def _self_certifying(self, key: PublicKey, kid: str, owner: str) -> ResolvedKey:
        """A did:key's own key, as both ways of finding it report it."""
        return ResolvedKey(
            key=key,
            kid=kid,
            owner=owner,
            source="did",
            provenance="self-certifying",
            note=self._notes.get(owner),
        )

    def _self_certified(self, kid: str, owner: str) -> ResolvedKey | None:
        """The key of a did:key as :meth:`_lookup` finds it through the offline resolver, without
        expanding the DID document; ``None`` whenever that path might answer differently (then it
        runs, and raises what it raises).

        The document the resolver computes (:func:`mudrika.identity.methods.key.document`) has one
        signing method, ``<did>#<multibase value>``, in ``assertionMethod``, whose key is
        :func:`~mudrika.identity.methods.key.decode` of the DID; an Ed25519 key must also have an
        X25519 form (the document checks it), and an X25519 did:key signs nothing.
        """
        try:
            # kid_of_owner parsed this kid already (and checked that its DID is ``owner``).
            url = did_syntax.parse_did_url(kid)
            parsed = url.did
            if url.did_str != owner or kid != f"{owner}#{parsed.method_specific_id}":
                return None
            key = did_key.decode(parsed)
            if not isinstance(key, PublicKey):
                return None
            did_key.check_agreement_form(key)
        except InvalidInput:
            return None
        return self._self_certifying(key, kid, owner)

    def _from_pinned(
        self, kid: str, owner: str, entry: tuple[str, PublicKey, frozenset[str] | None]
    ) -> ResolvedKey:
        pinned_owner, key, narrowed = entry
        if pinned_owner != owner:
            raise UntrustedKeyError(
                "the pinned key belongs to another owner", code="kid_not_owned", kid=kid[:200]
            )
        return ResolvedKey(
            key=key,
            kid=kid,
            owner=owner,
            source="pinned",
            algorithms=narrowed,
            provenance="pinned-in-evidence",
            note=self._notes.get(owner),
        )


class Anchors:
    """The chain verifier's key questions, answered from the trust root first, the evidence second.

    * A merchant or issuer the trust root pins is answered from the trust root only
      (``provenance="trust-root"``, anchored).  When the evidence carries a *different* key under
      the same kid, that is refused (``evidence_key_mismatch``): a forged bundle files fresh keys
      under real names, and the analyst must see that, not a signature that happens to verify.
    * Anyone else (an unpinned merchant, the user's DID, any party when there is no trust root) is
      answered from the evidence, unanchored: the verdict can then be UNANCHORED at best.
    """

    __slots__ = ("_evidence", "_holder", "_root")

    def __init__(self, root: TrustRoot | None, evidence: KeySource) -> None:
        self._root = root
        self._evidence = evidence
        self._holder: tuple[PublicKey, str] | None = None

    def expect_holder(self, key: PublicKey) -> None:
        """Remember the key the payment's credential binds (``cnf``), read before the intent stage.

        Why: a user signs the intent with the did:key of that very key, and deciding that a did:key
        *is* a known key takes an encoding, while decoding it takes a square root modulo p.  The key
        comes from data nobody has verified yet, so it is only ever compared with: :meth:`user_key`
        answers with it only for the did:key that encodes it, which is exactly the key that did:key
        decodes to; every other kid is resolved as before.
        """
        self._holder = (key, did_key.create(key))

    def did_key_of(self, key: PublicKey) -> str:
        """``did:key`` of ``key`` (the expected holder's is encoded once per verification)."""
        holder = self._holder
        return holder[1] if holder is not None and holder[0] == key else did_key.create(key)

    def expected_holder_did(self, kid: str) -> str | None:
        """The expected holder's did:key when ``kid`` is its one signing method
        (``<did>#<multibase value>``), else ``None`` (the caller parses the kid)."""
        holder = self._holder
        if holder is None:
            return None
        did = holder[1]
        return did if kid == f"{did}#{did[8:]}" else None

    @property
    def offline(self) -> bool:
        return self._evidence.offline

    def pinned_merchant_of(self, kid: str) -> str | None:
        """The merchant DID whose key ``kid`` names, when the trust root pins that key under exactly
        this kid (found without parsing the DID URL: the root checked it when it was loaded), else
        ``None`` (the caller parses the kid)."""
        root = self._root
        owner, separator, _ = kid.partition("#")
        if root is not None and separator and root.pins_signature_kid("merchant", owner, kid):
            return owner
        return None

    def merchant_key(self, kid: str, *, owner: str) -> ResolvedKey:
        root = self._root
        if root is None or not root.pins_merchant(owner):
            return self._evidence.assertion_key(kid, owner=owner)
        return self._anchored(root, "merchant", owner, kid)

    def issuer_key(self, kid: str, *, owner: str) -> ResolvedKey:
        root = self._root
        if root is None:
            return self._evidence.assertion_key(kid, owner=owner)
        return self._anchored(root, "issuer", owner, kid)

    def user_key(self, kid: str, *, owner: str) -> ResolvedKey:
        """The user's key names no trusted party: it is anchored only through the credential's cnf."""
        evidence, holder = self._evidence, self._holder
        if holder is not None and type(evidence) is KeyMaterial and owner == holder[1]:
            found = evidence.self_certified_as(kid, owner, holder[0])
            if found is not None:
                return found
        return evidence.assertion_key(kid, owner=owner)

    def _anchored(
        self, root: TrustRoot, section: Literal["merchant", "issuer"], owner: str, kid: str
    ) -> ResolvedKey:
        evidence = self._evidence
        if type(evidence) is not KeyMaterial or not evidence._offline:  # the property, without a call
            return self._cross_checked(root, section, owner, kid)
        # Both sides are fixed snapshots (a trust root is immutable once built, and an offline
        # KeyMaterial answers from what it was given), so an admitted key is admitted again: the
        # outcome is remembered per (root, evidence) pair, kept in the entry so that neither id can be
        # reused while remembered.  A refusal is not remembered (it raises every time).
        memo_key = (id(root), id(evidence), section, owner, kid)
        entry = _CROSS_CHECKED.get(memo_key)
        if entry is not None and entry[0] is root and entry[1] is evidence:
            return entry[2]
        resolved = self._cross_checked(root, section, owner, kid)
        if len(_CROSS_CHECKED) >= _MAX_CACHE:
            _CROSS_CHECKED.clear()
        _CROSS_CHECKED[memo_key] = (root, evidence, resolved)
        return resolved

    def _cross_checked(
        self, root: TrustRoot, section: Literal["merchant", "issuer"], owner: str, kid: str
    ) -> ResolvedKey:
        """The key the root pins, refused when the offline evidence carries another one under its kid."""
        pinned = _root_key(root, section, owner, kid)
        evidence = self._evidence
        if evidence.offline:
            if type(evidence) is KeyMaterial and evidence.carries_document(
                pinned.owner, _pinned_document(root, section, pinned.owner)
            ):
                # The evidence carries the very document the root pinned (both parsed by the same
                # offline resolver): it names this kid's key exactly as the root does, or not at all.
                return pinned
            try:
                carried = self._evidence.assertion_key(kid, owner=pinned.owner)
            except (UntrustedKeyError, InvalidInput, DocumentError):  # the evidence has no such key
                carried = None
            if carried is not None and carried.key != pinned.key:
                raise UntrustedKeyError(
                    "the evidence carries another key under this kid than the trust root pins",
                    code="evidence_key_mismatch",
                    kid=kid[:200],
                    owner=pinned.owner[:200],
                    evidence_thumbprint=carried.key.thumbprint(),
                    pinned_thumbprint=pinned.key.thumbprint(),
                )
        return pinned


class StageRules(NamedTuple):
    """What every signed stage (intent, cart, payment) checks against: the keys (the trust root
    first, the evidence second), the algorithms the trust root allows, the evaluation time and the
    leeway.  One object, so that a stage and the checks it delegates to take the same four facts."""

    keys: Anchors
    algorithms: frozenset[str]
    now: float
    leeway: float


#: The trust root's answers, remembered per root object: a root is immutable once built and answers
#: from its own tables and DID documents only, so an answer never changes, while finding it (DID URL
#: parsing, a DID-document lookup) costs a tenth of a cart verification.  The root itself is kept
#: in the entry, so an ``id`` can never be reused for another root while its answers are remembered.
_ROOT_KEYS: dict[tuple[int, str, str, str], tuple[TrustRoot, ResolvedKey]] = {}


#: :meth:`Anchors._anchored` outcomes for an offline :class:`KeyMaterial` (see there).
_CROSS_CHECKED: dict[tuple[int, int, str, str, str], tuple[TrustRoot, KeyMaterial, ResolvedKey]] = {}


def _pinned_document(
    root: TrustRoot, section: Literal["merchant", "issuer"], owner: str
) -> Mapping[str, Any] | None:
    """The raw DID document the root pins for ``owner`` (``None`` when it pins a JWK Set or a log)."""
    entry = (root.merchants if section == "merchant" else root.issuers).get(owner)
    return entry.did_document if entry is not None else None


def _root_key(root: TrustRoot, section: Literal["merchant", "issuer"], owner: str, kid: str) -> ResolvedKey:
    """The key the trust root pins under ``kid`` for ``owner``, as an anchored :class:`ResolvedKey`
    (``UntrustedKeyError`` when it pins none; a refusal is not remembered)."""
    cache_key = (id(root), section, owner, kid)
    entry = _ROOT_KEYS.get(cache_key)
    if entry is not None and entry[0] is root:
        return entry[1]
    anchor = root.anchor(section, owner, kid, algorithms=root.algorithm_set)
    resolved = ResolvedKey(
        key=anchor.key,
        kid=anchor.kid,
        owner=anchor.owner,
        source="trust-root",
        algorithms=anchor.algorithms,
        provenance="trust-root",
        anchored=True,
        note=anchor.source,
        validity=anchor.validity,
    )
    if len(_ROOT_KEYS) >= _MAX_CACHE:
        _ROOT_KEYS.clear()
    _ROOT_KEYS[cache_key] = (root, resolved)
    return resolved
