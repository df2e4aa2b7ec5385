"""SqliteReplayStore: atomic claims on one file across threads, connections and processes; fail closed."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from mudrika.errors import InvalidInput, ReplayError, UnavailableError
from mudrika.stores.replay import MAX_KEY_BYTES, ReplayStore, SqliteReplayStore, claim_or_raise
from tests._support.replay import race_tasks, race_threads
from tests._support.tokenfactory import T0, Clock


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "replay.sqlite3"


@pytest.fixture
def store(db: Path, clock: Clock) -> Iterator[SqliteReplayStore]:
    store = SqliteReplayStore(db, clock=clock, min_retention=5)
    yield store
    store.close()


def _rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        count: int = conn.execute("SELECT count(*) FROM mudrika_replay").fetchone()[0]
    conn.close()
    return count


def test_is_a_replay_store_in_wal_mode(store: SqliteReplayStore, db: Path) -> None:
    assert isinstance(store, ReplayStore)
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_first_claim_wins_and_expiry_re_allows(store: SqliteReplayStore, clock: Clock) -> None:
    assert store.claim("jti:iss:a", T0 + 60) is True
    assert store.claim("jti:iss:a", T0 + 60) is False
    assert store.claim("jti:iss:b", T0 + 60) is True
    clock.now = T0 + 59.5
    assert store.claim("jti:iss:a", T0 + 120) is False
    clock.now = T0 + 60
    assert store.claim("jti:iss:a", T0 + 120) is True
    assert store.claim("jti:iss:a", T0 + 120) is False


def test_past_expiry_is_held_for_min_retention(store: SqliteReplayStore, clock: Clock) -> None:
    assert store.claim("late", T0 - 100)
    clock.now = T0 + 4
    assert not store.claim("late", T0 - 100)
    clock.now = T0 + 5
    assert store.claim("late", T0 - 100)


def test_key_and_expiry_caps(store: SqliteReplayStore) -> None:
    assert store.claim("k" * MAX_KEY_BYTES, T0 + 1)
    for key, code in [("", "replay_key_empty"), ("k" * (MAX_KEY_BYTES + 1), "replay_key_too_long")]:
        with pytest.raises(InvalidInput) as info:
            store.claim(key, T0 + 1)
        assert info.value.code == code
    with pytest.raises(InvalidInput) as info:
        store.claim("k", float("nan"))
    assert info.value.code == "replay_expiry_invalid"
    with pytest.raises(InvalidInput) as info:
        store.claim("k", T0 + 10 * 365 * 86400)
    assert info.value.code == "replay_expiry_too_far"


def test_claims_survive_reopen(db: Path, clock: Clock) -> None:
    first = SqliteReplayStore(db, clock=clock)
    assert first.claim("durable", T0 + 60)
    first.close()
    second = SqliteReplayStore(db, clock=clock)
    try:
        assert not second.claim("durable", T0 + 60)
    finally:
        second.close()


def test_periodic_purge_deletes_expired_rows(db: Path, clock: Clock) -> None:
    store = SqliteReplayStore(db, clock=clock, min_retention=0, purge_interval=30)
    try:
        for i in range(10):
            store.claim(f"k{i}", T0 + 10)
        store.claim("long", T0 + 1000)
        assert _rows(db) == 11
        clock.now = T0 + 20  # expired, but the next purge is not due before T0 + 30
        store.claim("x", T0 + 1000)
        assert _rows(db) == 12
        clock.now = T0 + 31
        store.claim("y", T0 + 1000)
        assert _rows(db) == 3
        clock.now = T0 + 2000
        assert store.purge() == 3
    finally:
        store.close()


def test_claim_many_in_one_transaction(store: SqliteReplayStore) -> None:
    store.claim("seen", T0 + 60)
    got = store.claim_many([("x", T0 + 60), ("seen", T0 + 60), ("x", T0 + 60), ("y", T0 + 60)])
    assert got == [True, False, False, True]


def test_claim_or_raise(store: SqliteReplayStore) -> None:
    claim_or_raise(store, "jti:iss:1", T0 + 60)
    with pytest.raises(ReplayError):
        claim_or_raise(store, "jti:iss:1", T0 + 60)


def test_threads_on_two_connections_exactly_one_wins(db: Path) -> None:
    stores = [SqliteReplayStore(db, timeout=10), SqliteReplayStore(db, timeout=10)]
    results = race_threads(lambda i: stores[i % 2].claim("jti:race:1", time.time() + 60))
    for s in stores:
        s.close()
    assert len(results) == 100
    assert results.count(True) == 1


@pytest.mark.anyio
async def test_async_gather_exactly_one_wins(db: Path) -> None:
    store = SqliteReplayStore(db, timeout=10)
    results = await race_tasks(lambda: store.aclaim("jti:race:2", time.time() + 60))
    await store.aclose()
    assert len(results) == 100
    assert results.count(True) == 1


def _claim_in_process(path: str, keys: list[str]) -> list[bool]:
    store = SqliteReplayStore(path, timeout=10)
    try:
        return [store.claim(key, time.time() + 60) for key in keys]
    finally:
        store.close()


def test_processes_sharing_the_file_each_key_won_once(db: Path) -> None:
    SqliteReplayStore(db).close()  # create the schema once, before the race
    keys = [f"jti:proc:{i}" for i in range(200)]
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_claim_in_process, str(db), keys) for _ in range(2)]
        results = [f.result(timeout=120) for f in futures]
    for i in range(len(keys)):
        assert results[0][i] + results[1][i] == 1


def test_locked_database_fails_closed_then_recovers(db: Path) -> None:
    store = SqliteReplayStore(db, timeout=0.05)
    assert store.claim("before", time.time() + 60)
    blocker = sqlite3.connect(db, isolation_level=None)
    try:
        blocker.execute("BEGIN EXCLUSIVE")
        for key in ("before", "during", "during"):
            with pytest.raises(UnavailableError) as info:
                store.claim(key, time.time() + 60)
            assert info.value.code == "replay_store_unavailable"
        with pytest.raises(UnavailableError):
            store.claim_many([("batch", time.time() + 60)])
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert store.claim("during", time.time() + 60) is True
    assert store.claim("before", time.time() + 60) is False
    assert store.claim("batch", time.time() + 60) is True  # the failed batch recorded nothing
    store.close()


@pytest.mark.anyio
async def test_locked_database_fails_closed_async(db: Path) -> None:
    store = SqliteReplayStore(db, timeout=0.05)
    blocker = sqlite3.connect(db, isolation_level=None)
    try:
        blocker.execute("BEGIN EXCLUSIVE")
        with pytest.raises(UnavailableError):
            await store.aclaim("during", time.time() + 60)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert await store.aclaim("during", time.time() + 60)
    await store.aclose()


def _open_and_claim(db: Path) -> bool:
    store = SqliteReplayStore(db)
    try:
        return store.claim("b", time.time() + 60)
    finally:
        store.close()


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_database_fails_closed(db: Path) -> None:
    store = SqliteReplayStore(db)
    store.claim("a", time.time() + 60)
    store.close()
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        if path.exists():
            path.chmod(0o444)
    db.parent.chmod(0o555)
    try:
        with pytest.raises(UnavailableError):
            _open_and_claim(db)
    finally:
        db.parent.chmod(0o755)


def test_unusable_paths_fail_closed(tmp_path: Path) -> None:
    with pytest.raises(UnavailableError):
        SqliteReplayStore(tmp_path / "missing-dir" / "replay.sqlite3")
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(UnavailableError) as info:
        SqliteReplayStore(garbage)
    assert info.value.code == "replay_store_unavailable"
    assert "garbage" not in str(info.value)


def test_closed_store_is_unavailable(store: SqliteReplayStore) -> None:
    store.close()
    with pytest.raises(UnavailableError) as info:
        store.claim("k", T0 + 60)
    assert info.value.code == "replay_store_closed"


def test_bad_config(db: Path) -> None:
    with pytest.raises(InvalidInput):
        SqliteReplayStore(db, timeout=0)
    with pytest.raises(InvalidInput):
        SqliteReplayStore(db, synchronous="OFF")  # type: ignore[arg-type]
