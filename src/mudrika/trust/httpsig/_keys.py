"""Key lookup for the verifier: ``keyid`` (a DID URL) -> the public key authorised for authentication.

Why a protocol: the verifier must not care whether keys come from configuration, DID documents in
hand, or a live resolver; it only needs the one guarantee every implementation here gives — the key
returned is in the DID's ``authentication`` relationship (DID Core §5.3.1), never merely "a key that
appears in the document" (an ``assertionMethod`` key signs credentials, not requests).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, Protocol, runtime_checkable

from mudrika.crypto.keys import PublicKey
from mudrika.errors import InvalidInput, UntrustedKeyError
from mudrika.identity.document import DIDDocument
from mudrika.trust.httpsig._profile import check_keyid

__all__ = ["DIDKeyResolver", "DocumentKeyLookup", "KeyLookup", "ResolverKeyLookup", "StaticKeyLookup"]


@runtime_checkable
class KeyLookup(Protocol):
    """Maps a signature ``keyid`` (a DID URL) to the public key authorised for *authentication*.

    Implementations raise :class:`~mudrika.errors.UntrustedKeyError` for an unknown key or one not in
    the DID's ``authentication`` relationship, :class:`~mudrika.errors.DocumentError` when the DID
    has no usable document (both deny: 401), and :class:`~mudrika.errors.UnavailableError` only when
    the DID's document cannot be fetched now (503).  They never return a key they were not told to trust for this purpose.
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
    """Keys from DID documents already in hand, taken only from their ``authentication`` relationship."""

    def __init__(self, documents: Iterable[DIDDocument]) -> None:
        self._documents: dict[str, DIDDocument] = {}
        for document in documents:
            self._documents[str(document.did)] = document

    def lookup(self, keyid: str) -> PublicKey:
        did = check_keyid(keyid)
        document = self._documents.get(did)
        if document is None:
            raise UntrustedKeyError("no DID document for this signer", code="unknown_key", kid=keyid[:256])
        return document.key_for(keyid, "authentication")

    async def alookup(self, keyid: str) -> PublicKey:
        return self.lookup(keyid)


class DIDKeyResolver(Protocol):
    """The part of ``mudrika.identity.resolver.DIDResolver`` this module uses."""

    def resolve_key(self, did_url: str, purpose: Literal["authentication"]) -> PublicKey: ...

    async def aresolve_key(self, did_url: str, purpose: Literal["authentication"]) -> PublicKey: ...


class ResolverKeyLookup:
    """Adapter: resolve the keyid's DID with a DID resolver, purpose ``authentication``.

    The resolver's errors pass unchanged, because the error tree already says which answer each
    one gets: ``notFound``, ``methodNotSupported`` and invalid documents are
    :class:`~mudrika.errors.DocumentError` (a :class:`~mudrika.errors.VerificationError`: a deny,
    401), and only ``internalError`` (the document could not be fetched) is a
    :class:`~mudrika.errors.ResolutionError` (an :class:`~mudrika.errors.UnavailableError`: fail
    closed, 503).
    """

    def __init__(self, resolver: DIDKeyResolver) -> None:
        self._resolver = resolver

    def lookup(self, keyid: str) -> PublicKey:
        check_keyid(keyid)
        return self._resolver.resolve_key(keyid, "authentication")

    async def alookup(self, keyid: str) -> PublicKey:
        check_keyid(keyid)
        return await self._resolver.aresolve_key(keyid, "authentication")
