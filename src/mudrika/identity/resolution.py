"""Resolution results and the method-driver protocol (W3C DID Resolution, "DID Resolution Result").

Kept apart from :mod:`mudrika.identity.resolver` so that method modules can return results without
importing the resolver that imports them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Final, Protocol, runtime_checkable

from mudrika.errors import BindingError, DocumentError, InvalidInput
from mudrika.identity.did import DID
from mudrika.identity.document import DIDDocument

__all__ = [
    "CONTENT_TYPE",
    "LocalDriver",
    "MethodDriver",
    "ResolutionResult",
    "check_document_id",
    "parse_document",
    "result",
]

#: The representation every driver produces (DID Core §6.2, JSON).
CONTENT_TYPE: Final = "application/did+json"

_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})
#: Shared resolution metadata per (method, driver); bounded, since a fallback driver (didkit, a
#: snapshot) answers for method names that come from the DIDs it is asked about.
_RESOLUTION_METADATA: dict[tuple[str, str], Mapping[str, Any]] = {}
_MAX_SHARED_METADATA: Final = 256


@dataclass(frozen=True, slots=True)
class ResolutionResult:
    """A resolved DID document with its document metadata and resolution metadata.

    ``document_metadata`` follows DID Core §7.1.3 (``deactivated``, ``created``, ``updated`` …);
    ``resolution_metadata`` follows §7.1.2 (``contentType``) plus ``method`` and ``driver``.
    """

    document: DIDDocument
    document_metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    resolution_metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    @property
    def deactivated(self) -> bool:
        """DID Core §7.1.3: a deactivated DID resolves, but none of its keys may be trusted."""
        return self.document_metadata.get("deactivated") is True


# The result's slots, set through their descriptors (see ``result``).
_NEW: Final = object.__new__
_SET_DOCUMENT: Final = ResolutionResult.__dict__["document"].__set__
_SET_DOCUMENT_METADATA: Final = ResolutionResult.__dict__["document_metadata"].__set__
_SET_RESOLUTION_METADATA: Final = ResolutionResult.__dict__["resolution_metadata"].__set__


def result(
    document: DIDDocument,
    *,
    driver: str,
    document_metadata: Mapping[str, Any] | None = None,
) -> ResolutionResult:
    """Build a result with read-only metadata mappings.

    The resolution metadata depends only on the method and the driver, so each pair's read-only
    mapping is built once and shared (it cannot be changed through the proxy); building it per
    result showed up in the profile of an uncached did:key resolution.  For the same reason the
    frozen result is filled in through its slots' descriptors rather than its generated ``__init__``
    (whose ``object.__setattr__`` per field re-checks the class each time): the same three fields.
    """
    method = document.did.method
    resolution_metadata = _RESOLUTION_METADATA.get((method, driver))
    if resolution_metadata is None:
        resolution_metadata = MappingProxyType(
            {"contentType": CONTENT_TYPE, "method": method, "driver": driver}
        )
        if len(_RESOLUTION_METADATA) < _MAX_SHARED_METADATA:
            _RESOLUTION_METADATA[(method, driver)] = resolution_metadata
    resolved = _NEW(ResolutionResult)
    _SET_DOCUMENT(resolved, document)
    _SET_DOCUMENT_METADATA(
        resolved, MappingProxyType(dict(document_metadata)) if document_metadata else _EMPTY
    )
    _SET_RESOLUTION_METADATA(resolved, resolution_metadata)
    return resolved


@runtime_checkable
class MethodDriver(Protocol):
    """A DID method implementation the resolver can dispatch to.

    ``methods`` lists the method names it resolves; ``uses_network`` says whether resolving may open
    a connection (an offline resolver refuses such drivers).  Drivers raise
    :class:`~mudrika.errors.InvalidInput` (``invalidDid``) for a DID their method cannot parse;
    :class:`~mudrika.errors.DocumentError` (``notFound``, ``invalidDidDocument``) when the DID has no
    document or its document is unusable — a fact about the DID, a deny; a
    :class:`~mudrika.errors.VerificationError` such as ``BindingError`` when a document fails a check;
    and :class:`~mudrika.errors.ResolutionError` (``internalError``) only when the document could not
    be fetched (an outage: the caller fails closed with 503).
    """

    @property
    def methods(self) -> frozenset[str]: ...

    @property
    def uses_network(self) -> bool: ...

    def resolve(self, did: DID) -> ResolutionResult: ...

    async def aresolve(self, did: DID) -> ResolutionResult: ...


class LocalDriver(ABC):
    """Base of the drivers that answer from memory, never from the network (did:key, did:jwk,
    did:bindu, offline snapshots).

    Why a base: such a driver has nothing to wait for, so its async form is its sync form, and it
    must say that it never opens a connection (an offline resolver admits no other driver).  Spelt
    out in every driver, one copy could drift from the others.
    """

    #: The method names this driver resolves (none: a fallback for whatever is not registered).
    methods: ClassVar[frozenset[str]] = frozenset()
    uses_network: Final = False

    @abstractmethod
    def resolve(self, did: DID) -> ResolutionResult: ...

    async def aresolve(self, did: DID) -> ResolutionResult:
        return self.resolve(did)


def parse_document(data: Mapping[str, Any], *, message: str) -> DIDDocument:
    """``data`` validated as a DID Core document, else DocumentError ``invalidDidDocument``.

    Why not ``InvalidInput``: the document came from where a driver looked (a server, a snapshot),
    not from the caller's own request, so failing to read it is a failed resolution (DID Resolution
    error code ``invalidDidDocument``); the validator's own code is kept as the ``reason``.  Why not
    an outage: whoever controls the DID wrote this document; fetching it again gives the same bytes.
    """
    try:
        return DIDDocument.from_json(data)
    except InvalidInput as exc:
        raise DocumentError(message, code="invalidDidDocument", reason=exc.code) from None


def check_document_id(document: DIDDocument, did: str, *, message: str) -> DIDDocument:
    """``document`` if its ``id`` is ``did``, else BindingError ``document_id_mismatch``.

    Why every source of documents is held to it (for did:web it is "Read" step 8): a server or a
    snapshot that answered for one DID with another DID's document would hand that DID's keys to
    whoever asked for this one.
    """
    if document.id != did:
        raise BindingError(message, code="document_id_mismatch", expected=did[:200], got=document.id[:200])
    return document
