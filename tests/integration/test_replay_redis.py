"""RedisReplayStore against a real redis-server: atomicity, expiry, namespacing, fail closed."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import redis
import redis.asyncio

from mudrika.errors import InvalidInput, ReplayError, UnavailableError
from mudrika.stores.replay import MAX_KEY_BYTES, RedisReplayStore, ReplayStore, claim_or_raise
from tests._support.net import free_port
from tests._support.redis_server import RedisServer
from tests._support.replay import race_tasks, race_threads

pytestmark = pytest.mark.integration


@pytest.fixture
def namespace() -> str:
    return f"test:{uuid.uuid4().hex}:"


@pytest.fixture
def raw(redis_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server.url)
    yield client
    client.close()


@pytest.fixture
def store(redis_server: RedisServer, namespace: str) -> Iterator[RedisReplayStore]:
    store = RedisReplayStore(redis_server.url, namespace=namespace, min_retention=0)
    yield store
    store.close()


@pytest.fixture
async def astore(redis_server: RedisServer, namespace: str) -> AsyncIterator[RedisReplayStore]:
    store = RedisReplayStore(redis_server.url, namespace=namespace, min_retention=0)
    yield store
    await store.aclose()


def test_first_claim_wins(store: RedisReplayStore) -> None:
    assert isinstance(store, ReplayStore)
    exp = time.time() + 60
    assert store.claim("jti:iss:a", exp) is True
    assert store.claim("jti:iss:a", exp) is False
    assert store.claim("jti:iss:b", exp) is True
    claim_or_raise(store, "jti:iss:c", exp)
    with pytest.raises(ReplayError):
        claim_or_raise(store, "jti:iss:c", exp)


def test_key_layout_and_ttl(store: RedisReplayStore, raw: redis.Redis, namespace: str) -> None:
    store.claim("jti:did:web:a.example:123", time.time() + 60)
    full = namespace + "jti:did:web:a.example:123"
    assert store.redis_key("jti:did:web:a.example:123") == full
    assert raw.get(full) == b"1"
    pttl = raw.pttl(full)
    assert 0 < pttl <= 60_000


def test_past_expiry_is_held_for_min_retention(
    redis_server: RedisServer, namespace: str, raw: redis.Redis
) -> None:
    store = RedisReplayStore(redis_server.url, namespace=namespace, min_retention=30)
    try:
        assert store.claim("late", time.time() - 100)
        assert not store.claim("late", time.time() - 100)
        assert 0 < raw.pttl(namespace + "late") <= 30_000
    finally:
        store.close()


def test_expiry_re_allows(store: RedisReplayStore, raw: redis.Redis, namespace: str) -> None:
    # Held by a Redis TTL taken from expires_at; once Redis expires the key the claim is free again.
    # Why Redis is told to expire it now instead of the test sleeping past a short expiry: with a
    # 0.2 s hold the duplicate check below raced the clock on a loaded machine.
    assert store.claim("short", time.time() + 60)
    assert not store.claim("short", time.time() + 60)
    assert 0 < raw.pttl(namespace + "short") <= 60_000
    raw.pexpire(namespace + "short", 1)
    deadline = time.monotonic() + 60  # a hang guard: Redis drops the key within milliseconds
    while raw.exists(namespace + "short") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.claim("short", time.time() + 60)


def test_namespaces_are_separate(redis_server: RedisServer, store: RedisReplayStore) -> None:
    other = RedisReplayStore(redis_server.url, namespace=f"other:{uuid.uuid4().hex}:")
    try:
        exp = time.time() + 60
        assert store.claim("same", exp)
        assert other.claim("same", exp)
        assert not other.claim("same", exp)
    finally:
        other.close()


def test_key_caps(store: RedisReplayStore) -> None:
    assert store.claim("k" * MAX_KEY_BYTES, time.time() + 10)
    for key in ("", "k" * (MAX_KEY_BYTES + 1)):
        with pytest.raises(InvalidInput):
            store.claim(key, time.time() + 10)
    with pytest.raises(InvalidInput):
        store.claim("k", time.time() + 365 * 86400)


def test_claim_many_pipelined(store: RedisReplayStore) -> None:
    exp = time.time() + 60
    store.claim("seen", exp)
    assert store.claim_many([("x", exp), ("seen", exp), ("x", exp), ("y", exp)]) == [True, False, False, True]


def test_threads_same_key_exactly_one_wins(store: RedisReplayStore) -> None:
    results = race_threads(lambda _: store.claim("jti:race:threads", time.time() + 60))
    assert len(results) == 100
    assert results.count(True) == 1


@pytest.mark.anyio
async def test_async_gather_exactly_one_wins(astore: RedisReplayStore) -> None:
    results = await race_tasks(lambda: astore.aclaim("jti:race:async", time.time() + 60))
    assert len(results) == 100
    assert results.count(True) == 1


@pytest.mark.anyio
async def test_caller_supplied_clients(redis_server: RedisServer, namespace: str) -> None:
    sync_client = redis.Redis.from_url(redis_server.url, socket_timeout=30)
    async_client = redis.asyncio.Redis.from_url(redis_server.url, socket_timeout=30)
    try:
        with_async = RedisReplayStore(client=sync_client, async_client=async_client, namespace=namespace)
        sync_only = RedisReplayStore(client=sync_client, namespace=namespace)
        exp = time.time() + 60
        assert await with_async.aclaim("a", exp)
        assert not await sync_only.aclaim("a", exp)  # runs the sync client in a worker thread
        assert await sync_only.aclaim("b", exp)
        assert not with_async.claim("b", exp)
        # Clients the caller passed stay open: the caller owns them.
        await with_async.aclose()
        sync_only.close()
        assert sync_client.ping()
        assert await async_client.ping()
    finally:
        sync_client.close()
        await async_client.aclose()


def test_stop_redis_mid_test_fails_closed_then_recovers(redis_server: RedisServer, namespace: str) -> None:
    # Generous socket timeouts: a stopped server refuses connections at once, so they cost nothing
    # here, and they keep a starved but running Redis from being taken for a dead one.
    store = RedisReplayStore(redis_server.url, namespace=namespace, socket_timeout=30, connect_timeout=30)
    try:
        exp = time.time() + 60
        assert store.claim("before-1", exp)
        assert store.claim("before-2", exp)
        redis_server.stop()
        try:
            outcomes: list[str] = []
            for key in ("before-1", "during-1", "during-1", "during-2"):
                try:
                    outcomes.append(f"returned {store.claim(key, exp)}")
                except UnavailableError as exc:
                    outcomes.append(exc.code)
            assert outcomes == ["replay_store_unavailable"] * 4
            with pytest.raises(UnavailableError):
                store.claim_many([("batch", exp)])
        finally:
            redis_server.start()
        # The pooled connections died with the server; the store reconnects on its own.
        assert store.claim("after", exp) is True
        assert store.claim("after", exp) is False
    finally:
        store.close()


@pytest.mark.anyio
async def test_stop_redis_mid_test_fails_closed_async(redis_server: RedisServer, namespace: str) -> None:
    store = RedisReplayStore(redis_server.url, namespace=namespace, socket_timeout=30, connect_timeout=30)
    try:
        exp = time.time() + 60
        assert await store.aclaim("before", exp)
        redis_server.stop()
        try:
            for key in ("before", "during", "during"):
                with pytest.raises(UnavailableError):
                    await store.aclaim(key, exp)
        finally:
            redis_server.start()
        assert await store.aclaim("after", exp) is True
        assert await store.aclaim("after", exp) is False
    finally:
        await store.aclose()


def test_full_redis_with_noeviction_fails_closed(store: RedisReplayStore, raw: redis.Redis) -> None:
    """At maxmemory with ``noeviction`` Redis answers OOM to SET: the claim is refused, not accepted."""
    exp = time.time() + 60
    assert store.claim("before-full", exp)
    used = int(raw.info("memory")["used_memory"])
    policy = str(raw.config_get("maxmemory-policy")["maxmemory-policy"])
    raw.config_set("maxmemory-policy", "noeviction")
    raw.config_set("maxmemory", str(used // 2))
    try:
        with pytest.raises(UnavailableError) as info:
            store.claim("while-full", exp)
        assert info.value.fields["reason"] == "OutOfMemoryError"
    finally:
        raw.config_set("maxmemory", "0")
        raw.config_set("maxmemory-policy", policy)
    assert store.claim("while-full", exp) is True
    assert store.claim("before-full", exp) is False


def test_unreachable_server_never_accepts_and_hides_credentials() -> None:
    url = f"redis://user:s3cr3t-pw@127.0.0.1:{free_port()}/0"
    store = RedisReplayStore(url, socket_timeout=0.3, connect_timeout=0.3)
    try:
        assert "s3cr3t" not in repr(store)
        with pytest.raises(UnavailableError) as info:
            store.claim("k", time.time() + 60)
        assert "s3cr3t" not in str(info.value)
        assert "s3cr3t" not in repr(info.value.fields)
    finally:
        store.close()


def test_closed_store_is_unavailable(store: RedisReplayStore) -> None:
    store.close()
    with pytest.raises(UnavailableError) as info:
        store.claim("k", time.time() + 60)
    assert info.value.code == "replay_store_closed"


def test_bad_config(redis_server: RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.url)
    try:
        with pytest.raises(InvalidInput):
            RedisReplayStore(redis_server.url, client=client)
        with pytest.raises(InvalidInput):
            RedisReplayStore()
        with pytest.raises(InvalidInput):
            RedisReplayStore(redis_server.url, namespace="")
        with pytest.raises(InvalidInput):
            RedisReplayStore("http://not-redis.example")
    finally:
        client.close()
