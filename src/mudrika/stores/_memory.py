"""In-process replay store: a bounded dict of live claims plus a heap of their deadlines.

Why it fails closed when full: the only way to make room for a new claim while every entry is still
live would be to forget one, and a forgotten ``jti`` can be presented again.  Refusing new claims
(``replay_store_full``) turns a flood into an availability problem instead of a replay hole.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Iterable

from mudrika.errors import InvalidInput, UnavailableError
from mudrika.stores._replay_base import (
    DEFAULT_MAX_TTL,
    DEFAULT_MIN_RETENTION,
    Clock,
    ReplayStoreBase,
    check_key,
)

__all__ = ["MemoryReplayStore"]


class MemoryReplayStore(ReplayStoreBase):
    """Single-process store, the embedded default.  Thread-safe; ``aclaim`` never blocks the loop
    for more than one short critical section.  Expired entries are purged lazily on each claim."""

    def __init__(
        self,
        max_entries: int = 100_000,
        *,
        clock: Clock = time.time,
        min_retention: float = DEFAULT_MIN_RETENTION,
        max_ttl: float = DEFAULT_MAX_TTL,
    ) -> None:
        super().__init__(clock=clock, min_retention=min_retention, max_ttl=max_ttl)
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise InvalidInput("max_entries must be a positive integer", code="replay_config")
        self._max_entries = max_entries
        self._live: dict[str, float] = {}
        # One heap entry per live key: a key is only re-inserted after its old entry was purged.
        self._expiries: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"MemoryReplayStore(max_entries={self._max_entries}, live={len(self._live)})"

    def __len__(self) -> int:
        """Claims currently held (expired ones not yet purged included)."""
        return len(self._live)

    def claim(self, key: str, expires_at: float) -> bool:
        check_key(key)
        now = self._clock()
        deadline = self._deadline(expires_at, now)
        with self._lock:
            if self._closed:  # what _check_open() tests, without a call on every claim
                self._check_open()
            heap = self._expiries
            if heap and heap[0][0] <= now:  # the purge's own first test, without a call when idle
                self._purge_locked(now)
            return self._claim_locked(key, deadline)

    async def aclaim(self, key: str, expires_at: float) -> bool:
        return self.claim(key, expires_at)

    def claim_many(self, items: Iterable[tuple[str, float]]) -> list[bool]:
        """Claim several keys under one lock.  On ``replay_store_full`` the claims made before the
        error stay recorded; treat the whole batch as refused."""
        now = self._clock()
        batch = self._batch(items, now)
        with self._lock:
            self._check_open()
            self._purge_locked(now)
            return [self._claim_locked(key, deadline) for key, deadline in batch]

    def purge(self) -> int:
        """Drop expired claims now; returns how many were dropped."""
        now = self._clock()
        with self._lock:
            return self._purge_locked(now)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._live.clear()
            self._expiries.clear()

    async def aclose(self) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise UnavailableError("replay store closed", code="replay_store_closed", backend="memory")

    def _purge_locked(self, now: float) -> int:
        dropped = 0
        heap = self._expiries
        while heap and heap[0][0] <= now:
            deadline, key = heapq.heappop(heap)
            if self._live.get(key) == deadline:
                del self._live[key]
                dropped += 1
        return dropped

    def _claim_locked(self, key: str, deadline: float) -> bool:
        # Every entry left after the purge is live, so presence alone means "already claimed".
        if key in self._live:
            return False
        if len(self._live) >= self._max_entries:
            raise UnavailableError(
                "replay store full", code="replay_store_full", backend="memory", limit=self._max_entries
            )
        self._live[key] = deadline
        heapq.heappush(self._expiries, (deadline, key))
        return True
