"""Single-use enforcement for ``jti``s and nonces: the :class:`ReplayStore` protocol and its stores.

Why a protocol with one atomic operation: "check then record" as two calls lets two replicas both see
"unused" and both accept.  ``claim(key, expires_at)`` does both at once; the first claim of a key wins,
every later claim of it returns ``False`` until the claim expires.

Stores (see docs/replay.md for which to deploy):

* :class:`MemoryReplayStore` one process; bounded; fails closed (``replay_store_full``) when full.
* :class:`SqliteReplayStore` one host, durable, shared by the processes that open the same file.
* :class:`RedisReplayStore` every replica of a deployment (``SET NX PX``), Redis Cluster safe.

Rules shared by all stores:

* keys are caller-namespaced text (``"jti:<iss>:<jti>"``), 1..512 UTF-8 bytes, else ``InvalidInput``;
* ``expires_at`` is a UNIX timestamp in seconds; the claim is held until
  ``max(expires_at, now + min_retention)`` (``min_retention`` defaults to 30 s), so a claim whose
  ``expires_at`` has already passed is still recorded and still blocks a replay within a verifier's
  leeway; an ``expires_at`` beyond ``max_ttl`` (31 days) is ``InvalidInput``;
* a store that cannot answer raises ``UnavailableError`` (``replay_store_unavailable``) and never
  returns ``True``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from mudrika.errors import ReplayError
from mudrika.stores._memory import MemoryReplayStore
from mudrika.stores._replay_base import DEFAULT_MAX_TTL, DEFAULT_MIN_RETENTION, MAX_KEY_BYTES
from mudrika.stores._sqlite import SqliteReplayStore

if TYPE_CHECKING:
    from mudrika.stores._redis import RedisReplayStore

__all__ = [
    "DEFAULT_MAX_TTL",
    "DEFAULT_MIN_RETENTION",
    "MAX_KEY_BYTES",
    "MemoryReplayStore",
    "RedisReplayStore",
    "ReplayStore",
    "SqliteReplayStore",
    "aclaim_or_raise",
    "claim_or_raise",
]


@runtime_checkable
class ReplayStore(Protocol):
    """Atomic first-claim-wins record of single-use keys."""

    def claim(self, key: str, expires_at: float) -> bool:
        """Record ``key`` until ``expires_at``; ``True`` for the first claim, ``False`` for a replay.

        Raises ``InvalidInput`` for a bad key or expiry and ``UnavailableError`` when the store
        cannot be reached or is full; never returns ``True`` without having recorded the claim.
        """

    async def aclaim(self, key: str, expires_at: float) -> bool:
        """Same as :meth:`claim`, without blocking the event loop on I/O."""

    def close(self) -> None: ...

    async def aclose(self) -> None: ...


def claim_or_raise(store: ReplayStore, key: str, expires_at: float) -> None:
    """Claim ``key`` or raise :class:`~mudrika.errors.ReplayError` (code ``replay``) if it was used."""
    if not store.claim(key, expires_at):
        raise ReplayError("already used", code="replay", key=key)


async def aclaim_or_raise(store: ReplayStore, key: str, expires_at: float) -> None:
    """Async form of :func:`claim_or_raise`."""
    if not await store.aclaim(key, expires_at):
        raise ReplayError("already used", code="replay", key=key)


def __getattr__(name: str) -> Any:
    # The Redis client library costs ~0.2 s to import; offline users (dispute verification) never pay it.
    if name == "RedisReplayStore":
        from mudrika.stores._redis import RedisReplayStore

        return RedisReplayStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
