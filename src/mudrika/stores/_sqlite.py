"""Durable single-host replay store on one SQLite file (WAL mode).

Why one upsert statement: ``INSERT … ON CONFLICT(key) DO UPDATE … WHERE old.expires_at <= now`` both
inserts a new key and re-takes an expired one in a single atomic write; it changes exactly one row when
the claim wins and none when a live claim holds the key.  SQLite serialises writers across every
process that opens the file, so the first writer wins everywhere on the host.

A write that cannot get the lock within ``timeout`` seconds, or any other SQLite failure, raises
:class:`~mudrika.errors.UnavailableError`: the store never answers "accepted" when it could not record.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Final, Literal

import anyio.to_thread

from mudrika.errors import InvalidInput, UnavailableError
from mudrika.stores._replay_base import (
    DEFAULT_MAX_TTL,
    DEFAULT_MIN_RETENTION,
    Clock,
    ReplayStoreBase,
    check_key,
    unavailable,
)

__all__ = ["SqliteReplayStore"]

_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS mudrika_replay ("
    " key TEXT PRIMARY KEY NOT NULL, expires_at REAL NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS mudrika_replay_expiry ON mudrika_replay (expires_at)",
)
# ?1 key, ?2 deadline, ?3 now.  Row changed <=> the claim won.
_CLAIM: Final = (
    "INSERT INTO mudrika_replay (key, expires_at) VALUES (?1, ?2)"
    " ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at"
    " WHERE mudrika_replay.expires_at <= ?3"
)
_PURGE: Final = "DELETE FROM mudrika_replay WHERE expires_at <= ?1"


class SqliteReplayStore(ReplayStoreBase):
    """Replay store on a SQLite file, shared by every process on the host that opens the same path.

    ``synchronous="FULL"`` (default) syncs the WAL on every commit so a recorded claim survives a power
    loss; ``"NORMAL"`` is faster but may lose the last claims on power loss (not on a process crash).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock = time.time,
        timeout: float = 1.0,
        purge_interval: float = 60.0,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        min_retention: float = DEFAULT_MIN_RETENTION,
        max_ttl: float = DEFAULT_MAX_TTL,
    ) -> None:
        super().__init__(clock=clock, min_retention=min_retention, max_ttl=max_ttl)
        if synchronous not in ("FULL", "NORMAL"):
            raise InvalidInput("synchronous must be FULL or NORMAL", code="replay_config")
        if not (timeout > 0 and purge_interval > 0):
            raise InvalidInput("timeout and purge_interval must be > 0", code="replay_config")
        self._path = os.fspath(path)
        self._purge_interval = float(purge_interval)
        self._lock = threading.Lock()
        self._next_purge = 0.0
        try:
            conn = sqlite3.connect(self._path, timeout=timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise unavailable("sqlite", exc) from None
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode != "wal" and self._path != ":memory:":
                raise unavailable("sqlite", detail=f"journal_mode is {mode}, not wal")
            conn.execute(f"PRAGMA synchronous = {synchronous}")
            for statement in _SCHEMA:
                conn.execute(statement)
        except sqlite3.Error as exc:
            conn.close()
            raise unavailable("sqlite", exc) from None
        except UnavailableError:
            conn.close()
            raise
        self._conn: sqlite3.Connection | None = conn

    def __repr__(self) -> str:
        return f"SqliteReplayStore(path={self._path!r})"

    def claim(self, key: str, expires_at: float) -> bool:
        check_key(key)
        now = self._clock()
        deadline = self._deadline(expires_at, now)
        with self._connection() as conn:
            self._maybe_purge(conn, now)
            return conn.execute(_CLAIM, (key, deadline, now)).rowcount == 1

    async def aclaim(self, key: str, expires_at: float) -> bool:
        return await anyio.to_thread.run_sync(self.claim, key, expires_at)

    def claim_many(self, items: Iterable[tuple[str, float]]) -> list[bool]:
        """Claim several keys in one transaction: either every result is recorded or, on error,
        none is (the transaction is rolled back and UnavailableError raised)."""
        now = self._clock()
        batch = self._batch(items, now)
        with self._connection() as conn:
            self._maybe_purge(conn, now)
            conn.execute("BEGIN IMMEDIATE")
            try:
                won = [conn.execute(_CLAIM, (key, dl, now)).rowcount == 1 for key, dl in batch]
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return won

    def purge(self) -> int:
        """Delete expired claims now; returns how many rows were deleted."""
        now = self._clock()
        with self._connection() as conn:
            return conn.execute(_PURGE, (now,)).rowcount

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    async def aclose(self) -> None:
        self.close()

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """The open connection, held under the lock, with any SQLite failure as UnavailableError.

        Every claim and purge goes through here, so none can run unlocked or let a ``sqlite3.Error`` (a
        busy lock past ``timeout``, a full disk) escape as anything but "could not record".
        """
        with self._lock:
            conn = self._open_conn()
            try:
                yield conn
            except sqlite3.Error as exc:
                raise unavailable("sqlite", exc) from None

    def _open_conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise UnavailableError("replay store closed", code="replay_store_closed", backend="sqlite")
        return self._conn

    def _maybe_purge(self, conn: sqlite3.Connection, now: float) -> None:
        """Purge expired rows at most once per ``purge_interval`` so the table stays proportional to
        the live claims without paying a range delete on every claim."""
        if now >= self._next_purge:
            conn.execute(_PURGE, (now,))
            self._next_purge = now + self._purge_interval
