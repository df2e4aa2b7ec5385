"""DID resolution: one resolver, method drivers, a cache, and offline snapshots.

:class:`DIDResolver` is what the rest of mudrika calls to turn a DID or DID URL into a verified
:class:`~mudrika.identity.document.DIDDocument` or key.  Drivers are chosen by configuration, never
fallen into: the native did:key, did:jwk, did:web and did:bindu drivers live in
:mod:`mudrika.identity.methods`; ``_didkit`` wraps the didkit library for other methods; snapshots
(:class:`SnapshotDriver`) answer from recorded documents and never touch the network.
"""

from __future__ import annotations

from mudrika.identity.resolution import CONTENT_TYPE, MethodDriver, ResolutionResult
from mudrika.identity.resolver._didkit import DidkitDriver
from mudrika.identity.resolver._resolver import DIDResolver, SnapshotDriver, snapshot_of

__all__ = [
    "CONTENT_TYPE",
    "DIDResolver",
    "DidkitDriver",
    "MethodDriver",
    "ResolutionResult",
    "SnapshotDriver",
    "snapshot_of",
]
