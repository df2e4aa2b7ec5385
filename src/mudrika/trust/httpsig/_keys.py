"""Key lookup for the verifier: ``keyid`` (a DID URL) -> the public key authorised for authentication.

Why a protocol: the verifier must not care whether keys come from configuration, DID documents in
hand, or a live resolver; it only needs the one guarantee every implementation here gives — the key
returned is in the DID's ``authentication`` relationship (DID Core §5.3.1), never merely "a key that
appears in the document" (an ``assertionMethod`` key signs credentials, not requests).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol, runtime_checkable

from mudrika.crypto.keys import ALL_ALGORITHMS, PublicKey
from mudrika.errors import InvalidInput, UntrustedKeyError
from mudrika.identity.anchoring import OwnerPins, anchor_key, aresolve_anchored, resolve_anchored
from mudrika.identity.document import DIDDocument
from mudrika.identity.resolution import ResolutionResult
from mudrika.trust.httpsig._profile import check_keyid

__all__ = ["DIDKeyResolver", "DocumentKeyLookup", "KeyLookup", "ResolverKeyLookup", "StaticKeyLookup"]


@runtime_checkable
class KeyLookup(Protocol):
    """Maps a signature ``keyid`` (a DID URL) to the public key authorised for *authentication*.

    Implementations raise :class:`~mudrika.errors.UntrustedKeyError` for an unknown key or one not in
    the DID's ``authentication`` relationship, and :class:`~mudrika.errors.UnavailableError` when the
    DID cannot be resolved now.  They never return a key they were not told to trust for this purpose.
    """

    def lookup(self, keyid: str) -> PublicKey: ...

    async def alookup(self, keyid: str) -> PublicKey: ...


class StaticKeyLookup:
    """A fixed ``{keyid: PublicKey}`` table, e.g. peers pinned in configuration."""

    def __init__(self, keys: Mapping[str, PublicKey]) -> None:
        for keyid, key in keys.items():
            check_keyid(keyid)
            if not isinstance(key, PublicKey):
                raise InvalidInput("StaticKeyLookup values must be PublicKey", code="httpsig_config")
        self._keys = dict(keys)

    def lookup(self, keyid: str) -> PublicKey:
        key = self._keys.get(keyid)
        if key is None:
            raise UntrustedKeyError("unknown signing key", code="unknown_key", kid=keyid[:256])
        return key

    async def alookup(self, keyid: str) -> PublicKey:
        return self.lookup(keyid)


class DocumentKeyLookup:
    """Keys from DID documents already in hand, taken only from their ``authentication`` relationship
    (by the one anchoring rule, :func:`mudrika.identity.anchoring.anchor_key`)."""

    def __init__(self, documents: Iterable[DIDDocument]) -> None:
        self._pins: dict[str, OwnerPins] = {}
        for document in documents:
            self._pins[document.id] = OwnerPins(owner=document.id, document=document)

    def lookup(self, keyid: str) -> PublicKey:
        did = check_keyid(keyid)
        pins = self._pins.get(did)
        if pins is None:
            raise UntrustedKeyError("no DID document for this signer", code="unknown_key", kid=keyid[:256])
        return anchor_key(pins, keyid, relationship="authentication", algorithms=ALL_ALGORITHMS).key

    async def alookup(self, keyid: str) -> PublicKey:
        return self.lookup(keyid)


class DIDKeyResolver(Protocol):
    """The part of ``mudrika.identity.resolver.DIDResolver`` this module uses."""

    def resolve(self, did: str) -> ResolutionResult: ...

    async def aresolve(self, did: str) -> ResolutionResult: ...


class ResolverKeyLookup:
    """Adapter: resolve the keyid's DID with a DID resolver and take the key from its
    ``authentication`` relationship, by the one anchoring rule
    (:func:`mudrika.identity.anchoring.resolve_anchored`; the signer's DID is the identity being
    authenticated, so no list of trusted DIDs applies here: the policy judges that DID next).

    ``notFound``, ``methodNotSupported`` and invalid documents become
    :class:`~mudrika.errors.UntrustedKeyError` (a deny); only ``internalError`` (the resolver could
    not finish) stays an :class:`~mudrika.errors.UnavailableError` (fail closed, 503).
    """

    def __init__(self, resolver: DIDKeyResolver) -> None:
        self._resolver = resolver

    def lookup(self, keyid: str) -> PublicKey:
        check_keyid(keyid)
        anchored = resolve_anchored(
            self._resolver,
            keyid,
            trusted_owners=None,
            relationship="authentication",
            algorithms=ALL_ALGORITHMS,
        )
        return anchored.key

    async def alookup(self, keyid: str) -> PublicKey:
        check_keyid(keyid)
        anchored = await aresolve_anchored(
            self._resolver,
            keyid,
            trusted_owners=None,
            relationship="authentication",
            algorithms=ALL_ALGORITHMS,
        )
        return anchored.key
